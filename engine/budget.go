package engine

import (
	"context"
	"math"
	"runtime/debug"
	runtimemetrics "runtime/metrics"
	"time"
)

// The cache's budget gives way to the rest of the heap. Options.CacheMemory
// is the most the run cache may hold; under a soft memory limit (the
// binary sets one: the caches' budgets plus headroom) the cache holds less
// while the rest of the live heap (queued work above all: a burst of a
// million signals queues a million workflow tasks) grows, so that the live
// heap stays within cacheHeapShare of the limit. Without that, a node whose
// queued work and full cache together neared the limit spent most of its
// CPU in the collector: each cycle marked the whole heap and came again
// after the little the limit left (at a million queued tasks, a cycle every
// 90 MB allocated, 41% of the CPU). A smaller cache costs a store read per
// run that left it; at that many runs the cache missed anyway.

// cacheHeapShare is the share of the memory limit the live heap may take
// before the run cache gives way.
const cacheHeapShare = 0.6

// minCacheShare is the least share of Options.CacheMemory the run cache
// keeps, however full the heap.
const minCacheShare = 16

// governInterval is how often the budget is worked out anew.
const governInterval = 250 * time.Millisecond

// cacheBudget returns what the run cache may hold: at most most, at least
// most/minCacheShare, and no more than leaves the live heap (live bytes, of
// which cached are the cache's) within cacheHeapShare of limit (none when
// limit is math.MaxInt64 or not positive).
func cacheBudget(most, limit, live, cached int64) int64 {
	if limit <= 0 || limit == math.MaxInt64 {
		return most
	}
	others := max(live-cached, 0)
	b := int64(float64(limit)*cacheHeapShare) - others
	return min(max(b, most/minCacheShare), most)
}

// governCache works out the run cache's budget every governInterval until
// ctx ends, and has the shards let go of runs at once when it shrinks.
func (e *Engine) governCache(ctx context.Context) {
	sample := []runtimemetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtimemetrics.Read(sample)
	if sample[0].Value.Kind() != runtimemetrics.KindUint64 {
		return // a runtime without the metric: the budget stays CacheMemory
	}
	every(ctx, governInterval, nil, func() {
		runtimemetrics.Read(sample)
		live := int64(sample[0].Value.Uint64())
		b := cacheBudget(e.opts.CacheMemory, debug.SetMemoryLimit(-1), live, e.cacheBytes.Load())
		if old := e.cacheBudget.Swap(b); b < old {
			e.evictAll()
		}
	})
}

// evictAll has each shard of the node let go of runs until the cache is
// within its budget.
func (e *Engine) evictAll() {
	e.shardMu.RLock()
	shards := make([]*shard, 0, len(e.shards))
	for _, s := range e.shards {
		if s != nil {
			shards = append(shards, s)
		}
	}
	e.shardMu.RUnlock()
	for _, s := range shards {
		s.mu.Lock()
		s.evictLocked()
		s.mu.Unlock()
	}
}
