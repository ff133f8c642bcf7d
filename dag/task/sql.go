package task

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	_ "modernc.org/sqlite"             // the "sqlite" driver
)

// DataSource is a named database a SQL task may use.
type DataSource struct {
	// Name is what SQL.DataSource refers to.
	Name string
	// Driver is "postgres" or "sqlite".
	Driver string
	// DSN is a postgres:// URL, or a SQLite file path (a "file:" URI is
	// taken as it is).
	DSN string
}

// UnknownDataSourceError is the error of a data source name that is not
// defined.
type UnknownDataSourceError struct {
	// Name is the name asked for.
	Name string
}

// Error implements error.
func (e *UnknownDataSourceError) Error() string {
	return fmt.Sprintf("sql task: unknown data source %q", e.Name)
}

// DataSources opens each named source once, on first use, and keeps it
// (a database/sql pool). It is safe for concurrent use.
type DataSources struct {
	mu      sync.Mutex
	sources map[string]DataSource
	dbs     map[string]*sql.DB
	closed  bool
	// resolve looks up a name not given to the worker (nil: none).
	resolve Resolver
	// central are the sources resolve found, with when.
	central map[string]resolved
}

// Resolver looks up a data source by name where they are defined
// centrally (the server); found is false for a name it does not know.
type Resolver func(ctx context.Context, name string) (src DataSource, found bool, err error)

// resolved is a data source a Resolver found.
type resolved struct {
	src DataSource
	at  time.Time
}

// resolveEvery is how long a resolved data source is used before it is
// looked up again (an update on the server reaches workers within it).
const resolveEvery = 30 * time.Second

// SetResolver makes DB look up the names the list given to NewDataSources
// does not have with r: those given take precedence.
func (d *DataSources) SetResolver(r Resolver) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resolve, d.central = r, map[string]resolved{}
}

// NewDataSources checks list (names non-empty and unique, drivers known,
// DSNs set) and returns the sources, none opened yet.
func NewDataSources(list []DataSource) (*DataSources, error) {
	d := &DataSources{sources: make(map[string]DataSource, len(list)), dbs: map[string]*sql.DB{}}
	for i, s := range list {
		if s.Name == "" {
			return nil, fmt.Errorf("data source %d: no name", i+1)
		}
		if _, dup := d.sources[s.Name]; dup {
			return nil, fmt.Errorf("data source %q: defined twice", s.Name)
		}
		if s.Driver != "postgres" && s.Driver != "sqlite" {
			return nil, fmt.Errorf("data source %q: unknown driver %q (want postgres or sqlite)", s.Name, s.Driver)
		}
		if s.DSN == "" {
			return nil, fmt.Errorf("data source %q: no DSN", s.Name)
		}
		d.sources[s.Name] = s
	}
	return d, nil
}

// DB returns the pool of the source called name, opening it on first use
// and checking that it answers: the worker's own sources first (strand
// worker --datasource), then those the resolver finds (defined on the
// server). An unknown name is an *UnknownDataSourceError. Every task type
// that names a data source (sql, procedure) finds it here.
func (d *DataSources) DB(ctx context.Context, name string) (*sql.DB, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, fmt.Errorf("data source %q: the data sources are closed", name)
	}
	src, ok := d.sources[name]
	if !ok && d.resolve != nil {
		c, have := d.central[name]
		resolve := d.resolve
		d.mu.Unlock()
		if !have || time.Since(c.at) > resolveEvery {
			s, found, err := resolve(ctx, name)
			if err != nil {
				return nil, fmt.Errorf("data source %q: look it up on the server: %w", name, err)
			}
			if !found {
				return nil, &UnknownDataSourceError{Name: name}
			}
			s.Name = name
			c = resolved{src: s, at: time.Now()}
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return nil, fmt.Errorf("data source %q: the data sources are closed", name)
		}
		if old, was := d.central[name]; was && old.src != c.src && d.dbs[name] != nil {
			d.dbs[name].Close() // it changed on the server: a new pool
			delete(d.dbs, name)
		}
		d.central[name] = c
		src, ok = c.src, true
	}
	if !ok {
		d.mu.Unlock()
		return nil, &UnknownDataSourceError{Name: name}
	}
	db := d.dbs[name]
	if db == nil {
		driver, dsn := "pgx", src.DSN
		if src.Driver == "sqlite" {
			driver, dsn = "sqlite", sqliteDSN(src.DSN)
		}
		var err error
		if db, err = sql.Open(driver, dsn); err != nil {
			d.mu.Unlock()
			return nil, fmt.Errorf("data source %q: open: %w", name, err)
		}
		d.dbs[name] = db
	}
	d.mu.Unlock()
	if err := db.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("data source %q: connect: %w", name, err)
	}
	return db, nil
}

// driver is the driver of the source called name ("" when unknown).
func (d *DataSources) driver(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.sources[name]; ok {
		return s.Driver
	}
	return d.central[name].src.Driver
}

