package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// FiveSteps runs five steps one after another.
func FiveSteps(ctx workflow.Context, n int) (int, error) {
	for range 5 {
		var err error
		if n, err = workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "inc", n).Get(ctx); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// TestStickyWorkflowTasks: with two workers on a queue, a run's workflow
// tasks go to the worker that advanced it last (api.PollRequest.Sticky),
// which holds it and reads no history; each worker's first task of a run
// that started elsewhere is the only replay.
func TestStickyWorkflowTasks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, testdb.SQLite(t), engine.Options{Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var counters []*historyCounter
	for _, id := range []string{"one", "two"} {
		h := &historyCounter{Service: eng}
		counters = append(counters, h)
		w := worker.New(h, worker.Options{Logger: logger(), Identity: id})
		worker.RegisterWorkflow(w, FiveSteps)
		worker.RegisterStepNamed(w, "inc", func(_ context.Context, n int) (int, error) { return n + 1, nil })
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(context.Background())
	}
	c := client.New(eng, client.Options{})
	const runs = 10
	for i := range runs {
		r, err := client.Start(ctx, c, FiveSteps, i, client.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.Get(ctx); err != nil || got != i+5 {
			t.Fatalf("run %d: %d, %v", i, got, err)
		}
	}
	// 6 workflow tasks a run: without stickiness the two workers' polls
	// take turns and most tasks replay the run.
	reads := counters[0].reads.Load() + counters[1].reads.Load()
	t.Logf("%d history reads", reads)
	if reads > runs/2 {
		t.Fatalf("%d history reads for %d runs of 6 workflow tasks each; want the worker that advanced a run to get its next task", reads, runs)
	}
}
