package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Tick is a step that does nothing.
func Tick(context.Context, int) (int, error) { return 0, nil }

// NowBranches decides ten times on the nanoseconds of workflow.Now
// between a timer and a step, then waits for a signal.
func NowBranches(ctx workflow.Context, _ struct{}) (int, error) {
	odd := 0
	for range 10 {
		if workflow.Now(ctx).UnixNano()%2 == 0 {
			if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
				return 0, err
			}
		} else {
			odd++
			if _, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Tick, 0).Get(ctx); err != nil {
				return 0, err
			}
		}
	}
	workflow.GetSignalChannel[struct{}](ctx, "done").Receive(ctx)
	return odd, nil
}

// TestReplayRunsAtTheTaskTime replays a workflow that decides on
// workflow.Now: a worker that lost its cache replays each workflow task
// at the time the task first ran (the time of its WorkflowTaskCompleted
// event), so the workflow decides as it did and the replay matches.
func TestReplayRunsAtTheTaskTime(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t), func(w *worker.Worker) {
		worker.RegisterWorkflow(w, NowBranches)
		worker.RegisterStep(w, Tick)
	})
	run, err := client.Start(e.ctx, e.c, NowBranches, struct{}{}, client.StartOptions{ID: "now"})
	if err != nil {
		t.Fatal(err)
	}
	e.eventually("ten decisions", func() bool {
		d, err := e.c.Describe(e.ctx, "now", "")
		return err == nil && len(d.Steps) == 0 && len(d.Timers) == 0 && d.NextEventID > 30
	})
	e.restart() // the worker's cache is gone: the next task replays
	if err := e.c.Signal(e.ctx, "now", "", "done", struct{}{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	if _, err := client.GetRun[int](e.c, "now", run.RunID).Get(ctx); err != nil {
		dump(t, e.history("now", ""))
		t.Fatalf("after a replay: %v", err)
	}
}
