package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// TestSmallCachesCompleteManyWaitingRuns opens 5,000 runs that each run a
// step and wait for a signal, on an engine that caches 500 runs and a
// worker that caches 300, so that runs leave both caches and come back
// mid-wait, and the engine's cache must shrink back to its size once they
// are idle; then it signals each and every run must complete with its own
// result. A run the engine evicted as it created it used to hand out its
// first workflow task detached from the cache, where nobody could complete
// or expire it: about three runs in four never started.
func TestSmallCachesCompleteManyWaitingRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const n = 5000
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, testdb.SQLite(t), engine.Options{Logger: logger(), RunCacheSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var arrived atomic.Int64
	w := worker.New(eng, worker.Options{Logger: logger(), CacheSize: 300, WorkflowPollers: 16})
	worker.RegisterWorkflowNamed(w, "waiting", func(ctx workflow.Context, i int) (int, error) {
		if _, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "arrive", i).Get(ctx); err != nil {
			return 0, err
		}
		v, _ := workflow.GetSignalChannel[int](ctx, "go").Receive(ctx)
		return i + v, nil
	})
	worker.RegisterStepNamed(w, "arrive", func(ctx context.Context, i int) (int, error) {
		arrived.Add(1)
		return i, nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	c := client.New(eng, client.Options{})
	id := func(i int) string { return fmt.Sprint("waiting-", i) }
	each := func(f func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for i := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := f(i); err != nil {
					t.Errorf("%s: %v", id(i), err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	each(func(i int) error {
		_, err := client.StartByName[int](ctx, c, "waiting", i, client.StartOptions{ID: id(i)})
		return err
	})
	for last, since := int64(-1), time.Now(); arrived.Load() < n; time.Sleep(20 * time.Millisecond) {
		if a := arrived.Load(); a != last {
			last, since = a, time.Now()
		} else if time.Since(since) > 30*time.Second {
			t.Fatalf("%d of %d runs ran their first step, and none more for 30s", a, n)
		}
	}
	// As the runs turn idle (their workflow tasks after the first step
	// done), they leave the cache down to its size (and a few in use).
	for least, since := eng.Stats().CachedRuns, time.Now(); eng.Stats().CachedRuns > 550; time.Sleep(20 * time.Millisecond) {
		if n := eng.Stats().CachedRuns; n < least {
			least, since = n, time.Now()
		} else if time.Since(since) > 30*time.Second {
			t.Fatalf("the engine caches %d runs, over its 500, and none left for 30s", n)
		}
	}
	each(func(i int) error { return c.Signal(ctx, id(i), "", "go", 1) })
	each(func(i int) error {
		out, err := client.GetRun[int](c, id(i), "").Get(ctx)
		if err == nil && out != i+1 {
			err = fmt.Errorf("result %d, want %d", out, i+1)
		}
		return err
	})
	if got := arrived.Load(); got != n {
		t.Errorf("the first step ran %d times for %d runs", got, n)
	}
}
