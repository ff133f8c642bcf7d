package engine_test

import (
	"bytes"
	"context"
	"errors"
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

// TestPurgeUnderLoadAcrossRestart: the retention purge deletes exactly the
// runs whose retention has passed — their executions, history, documents,
// current rows, visibility records and retention timers — and nothing else:
// not runs still open, not runs of the same namespace closed more recently,
// not runs of a namespace with a longer retention, not a newer run of an
// expired run's workflow id; while workflows run beside it, and with the
// engine closed after a few of its batches and opened again, which purges
// the rest.
func TestPurgeUnderLoadAcrossRestart(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); testPurge(t, testdb.SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); testPurge(t, testdb.Postgres(t)) })
	t.Run("cassandra", func(t *testing.T) { t.Parallel(); testPurge(t, testdb.Cassandra(t)) })
}

// purgeGate holds the purgers at their look at the store (the purge hook)
// once their tickets are spent; -1 tickets is no limit.
type purgeGate struct {
	mu      sync.Mutex
	tickets int
	blocked int
	changed chan struct{}
}

func newPurgeGate() *purgeGate { return &purgeGate{changed: make(chan struct{})} }

func (g *purgeGate) wait(ctx context.Context, _ int32) {
	for {
		g.mu.Lock()
		if g.tickets != 0 {
			if g.tickets > 0 {
				g.tickets--
			}
			g.mu.Unlock()
			return
		}
		g.blocked++
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		g.mu.Lock()
		g.blocked--
		g.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

func (g *purgeGate) allow(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tickets = n
	close(g.changed)
	g.changed = make(chan struct{})
}

// held reports whether n purgers wait at the gate with no ticket left.
func (g *purgeGate) held(n int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tickets == 0 && g.blocked == n
}

func testPurge(t *testing.T, st store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, ns := range []string{"expiring", "kept"} {
		if _, err := st.CreateNamespace(ctx, store.Namespace{Name: ns, Retention: 72 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	// Runs of "expiring" that close while expireNow is set are past their
	// retention at once; the others keep the namespaces' 72 hours.
	var expireNow atomic.Bool
	expireNow.Store(true)
	gate := newPurgeGate()
	// Batches of 25 runs: the 300 expired runs below take 12 batches, four
	// of which run before the restart (a third of the purge, as when the
	// test had 600 runs in batches of 50: half the runs, half the batch,
	// the same number of batches on either side of the restart).
	opts := engine.Options{Logger: logger(), WorkflowTaskTimeout: 2 * time.Second, PurgeBatch: 25}
	engine.SetPurgeKnobs(&opts, func(ns string) (time.Duration, bool) { return 0, ns == "expiring" && expireNow.Load() }, gate.wait)

	var eng *engine.Engine
	var workers []*worker.Worker
	clients := map[string]*client.Client{}
	open := func() {
		t.Helper()
		var err error
		if eng, err = engine.Open(ctx, st, opts); err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"expiring", "kept"} {
			w := worker.New(eng, worker.Options{Logger: logger(), Namespace: ns})
			worker.RegisterWorkflowNamed(w, "one", func(ctx workflow.Context, size int) ([]byte, error) {
				return workflow.ExecuteStepByName[[]byte](ctx, workflow.StepOptions{}, "make", size).Get(ctx)
			})
			worker.RegisterWorkflowNamed(w, "wait", func(ctx workflow.Context, _ int) (int, error) {
				v, _ := workflow.GetSignalChannel[int](ctx, "go").Receive(ctx)
				return v, nil
			})
			worker.RegisterWorkflowNamed(w, "seq", func(ctx workflow.Context, n int) (int, error) {
				for range 3 {
					v, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "inc", n).Get(ctx)
					if err != nil {
						return 0, err
					}
					n = v
				}
				return n, nil
			})
			worker.RegisterStepNamed(w, "make", func(ctx context.Context, size int) ([]byte, error) { return bytes.Repeat([]byte("p"), size), nil })
			worker.RegisterStepNamed(w, "inc", func(ctx context.Context, n int) (int, error) { return n + 1, nil })
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			workers = append(workers, w)
			clients[ns] = client.New(eng, client.Options{Namespace: ns, Identity: "test"})
		}
	}
	closeEngine := func() {
		for _, w := range workers {
			w.Stop(context.Background())
		}
		workers = nil
		eng.Close()
	}
	open()
	defer func() { closeEngine() }()
	shards := eng.Stats().ShardsOwned

	// each runs f for n items, 16 at a time, and fails the test on an error.
	each := func(n int, f func(i int) error) {
		t.Helper()
		if err := forEach(n, f); err != nil {
			t.Fatal(err)
		}
	}
	key := func(ns, wf, run string) store.RunKey { return store.RunKey{Namespace: ns, WorkflowID: wf, RunID: run} }
	var mu sync.Mutex
	var expired, kept []store.RunKey // kept: runs that must stay
	docs := map[store.RunKey]string{}
	startOne := func(ns, wf string, size int) error {
		r, err := client.StartByName[[]byte](ctx, clients[ns], "one", size, client.StartOptions{ID: wf})
		if err != nil {
			return err
		}
		if _, err := r.Get(ctx); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if k := key(ns, wf, r.RunID); ns == "expiring" && expireNow.Load() {
			expired = append(expired, k)
		} else {
			kept = append(kept, k)
		}
		return nil
	}

	// Runs past their retention, every 50th with an output large enough to
	// be a document; some whose workflow id runs again after.
	const nExpired = 300
	each(nExpired, func(i int) error {
		size := 8
		if i%50 == 0 {
			size = 300 << 10
		}
		return startOne("expiring", fmt.Sprint("old-", i), size)
	})
	// Of a namespace with a longer retention, closed at the same time.
	each(40, func(i int) error { return startOne("kept", fmt.Sprint("other-", i), 8) })
	// Still open: no retention timer at all.
	var waiting []string
	each(20, func(i int) error {
		wf := fmt.Sprint("open-", i)
		r, err := client.StartByName[int](ctx, clients["expiring"], "wait", 0, client.StartOptions{ID: wf})
		mu.Lock()
		kept = append(kept, key("expiring", wf, r.RunID))
		waiting = append(waiting, wf)
		mu.Unlock()
		return err
	})
	// From now on runs close "more recently": their retention has not passed.
	expireNow.Store(false)
	// A new run of an expired run's workflow id: the current row points at
	// it and stays.
	each(10, func(i int) error {
		wf := fmt.Sprint("old-", i*7)
		r, err := client.StartByName[int](ctx, clients["expiring"], "wait", 0, client.StartOptions{ID: wf})
		mu.Lock()
		kept = append(kept, key("expiring", wf, r.RunID))
		mu.Unlock()
		return err
	})
	for _, k := range expired {
		x, err := st.GetExecution(ctx, engine.ShardOf(k.Namespace, k.WorkflowID, shards), k)
		if err != nil {
			t.Fatal(err)
		}
		if d := x.Outcome.Output.Doc; d != nil {
			docs[k] = d.ID
		}
	}
	if len(docs) != nExpired/50 {
		t.Fatalf("%d expired runs have a document output, want %d", len(docs), nExpired/50)
	}
	// Visibility is written after the fact: the purge starts once every
	// record is there, so it has them to delete.
	countRuns := func(ns string, statuses ...store.RunStatus) int64 {
		n, err := st.CountRuns(ctx, store.RunFilter{Namespace: ns, Statuses: statuses})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("the expired runs' visibility records", func() bool { return countRuns("expiring", store.StatusCompleted) == nExpired })
	// Cached: the purge must drop them from the cache, too.
	for _, k := range expired[:20] {
		if _, err := clients["expiring"].Describe(ctx, k.WorkflowID, k.RunID); err != nil {
			t.Fatal(err)
		}
	}

	// The purge goes for four looks at the store while workflows run; then
	// the engine closes in the middle of it.
	loadDone := make(chan struct{})
	var loadErr error
	go func() {
		defer close(loadDone)
		loadErr = forEach(40, func(i int) error { return startSeq(ctx, clients["expiring"], fmt.Sprint("live-a-", i), &mu, &kept) })
	}()
	gate.allow(4)
	waitFor("four purge batches", func() bool { return gate.held(shards) })
	<-loadDone
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	existsErr := func(k store.RunKey) (bool, error) {
		_, err := st.GetExecution(ctx, engine.ShardOf(k.Namespace, k.WorkflowID, shards), k)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		return err == nil, nil
	}
	exists := func(k store.RunKey) bool {
		ok, err := existsErr(k)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// The cached runs purged are gone from the cache too.
	dropped := 0
	for _, k := range expired[:20] {
		if exists(k) {
			continue
		}
		dropped++
		if _, err := clients["expiring"].Describe(ctx, k.WorkflowID, k.RunID); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("describe purged run %s: %v", k, err)
		}
	}
	if dropped == 0 {
		t.Fatal("none of the cached runs was purged before the restart")
	}
	if err := engine.CheckCache(eng); err != nil {
		t.Fatal(err)
	}
	closeEngine()
	left := 0
	for _, k := range expired {
		if exists(k) {
			left++
		}
	}
	if left == 0 || left == nExpired {
		t.Fatalf("%d of %d expired runs left when the engine closed: not in the middle of the purge", left, nExpired)
	}
	t.Logf("closed the engine with %d of %d expired runs left", left, nExpired)

	// Opened again, it purges the rest while workflows run.
	gate.allow(-1)
	open()
	each(40, func(i int) error { return startSeq(ctx, clients["expiring"], fmt.Sprint("live-b-", i), &mu, &kept) })
	// The count of runs purged first, the store only then: each look at
	// the store reads every expired run, which would only slow the purge
	// it waits for.
	waitFor("the rest of the purge", func() bool {
		if eng.Stats().RunsPurged < int64(left) {
			return false
		}
		for _, k := range expired {
			if exists(k) {
				return false
			}
		}
		return true
	})

	// Exactly the expired runs are gone, with everything of theirs. The
	// runs are checked 16 at a time: on Cassandra each read is a round
	// trip, and one after another they took seconds.
	if err := forEach(len(expired), func(i int) error {
		k := expired[i]
		shard := engine.ShardOf(k.Namespace, k.WorkflowID, shards)
		if _, err := st.ReadHistory(ctx, store.ReadHistoryRequest{ShardID: shard, Run: k}); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("history of purged run %s: %v", k, err)
		}
		if _, err := st.GetVisibility(ctx, k.Namespace, k.RunID); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("visibility of purged run %s: %v", k, err)
		}
		if id := docs[k]; id != "" {
			if _, _, err := st.GetDocument(ctx, shard, k, id); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("document of purged run %s: %v", k, err)
			}
		}
		if _, err := clients["expiring"].Describe(ctx, k.WorkflowID, k.RunID); !errors.Is(err, api.ErrNotFound) {
			return fmt.Errorf("describe purged run %s: %v", k, err)
		}
		cur, err := st.GetCurrentExecution(ctx, shard, k.Namespace, k.WorkflowID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		case cur.RunID == k.RunID:
			return fmt.Errorf("the current row of %s still points at purged run %s", k.WorkflowID, k.RunID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	keptRuns := map[store.RunKey]bool{}
	for _, k := range kept {
		keptRuns[k] = true
	}
	if err := forEach(len(kept), func(i int) error {
		k := kept[i]
		shard := engine.ShardOf(k.Namespace, k.WorkflowID, shards)
		if ok, err := existsErr(k); err != nil || !ok {
			return fmt.Errorf("run %s is gone (%v), but its retention has not passed", k, err)
		}
		if _, err := st.ReadHistory(ctx, store.ReadHistoryRequest{ShardID: shard, Run: k}); err != nil {
			return fmt.Errorf("history of kept run %s: %v", k, err)
		}
		cur, err := st.GetCurrentExecution(ctx, shard, k.Namespace, k.WorkflowID)
		if err != nil || cur.RunID != k.RunID {
			return fmt.Errorf("current row of kept run %s: %+v, %v", k, cur, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor("the kept runs' visibility records", func() bool {
		return countRuns("expiring")+countRuns("kept") == int64(len(kept))
	})
	for _, k := range kept {
		if _, err := st.GetVisibility(ctx, k.Namespace, k.RunID); err != nil {
			t.Fatalf("visibility of kept run %s: %v", k, err)
		}
	}
	// The retention timers of the purged runs are gone (with the ack level
	// that the next commits carry); those of the runs kept stay.
	waitFor("the purged runs' retention timers to go", func() bool {
		for shard := range int32(shards) {
			var token []byte
			for {
				page, err := st.ReadTasks(ctx, store.ReadTasksRequest{ShardID: shard, PageSize: 1000, PageToken: token,
					Range: store.TaskRange{Category: store.CategoryTimer, Partition: engine.RetentionPartition}})
				if err != nil {
					t.Fatal(err)
				}
				for _, task := range page.Tasks {
					if !keptRuns[task.Run] {
						return false
					}
				}
				if token = page.NextPageToken; len(token) == 0 {
					break
				}
			}
		}
		return true
	})
	if got := eng.Stats().RunsPurged; got < int64(left) {
		t.Fatalf("the reopened engine purged %d runs, want at least the %d left", got, left)
	}
	// The open runs are still served.
	for _, wf := range waiting[:3] {
		if err := clients["expiring"].Signal(ctx, wf, "", "go", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := client.GetRun[int](clients["expiring"], wf, "").Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// forEach runs f for n items, 16 at a time, and returns their errors.
func forEach(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make([]error, n)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = f(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startSeq runs a workflow of three steps to its end and records its run.
func startSeq(ctx context.Context, c *client.Client, wf string, mu *sync.Mutex, runs *[]store.RunKey) error {
	r, err := client.StartByName[int](ctx, c, "seq", 0, client.StartOptions{ID: wf})
	if err != nil {
		return err
	}
	if v, err := r.Get(ctx); err != nil || v != 3 {
		return fmt.Errorf("%s: result %d, %v", wf, v, err)
	}
	mu.Lock()
	*runs = append(*runs, store.RunKey{Namespace: "expiring", WorkflowID: wf, RunID: r.RunID})
	mu.Unlock()
	return nil
}
