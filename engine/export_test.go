package engine

import (
	"context"
	"fmt"
	"time"
)

// SetPurgeKnobs sets the options' test knobs for the retention purge (for
// package engine_test): retentionOf replaces namespaces' retention for the
// runs that close from then on; hook runs before each purger reads its due
// timers; due timers are read at once, without purgeSettle.
func SetPurgeKnobs(o *Options, retentionOf func(namespace string) (time.Duration, bool), hook func(ctx context.Context, shardID int32)) {
	o.retentionOf, o.purgeHook, o.purgeSettle = retentionOf, hook, time.Nanosecond
}

// RetentionPartition is the timer queue partition of retention timers.
const RetentionPartition = retentionPartition

// CheckCache verifies the run caches' accounting: each shard's bytes are
// the sum of its runs' charges, its LRU list holds only cached runs, and
// the engine's total is the sum of its shards'.
func CheckCache(e *Engine) error {
	e.shardMu.RLock()
	var shards []*shard
	for _, s := range e.shards {
		if s != nil {
			shards = append(shards, s)
		}
	}
	e.shardMu.RUnlock()
	var total int64
	for _, s := range shards {
		s.mu.Lock()
		var sum int64
		for _, r := range s.runs {
			sum += r.charged
		}
		bad := sum != s.cacheBytes
		for r := s.lru.back(); r != nil && !bad; r = r.lruPrev {
			bad = s.runs[r.key] != r
		}
		if !s.cacheGone {
			total += s.cacheBytes
		}
		id, held := s.id, s.cacheBytes
		s.mu.Unlock()
		if bad {
			return fmt.Errorf("shard %d: %d bytes counted, its runs are charged %d, or its LRU list holds a run it does not cache", id, held, sum)
		}
	}
	if got := e.cacheBytes.Load(); got != total {
		return fmt.Errorf("the engine counts %d bytes cached, its shards %d", got, total)
	}
	return nil
}

// Crash stops e as a node that dies would: its goroutines and shards stop,
// but it hands no shard back and leaves its row in the nodes table, so
// another node takes its shards only once its heartbeat expires, as from a
// node that did not hand them over. Close afterwards is harmless.
func Crash(e *Engine) {
	if e.cancel != nil {
		e.cancel()
	}
	e.cluster.legMu.Lock()
	e.cluster.closing = true
	e.cluster.legMu.Unlock()
	e.wg.Wait()
	e.shardMu.Lock()
	for i := range e.shards {
		e.shards[i] = nil
	}
	e.shardMu.Unlock()
}
