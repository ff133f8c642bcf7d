// Package sqlite is Strand's embedded backend: SQLite files, no other
// process. It uses the pure-Go modernc.org/sqlite driver in WAL mode with
// synchronous=FULL, so a commit is on disk before it returns.
//
// A store is two files: Path holds the runs (executions, history, tasks,
// documents, namespaces, …) and VisibilityPath the visibility records
// that listing and counting read. SQLite runs one write transaction at a
// time per file; with the records in a file of their own, the engine's
// visibility writer does not hold up the commits of runs.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/sqlstore"
)

// DefaultPath is the database file used when none is given.
const DefaultPath = "strand.db"

// VisibilitySuffix is appended to Options.Path for the visibility file
// when Options.VisibilityPath is empty.
const VisibilitySuffix = "-visibility"

// Options configure the backend.
type Options struct {
	// Path is the database file; DefaultPath when empty.
	Path string
	// VisibilityPath is the file of the visibility records; Path +
	// VisibilitySuffix when empty.
	VisibilityPath string
	// Synchronous is SQLite's synchronous pragma: FULL (default, durable
	// across power loss) or NORMAL (durable across process crashes only).
	Synchronous string
	// Limits are the payload limits; store.DefaultLimits when zero.
	Limits store.Limits
	// PrefixScanLimit is how many runs a workflow id or business key
	// prefix may match for a listing to read them through the prefix's
	// index; sqlstore.DefaultPrefixScanLimit when zero (see
	// sqlstore.Store.WithPrefixScanLimit).
	PrefixScanLimit int
}

// dialect is SQLite's, for both files.
var dialect = sqlstore.Dialect{Name: "sqlite", Prepare: true, SerialWrites: true, IndexedBy: true, RowIDs: true, InProcess: true}

// Open opens (creating if needed) the database files. Call Migrate before
// first use: it also moves the visibility records of a database written
// before they had a file of their own.
func Open(ctx context.Context, opts Options) (*sqlstore.Store, error) {
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if opts.VisibilityPath == "" {
		opts.VisibilityPath = opts.Path + VisibilitySuffix
	}
	switch opts.Synchronous {
	case "":
		opts.Synchronous = "FULL"
	case "FULL", "NORMAL", "EXTRA":
	default:
		return nil, fmt.Errorf("%w: sqlite synchronous %q: want FULL, NORMAL or EXTRA", store.ErrInvalidArgument, opts.Synchronous)
	}
	if opts.VisibilityPath == opts.Path {
		return nil, fmt.Errorf("%w: sqlite: the visibility file must differ from the database file %s", store.ErrInvalidArgument, opts.Path)
	}
	runs, err := openFile(ctx, opts.Path, opts)
	if err != nil {
		return nil, err
	}
	vis, err := openFile(ctx, opts.VisibilityPath, opts)
	if err != nil {
		runs.Close()
		return nil, err
	}
	return runs.WithVisibility(vis).WithPrefixScanLimit(opts.PrefixScanLimit), nil
}

// openFile opens one database file: a pool with its one writing connection,
// a pool of readers, and the checkpointer's connection.
func openFile(ctx context.Context, path string, opts Options) (*sqlstore.Store, error) {
	params := url.Values{}
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous("+opts.Synchronous+")")
	params.Add("_pragma", "busy_timeout(10000)")
	// A statement in a transaction of many keeps the pages it changes in a
	// statement journal (to undo itself alone); held in memory, it costs
	// no file writes (on disk it took a tenth of a busy engine's CPU).
	params.Add("_pragma", "temp_store(MEMORY)")
	base := "file:" + path + "?" + params.Encode()
	var pools []*sql.DB
	closeAll := func() error {
		var errs []error
		for _, db := range pools {
			errs = append(errs, db.Close())
		}
		return errors.Join(errs...)
	}
	open := func(dsn string, conns int) (*sql.DB, error) {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		db.SetMaxOpenConns(conns)
		db.SetMaxIdleConns(conns)
		db.SetConnMaxLifetime(0)
		pools = append(pools, db)
		return db, nil
	}
	// One writing connection: SQLite has one writer at a time, and queueing
	// in the pool is cheaper than its busy-wait. BEGIN IMMEDIATE takes the
	// write lock up front so a transaction never fails to upgrade. Its log
	// is checkpointed by the checkpointer (checkpoint.go).
	write, err := open(base+fmt.Sprintf("&_txlock=immediate&_pragma=wal_autocheckpoint(%d)", writerCheckpointPages), 1)
	if err != nil {
		return nil, err
	}
	read, err := open(base, 4)
	if err != nil {
		return nil, err
	}
	ckpt, err := open(base, 1)
	if err != nil {
		return nil, err
	}
	if err := write.PingContext(ctx); err != nil {
		closeAll()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	c := startCheckpointer(ckpt, slog.Default().With("file", path))
	return sqlstore.New(dialect, write, read, opts.Limits, func() error {
		c.close()
		return closeAll()
	}), nil
}
