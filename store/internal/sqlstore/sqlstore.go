// Package sqlstore implements the store contract on database/sql. The SQLite
// and PostgreSQL backends are this package with a Dialect each: the schema
// and the statements are the same but for placeholders, row locking and
// column types.
package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math"
	"math/bits"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strandhq/strand/store"
)

// Dialect is what differs between SQL databases.
type Dialect struct {
	// Name is the database's name in errors and logs.
	Name string
	// Numbered selects $1, $2 placeholders instead of ?.
	Numbered bool
	// ForUpdate is appended to the read that locks a shard row inside a
	// write transaction; empty where the transaction holds the database's
	// write lock already (SQLite's BEGIN IMMEDIATE).
	ForUpdate string
	// MigrationLock, when set, runs first in the migration transaction to
	// serialize concurrent migrations.
	MigrationLock string
	// Blob is the column type for bytes where it is not BLOB (PostgreSQL:
	// BYTEA). The shared migrations say BLOB.
	Blob string
	// Prepare keeps prepared statements for the write path, for drivers
	// that do not cache them themselves (pgx does; modernc's SQLite does
	// not, and parsing costs it a third of a commit's CPU).
	Prepare bool
	// Pipeline, when set, runs a commit's statements in one transaction on
	// a connection of db, sending them together (PostgreSQL's pipeline):
	// each Op's Check or Scan runs on its result, and the first error rolls
	// the transaction back.
	Pipeline func(ctx context.Context, db *sql.DB, ops []Op) error
	// SerialWrites says the database runs one write transaction at a time
	// (SQLite).
	SerialWrites bool
	// IndexedBy says visibility queries name the index they read (SQLite's
	// INDEXED BY): a planner without statistics cannot tell which of two
	// usable indexes holds fewer rows.
	IndexedBy bool
	// OpaqueBounds says visibility queries pass times as sub-selects the
	// planner cannot see into (PostgreSQL): statistics older than the
	// newest runs misjudge a recent time range (see buildQuery).
	OpaqueBounds bool
	// CompactCounts, when set, says the dialect's visibility triggers
	// append count deltas (visibility_count_deltas,
	// visibility_attribute_count_deltas) rather than update the counters,
	// and folds the deltas committed so far into the counters on db, in one
	// transaction. Counts then add the deltas not yet folded in.
	CompactCounts func(ctx context.Context, db *sql.DB) error
	// RowIDs says tables have SQLite's rowid. A deletion of many runs'
	// rows joins their keys to the table; SQLite has no DELETE … USING,
	// so it deletes the rowids the join selects instead (a row-value IN
	// list would scan the whole shard).
	RowIDs bool
	// InProcess says statements run in this process (SQLite): they wait on
	// no network, and a lock wait ends at the busy timeout. Write
	// statements and one-row reads then run under a context that cannot be
	// cancelled, and a transaction checks for cancellation between its
	// statements: modernc.org/sqlite starts a goroutine per statement to
	// watch a context that can be, tens of thousands a second under load.
	InProcess bool
	// Bytewise is the clause that makes a text comparison byte order (and
	// so code point order), for the prefix ranges of the workflow id and
	// business key indexes: PostgreSQL's ` COLLATE "C"`; empty where text
	// compares so already (SQLite's BINARY).
	Bytewise string
}

// Store is the SQL implementation of store.Store.
type Store struct {
	d      Dialect
	write  *sql.DB
	read   *sql.DB
	limits store.Limits
	closer func() error

	mu         sync.Mutex
	stmts      map[string]*sql.Stmt // nil once closed
	unprepared map[string]struct{}
	// readStmts are the read path's prepared statements, on the read pool.
	readStmts map[string]*sql.Stmt
	// numbered caches q's rewrites (query text -> $n form).
	numbered sync.Map
	// visWrites counts visibility records written since the count deltas
	// were last folded (Dialect.CompactCounts).
	visWrites atomic.Int64
	// vis is the store whose database holds the visibility records: s
	// itself, or another (WithVisibility).
	vis *Store
	// prefixScanLimit is the most runs a prefix may match for a listing
	// to read them through the prefix's index (WithPrefixScanLimit).
	prefixScanLimit int
}

