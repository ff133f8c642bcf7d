package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// A worker stopped with a step running waits for it until the caller's
// context ends, then cancels it and reports the attempt failed
// (WorkerStopped); the step's retry runs on the next worker.
func TestWorkerStopCancelsStepsItNoLongerWaitsFor(t *testing.T) {
	started := make(chan struct{}, 1)
	setup := func(w *worker.Worker) {
		worker.RegisterWorkflow(w, RunStep)
		worker.RegisterStepNamed(w, "stubborn", func(ctx context.Context, in string) (string, error) {
			if step.GetInfo(ctx).Attempt == 1 {
				started <- struct{}{}
				<-ctx.Done()
				return "", ctx.Err()
			}
			return fmt.Sprintf("done on attempt %d", step.GetInfo(ctx).Attempt), nil
		})
	}
	e := newEnv(t, testdb.SQLite(t), setup)
	run, err := client.Start(e.ctx, e.c, RunStep, StepCase{Step: "stubborn", Options: workflow.StepOptions{Retry: fastRetry}}, client.StartOptions{ID: "stop-me"})
	if err != nil {
		t.Fatal(err)
	}
	<-started

	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	defer cancel()
	if err := e.w.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop with a step running past its context: %v, want DeadlineExceeded", err)
	}
	e.w = nil
	e.startWorker(setup)
	got, err := run.Get(e.ctx)
	if err != nil || got != "done on attempt 2" {
		t.Fatalf("got %q, %v; want the second attempt's result", got, err)
	}
	var failed *api.Failure
	for _, ev := range e.history("stop-me", run.RunID) {
		if ev.Type == api.EventStepAttemptFailed {
			failed = ev.Failure
		}
	}
	if failed == nil || failed.Type != "WorkerStopped" || failed.NonRetryable {
		t.Fatalf("the first attempt's failure: %+v, want a retryable WorkerStopped", failed)
	}

	if err := e.w.Stop(e.ctx); err != nil {
		t.Fatalf("Stop with no step running: %v", err)
	}
	e.w = nil
}

// A poller hands each workflow task to a goroutine of its own and polls
// again: with one poller, two runs' workflow tasks are in hand at once
// (each waits, inside a side effect, for the other's to begin).
func TestOnePollerHandlesWorkflowTasksConcurrently(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, testdb.SQLite(t), engine.Options{Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var begun atomic.Int32
	met := make(chan struct{})
	meet := func(ctx workflow.Context, _ int) (bool, error) {
		return workflow.SideEffect(ctx, func() bool {
			if begun.Add(1) == 2 {
				close(met)
			}
			select {
			case <-met:
				return true
			case <-time.After(time.Minute):
				return false
			}
		}), nil
	}
	w := worker.New(eng, worker.Options{Logger: logger(), WorkflowPollers: 1, MaxConcurrentWorkflowTasks: 2})
	worker.RegisterWorkflowNamed(w, "meet", meet)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	c := client.New(eng, client.Options{})
	var runs []client.Run[bool]
	for i := range 2 {
		r, err := client.StartByName[bool](ctx, c, "meet", i, client.StartOptions{ID: fmt.Sprint("meet-", i)})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	for i, r := range runs {
		if met, err := r.Get(ctx); err != nil || !met {
			t.Fatalf("run %d: %v, %v; want true: both workflow tasks in hand at once", i, met, err)
		}
	}
}
