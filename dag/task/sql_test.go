package task_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strandhq/strand/dag/task"
	"github.com/strandhq/strand/internal/testdb"
)

// sqliteSources is a data source "db" on a new SQLite file.
func sqliteSources(t *testing.T) *task.DataSources {
	t.Helper()
	ds, err := task.NewDataSources([]task.DataSource{{Name: "db", Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "data.db")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ds.Close(); err != nil {
			t.Error(err)
		}
	})
	return ds
}

func runSQL(t *testing.T, ds *task.DataSources, s task.SQL) (task.SQLResult, string) {
	t.Helper()
	var log bytes.Buffer
	res, err := task.RunSQL(context.Background(), ds, s, &log)
	if err != nil {
		t.Fatalf("RunSQL: %v\nlog:\n%s", err, log.String())
	}
	return res, log.String()
}

func TestSQLiteExecAndQuery(t *testing.T) {
	t.Parallel()
	ds := sqliteSources(t)
	res, log := runSQL(t, ds, task.SQL{
		DataSource: "db",
		Pre:        []string{"CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT, score REAL, note TEXT, raw BLOB, at DATETIME)"},
		Statement: `INSERT INTO jobs (id, name, score, note, raw, at) VALUES
			(1, 'load', 0.5, NULL, x'6869', '2024-03-01 12:30:00'),
			(2, 'clean', 2, 'tab	here', NULL, NULL),
			(3, 'report', 3, '', NULL, NULL)`,
		Post: []string{"UPDATE jobs SET score = score * 2 WHERE id = 2"},
	})
	if res.RowsAffected != 3 || res.Columns != nil || res.Rows != nil {
		t.Errorf("result %+v", res)
	}
	for _, s := range []string{"-- pre statement 1\nCREATE TABLE jobs", "-- statement\nINSERT INTO jobs", "(3 rows affected)", "-- post statement 1\nUPDATE jobs", "(1 row affected)", "-- committed"} {
		if !strings.Contains(log, s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}

	res, log = runSQL(t, ds, task.SQL{
		DataSource: "db",
		Statement:  "SELECT id, name, score, note, raw, at FROM jobs ORDER BY id",
		Query:      true,
		Outputs:    map[string]string{"first_id": "id", "first_name": "name", "raw": "raw", "at": "at", "note": "note"},
		MaxRows:    2,
	})
	if got := strings.Join(res.Columns, ","); got != "id,name,score,note,raw,at" {
		t.Errorf("columns %s", got)
	}
	wantRows := [][]string{{"1", "load", "0.5", "", "hi", "2024-03-01T12:30:00Z"}, {"2", "clean", "4", "tab\there", "", ""}}
	if fmt.Sprintf("%q", res.Rows) != fmt.Sprintf("%q", wantRows) {
		t.Errorf("rows\n%q\nwant\n%q", res.Rows, wantRows)
	}
	want := map[string]string{"first_id": "1", "first_name": "load", "raw": "hi", "at": "2024-03-01T12:30:00Z", "note": ""}
	if fmt.Sprint(res.Outputs) != fmt.Sprint(want) {
		t.Errorf("outputs %q, want %q", res.Outputs, want)
	}
	table := "id\tname\tscore\tnote\traw\tat\n1\tload\t0.5\t\thi\t2024-03-01T12:30:00Z\n2\tclean\t4\ttab\\there\t\t\n(2 rows shown, 1 more not shown)\n"
	if !strings.Contains(log, "-- statement (query)\nSELECT id, name") || !strings.Contains(log, table) {
		t.Errorf("log lacks the table %q:\n%s", table, log)
	}

	// A query with no rows and no outputs is fine.
	res, log = runSQL(t, ds, task.SQL{DataSource: "db", Statement: "SELECT id FROM jobs WHERE id > 100", Query: true})
	if len(res.Rows) != 0 || !strings.Contains(log, "id\n(0 rows)\n") {
		t.Errorf("rows %v, log:\n%s", res.Rows, log)
	}
}

func TestSQLitePreInSameTransaction(t *testing.T) {
	t.Parallel()
	ds := sqliteSources(t)
	res, _ := runSQL(t, ds, task.SQL{
		DataSource: "db",
		Pre: []string{
			"CREATE TEMP TABLE params (k TEXT, v TEXT)",
			"INSERT INTO params VALUES ('day', '2024-03-01')",
		},
		Statement: "SELECT v AS day, (SELECT count(*) FROM params) AS n FROM params WHERE k = 'day'",
		Query:     true,
		Outputs:   map[string]string{"day": "day", "n": "n"},
	})
	if res.Outputs["day"] != "2024-03-01" || res.Outputs["n"] != "1" {
		t.Errorf("outputs %v", res.Outputs)
	}
}

func TestSQLiteErrorRollsBack(t *testing.T) {
	t.Parallel()
	ds := sqliteSources(t)
	runSQL(t, ds, task.SQL{DataSource: "db", Statement: "CREATE TABLE kept (id INTEGER)"})
	tableExists := func(name string) bool {
		res, _ := runSQL(t, ds, task.SQL{DataSource: "db", Statement: fmt.Sprintf("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '%s'", name), Query: true, Outputs: map[string]string{"n": "n"}})
		return res.Outputs["n"] != "0"
	}

	for _, tt := range []struct {
		name string
		s    task.SQL
		want string
	}{
		{"main fails", task.SQL{Statement: "INSERT INTO no_such_table VALUES (1)"}, "statement"},
		{"post fails", task.SQL{Statement: "INSERT INTO kept VALUES (1)", Post: []string{"SELECT * FROM no_such_table"}}, "post statement 1"},
		{"missing column", task.SQL{Statement: "SELECT 1 AS a", Query: true, Outputs: map[string]string{"x": "b"}}, `no column "b"`},
		{"no rows for outputs", task.SQL{Statement: "SELECT id FROM kept WHERE id < 0", Query: true, Outputs: map[string]string{"x": "id"}}, "no rows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			s.DataSource = "db"
			s.Pre = []string{"CREATE TABLE made_in_pre (id INTEGER)", "INSERT INTO kept VALUES (42)"}
			var log bytes.Buffer
			_, err := task.RunSQL(context.Background(), ds, s, &log)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one with %q", err, tt.want)
			}
			if !strings.Contains(log.String(), "-- rolled back") {
				t.Errorf("log:\n%s", log.String())
			}
			if tableExists("made_in_pre") {
				t.Error("the table made in Pre exists after the rollback")
			}
			res, _ := runSQL(t, ds, task.SQL{DataSource: "db", Statement: "SELECT count(*) AS n FROM kept", Query: true, Outputs: map[string]string{"n": "n"}})
			if res.Outputs["n"] != "0" {
				t.Errorf("%s rows in kept after the rollback", res.Outputs["n"])
			}
		})
	}
}

