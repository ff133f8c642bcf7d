package sqlstore

import (
	"reflect"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	body := `-- a comment
CREATE TABLE a (x INTEGER);
CREATE INDEX a_x
  ON a (x);
-- dialect: sqlite
CREATE TRIGGER t AFTER INSERT ON a BEGIN
  INSERT INTO b VALUES (new.x);
  UPDATE c SET n = n + 1;
END;
-- dialect: postgres
CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO b VALUES (NEW.x);
  RETURN NULL;
END
$$;
CREATE TRIGGER t AFTER INSERT ON a FOR EACH ROW EXECUTE FUNCTION f();
-- dialect: all
DROP TABLE z;`
	for dialect, want := range map[string][]string{
		"sqlite": {"CREATE TABLE a (x INTEGER);", "CREATE INDEX a_x\n  ON a (x);",
			"CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  INSERT INTO b VALUES (new.x);\n  UPDATE c SET n = n + 1;\nEND;", "DROP TABLE z;"},
		"postgres": {"CREATE TABLE a (x INTEGER);", "CREATE INDEX a_x\n  ON a (x);",
			"CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n  INSERT INTO b VALUES (NEW.x);\n  RETURN NULL;\nEND\n$$;",
			"CREATE TRIGGER t AFTER INSERT ON a FOR EACH ROW EXECUTE FUNCTION f();", "DROP TABLE z;"},
	} {
		if got := splitStatements(body, dialect); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ngot  %q\nwant %q", dialect, got, want)
		}
	}
}