// sqliteDSN is the modernc.org/sqlite DSN of a file path: writers wait for
// each other (busy timeout) and a transaction takes the write lock when it
// begins, so it never fails to upgrade its lock halfway. A "file:" URI is
// taken as it is.
func sqliteDSN(path string) string {
	if strings.HasPrefix(path, "file:") {
		return path
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// Close closes every opened pool; DB fails after it.
func (d *DataSources) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for _, name := range sortedKeys(d.dbs) {
		if err := d.dbs[name].Close(); err != nil {
			errs = append(errs, fmt.Errorf("data source %q: close: %w", name, err))
		}
	}
	d.dbs = map[string]*sql.DB{}
	return errors.Join(errs...)
}

// SQL is a SQL task: statements run in one transaction on a data source.
type SQL struct {
	// DataSource names the database.
	DataSource string
	// Pre are statements run before Statement, each its own Exec.
	Pre []string
	// Statement is the main statement.
	Statement string
	// Post are statements run after Statement, each its own Exec.
	Post []string
	// Query tells that Statement is a query whose rows are returned;
	// otherwise it is Exec'd.
	Query bool
	// Outputs maps an output parameter name to a column of the query's
	// first row (DolphinScheduler: out parameters take the first row). A
	// missing column, or no row, is an error.
	Outputs map[string]string
	// MaxRows is how many rows are kept and logged at most (default 1000).
	MaxRows int
	// UDFs are run first, in the same session and transaction: each the
	// statement that creates a user-defined function (PostgreSQL's CREATE
	// OR REPLACE FUNCTION).
	UDFs []UDF
}

// UDF is a user-defined function an SQL task creates before its
// statements.
type UDF struct {
	Name string
	// Text is the statement that creates it.
	Text string
}

// SQLResult is what a SQL task got.
type SQLResult struct {
	// Columns are the query's column names.
	Columns []string
	// Rows are the query's first MaxRows rows, as strings.
	Rows [][]string
	// RowsAffected is the main statement's count when it was not a query.
	RowsAffected int64
	// Outputs are the output parameters taken from the first row.
	Outputs map[string]string
}

// defaultMaxRows is SQL.MaxRows's default.
const defaultMaxRows = 1000

// RunSQL runs s on its data source: Pre, Statement and Post in one
// transaction on one connection, committed at the end and rolled back on
// any error. Each statement goes to log before it runs, then its rows
// affected or the rows it returned (tab-separated, header first, at most
// MaxRows). Values become strings: NULL as "", bytes as text, times in
// RFC 3339, others as fmt's %v.
func RunSQL(ctx context.Context, ds *DataSources, s SQL, log io.Writer) (res SQLResult, err error) {
	if strings.TrimSpace(s.Statement) == "" {
		return res, errors.New("sql task: no statement")
	}
	if len(s.Outputs) > 0 && !s.Query {
		return res, errors.New("sql task: outputs need a query")
	}
	for i, st := range s.Pre {
		if strings.TrimSpace(st) == "" {
			return res, fmt.Errorf("sql task: pre statement %d is empty", i+1)
		}
	}
	for i, st := range s.Post {
		if strings.TrimSpace(st) == "" {
			return res, fmt.Errorf("sql task: post statement %d is empty", i+1)
		}
	}
	maxRows := s.MaxRows
	if maxRows <= 0 {
		maxRows = defaultMaxRows
	}
	if ds == nil {
		return res, &UnknownDataSourceError{Name: s.DataSource}
	}
	db, err := ds.DB(ctx, s.DataSource)
	if err != nil {
		return res, fmt.Errorf("sql task: %w", err)
	}
	if len(s.UDFs) > 0 && ds.driver(s.DataSource) == "sqlite" {
		return res, fmt.Errorf("sql task: data source %q is SQLite, which cannot create functions in SQL: a UDF needs a PostgreSQL data source", s.DataSource)
	}
	lg := &errWriter{w: log}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("sql task: data source %q: begin: %w", s.DataSource, err)
	}
	defer func() {
		if err == nil {
			if err = tx.Commit(); err != nil {
				lg.printf("-- commit failed: %v\n", err)
				err = fmt.Errorf("sql task: commit: %w", err)
				return
			}
			lg.printf("-- committed\n")
			if lg.err != nil {
				err = fmt.Errorf("sql task: write log: %w", lg.err)
			}
			return
		}
		lg.printf("-- %v\n", err)
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			lg.printf("-- rollback failed: %v\n", rerr)
			err = errors.Join(err, fmt.Errorf("sql task: rollback: %w", rerr))
			return
		}
		lg.printf("-- rolled back\n")
	}()

	for _, f := range s.UDFs {
		if err := execLogged(ctx, tx, lg, "UDF "+f.Name, f.Text, nil); err != nil {
			return res, err
		}
	}
	for i, st := range s.Pre {
		if err := execLogged(ctx, tx, lg, fmt.Sprintf("pre statement %d", i+1), st, nil); err != nil {
			return res, err
		}
	}
	if s.Query {
		if err := queryLogged(ctx, tx, lg, s, maxRows, &res); err != nil {
			return res, err
		}
	} else if err := execLogged(ctx, tx, lg, "statement", s.Statement, &res.RowsAffected); err != nil {
		return res, err
	}
	for i, st := range s.Post {
		if err := execLogged(ctx, tx, lg, fmt.Sprintf("post statement %d", i+1), st, nil); err != nil {
			return res, err
		}
	}
	return res, nil
}