func TestSQLCheckedUpFront(t *testing.T) {
	t.Parallel()
	ds := sqliteSources(t)
	var log bytes.Buffer
	ctx := context.Background()
	_, err := task.RunSQL(ctx, ds, task.SQL{DataSource: "nope", Statement: "SELECT 1"}, &log)
	var ue *task.UnknownDataSourceError
	if !errors.As(err, &ue) || ue.Name != "nope" {
		t.Errorf("unknown source: err = %v", err)
	}
	if _, err := ds.DB(ctx, "nope"); !errors.As(err, &ue) {
		t.Errorf("DB of an unknown source: err = %v", err)
	}
	for _, s := range []task.SQL{
		{DataSource: "db"},
		{DataSource: "db", Statement: "SELECT 1", Outputs: map[string]string{"a": "a"}},
		{DataSource: "db", Statement: "SELECT 1", Pre: []string{" "}},
	} {
		if _, err := task.RunSQL(ctx, ds, s, &log); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}

	for _, list := range [][]task.DataSource{
		{{Name: "", Driver: "sqlite", DSN: "x.db"}},
		{{Name: "a", Driver: "mysql", DSN: "x"}},
		{{Name: "a", Driver: "sqlite", DSN: ""}},
		{{Name: "a", Driver: "sqlite", DSN: "x.db"}, {Name: "a", Driver: "postgres", DSN: "postgres://h/db"}},
	} {
		if _, err := task.NewDataSources(list); err == nil {
			t.Errorf("NewDataSources(%+v) accepted", list)
		}
	}

	// Concurrent tasks share one pool per source.
	dbs := make([]any, 8)
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Go(func() {
			db, err := ds.DB(ctx, "db")
			if err != nil {
				t.Error(err)
			}
			dbs[i] = db
		})
	}
	wg.Wait()
	for _, db := range dbs {
		if db != dbs[0] {
			t.Fatal("DB opened a source twice")
		}
	}

	closed := sqliteSources(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := closed.DB(ctx, "db"); err == nil {
		t.Error("DB works after Close")
	}
}

