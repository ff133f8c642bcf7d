package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
)

// newEnvWith is newEnv with engine options of the test's own.
func newEnvWith(t *testing.T, st store.Store, opts engine.Options, setup func(w *worker.Worker)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	opts.Logger = logger()
	if opts.WorkflowTaskTimeout == 0 {
		opts.WorkflowTaskTimeout = 2 * time.Second
	}
	e := &env{t: t, st: st, ctx: ctx, setup: setup, engOpt: opts}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func registerCollector(w *worker.Worker) { worker.RegisterWorkflow(w, Collector) }

// queryCounter is the engine as a worker sees it, counting the query tasks
// the worker receives.
type queryCounter struct {
	api.Service
	queries atomic.Int64
}

func (c *queryCounter) PollWorkflowTask(ctx context.Context, req api.PollRequest) (*api.WorkflowTask, error) {
	t, err := c.Service.PollWorkflowTask(ctx, req)
	if t != nil && t.Query != nil {
		c.queries.Add(1)
	}
	return t, err
}

// startQueriedRun starts a Collector whose first workflow task has run (so
// its query handler is set) and stops the env's worker: no worker polls the
// default queue after that.
func startQueriedRun(t *testing.T, e *env, id string) {
	t.Helper()
	if _, err := client.Start(e.ctx, e.c, Collector, 5, client.StartOptions{ID: id}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the first workflow task of "+id, func() bool {
		n, err := client.Query[int](e.ctx, e.c, id, "", "count", struct{}{})
		return err == nil && n == 0
	})
	e.stopWorker()
}

// checkNothingQueued checks that no query waits in the engine.
func checkNothingQueued(t *testing.T, e *env) {
	t.Helper()
	if st := e.eng.Stats(); st.QueriesWaiting != 0 || st.QueryTasksQueued != 0 {
		t.Fatalf("%d queries waiting, %d query tasks queued; want none", st.QueriesWaiting, st.QueryTasksQueued)
	}
}

// checkNoStaleQuery starts a worker that counts the query tasks it gets and
// asks it one fresh query: it must get that one and no other (a withdrawn
// query delivered late would come first).
func checkNoStaleQuery(t *testing.T, e *env, id string) {
	t.Helper()
	qc := &queryCounter{Service: e.eng}
	w := worker.New(qc, worker.Options{Logger: logger(), Identity: "counting-worker"})
	registerCollector(w)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	if n, err := client.Query[int](ctx, e.c, id, "", "count", struct{}{}); err != nil || n != 0 {
		t.Fatalf("fresh query with a worker: %d, %v", n, err)
	}
	// Let the worker's pollers take anything else still queued. Nothing
	// should be (checkNothingQueued passed before the worker started, and
	// a stale query would have come before the fresh one): this only gives
	// a poller that took one beside the fresh one time to count it, which
	// takes far less than this.
	time.Sleep(100 * time.Millisecond)
	if got := qc.queries.Load(); got != 1 {
		t.Fatalf("the worker received %d query tasks, want 1 (the fresh one): withdrawn queries were delivered", got)
	}
}

// A query whose caller's deadline passes, or whose caller leaves, or that
// reaches the engine's QueryTimeout, is withdrawn: it fails in time, no
// worker receives it later, and a worker that took it before answers into
// task_not_found.
func TestQueryDeadlineWithdraws(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnvWith(t, st, engine.Options{QueryTimeout: 700 * time.Millisecond, QueryPollerWindow: time.Minute}, registerCollector)
		startQueriedRun(t, e, "q-deadline")

		// The caller's deadline.
		ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
		start := time.Now()
		_, err := client.Query[int](ctx, e.c, "q-deadline", "", "count", struct{}{})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Fatalf("query past the caller's deadline: %v after %s", err, time.Since(start))
		}
		// The engine's own limit, for a caller without a deadline of its own.
		ctx, cancel = context.WithTimeout(e.ctx, 10*time.Second)
		start = time.Now()
		_, err = client.Query[int](ctx, e.c, "q-deadline", "", "count", struct{}{})
		cancel()
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < 600*time.Millisecond || took > 5*time.Second {
			t.Fatalf("query past the engine's QueryTimeout (700ms): %v after %s", err, took)
		}
		// A caller that leaves.
		ctx, cancel = context.WithCancel(e.ctx)
		done := make(chan error, 1)
		go func() { _, err := client.Query[int](ctx, e.c, "q-deadline", "", "count", struct{}{}); done <- err }()
		e.eventually("the query waiting in the engine", func() bool { return e.eng.Stats().QueriesWaiting == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("query whose caller left: %v", err)
		}

		// A worker that took a query before it was withdrawn answers into
		// task_not_found.
		ctx, cancel = context.WithCancel(e.ctx)
		go func() { _, err := client.Query[int](ctx, e.c, "q-deadline", "", "count", struct{}{}); done <- err }()
		pctx, pcancel := context.WithTimeout(e.ctx, 10*time.Second)
		task, err := e.eng.PollWorkflowTask(pctx, api.PollRequest{Identity: "raw"})
		pcancel()
		if err != nil || task == nil || task.Query == nil {
			t.Fatalf("poll: %+v, %v; want the query task", task, err)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("query whose caller left: %v", err)
		}
		if err := e.eng.AnswerQuery(e.ctx, api.QueryAnswer{Token: task.Token, Result: []byte("0")}); !errors.Is(err, api.ErrTaskNotFound) {
			t.Fatalf("answer to a withdrawn query: %v, want task_not_found", err)
		}

		checkNothingQueued(t, e)
		checkNoStaleQuery(t, e, "q-deadline")
	})
}