// maxStatements bounds the statement cache; multi-row inserts make one text
// per row count.
const maxStatements = 256

// exec runs a write statement in tx, through a cached prepared statement
// where the dialect wants one. query has ? placeholders.
//
// A statement not yet cached runs unprepared and is prepared after the
// transaction ends (see inTx): preparing on the pool while tx holds its only
// connection, as it does on SQLite, would wait forever.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	ctx, err := s.stmtContext(ctx)
	if err != nil {
		return nil, err
	}
	if st := s.stmt(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, s.q(query), args...)
}

// stmtContext is the context a statement of a write transaction runs
// under: ctx, or, for a dialect whose statements run in process, ctx
// without its cancellation once it is checked (see Dialect.InProcess).
func (s *Store) stmtContext(ctx context.Context) (context.Context, error) {
	if !s.d.InProcess {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// queryRow is exec for a query of one row.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if s.d.InProcess {
		ctx = context.WithoutCancel(ctx) // a cancelled ctx fails the transaction's next exec
	}
	if st := s.stmt(ctx, tx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, s.q(query), args...)
}

// stmt returns query's prepared statement in tx, or nil when it is not
// prepared yet (it is noted, and prepared after the transaction).
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	if !s.d.Prepare {
		return nil
	}
	query = s.q(query)
	s.mu.Lock()
	st, ok := s.stmts[query]
	if !ok && len(s.stmts)+len(s.unprepared) < maxStatements {
		s.unprepared[query] = struct{}{}
	}
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	return tx.StmtContext(ctx, st)
}

// prepare prepares the statements exec met uncached. It runs outside any
// transaction; a failure leaves them to run unprepared.
func (s *Store) prepare(ctx context.Context) {
	s.mu.Lock()
	var todo []string
	for q := range s.unprepared {
		todo = append(todo, q)
	}
	clear(s.unprepared)
	s.mu.Unlock()
	for _, q := range todo {
		st, err := s.write.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if _, dup := s.stmts[q]; dup || s.stmts == nil {
			st.Close()
		} else {
			s.stmts[q] = st
		}
		s.mu.Unlock()
	}
}

// readStmt returns query's statement prepared on the read pool, preparing
// it on first use; nil where the dialect prepares nothing, the cache is
// full or preparing failed (the query then runs unprepared).
func (s *Store) readStmt(ctx context.Context, query string) *sql.Stmt {
	if !s.d.Prepare {
		return nil
	}
	s.mu.Lock()
	st, ok := s.readStmts[query]
	full := s.stmts == nil || len(s.readStmts) >= maxStatements
	s.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := s.read.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, dup := s.readStmts[query]; dup || s.stmts == nil {
		st.Close()
		return old
	}
	s.readStmts[query] = st
	return st
}

// query runs a read on the read pool, through a prepared statement where
// the dialect wants one (modernc's SQLite parses every unprepared query,
// which cost replays a third of their CPU). query has ? placeholders.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = s.q(query)
	if st := s.readStmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.read.QueryContext(ctx, query, args...)
}

// queryReadRow is query for a read of one row.
func (s *Store) queryReadRow(ctx context.Context, query string, args ...any) *sql.Row {
	if s.d.InProcess {
		ctx = context.WithoutCancel(ctx) // one row by its key: it does not run long
	}
	query = s.q(query)
	if st := s.readStmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.read.QueryRowContext(ctx, query, args...)
}

var _ store.Store = (*Store)(nil)

