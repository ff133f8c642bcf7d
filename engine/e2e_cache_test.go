package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// TestSmallCachesCompleteManyWaitingRuns opens 1,000 runs that each run a
// step and wait for a signal, on an engine whose run cache may hold 64 KiB
// (some thirty waiting runs) and a worker whose cache may hold 256 KiB of
// instances (some twenty) and 64 KiB of journals (some seventy), so that
// runs leave both caches and come back mid-wait. A caller then waits for each
// run's result: the callers must pin nothing, so the engine's cache must
// shrink back to its budget while all 1,000 wait. Then it signals each, and
// every run must complete with its own result, every caller seeing it.
// (A run the engine evicted as it created it used to hand out its first
// workflow task detached from the cache, where nobody could complete or
// expire it: about three runs in four never started.)
//
// The sizes are a fifth of what they once were (5,000 runs over caches of
// 256 KiB, 1 MiB and 256 KiB): what the test shows depends on how many
// times over the runs fill each cache, not on how many runs there are, and
// those ratios are kept (the runs fill the engine's cache some 30 times
// over, the worker's instances 50 times, its journals 15 times), so runs
// still come back both from journals and from history (checked at the
// end), while 64 are started at once into an engine cache that holds 30.
func TestSmallCachesCompleteManyWaitingRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const n = 1000
	const budget = 64 << 10
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, testdb.SQLite(t), engine.Options{Logger: logger(), CacheMemory: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	// Journals for some hundred runs: runs come back both from their
	// journals and from history.
	f := startWaitingWorker(ctx, t, eng, worker.Options{Logger: logger(), CacheMemory: 256 << 10, JournalMemory: 64 << 10, WorkflowPollers: 16}, "waiting-", n)
	defer f.stop()
	c, id, each, arrived := f.c, f.id, f.each, f.arrived
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
	// Every caller waits at once, one goroutine each (the test's, not the
	// engine's).
	results := make(chan error, n)
	for i := range n {
		go func() {
			out, err := client.GetRun[int](c, id(i), "").Get(ctx)
			if err == nil && out != i+1 {
				err = fmt.Errorf("result %d, want %d", out, i+1)
			}
			if err != nil {
				err = fmt.Errorf("%s: %w", id(i), err)
			}
			results <- err
		}()
	}
	// As the runs turn idle (their workflow tasks after the first step
	// done), they leave the cache down to its budget, though a caller
	// waits for each.
	for least, since := eng.Stats(), time.Now(); ; time.Sleep(20 * time.Millisecond) {
		st := eng.Stats()
		if st.Waiters == n && st.CacheBytes <= budget {
			t.Logf("%d callers waiting; %d runs cached in %d bytes", st.Waiters, st.CachedRuns, st.CacheBytes)
			break
		}
		if st.CacheBytes < least.CacheBytes || st.Waiters > least.Waiters {
			least, since = st, time.Now()
		} else if time.Since(since) > 30*time.Second {
			t.Fatalf("for 30s: %d callers waiting of %d; the engine caches %d runs in %d bytes, over its %d", st.Waiters, n, st.CachedRuns, st.CacheBytes, budget)
		}
	}
	each(func(i int) error { return c.Signal(ctx, id(i), "", "go", 1) })
	for range n {
		if err := <-results; err != nil {
			t.Error(err)
		}
	}
	if got := arrived.Load(); got != n {
		t.Errorf("the first step ran %d times for %d runs", got, n)
	}
	if st := eng.Stats(); st.Waiters != 0 {
		t.Errorf("%d callers still registered as waiting after every result was seen", st.Waiters)
	}
	// The caches were small enough: runs came back to the worker both
	// from journals (a replay with no history read) and from history.
	replays, fromHistory := f.invocations.Load()-n, f.histories.reads.Load()
	t.Logf("%d replays in the worker, %d history reads", replays, fromHistory)
	if fromHistory == 0 || replays <= fromHistory {
		t.Errorf("%d replays, %d of them (at most) from history: want runs back both from journals and from history", replays, fromHistory)
	}
}

// waitingWorker is a worker running the "waiting" workflow (its step
// "arrive", then a wait for the signal "go"; its result is its input plus the
// signal's value) and what the tests of many waiting runs call it with.
type waitingWorker struct {
	c       *client.Client
	id      func(i int) string // run i's workflow id
	each    func(f func(i int) error)
	arrived *atomic.Int64 // the steps run
	// invocations counts how often the workflow's code started, replays
	// included; histories the worker's history reads.
	invocations *atomic.Int64
	histories   *historyCounter
	stop        func() // stops the worker (before the engine closes)
}