// A query of a queue no worker polls fails fast with api.ErrNoWorker; one
// of a queue a worker polls waits for its answer until its deadline, even
// when the worker is slow to answer.
func TestQueryNoWorker(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		const window = 300 * time.Millisecond
		e := newEnvWith(t, st, engine.Options{QueryPollerWindow: window}, registerCollector)

		// No worker ever polled queue "nobody": the query (which would wait
		// for the run's first workflow task) fails once the window passes.
		if _, err := client.Start(e.ctx, e.c, Collector, 1, client.StartOptions{ID: "q-nobody", Queue: "nobody"}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		start := time.Now()
		_, err := client.Query[int](ctx, e.c, "q-nobody", "", "count", struct{}{})
		cancel()
		if took := time.Since(start); !errors.Is(err, api.ErrNoWorker) || took > 2*time.Second {
			t.Fatalf("query of a queue no worker polls: %v after %s, want ErrNoWorker at once", err, took)
		}
		if !strings.Contains(err.Error(), `"nobody"`) {
			t.Fatalf("the error does not name the queue: %v", err)
		}

		// The worker of the default queue stopped longer than the window
		// ago: a query fails at once.
		startQueriedRun(t, e, "q-gone")
		// The worker's last poll ended as it stopped: a window and a
		// margin later no worker has polled within the window.
		time.Sleep(window + 100*time.Millisecond)
		start = time.Now()
		ctx, cancel = context.WithTimeout(e.ctx, 5*time.Second)
		_, err = client.Query[int](ctx, e.c, "q-gone", "", "count", struct{}{})
		cancel()
		if took := time.Since(start); !errors.Is(err, api.ErrNoWorker) || took > 2*time.Second {
			t.Fatalf("query after the worker left: %v after %s, want ErrNoWorker at once", err, took)
		}

		// A poller that is there but never answers: the query waits for
		// its deadline, well past the window.
		pctx, pcancel := context.WithCancel(e.ctx)
		var wg sync.WaitGroup
		var taken atomic.Int64
		wg.Go(func() {
			for pctx.Err() == nil {
				if task, _ := e.eng.PollWorkflowTask(pctx, api.PollRequest{Identity: "slow"}); task != nil && task.Query != nil {
					taken.Add(1) // held, never answered
				}
			}
		})
		defer func() { pcancel(); wg.Wait() }()
		e.eventually(`the poll of "slow" begun`, func() bool { return polling(t, e, "slow") })
		ctx, cancel = context.WithTimeout(e.ctx, 4*window)
		start = time.Now()
		_, err = client.Query[int](ctx, e.c, "q-gone", "", "count", struct{}{})
		cancel()
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < 4*window-50*time.Millisecond {
			t.Fatalf("query with a slow poller: %v after %s, want its deadline (%s)", err, took, 4*window)
		}
		if taken.Load() != 1 {
			t.Fatalf("the slow poller took %d query tasks, want 1", taken.Load())
		}
		pcancel()
		wg.Wait()

		// A worker that took the query and is slow to answer, with no poll
		// after it: the query still waits for its deadline.
		octx, ocancel := context.WithCancel(e.ctx)
		defer ocancel()
		got := make(chan *api.WorkflowTask, 1)
		wg.Go(func() {
			task, _ := e.eng.PollWorkflowTask(octx, api.PollRequest{Identity: "slow-once"})
			got <- task // held, never answered
		})
		e.eventually(`the poll of "slow-once" begun`, func() bool { return polling(t, e, "slow-once") })
		ctx, cancel = context.WithTimeout(e.ctx, 4*window)
		start = time.Now()
		_, err = client.Query[int](ctx, e.c, "q-gone", "", "count", struct{}{})
		cancel()
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < 4*window-50*time.Millisecond {
			t.Fatalf("query held by a slow worker: %v after %s, want its deadline (%s)", err, took, 4*window)
		}
		if task := <-got; task == nil || task.Query == nil {
			t.Fatalf("the slow worker got %+v, want the query task", task)
		}
	})
}

