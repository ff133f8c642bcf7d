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
	// PrefixScanLimit is how many runs a workflow id or business key
	// prefix may match for a listing to read them through the prefix's
	// index; sqlstore.DefaultPrefixScanLimit when zero (see
	// sqlstore.Store.WithPrefixScanLimit).
	PrefixScanLimit int
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
		CompactCounts: compactCounts,
		OpaqueBounds:  true,
		Bytewise:      ` COLLATE "C"`,
	}
	return sqlstore.New(d, db, db, opts.Limits, db.Close).WithPrefixScanLimit(opts.PrefixScanLimit), nil
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

// compactLock is the advisory lock a compaction of the count deltas holds:
// one at a time, and one that finds it taken leaves the work to the holder.
const compactLock = 738774

// compactCounts folds the visibility count deltas the triggers appended
// into the counters, in one transaction: each delta row is deleted and
// added to its counters in the same statement, so a count (which reads
// counters and deltas in one statement) sees every change exactly once,
// before or after. Hour and attribute counters that reach zero are
// deleted, so that they do not pile up as runs are purged.
func compactCounts(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("postgres: compact counts: %w", err)
	}
	defer tx.Rollback()
	var locked bool
	if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock($1)`, compactLock).Scan(&locked); err != nil {
		return fmt.Errorf("postgres: compact counts: %w", err)
	}
	if !locked {
		return nil
	}
	// Each fold returns the counters it changed; the ones at zero are
	// deleted by a second statement (one statement may not change a row
	// twice).
	folds := []struct{ fold, drop string }{{
		fold: `WITH d AS (DELETE FROM visibility_count_deltas RETURNING namespace, type, status, start_hour, n),
			t AS (INSERT INTO visibility_counts (namespace, type, status, n)
				SELECT namespace, type, status, SUM(n) FROM d GROUP BY namespace, type, status
				ON CONFLICT (namespace, type, status) DO UPDATE SET n = visibility_counts.n + excluded.n)
			INSERT INTO visibility_hour_counts (namespace, start_hour, type, status, n)
				SELECT namespace, start_hour, type, status, SUM(n) FROM d GROUP BY namespace, start_hour, type, status
				ON CONFLICT (namespace, start_hour, type, status) DO UPDATE SET n = visibility_hour_counts.n + excluded.n
			RETURNING namespace, start_hour::text, type, status::text, n`,
		drop: `DELETE FROM visibility_hour_counts h
			USING unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS z(namespace, start_hour, type, status)
			WHERE h.namespace = z.namespace AND h.start_hour = z.start_hour::bigint AND h.type = z.type
			AND h.status = z.status::smallint AND h.n = 0`,
	}, {
		fold: `WITH d AS (DELETE FROM visibility_attribute_count_deltas RETURNING namespace, name, value, n)
			INSERT INTO visibility_attribute_counts (namespace, name, value, n)
				SELECT namespace, name, value, SUM(n) FROM d GROUP BY namespace, name, value
				ON CONFLICT (namespace, name, value) DO UPDATE SET n = visibility_attribute_counts.n + excluded.n
			RETURNING namespace, name, value, '', n`,
		drop: `DELETE FROM visibility_attribute_counts a
			USING unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS z(namespace, name, value, unused)
			WHERE a.namespace = z.namespace AND a.name = z.name AND a.value = z.value AND a.n = 0`,
	}}
	for _, f := range folds {
		var zero [4][]string // the key columns of the counters at zero
		rows, err := tx.QueryContext(ctx, f.fold)
		if err != nil {
			return fmt.Errorf("postgres: compact counts: %w", err)
		}
		for rows.Next() {
			var key [4]string
			var n int64
			if err := rows.Scan(&key[0], &key[1], &key[2], &key[3], &n); err != nil {
				rows.Close()
				return fmt.Errorf("postgres: compact counts: %w", err)
			}
			if n == 0 {
				for i := range key {
					zero[i] = append(zero[i], key[i])
				}
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("postgres: compact counts: %w", err)
		}
		if len(zero[0]) > 0 {
			if _, err := tx.ExecContext(ctx, f.drop, zero[0], zero[1], zero[2], zero[3]); err != nil {
				return fmt.Errorf("postgres: compact counts: drop empty counters: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("postgres: compact counts: %w", err)
	}
	// Counts read the deltas tables whole: vacuum the rows just deleted
	// now rather than when autovacuum next looks (a minute, by default),
	// which under a steady stream of writes would let them grow to the
	// deletions of that minute.
	if _, err := db.ExecContext(ctx, `VACUUM (SKIP_LOCKED) visibility_count_deltas, visibility_attribute_count_deltas`); err != nil {
		return fmt.Errorf("postgres: compact counts: vacuum: %w", err)
	}
	return nil
}