func TestSQLiteConcurrentWriters(t *testing.T) {
	t.Parallel()
	ds := sqliteSources(t)
	runSQL(t, ds, task.SQL{DataSource: "db", Statement: "CREATE TABLE counter (n INTEGER)"})
	runSQL(t, ds, task.SQL{DataSource: "db", Statement: "INSERT INTO counter VALUES (0)"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				var log bytes.Buffer
				_, err := task.RunSQL(context.Background(), ds, task.SQL{
					DataSource: "db",
					Pre:        []string{"CREATE TEMP TABLE IF NOT EXISTS seen (n INTEGER)", "DELETE FROM seen", "INSERT INTO seen SELECT n FROM counter"},
					Statement:  "UPDATE counter SET n = (SELECT n FROM seen) + 1",
				}, &log)
				if err != nil {
					t.Errorf("RunSQL: %v\n%s", err, log.String())
					return
				}
			}
		})
	}
	wg.Wait()
	res, _ := runSQL(t, ds, task.SQL{DataSource: "db", Statement: "SELECT n FROM counter", Query: true, Outputs: map[string]string{"n": "n"}})
	if res.Outputs["n"] != "80" {
		t.Errorf("counter %s after 80 read-modify-write transactions: lost updates", res.Outputs["n"])
	}
}

func TestPostgresQuery(t *testing.T) {
	t.Parallel()
	if os.Getenv(testdb.PostgresEnv) == "" {
		t.Skipf("PostgreSQL tests need %s to hold the URL of a server (scripts/postgres.sh url)", testdb.PostgresEnv)
	}
	base := testdb.PostgresURL(t)
	url := testdb.WithSearchPath(t, base, testdb.NewSchema(t, base))
	ds, err := task.NewDataSources([]task.DataSource{{Name: "pg", Driver: "postgres", DSN: url}})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()

	res, log := runSQL(t, ds, task.SQL{
		DataSource: "pg",
		Pre:        []string{"CREATE TABLE jobs (id bigint PRIMARY KEY, name text, at timestamptz, amount numeric, note text)"},
		Statement:  "INSERT INTO jobs VALUES (1, 'load', '2024-03-01 12:30:00+00', 12.50, NULL), (2, 'clean', NULL, NULL, 'x')",
	})
	if res.RowsAffected != 2 || !strings.Contains(log, "(2 rows affected)") {
		t.Errorf("result %+v, log:\n%s", res, log)
	}

	res, log = runSQL(t, ds, task.SQL{
		DataSource: "pg",
		Pre:        []string{"SET LOCAL TIME ZONE 'UTC'", "CREATE TEMP TABLE wanted ON COMMIT DROP AS SELECT 1::bigint AS id"},
		Statement:  "SELECT j.id, j.name, j.at, j.amount, j.note, current_setting('TimeZone') AS tz FROM jobs j ORDER BY (j.id IN (SELECT id FROM wanted)) DESC, j.id",
		Query:      true,
		Outputs:    map[string]string{"id": "id", "name": "name", "at": "at", "amount": "amount", "note": "note", "tz": "tz"},
	})
	want := map[string]string{"id": "1", "name": "load", "at": "2024-03-01T12:30:00Z", "amount": "12.50", "note": "", "tz": "UTC"}
	if fmt.Sprint(res.Outputs) != fmt.Sprint(want) {
		t.Errorf("outputs %q, want %q\nlog:\n%s", res.Outputs, want, log)
	}
	if len(res.Rows) != 2 || !strings.Contains(log, "id\tname\tat\tamount\tnote\ttz\n1\tload\t") {
		t.Errorf("rows %q, log:\n%s", res.Rows, log)
	}

	var buf bytes.Buffer
	_, err = task.RunSQL(context.Background(), ds, task.SQL{
		DataSource: "pg",
		Pre:        []string{"CREATE TABLE made_in_pre (id int)"},
		Statement:  "SELECT no_such_column FROM jobs",
		Query:      true,
	}, &buf)
	if err == nil {
		t.Fatal("a bad query succeeded")
	}
	res, _ = runSQL(t, ds, task.SQL{DataSource: "pg", Statement: "SELECT to_regclass('made_in_pre') IS NULL AS gone", Query: true, Outputs: map[string]string{"gone": "gone"}})
	if res.Outputs["gone"] != "true" {
		t.Error("the table made in Pre exists after the rollback")
	}
}

