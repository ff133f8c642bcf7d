package engine

// Retention purge.
//
// A run that closes writes a retention timer task (closeRun), as in
// Cadence: the durable record that the run is to be deleted once its
// namespace's retention has passed, processed by the shard's owner. The
// timer goes to a partition of the timer queue of its own,
// retentionPartition, with its own ack level (store.AckLevels.Retention),
// instead of the shard's timer heap: a million runs expiring at once then
// neither fill the heap nor delay the user timers, step timeouts and
// retries due meanwhile.
//
// Each shard's purger reads its due retention timers in key order, a page
// (Options.PurgeBatch) at a time, and purges the page's runs together: it
// deletes their visibility records (one call per namespace), then commits
// one batch that deletes their executions, history, documents and current
// rows (where those still point at them) through the shard's committer,
// fenced like any write. Then it moves the purge's level past the page;
// the next batch of the shard persists the level and deletes the page's
// timers (addAckLevels). A crash before that leaves the timers in the
// store: the next owner purges their runs again, and finds nothing left
// to delete. Every retention timer in the store was written by a close
// that landed, so a run the purger reads one for is closed (closed is
// final), and nothing not expired is ever deleted: runs still open have no
// retention timer, and runs closed later, or in namespaces with a longer
// retention, have later ones.
//
// The purge yields to live work: after a batch during which the node
// committed runs' transitions, the next batch of any of its shards waits
// long enough that the purge takes at most Options.PurgeShare of the time
// (purgePace); on an idle node the shards purge at once, side by side.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/strandhq/strand/store"
)

// retentionPartition is the partition of the timer queue that holds the
// retention timers.
const retentionPartition = "retention"

// PurgeSettle is how long past its fire time a retention timer waits before
// the purge reads it. A timer is written at least store.MinRetention
// before it fires, by a commit that gives up after a minute, so once a
// timer is this late every timer before it is in the store: the purger's
// level never passes one still to come.
const PurgeSettle = time.Minute

// purgeIdle is how often a purger with nothing due looks again.
const purgeIdle = time.Second

// purgeState is a shard's retention purge; its fields are guarded by the
// shard's mu.
type purgeState struct {
	// level is how far the purge has gone: the run of every retention
	// timer below it is purged. addAckLevels persists it.
	level store.TaskKey
	// lag is how late the oldest due retention timer not yet purged is
	// (zero when the purge has caught up).
	lag time.Duration
}

// RetentionTask returns the timer task that has the engine purge run at
// fire, as a close writes it, without its task id. It is for tools that
// write closed runs into a store directly (the purge benchmark).
func RetentionTask(run store.RunKey, fire time.Time) store.Task {
	return store.Task{Category: store.CategoryTimer, Partition: retentionPartition, Type: timerRetention, Run: run,
		Key: store.TaskKey{FireTime: store.Time(fire)}, Data: encodeTaskData(&taskData{})}
}

// purgeLoop purges the runs of the shard's due retention timers until ctx
// ends.
func (s *shard) purgeLoop(ctx context.Context) {
	s.mu.Lock()
	cursor := s.ackLevels.Retention
	s.purge.level = cursor
	s.mu.Unlock()
	settle := s.e.opts.purgeSettle
	if settle == 0 {
		settle = PurgeSettle
	}
	var wait time.Duration
	for {
		if wait > 0 && !sleep(ctx, wait) {
			return
		}
		wait = purgeIdle
		if hook := s.e.opts.purgeHook; hook != nil {
			hook(ctx, s.id)
		}
		if !s.e.purgePace.wait(ctx) {
			return
		}
		page, err := s.e.store.ReadTasks(ctx, store.ReadTasksRequest{ShardID: s.id, PageSize: s.e.opts.PurgeBatch,
			Range: store.TaskRange{Category: store.CategoryTimer, Partition: retentionPartition, Min: cursor,
				Max: store.TaskKey{FireTime: store.Time(time.Now().Add(-settle))}}})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("read retention timers; trying again", "err", err)
			}
			continue
		}
		if len(page.Tasks) == 0 {
			s.mu.Lock()
			s.purge.lag = 0
			s.mu.Unlock()
			continue
		}
		s.mu.Lock()
		s.purge.lag = max(0, time.Since(page.Tasks[0].Key.FireTime)-settle)
		s.mu.Unlock()
		before := s.e.runsCommitted.Load()
		begun := time.Now()
		n, err := s.purgeRuns(ctx, page.Tasks)
		took := time.Since(begun)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, errNotOwner) {
				return // the shard stops; its next owner goes on from the persisted level
			}
			s.log.Warn("purge runs past their retention; trying again", "runs", n, "err", err)
			continue
		}
		last := page.Tasks[len(page.Tasks)-1].Key
		cursor = store.TaskKey{FireTime: last.FireTime, TaskID: last.TaskID + 1}
		s.mu.Lock()
		s.purge.level = cursor
		s.mu.Unlock()
		// Runs' transitions committed meanwhile, or waiting to: the node is
		// busy.
		busy := s.e.runsCommitted.Load() > before || len(s.commitCh) > 0
		s.e.metrics.observePurge(took, n)
		wait = 0
		if len(page.NextPageToken) == 0 {
			wait = purgeIdle // all that is due is purged
		}
		if busy {
			s.e.purgePace.after(took, s.e.opts.PurgeShare)
		}
	}
}

