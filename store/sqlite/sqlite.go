// Package sqlite is Strand's embedded backend: one SQLite file, no other
// process. It uses the pure-Go modernc.org/sqlite driver in WAL mode with
// synchronous=FULL, so a commit is on disk before it returns.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/sqlstore"
)

// DefaultPath is the database file used when none is given.
const DefaultPath = "strand.db"

// Options configure the backend.
type Options struct {
	// Path is the database file; DefaultPath when empty.
	Path string
	// Synchronous is SQLite's synchronous pragma: FULL (default, durable
	// across power loss) or NORMAL (durable across process crashes only).
	Synchronous string
	// Limits are the payload limits; store.DefaultLimits when zero.
	Limits store.Limits
}

// Open opens (creating if needed) the database file. Call Migrate before
// first use.
func Open(ctx context.Context, opts Options) (*sqlstore.Store, error) {
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	switch opts.Synchronous {
	case "":
		opts.Synchronous = "FULL"
	case "FULL", "NORMAL", "EXTRA":
	default:
		return nil, fmt.Errorf("%w: sqlite synchronous %q: want FULL, NORMAL or EXTRA", store.ErrInvalidArgument, opts.Synchronous)
	}
	params := url.Values{}
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous("+opts.Synchronous+")")
	params.Add("_pragma", "busy_timeout(10000)")
	base := "file:" + opts.Path + "?"
	// One writing connection: SQLite has one writer at a time, and queueing
	// in the pool is cheaper than its busy-wait. BEGIN IMMEDIATE takes the
	// write lock up front so a transaction never fails to upgrade.
	write, err := sql.Open("sqlite", base+params.Encode()+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", opts.Path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	read, err := sql.Open("sqlite", base+params.Encode())
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", opts.Path, err)
	}
	read.SetMaxOpenConns(4)
	read.SetMaxIdleConns(4)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		read.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", opts.Path, err)
	}
	d := sqlstore.Dialect{Name: "sqlite", Prepare: true, SerialWrites: true, IndexedBy: true, RowIDs: true}
	return sqlstore.New(d, write, read, opts.Limits, func() error {
		return errors.Join(read.Close(), write.Close())
	}), nil
}
