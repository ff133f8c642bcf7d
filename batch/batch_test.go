package batch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

func backends(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); f(t, testdb.SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); f(t, testdb.Postgres(t)) })
	t.Run("cassandra", func(t *testing.T) { t.Parallel(); f(t, testdb.Cassandra(t)) })
}

func logger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("STRAND_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Waiter waits for the signal "poke" and returns its value.
func Waiter(ctx workflow.Context, _ struct{}) (string, error) {
	v, _ := workflow.GetSignalChannel[string](ctx, "poke").Receive(ctx)
	return v, nil
}

type env struct {
	t      *testing.T
	ctx    context.Context
	st     store.Store
	eng    *engine.Engine
	w      *worker.Worker
	runner *system.Runner
	b      *batch.Service
	c      *client.Client
}

func newEnv(t *testing.T, st store.Store) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, st: st}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *env) start() {
	e.t.Helper()
	eng, err := engine.Open(e.ctx, e.st, engine.Options{Logger: logger(), WorkflowTaskTimeout: 2 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	e.eng, e.c, e.b = eng, client.New(eng, client.Options{}), batch.NewService(eng)
	e.w = worker.New(eng, worker.Options{Logger: logger()})
	worker.RegisterWorkflow(e.w, Waiter)
	if err := e.w.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.runner = system.NewRunner(eng, system.RunnerOptions{Logger: logger(), Worker: worker.Options{Logger: logger()}})
	if err := e.runner.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) stop() {
	if e.eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.runner.Stop(ctx)
	_ = e.w.Stop(ctx)
	e.eng.Close()
	e.eng = nil
}

func (e *env) eventually(what string, d time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *env) count(f api.ListRequest) int64 {
	e.t.Helper()
	n, err := e.c.Count(e.ctx, f)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// startWaiters starts n runs of Waiter with ids prefix-0000...
func (e *env) startWaiters(prefix string, n int) {
	e.t.Helper()
	g, ctx := errgroup.WithContext(e.ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			_, err := client.Start(ctx, e.c, Waiter, struct{}{}, client.StartOptions{ID: fmt.Sprintf("%s-%04d", prefix, i)})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		e.t.Fatal(err)
	}
}

// TestBatchTerminateSurvivesRestart terminates 1,000 runs with a batch
// whose engine restarts halfway: every run ends terminated, once.
func TestBatchTerminateSurvivesRestart(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		const n = 1000
		e.startWaiters("order", n)
		running := api.ListRequest{WorkflowType: "Waiter", Statuses: []store.RunStatus{store.StatusRunning}}
		e.eventually("the runs listed", 30*time.Second, func() bool { return e.count(running) == n })
		ref, err := e.b.StartBatch(e.ctx, api.StartBatchRequest{BatchID: "cleanup", Filter: running, Operation: api.BatchTerminate,
			Reason: "decommissioned", Rate: 250, Identity: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("some runs terminated", 30*time.Second, func() bool {
			d, err := e.b.DescribeBatch(e.ctx, ref)
			return err == nil && d.Done >= 100
		})
		e.stop()
		e.start()
		e.eventually("the batch done", 2*time.Minute, func() bool {
			d, err := e.b.DescribeBatch(e.ctx, ref)
			return err == nil && d.State == batch.StateCompleted
		})
		d, err := e.b.DescribeBatch(e.ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if d.Done != n || d.Succeeded != n || d.Failed != 0 {
			t.Fatalf("batch: done %d, succeeded %d, failed %d; want %d, %d, 0 (results %v)", d.Done, d.Succeeded, d.Failed, n, n, d.Results[:min(5, len(d.Results))])
		}
		e.eventually("every run terminated", 30*time.Second, func() bool {
			return e.count(api.ListRequest{WorkflowType: "Waiter", Statuses: []store.RunStatus{store.StatusTerminated}}) == n
		})
		// Each run's history says who terminated it, once.
		evs, err := e.c.AllHistory(e.ctx, "order-0007", "")
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		if last.Type != api.EventWorkflowTerminated || last.Identity != "ops" || last.Reason != "decommissioned" {
			t.Fatalf("order-0007 ends with %+v", last)
		}
		list, err := e.b.ListBatches(e.ctx, api.ListBatchesRequest{})
		if err != nil || len(list.Batches) != 1 || list.Batches[0].BatchID != "cleanup" || list.Batches[0].Operation != api.BatchTerminate {
			t.Fatalf("list: %+v, %v", list, err)
		}
	})
}

// TestBatchSignalAndStop signals runs in a batch, stops a slow batch, and
// refuses bad requests.
func TestBatchSignalAndStop(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t))
	e.startWaiters("poke", 30)
	filter := api.ListRequest{WorkflowIDPrefix: "poke-", Statuses: []store.RunStatus{store.StatusRunning}}
	e.eventually("the runs listed", 30*time.Second, func() bool { return e.count(filter) == 30 })

	// A slow batch, stopped after its first chunk.
	ref, err := e.b.StartBatch(e.ctx, api.StartBatchRequest{Filter: filter, Operation: api.BatchPause, Rate: 2, Identity: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	e.eventually("the first chunk", 30*time.Second, func() bool {
		d, err := e.b.DescribeBatch(e.ctx, ref)
		return err == nil && d.Done > 0
	})
	if err := e.b.StopBatch(e.ctx, api.StopBatchRequest{BatchRef: ref, Identity: "ops"}); err != nil {
		t.Fatal(err)
	}
	e.eventually("stopped", 30*time.Second, func() bool {
		d, err := e.b.DescribeBatch(e.ctx, ref)
		return err == nil && d.State == batch.StateStopped && d.StoppedBy == "ops"
	})
	d, _ := e.b.DescribeBatch(e.ctx, ref)
	if d.Done == 0 || d.Done >= 30 {
		t.Fatalf("stopped batch acted on %d runs; want some", d.Done)
	}
	// Resume what it paused, then signal every run.
	if _, err := e.b.StartBatch(e.ctx, api.StartBatchRequest{Filter: filter, Operation: api.BatchResume, Rate: 1000}); err != nil {
		t.Fatal(err)
	}
	ref, err = e.b.StartBatch(e.ctx, api.StartBatchRequest{BatchID: "poke-all", Filter: filter, Operation: api.BatchSignal,
		SignalName: "poke", SignalInput: api.Value(`"hello"`), Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	e.eventually("every run completed", time.Minute, func() bool {
		return e.count(api.ListRequest{WorkflowIDPrefix: "poke-", Statuses: []store.RunStatus{store.StatusCompleted}}) == 30
	})
	out, err := client.GetRun[string](e.c, "poke-0003", "").Get(e.ctx)
	if err != nil || out != "hello" {
		t.Fatalf("poke-0003: %q, %v", out, err)
	}

	if _, err := e.b.StartBatch(e.ctx, api.StartBatchRequest{BatchID: "poke-all", Filter: filter, Operation: api.BatchSignal, SignalName: "poke"}); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("a second batch of one id: %v", err)
	}
	for _, bad := range []api.StartBatchRequest{
		{Operation: "explode"},
		{Operation: api.BatchSignal},
		{Operation: api.BatchReset, ResetPoint: "sideways"},
		{Operation: api.BatchTerminate, Rate: -1},
	} {
		var ia *store.InvalidArgumentError
		if _, err := e.b.StartBatch(e.ctx, bad); !errors.As(err, &ia) {
			t.Fatalf("start %+v: %v; want invalid argument", bad, err)
		}
	}
	if _, err := e.b.DescribeBatch(e.ctx, api.BatchRef{BatchID: "nope"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("describe of no batch: %v", err)
	}
}