// polling reports whether the worker identity has a poll waiting on the
// default workflow queue.
func polling(t *testing.T, e *env, identity string) bool {
	t.Helper()
	l, err := e.eng.ListQueues(e.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range l.Queues {
		if q.Kind != api.QueueKindWorkflow || q.Name != api.DefaultQueue {
			continue
		}
		for _, p := range q.Pollers {
			if p.Identity == identity && p.Polling {
				return true
			}
		}
	}
	return false
}

// 100 queries with 4 MB inputs, abandoned by their callers after 200ms
// while no worker polls, leave nothing behind: the heap returns near its
// baseline (within 64 MiB; the inputs are 400 MiB) and no worker receives
// them later.
func TestQueryAbandonedMemory(t *testing.T) {
	e := newEnvWith(t, testdb.SQLite(t), engine.Options{QueryPollerWindow: time.Minute}, registerCollector)
	startQueriedRun(t, e, "q-big")

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	var wg sync.WaitGroup
	var wrong atomic.Value
	for range 100 {
		wg.Go(func() {
			in := bytes.Repeat([]byte{'x'}, 4<<20)
			ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
			defer cancel()
			_, err := e.eng.QueryWorkflow(ctx, api.QueryRequest{RunRef: api.RunRef{WorkflowID: "q-big"}, Name: "count", Input: in})
			if !errors.Is(err, context.DeadlineExceeded) {
				wrong.Store(err)
			}
		})
	}
	wg.Wait()
	if err := wrong.Load(); err != nil {
		t.Fatalf("an abandoned query: %v, want DeadlineExceeded", err)
	}
	after := heap()
	const bound = 64 << 20
	t.Logf("heap: %.1f MiB before 100 abandoned 4 MB queries, %.1f MiB after", float64(base)/(1<<20), float64(after)/(1<<20))
	if after > base+bound {
		t.Fatalf("heap grew by %.1f MiB (bound %d MiB): abandoned queries are held", float64(after-base)/(1<<20), bound>>20)
	}
	checkNothingQueued(t, e)
	checkNoStaleQuery(t, e, "q-big")
}

// In a cluster a query runs on the node that serves its run, which counts
// the workers of other nodes (their forwarded polls) as its queue's
// pollers: with the worker on node a only and a short QueryPollerWindow,
// queries through node b of runs on either node's shards are answered,
// however long the worker has been idle.
func TestQueryNoWorkerCluster(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { t.Parallel(); queryNoWorkerCluster(t, testdb.Postgres(t)) })
	t.Run("cassandra", func(t *testing.T) { t.Parallel(); queryNoWorkerCluster(t, testdb.Cassandra(t)) })
}

func queryNoWorkerCluster(t *testing.T, st store.Store) {
	// The window is what a worker's gap between two polls may be: long
	// enough for a loaded machine (a 300 ms one saw a 610 ms gap there
	// beside two CPU-bound processes), short beside the idle wait.
	const window = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := func(id string) *clusterNode {
		srv := httptest.NewUnstartedServer(nil)
		srv.Start()
		eng, err := engine.Open(ctx, st, engine.Options{Identity: id, NodeTTL: 6 * time.Second, NumShards: 8, QueryPollerWindow: window,
			Address: srv.URL, Dial: func(addr string) api.Peer { return remote.New(addr, nil) }, Logger: logger()})
		if err != nil {
			t.Fatal(err)
		}
		draining, drain := context.WithCancel(context.Background())
		srv.Config.Handler = server.New(eng, server.Options{PollWait: 2 * time.Second, Draining: draining})
		n := &clusterNode{eng: eng, srv: srv, drain: drain}
		t.Cleanup(n.close)
		return n
	}
	a, b := open("a"), open("b")
	waitReady(t, a, b)
	waitPlaced(t, time.Minute, a, b)

	w := worker.New(a.eng, worker.Options{Logger: logger()})
	registerCollector(w)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	cb := client.New(b.eng, client.Options{})
	// 16 runs: on 8 shards split between a and b, some are b's.
	const n = 16
	for i := range n {
		if _, err := client.Start(ctx, cb, Collector, 1, client.StartOptions{ID: fmt.Sprintf("qc-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		// The worker idles past the window: only its polls (and legs)
		// are there.
		time.Sleep(2 * window)
		for i := range n {
			qctx, qcancel := context.WithTimeout(ctx, 20*time.Second)
			got, err := client.Query[int](qctx, cb, fmt.Sprintf("qc-%d", i), "", "count", struct{}{})
			qcancel()
			if err != nil || got != 0 {
				t.Fatalf("round %d: query of qc-%d through b: %d, %v", round, i, got, err)
			}
		}
	}
}