// New returns a store that writes through write and reads through read
// (they may be the same pool). closer runs on Close.
func New(d Dialect, write, read *sql.DB, limits store.Limits, closer func() error) *Store {
	if limits == (store.Limits{}) {
		limits = store.DefaultLimits()
	}
	s := &Store{d: d, write: write, read: read, limits: limits, closer: closer,
		stmts: map[string]*sql.Stmt{}, unprepared: map[string]struct{}{}, readStmts: map[string]*sql.Stmt{}}
	s.vis = s
	s.prefixScanLimit = DefaultPrefixScanLimit
	return s
}

// DefaultPrefixScanLimit is a store's prefix scan limit unless
// WithPrefixScanLimit sets another.
const DefaultPrefixScanLimit = 20000

// WithPrefixScanLimit sets how many runs a workflow id or business key
// prefix may match for a listing to read them through the prefix's index
// and sort them by start time; a prefix that matches more is checked on
// the runs another index lists in start order, where matches are at least
// that dense on average (see ListRuns). n <= 0 keeps the default. It
// returns s.
func (s *Store) WithPrefixScanLimit(n int) *Store {
	if n > 0 {
		s.prefixScanLimit = n
		if s.vis != s {
			s.vis.prefixScanLimit = n
		}
	}
	return s
}

// WithVisibility keeps the visibility records (store.VisibilityStore) in
// vis's database rather than s's, and returns s. A database with one writer
// at a time (SQLite) then writes the records beside the commits of runs,
// not between them. Migrate and Close take vis along.
func (s *Store) WithVisibility(vis *Store) *Store {
	s.vis = vis
	vis.prefixScanLimit = s.prefixScanLimit
	return s
}

// Limits implements store.Store.
func (s *Store) Limits() store.Limits { return s.limits }

// SerialWrites reports whether the database runs one write transaction at a
// time; the engine then uses one shard by default, since more would only
// split its group commits.
func (s *Store) SerialWrites() bool { return s.d.SerialWrites }

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	for _, st := range s.readStmts {
		st.Close()
	}
	s.stmts, s.readStmts = nil, nil
	s.mu.Unlock()
	err := s.closer()
	if s.vis != s {
		err = errors.Join(err, s.vis.Close())
	}
	return err
}

// q rewrites ? placeholders for the dialect.
func (s *Store) q(query string) string {
	if !s.d.Numbered {
		return query
	}
	if v, ok := s.numbered.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	s.numbered.Store(query, out)
	return out
}

// inTx runs fn in a write transaction and commits it, rolling back on error.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", s.d.Name, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		if s.d.Prepare {
			s.prepare(ctx)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", s.d.Name, err)
	}
	if s.d.Prepare {
		s.prepare(ctx)
	}
	return nil
}

// migrations are the schema of both SQL backends, NNNN_name.sql applied in
// order. They are written for SQLite's types; dialectSQL adapts them.
//
//go:embed migrations/*.sql
var migrations embed.FS

var blobType = regexp.MustCompile(`\bBLOB\b`)

// dialectSQL rewrites a migration's column types for the dialect.
func (s *Store) dialectSQL(ddl string) string {
	if s.d.Blob != "" {
		ddl = blobType.ReplaceAllString(ddl, s.d.Blob)
	}
	return ddl
}

// Migrate implements store.Store.
func (s *Store) Migrate(ctx context.Context) (from, to int, err error) {
	from, to, err = s.MigrateTo(ctx, math.MaxInt)
	if err == nil && s.vis != s {
		// Records written before they had a database of their own move
		// there once both schemas are current.
		err = s.moveVisibility(ctx)
	}
	return from, to, err
}

