package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// NoopTick does nothing.
func NoopTick(context.Context, int) (int, error) { return 0, nil }

// Ticker runs n steps one after another.
func Ticker(ctx workflow.Context, n int) (int, error) {
	for i := range n {
		if _, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, NoopTick, i).Get(ctx); err != nil {
			return i, err
		}
	}
	return n, nil
}

// TestHistoryQuota: a run whose history grows past its namespace's
// max_history_events is terminated by the workflow task that takes it
// there, with a reason that says so; a run within it completes.
func TestHistoryQuota(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Ticker)
			worker.RegisterStep(w, NoopTick)
		})
		if _, err := e.eng.SetQuotas(e.ctx, api.DefaultNamespace, api.Quotas{MaxHistoryEvents: 40}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // the quotas the engine believes
		small, err := client.Start(e.ctx, e.c, Ticker, 2, client.StartOptions{ID: "small"})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := small.Get(e.ctx); err != nil || n != 2 {
			t.Fatalf("a run within the quota: %d, %v", n, err)
		}
		big, err := client.Start(e.ctx, e.c, Ticker, 50, client.StartOptions{ID: "big"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = big.Get(e.ctx)
		var te *api.TerminatedError
		if !errors.As(err, &te) || !strings.Contains(te.Reason, "max_history_events") {
			t.Fatalf("a run past the quota: %v", err)
		}
		evs := e.history("big", "")
		if last := evs[len(evs)-1]; last.Type != api.EventWorkflowTerminated || last.ID > 40+8 {
			dump(t, evs)
			t.Fatalf("the run should end with its termination soon after event 40")
		}
	})
}
