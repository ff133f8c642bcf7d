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

func TestRowChunks(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 37, 128, 129, 300, 1000} {
		args := make([]any, 2*n)
		for i := range args {
			args[i] = i
		}
		next := 0
		for rows, chunk := range rowChunks(2, args) {
			if rows <= 0 || rows > maxRowChunk || rows&(rows-1) != 0 || len(chunk) != 2*rows {
				t.Fatalf("n=%d: a chunk of %d rows with %d arguments", n, rows, len(chunk))
			}
			for _, a := range chunk {
				if a != next {
					t.Fatalf("n=%d: argument %v where %d was due", n, a, next)
				}
				next++
			}
		}
		if next != 2*n {
			t.Fatalf("n=%d: %d arguments yielded, want %d", n, next, 2*n)
		}
	}
}