// MigrateTo is Migrate up to version upTo only, for tests of upgrades
// from an older schema.
func (s *Store) MigrateTo(ctx context.Context, upTo int) (from, to int, err error) {
	if s.vis != s {
		if _, _, err := s.vis.MigrateTo(ctx, upTo); err != nil {
			return 0, 0, fmt.Errorf("visibility database: %w", err)
		}
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return 0, 0, err
	}
	sort.Strings(names)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if s.d.MigrationLock != "" {
			if _, err := tx.ExecContext(ctx, s.d.MigrationLock); err != nil {
				return fmt.Errorf("%s: migration lock: %w", s.d.Name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("%s: schema_version: %w", s.d.Name, err)
		}
		var cur sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&cur); err != nil {
			return fmt.Errorf("%s: read schema version: %w", s.d.Name, err)
		}
		from, to = int(cur.Int64), int(cur.Int64)
		for _, name := range names {
			v, err := strconv.Atoi(strings.SplitN(path.Base(name), "_", 2)[0])
			if err != nil {
				return fmt.Errorf("%s: migration %s: name must start with its version", s.d.Name, name)
			}
			if v <= to || v > upTo {
				continue
			}
			body, err := fs.ReadFile(migrations, name)
			if err != nil {
				return err
			}
			for _, stmt := range splitStatements(s.dialectSQL(string(body)), s.d.Name) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("%s: migration %s: %w\n%s", s.d.Name, name, err, stmt)
				}
			}
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_version (version) VALUES (?)`), v); err != nil {
				return err
			}
			to = v
		}
		return nil
	})
	return from, to, err
}

// splitStatements splits a migration file into the statements of a
// dialect. Statements end with a semicolon at a line's end, except inside
// a trigger's BEGIN … END; (SQLite) or a $$-quoted body (PostgreSQL).
// A line "-- dialect: NAME" makes the statements after it apply only to
// the dialect NAME (its Dialect.Name), and "-- dialect: all" to every
// dialect again; any other comment line is dropped.
func splitStatements(body, dialect string) []string {
	var out []string
	var cur strings.Builder
	keep, inBody, dollars := true, false, 0
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(trimmed, "-- dialect:"); ok {
			name = strings.TrimSpace(name)
			keep = name == "all" || name == dialect
			continue
		}
		if strings.HasPrefix(trimmed, "--") || trimmed == "" || !keep {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		dollars += strings.Count(line, "$$")
		upper := strings.ToUpper(trimmed)
		if dollars%2 == 0 && (strings.HasSuffix(upper, " BEGIN") || upper == "BEGIN") {
			inBody = true
		}
		if !strings.HasSuffix(trimmed, ";") || dollars%2 == 1 || inBody && upper != "END;" {
			continue
		}
		out = append(out, strings.TrimSpace(cur.String()))
		cur.Reset()
		inBody = false
	}
	if s := strings.TrimSpace(cur.String()); s != "" && keep {
		out = append(out, s)
	}
	return out
}

// maxRowChunk is the most rows rowChunks puts in one statement.
const maxRowChunk = 128

// rowChunks splits the arguments of a multi-row insert, width per row,
// into chunks of a power of two rows (at most maxRowChunk), largest
// first, and yields each chunk's row count and arguments. A multi-row
// insert so has a few texts, one per chunk size, which the statement
// cache keeps prepared; one text per row count filled the cache with
// row counts seen once, and the hot statements after them ran unprepared,
// parsed anew each time (a tenth of the engine's CPU on SQLite).
func rowChunks(width int, args []any) iter.Seq2[int, []any] {
	return func(yield func(int, []any) bool) {
		for rows := len(args) / width; rows > 0; {
			n := min(maxRowChunk, 1<<(bits.Len(uint(rows))-1))
			if !yield(n, args[:n*width]) {
				return
			}
			args, rows = args[n*width:], rows-n
		}
	}
}

// placeholders returns "(?, ?, ...)" with n marks, repeated rows times and
// joined by commas, for multi-row inserts.
func placeholders(n, rows int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
}

func notFound(err error, what error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return what
	}
	return err
}

// DB returns the pool writes go through, for tools and benchmarks that
// measure the database beside the store (the raw commit rate).
func (s *Store) DB() *sql.DB { return s.write }