// purgeRuns purges the runs of retention timers: their visibility records,
// then their executions, history, documents and current rows in one batch;
// then it drops them from the cache. It returns how many runs it purged.
func (s *shard) purgeRuns(ctx context.Context, timers []store.Task) (int, error) {
	seen := make(map[store.RunKey]bool, len(timers))
	keys := make([]store.RunKey, 0, len(timers))
	byNamespace := map[string][]string{}
	for _, t := range timers {
		if t.Type != timerRetention || seen[t.Run] {
			continue
		}
		seen[t.Run] = true
		keys = append(keys, t.Run)
		byNamespace[t.Run.Namespace] = append(byNamespace[t.Run.Namespace], t.Run.RunID)
	}
	if len(keys) == 0 {
		return 0, nil
	}
	// Visibility first: a listing never shows a run that is gone. If the
	// batch below fails, the timers stay and this is done again.
	for ns, ids := range byNamespace {
		if err := s.e.store.DeleteVisibility(ctx, ns, ids...); err != nil {
			return len(keys), fmt.Errorf("engine: delete the visibility records of %d runs of %s: %w", len(ids), ns, err)
		}
	}
	if err := s.commit(ctx, &part{deleteRuns: keys}); err != nil {
		return len(keys), fmt.Errorf("engine: delete %d runs: %w", len(keys), err)
	}
	// A cached copy of a purged run is dropped: the next caller reads the
	// store and finds it gone. One in use meanwhile (a describe of the
	// closed run) finishes with the state it had.
	s.mu.Lock()
	for _, k := range keys {
		s.forgetLocked(k)
	}
	s.mu.Unlock()
	return len(keys), nil
}

// retentionAckLocked moves levels.Retention to the purge's level when it
// is behind, deleting the retention timers in between with b. s.mu is held.
func (s *shard) retentionAckLocked(b *store.Batch, levels *store.AckLevels) bool {
	if !levels.Retention.Less(s.purge.level) {
		return false
	}
	b.CompleteTasks = append(b.CompleteTasks, store.TaskRange{Category: store.CategoryTimer, Partition: retentionPartition,
		Min: levels.Retention, Max: s.purge.level})
	levels.Retention = s.purge.level
	return true
}

// purgePace spaces the purge batches of a node's shards while the node has
// live work: after a batch that took d, no shard starts the next one for
// d×(1−share)/share, so that the purge takes at most share of the time
// however many shards purge.
type purgePace struct {
	mu   sync.Mutex
	next time.Time
}

// wait waits until a batch may start; false when ctx ended first.
func (p *purgePace) wait(ctx context.Context) bool {
	for {
		p.mu.Lock()
		d := time.Until(p.next)
		p.mu.Unlock()
		if d <= 0 {
			return ctx.Err() == nil
		}
		if !sleep(ctx, d) {
			return false
		}
	}
}

// after records a batch that took took while the node was busy.
func (p *purgePace) after(took time.Duration, share float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from := time.Now()
	if p.next.After(from) {
		from = p.next
	}
	p.next = from.Add(time.Duration(float64(took) * (1 - share) / share))
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