// startWaitingWorker starts a waitingWorker over eng with opts; its each calls f for runs 0 to n-1, 64 at a time, and
// stops the test at the first error.
func startWaitingWorker(ctx context.Context, t *testing.T, eng *engine.Engine, opts worker.Options, prefix string, n int) *waitingWorker {
	t.Helper()
	f := &waitingWorker{arrived: new(atomic.Int64), invocations: new(atomic.Int64), histories: &historyCounter{Service: eng}}
	w := worker.New(f.histories, opts)
	worker.RegisterWorkflowNamed(w, "waiting", func(ctx workflow.Context, i int) (int, error) {
		f.invocations.Add(1)
		if _, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "arrive", i).Get(ctx); err != nil {
			return 0, err
		}
		v, _ := workflow.GetSignalChannel[int](ctx, "go").Receive(ctx)
		return i + v, nil
	})
	worker.RegisterStepNamed(w, "arrive", func(ctx context.Context, i int) (int, error) {
		f.arrived.Add(1)
		return i, nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.stop = func() { w.Stop(context.Background()) }
	f.c = client.New(eng, client.Options{})
	f.id = func(i int) string { return fmt.Sprint(prefix, i) }
	f.each = func(do func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for i := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := do(i); err != nil {
					t.Errorf("%s: %v", f.id(i), err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	return f
}

// readCounter is a real store that counts the reads of one workflow's run
// state (reads) and of any current row (currentReads).
type readCounter struct {
	store.Store
	workflowID   string
	reads        atomic.Int64
	currentReads atomic.Int64
}

func (s *readCounter) GetCurrentExecution(ctx context.Context, shardID int32, ns, workflowID string) (store.CurrentExecution, error) {
	s.currentReads.Add(1)
	return s.Store.GetCurrentExecution(ctx, shardID, ns, workflowID)
}

func (s *readCounter) GetExecution(ctx context.Context, shardID int32, k store.RunKey) (*store.Execution, error) {
	if k.WorkflowID == s.workflowID {
		s.reads.Add(1)
	}
	return s.Store.GetExecution(ctx, shardID, k)
}

// historyCounter is a service that counts the history reads of one run
// (of every run when workflowID is empty).
type historyCounter struct {
	api.Service
	workflowID string
	reads      atomic.Int64
}

func (s *historyCounter) GetHistory(ctx context.Context, req api.HistoryRequest) (api.HistoryPage, error) {
	if s.workflowID == "" || req.WorkflowID == s.workflowID {
		s.reads.Add(1)
	}
	return s.Service.GetHistory(ctx, req)
}

// TestEvictedRunComesBackOnce: a run that waits for a signal leaves the
// engine's cache and the worker's instance cache while other runs pass
// through them; the signal brings it back with exactly one read of its
// state in the engine and one replay in the worker, of its journal (no
// history read) or, when the worker keeps no journals, of its history (one
// read), and it completes as if it had never left.
func TestEvictedRunComesBackOnce(t *testing.T) {
	t.Run("journal", func(t *testing.T) { testEvictedRunComesBackOnce(t, 0, 0) })
	t.Run("history", func(t *testing.T) { testEvictedRunComesBackOnce(t, -1, 1) })
}

func testEvictedRunComesBackOnce(t *testing.T, journalMemory int64, historyReads int64) {
	const waiter = "evicted-waiter"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := &readCounter{Store: testdb.SQLite(t), workflowID: waiter}
	eng, err := engine.Open(ctx, st, engine.Options{Logger: logger(), CacheMemory: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	svc := &historyCounter{Service: eng, workflowID: waiter}
	w := worker.New(svc, worker.Options{Logger: logger(), CacheMemory: 512 << 10, JournalMemory: journalMemory, WorkflowPollers: 8})
	var invocations sync.Map // workflow id → *atomic.Int64: how often its code started (replays included)
	started := func(ctx workflow.Context) {
		v, _ := invocations.LoadOrStore(workflow.GetInfo(ctx).WorkflowID, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	replays := func(id string) int64 {
		v, _ := invocations.LoadOrStore(id, new(atomic.Int64))
		return v.(*atomic.Int64).Load()
	}
	worker.RegisterWorkflowNamed(w, "wait", func(ctx workflow.Context, i int) (int, error) {
		started(ctx)
		a, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "inc", i).Get(ctx)
		if err != nil {
			return 0, err
		}
		v, _ := workflow.GetSignalChannel[int](ctx, "go").Receive(ctx)
		b, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "inc", a+v).Get(ctx)
		return 10 * b, err
	})
	var filled atomic.Int64
	worker.RegisterWorkflowNamed(w, "fill", func(ctx workflow.Context, i int) (int, error) {
		v, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "filled", i).Get(ctx)
		if err != nil {
			return 0, err
		}
		workflow.GetSignalChannel[int](ctx, "never").Receive(ctx)
		return v, nil
	})
	worker.RegisterStepNamed(w, "filled", func(ctx context.Context, i int) (int, error) {
		filled.Add(1)
		return i, nil
	})
	worker.RegisterStepNamed(w, "inc", func(ctx context.Context, i int) (int, error) { return i + 1, nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	c := client.New(eng, client.Options{})

	run, err := client.StartByName[int](ctx, c, "wait", 1, client.StartOptions{ID: waiter})
	if err != nil {
		t.Fatal(err)
	}
	// Waiting: its first step is done and the workflow task after it too.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		evs, err := c.AllHistory(ctx, waiter, "")
		if err != nil {
			t.Fatal(err)
		}
		if count(evs, api.EventStepCompleted) == 1 && evs[len(evs)-1].Type == api.EventWorkflowTaskCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run does not settle into waiting: %d events", len(evs))
		}
	}
	if got := replays(waiter); got != 1 {
		t.Fatalf("the waiting run's code started %d times before it left the caches, want 1 (its cache entry held)", got)
	}
	// Other runs, which stay open waiting too, pass through both caches.
	// (Started 16 at a time: one after another, each waited for a commit
	// of its own.)
	const fillers = 300
	if err := forEach(fillers, func(i int) error {
		_, err := client.StartByName[int](ctx, c, "fill", i, client.StartOptions{ID: fmt.Sprint("fill-", i)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); filled.Load() < fillers; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d filler runs ran their step", filled.Load(), fillers)
		}
	}
	// And settle: their workflow tasks after the step done, nothing more
	// is committed (what still passed through the cache after the signal
	// could evict the run between its transitions).
	for last, since, deadline := eng.Stats().Commits, time.Now(), time.Now().Add(time.Minute); time.Since(since) < 300*time.Millisecond; time.Sleep(10 * time.Millisecond) {
		if n := eng.Stats().Commits; n != last {
			last, since = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatal("the engine keeps committing a minute after the filler runs ran their steps")
		}
	}
	if evicted := eng.Stats(); evicted.CacheBytes > 64<<10 {
		t.Fatalf("the engine caches %d bytes, over its budget", evicted.CacheBytes)
	}
	reads, histories := st.reads.Load(), svc.reads.Load()
	if err := c.Signal(ctx, waiter, "", "go", 5); err != nil {
		t.Fatal(err)
	}
	out, err := run.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out != 80 { // (1+1+5+1)*10
		t.Errorf("result %d, want 80", out)
	}
	if got := st.reads.Load() - reads; got != 1 {
		t.Errorf("the run's state was read %d times after the signal, want 1 (it left the engine's cache and came back once)", got)
	}
	if got := replays(waiter); got != 2 {
		t.Errorf("the run's code started %d times in all, want 2 (one replay when it came back to the worker)", got)
	}
	if got := svc.reads.Load() - histories; got != historyReads {
		t.Errorf("the worker read the run's history %d times after the signal, want %d", got, historyReads)
	}
}

// Relay waits for a "go" signal: 0 ends it with n, another value v
// continues it as new with n+v.
func Relay(ctx workflow.Context, n int) (int, error) {
	v, _ := workflow.GetSignalChannel[int](ctx, "go").Receive(ctx)
	if v == 0 {
		return n, nil
	}
	return 0, workflow.NewContinueAsNewError(ctx, Relay, n+v)
}

// TestCurrentRunFromCache: a call naming a workflow id alone finds the
// current run in the engine's cache, with no store read, when that run is
// cached, and always the right run: after a continue-as-new and after a
// new start of the same workflow id.
func TestCurrentRunFromCache(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		counted := &readCounter{Store: st}
		e := newEnv(t, counted, func(w *worker.Worker) { worker.RegisterWorkflow(w, Relay) })
		signal := func(v int, wantReads int64) {
			t.Helper()
			before := counted.currentReads.Load()
			if err := e.c.Signal(e.ctx, "relay", "", "go", v); err != nil {
				t.Fatal(err)
			}
			if got := counted.currentReads.Load() - before; wantReads >= 0 && got != wantReads {
				t.Fatalf("signal by workflow id read %d current rows, want %d", got, wantReads)
			}
		}
		first, err := client.Start(e.ctx, e.c, Relay, 0, client.StartOptions{ID: "relay"})
		if err != nil {
			t.Fatal(err)
		}
		signal(2, 0) // the run this shard created is cached
		res, err := e.eng.WaitResult(e.ctx, api.ResultRequest{RunRef: api.RunRef{WorkflowID: "relay", RunID: first.RunID}})
		if err != nil || res.Status != store.StatusContinuedAsNew {
			t.Fatalf("first run: %+v, %v", res, err)
		}
		// The next run, written beside the first's close, is found in the
		// store or the cache: either way it is the one signaled.
		signal(0, -1)
		if got, err := client.GetRun[int](e.c, "relay", "").Get(e.ctx); err != nil || got != 2 {
			t.Fatalf("continued run: %d, %v; want 2", got, err)
		}
		again, err := client.Start(e.ctx, e.c, Relay, 10, client.StartOptions{ID: "relay"})
		if err != nil {
			t.Fatal(err)
		}
		signal(0, 0)
		if got, err := client.GetRun[int](e.c, "relay", "").Get(e.ctx); err != nil || got != 10 {
			t.Fatalf("new run: %d, %v; want 10", got, err)
		}
		if d, err := e.c.Describe(e.ctx, "relay", ""); err != nil || d.RunID != again.RunID {
			t.Fatalf("current run %+v, %v; want %s", d, err, again.RunID)
		}
	})
}
