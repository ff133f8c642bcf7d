package batch_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Waiter waits for the signal "poke" and returns its value.
func Waiter(ctx workflow.Context, _ struct{}) (string, error) {
	v, _ := workflow.GetSignalChannel[string](ctx, "poke").Receive(ctx)
	return v, nil
}

// env is an engine over a store with the system worker and a worker
// running Waiter.
type env struct{ *testenv.Env }

func newEnv(t *testing.T, st store.Store) *env {
	return &env{testenv.New(t, st, 8*time.Minute, func(w *worker.Worker) { worker.RegisterWorkflow(w, Waiter) })}
}

// b is the batches of the engine running now.
func (e *env) b() *batch.Service { return batch.NewService(e.Engine) }

func (e *env) count(f api.ListRequest) int64 {
	e.T.Helper()
	n, err := e.Client.Count(e.Ctx, f)
	if err != nil {
		e.T.Fatal(err)
	}
	return n
}

// startWaiters starts n runs of Waiter with ids prefix-0000...
func (e *env) startWaiters(prefix string, n int) {
	e.T.Helper()
	g, ctx := errgroup.WithContext(e.Ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			_, err := client.Start(ctx, e.Client, Waiter, struct{}{}, client.StartOptions{ID: fmt.Sprintf("%s-%04d", prefix, i)})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		e.T.Fatal(err)
	}
}

// TestBatchTerminateSurvivesRestart terminates 300 runs with a batch
// whose engine restarts a third of the way: every run ends terminated,
// once.
//
// 300 runs are three of the batch's pages of 100 and fifteen chunks of 20:
// the restart comes after the first page, so the batch goes on from the
// page token it kept, through pages it had not listed (1,000 runs tested
// no more than that, at three times the cost of every start, list and
// terminate). At 100 runs a second a chunk waits 200 ms for the rate, so
// the 200 runs after the restart point take at least 2 s: the engine
// stops long before the batch could end.
func TestBatchTerminateSurvivesRestart(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		const n, rate, restartAt = 300, 100, 100
		e.startWaiters("order", n)
		running := api.ListRequest{WorkflowType: "Waiter", Statuses: []store.RunStatus{store.StatusRunning}}
		// Cassandra lists what its visibility rows say; under the whole
		// suite on two cores that takes a while.
		e.Eventually("the runs listed", 2*time.Minute, func() bool { return e.count(running) == n })
		ref, err := e.b().StartBatch(e.Ctx, api.StartBatchRequest{BatchID: "cleanup", Filter: running, Operation: api.BatchTerminate,
			Reason: "decommissioned", Rate: rate, Identity: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		var before api.BatchDescription
		e.Eventually(fmt.Sprintf("%d runs terminated before the restart", restartAt), time.Minute, func() bool {
			d, err := e.b().DescribeBatch(e.Ctx, ref)
			before = d
			return err == nil && d.Done >= restartAt
		})
		if before.Done >= n {
			t.Fatalf("the batch was done (%d runs) when it was seen past %d: it would not be restarted halfway", before.Done, restartAt)
		}
		e.Restart()
		// Generous: under the whole suite on two cores, a Cassandra commit
		// takes tens of milliseconds.
		e.Eventually("the batch done", 5*time.Minute, func() bool {
			d, err := e.b().DescribeBatch(e.Ctx, ref)
			return err == nil && d.State == batch.StateCompleted
		})
		d, err := e.b().DescribeBatch(e.Ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if d.Done != n || d.Succeeded != n || d.Failed != 0 {
			t.Fatalf("batch: done %d, succeeded %d, failed %d; want %d, %d, 0 (results %v)", d.Done, d.Succeeded, d.Failed, n, n, d.Results[:min(5, len(d.Results))])
		}
		e.Eventually("every run terminated", 30*time.Second, func() bool {
			return e.count(api.ListRequest{WorkflowType: "Waiter", Statuses: []store.RunStatus{store.StatusTerminated}}) == n
		})
		// Each run's history says who terminated it, once.
		evs, err := e.Client.AllHistory(e.Ctx, "order-0007", "")
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		if last.Type != api.EventWorkflowTerminated || last.Identity != "ops" || last.Reason != "decommissioned" {
			t.Fatalf("order-0007 ends with %+v", last)
		}
		list, err := e.b().ListBatches(e.Ctx, api.ListBatchesRequest{})
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
	e.Eventually("the runs listed", 30*time.Second, func() bool { return e.count(filter) == 30 })

	// A slow batch, stopped after its first chunk.
	ref, err := e.b().StartBatch(e.Ctx, api.StartBatchRequest{Filter: filter, Operation: api.BatchPause, Rate: 2, Identity: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	e.Eventually("the first chunk", 30*time.Second, func() bool {
		d, err := e.b().DescribeBatch(e.Ctx, ref)
		return err == nil && d.Done > 0
	})
	if err := e.b().StopBatch(e.Ctx, api.StopBatchRequest{BatchRef: ref, Identity: "ops"}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("stopped", 30*time.Second, func() bool {
		d, err := e.b().DescribeBatch(e.Ctx, ref)
		return err == nil && d.State == batch.StateStopped && d.StoppedBy == "ops"
	})
	d, _ := e.b().DescribeBatch(e.Ctx, ref)
	if d.Done == 0 || d.Done >= 30 {
		t.Fatalf("stopped batch acted on %d runs; want some", d.Done)
	}
	// Resume what it paused, then signal every run.
	if _, err := e.b().StartBatch(e.Ctx, api.StartBatchRequest{Filter: filter, Operation: api.BatchResume, Rate: 1000}); err != nil {
		t.Fatal(err)
	}
	ref, err = e.b().StartBatch(e.Ctx, api.StartBatchRequest{BatchID: "poke-all", Filter: filter, Operation: api.BatchSignal,
		SignalName: "poke", SignalInput: api.Value(`"hello"`), Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	e.Eventually("every run completed", time.Minute, func() bool {
		return e.count(api.ListRequest{WorkflowIDPrefix: "poke-", Statuses: []store.RunStatus{store.StatusCompleted}}) == 30
	})
	out, err := client.GetRun[string](e.Client, "poke-0003", "").Get(e.Ctx)
	if err != nil || out != "hello" {
		t.Fatalf("poke-0003: %q, %v", out, err)
	}

	if _, err := e.b().StartBatch(e.Ctx, api.StartBatchRequest{BatchID: "poke-all", Filter: filter, Operation: api.BatchSignal, SignalName: "poke"}); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("a second batch of one id: %v", err)
	}
	for _, bad := range []api.StartBatchRequest{
		{Operation: "explode"},
		{Operation: api.BatchSignal},
		{Operation: api.BatchReset, ResetPoint: "sideways"},
		{Operation: api.BatchTerminate, Rate: -1},
	} {
		var ia *store.InvalidArgumentError
		if _, err := e.b().StartBatch(e.Ctx, bad); !errors.As(err, &ia) {
			t.Fatalf("start %+v: %v; want invalid argument", bad, err)
		}
	}
	if _, err := e.b().DescribeBatch(e.Ctx, api.BatchRef{BatchID: "nope"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("describe of no batch: %v", err)
	}
}