// TestDataSourcesResolver: a name the worker was not given is looked up
// with the resolver (the server's data sources); one it was given wins over
// the resolver's; a name neither knows is an *UnknownDataSourceError.
func TestDataSourcesResolver(t *testing.T) {
	dir := t.TempDir()
	local, central := filepath.Join(dir, "local.db"), filepath.Join(dir, "central.db")
	ds, err := task.NewDataSources([]task.DataSource{{Name: "both", Driver: "sqlite", DSN: local}})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	var asked []string
	ds.SetResolver(func(_ context.Context, name string) (task.DataSource, bool, error) {
		asked = append(asked, name)
		if name == "nope" {
			return task.DataSource{}, false, nil
		}
		return task.DataSource{Driver: "sqlite", DSN: central}, true, nil
	})
	ctx := context.Background()
	where := func(name string) string {
		t.Helper()
		res, err := task.RunSQL(ctx, ds, task.SQL{DataSource: name, Query: true, Statement: "SELECT file FROM pragma_database_list WHERE name = 'main'"}, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return filepath.Base(res.Rows[0][0])
	}
	if got := where("both"); got != "local.db" {
		t.Fatalf("a data source given to the worker and on the server: used %s, want the worker's", got)
	}
	if got := where("server-only"); got != "central.db" {
		t.Fatalf("a data source on the server alone: used %s", got)
	}
	where("server-only") // cached: not asked again
	_, err = task.RunSQL(ctx, ds, task.SQL{DataSource: "nope", Statement: "SELECT 1"}, &bytes.Buffer{})
	var unknown *task.UnknownDataSourceError
	if !errors.As(err, &unknown) {
		t.Fatalf("a name nobody knows: %v", err)
	}
	if strings.Join(asked, ",") != "server-only,nope" {
		t.Fatalf("the resolver was asked for %v", asked)
	}
}

// TestSQLiteRefusesUDF: SQLite cannot create functions in SQL, so a UDF on
// a SQLite data source fails the task, saying so, before any statement.
func TestSQLiteRefusesUDF(t *testing.T) {
	ds := sqliteSources(t)
	var log bytes.Buffer
	_, err := task.RunSQL(context.Background(), ds, task.SQL{DataSource: "db", Statement: "SELECT 1",
		UDFs: []task.UDF{{Name: "add_tax", Text: "CREATE FUNCTION add_tax(x numeric) RETURNS numeric AS $$ SELECT x $$ LANGUAGE sql"}}}, &log)
	if err == nil || !strings.Contains(err.Error(), `data source "db" is SQLite, which cannot create functions in SQL`) || log.Len() != 0 {
		t.Fatalf("a UDF on SQLite: %v (log %q)", err, log.String())
	}
}
