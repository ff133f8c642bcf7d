// Package postgres is Strand's production backend on PostgreSQL, through
// pgx v5. Every connection runs with synchronous_commit on, so a commit is
// durable before it returns.
package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/sqlstore"
)

// Options configure the backend.
type Options struct {
	// URL is a PostgreSQL connection string (postgres://user@host/db?...).
	URL string
	// MaxConns bounds the connection pool; 20 when zero.
	MaxConns int
	// Limits are the payload limits; store.DefaultLimits when zero.
	Limits store.Limits
}

// Open connects to PostgreSQL. Call Migrate before first use.
func Open(ctx context.Context, opts Options) (*sqlstore.Store, error) {
	cfg, err := pgx.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres url: %v", store.ErrInvalidArgument, err)
	}
	if _, set := cfg.RuntimeParams["synchronous_commit"]; !set {
		cfg.RuntimeParams["synchronous_commit"] = "on"
	}
	db := stdlib.OpenDB(*cfg)
	if opts.MaxConns == 0 {
		opts.MaxConns = 20
	}
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect %s@%s:%d/%s: %w", cfg.User, cfg.Host, cfg.Port, cfg.Database, err)
	}
	d := sqlstore.Dialect{
		Name:          "postgres",
		Numbered:      true,
		ForUpdate:     " FOR UPDATE",
		MigrationLock: "SELECT pg_advisory_xact_lock(738773)",
		Blob:          "BYTEA",
	}
	return sqlstore.New(d, db, db, opts.Limits, db.Close), nil
}
