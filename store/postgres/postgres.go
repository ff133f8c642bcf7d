// Package postgres is Strand's production backend on PostgreSQL, through
// pgx v5. Every connection runs with synchronous_commit on, so a commit is
// durable before it returns.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	// A transaction left open by a process that stopped (paused, or cut
	// off) would hold its shard's row lock, and the node taking the shard
	// over would wait for it: the server ends such a transaction instead.
	if _, set := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = "5s"
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
		Pipeline:      pipeline,
	}
	return sqlstore.New(d, db, db, opts.Limits, db.Close), nil
}

// pipeline runs a commit's statements in one transaction, sent as one
// batch: a commit of many runs costs three round trips (begin, the batch,
// commit) instead of one per statement.
func pipeline(ctx context.Context, db *sql.DB, ops []sqlstore.Op) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connection: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		tx, err := pc.Begin(ctx)
		if err != nil {
			return fmt.Errorf("postgres: begin: %w", err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		var b pgx.Batch
		for _, o := range ops {
			b.Queue(o.Query, o.Args...)
		}
		br := tx.SendBatch(ctx, &b)
		for _, o := range ops {
			if o.Scan != nil {
				err = o.Scan(row{br.QueryRow()})
			} else {
				var tag pgconn.CommandTag
				if tag, err = br.Exec(); err != nil {
					err = fmt.Errorf("postgres: %s: %w", o.What, err)
				} else if o.Check != nil {
					err = o.Check(tag.RowsAffected())
				}
			}
			if err != nil {
				br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("postgres: batch: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("postgres: commit: %w", err)
		}
		return nil
	})
}

// row gives pgx's row database/sql's no-rows error.
type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}
