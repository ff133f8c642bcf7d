package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"time"
)

// The write-ahead log is copied into the database file (checkpointed) by a
// goroutine of the store's, not by the committing connection. SQLite's
// default (wal_autocheckpoint) runs a checkpoint inside the commit that
// takes the log past 1,000 pages: every few group commits the single
// writer stops to copy pages and sync the database file, and every commit
// queued behind it waits. A passive checkpoint on a connection of its own
// takes no write lock, so it runs on another core beside the commits.
//
// The writer keeps an automatic checkpoint at writerCheckpointPages as a
// backstop. A log the checkpointer copied whole starts over at the next
// write; under a heavy load, with readers always in the log, a passive
// checkpoint seldom finds it copied whole, and the log grows to the
// backstop (a million runs in `strand bench`: 85 MB) before it starts over.

// checkpointInterval is how often the log is checkpointed.
const checkpointInterval = 100 * time.Millisecond

// writerCheckpointPages is the log size, in pages, at which the writer
// checkpoints itself (SQLite's default is 1,000).
const writerCheckpointPages = 20000

// checkpointer runs passive checkpoints on db until stopped.
type checkpointer struct {
	stop context.CancelFunc
	done chan struct{}
}

func startCheckpointer(db *sql.DB, log *slog.Logger) *checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(checkpointInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var busy, logPages, copied int64
			err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logPages, &copied)
			if err != nil && ctx.Err() == nil {
				log.Warn("sqlite: checkpoint", "err", err)
			}
		}
	}()
	return c
}

// close stops the checkpointer and waits for it.
func (c *checkpointer) close() {
	c.stop()
	<-c.done
}