// execLogged logs and runs one statement and logs its rows affected,
// stored in affected when not nil.
func execLogged(ctx context.Context, tx *sql.Tx, lg *errWriter, what, st string, affected *int64) error {
	lg.printf("-- %s\n%s\n", what, strings.TrimRight(st, "\n"))
	r, err := tx.ExecContext(ctx, st)
	if err != nil {
		return fmt.Errorf("sql task: %s: %w", what, err)
	}
	if n, err := r.RowsAffected(); err == nil {
		lg.printf("(%s affected)\n", rowCount(n))
		if affected != nil {
			*affected = n
		}
	}
	return nil
}

// queryLogged logs and runs s's query, keeps its first maxRows rows and
// its outputs in res, and logs the rows.
func queryLogged(ctx context.Context, tx *sql.Tx, lg *errWriter, s SQL, maxRows int, res *SQLResult) error {
	lg.printf("-- statement (query)\n%s\n", strings.TrimRight(s.Statement, "\n"))
	rows, err := tx.QueryContext(ctx, s.Statement)
	if err != nil {
		return fmt.Errorf("sql task: statement: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("sql task: statement: columns: %w", err)
	}
	res.Columns = cols
	index := make(map[string]int, len(cols))
	for i := len(cols) - 1; i >= 0; i-- {
		index[cols[i]] = i // the first of equal names wins
	}
	for _, name := range sortedKeys(s.Outputs) {
		if _, ok := index[s.Outputs[name]]; !ok {
			return fmt.Errorf("sql task: output %q: the query has no column %q (columns: %s)", name, s.Outputs[name], strings.Join(cols, ", "))
		}
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	more := 0
	for rows.Next() {
		if len(res.Rows) >= maxRows {
			more++
			continue
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("sql task: statement: row %d: %w", len(res.Rows)+1, err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = sqlString(v)
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sql task: statement: rows: %w", err)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("sql task: statement: close rows: %w", err)
	}

	lg.printf("%s\n", tabRow(cols))
	for _, row := range res.Rows {
		lg.printf("%s\n", tabRow(row))
	}
	if more > 0 {
		lg.printf("(%s shown, %d more not shown)\n", rowCount(int64(len(res.Rows))), more)
	} else {
		lg.printf("(%s)\n", rowCount(int64(len(res.Rows))))
	}

	if len(s.Outputs) > 0 {
		if len(res.Rows) == 0 {
			return fmt.Errorf("sql task: outputs: the query returned no rows")
		}
		res.Outputs = make(map[string]string, len(s.Outputs))
		for _, name := range sortedKeys(s.Outputs) {
			res.Outputs[name] = res.Rows[0][index[s.Outputs[name]]]
			lg.printf("-- output %s = %s\n", name, res.Outputs[name])
		}
	}
	return nil
}

// rowCount is "1 row" or "N rows".
func rowCount(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// sqlString is a column value as a string: NULL as "", bytes as text,
// times in RFC 3339, others as fmt's %v.
func sqlString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	case time.Time:
		return v.Format(time.RFC3339Nano)
	default:
		return fmt.Sprintf("%v", v)
	}
}

// cellEscaper escapes what would break a row of the logged table.
var cellEscaper = strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r")

// tabRow is a row of the logged table: values separated by tabs, with tabs
// and line breaks inside values escaped.
func tabRow(vals []string) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = cellEscaper.Replace(v)
	}
	return strings.Join(out, "\t")
}

// CheckDataSource opens s and checks that it answers, then closes it. A
// SQLite file must exist: the check does not create it.
func CheckDataSource(ctx context.Context, s DataSource) error {
	driver, dsn := "pgx", s.DSN
	if s.Driver == "sqlite" {
		if strings.HasPrefix(s.DSN, "file:") {
			driver, dsn = "sqlite", s.DSN
		} else {
			if _, err := os.Stat(s.DSN); err != nil {
				return fmt.Errorf("data source %q: %w", s.Name, err)
			}
			driver, dsn = "sqlite", "file:"+s.DSN+"?mode=rw"
		}
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return fmt.Errorf("data source %q: open: %w", s.Name, err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("data source %q: connect: %w", s.Name, err)
	}
	return nil
}
