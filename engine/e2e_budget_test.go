package engine_test

import (
	"context"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/worker"
)

// TestCacheGivesWayNearMemoryLimit opens 400 runs waiting for a signal
// on an engine whose run cache may hold 4 MiB, then lowers the process's
// soft memory limit to its live heap: the cache's budget must fall to its
// floor (a sixteenth), the idle runs leave the cache down to it, and every
// run, signaled, completes with its own result. With the limit back, the
// budget is the whole 4 MiB again.
//
// It once opened 1,500 runs under 32 MiB. What it needs is runs that fill
// the cache well beyond its floor and that are evicted down to it: a
// waiting run is charged some 2 KiB, so 400 runs hold about 800 KiB, three
// times the 256 KiB floor (1,500 runs held 3.2 MB, 1.6 times the 2 MiB
// floor of 32 MiB), and most of them still leave the cache.
func TestCacheGivesWayNearMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const n = 400
	const most = 4 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, testdb.SQLite(t), engine.Options{Logger: logger(), CacheMemory: most})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	f := startWaitingWorker(ctx, t, eng, worker.Options{Logger: logger(), WorkflowPollers: 16}, "budget-", n)
	defer f.stop()
	c, id, each, arrived := f.c, f.id, f.each, f.arrived
	each(func(i int) error {
		_, err := client.StartByName[int](ctx, c, "waiting", i, client.StartOptions{ID: id(i)})
		return err
	})
	eventually := func(what string, cond func(st engine.Stats) bool) engine.Stats {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			st := eng.Stats()
			if cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("after a minute, not %s: %+v", what, st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	eventually("every run past its step", func(engine.Stats) bool { return arrived.Load() == n })
	before := eventually("the runs cached beyond the floor, within the budget", func(st engine.Stats) bool {
		return st.CacheBudget == most && st.CacheBytes > most/16
	})

	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	old := debug.SetMemoryLimit(int64(live[0].Value.Uint64()))
	restored := false
	restore := func() {
		if !restored {
			debug.SetMemoryLimit(old)
			restored = true
		}
	}
	defer restore()
	after := eventually("the budget at its floor and the cache within it", func(st engine.Stats) bool {
		return st.CacheBudget == most/16 && st.CacheBytes <= most/16
	})
	t.Logf("near the limit the cache went from %d runs in %d bytes to %d runs in %d", before.CachedRuns, before.CacheBytes, after.CachedRuns, after.CacheBytes)

	each(func(i int) error {
		if err := c.Signal(ctx, id(i), "", "go", 1); err != nil {
			return err
		}
		out, err := client.GetRun[int](c, id(i), "").Get(ctx)
		if err == nil && out != i+1 {
			err = fmt.Errorf("result %d, want %d", out, i+1)
		}
		return err
	})
	restore()
	eventually("the whole budget back once the limit is", func(st engine.Stats) bool { return st.CacheBudget == most })
}
