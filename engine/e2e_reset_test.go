package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// resetProbe is what the reset test's steps report and obey.
type resetProbe struct {
	counted atomic.Int32 // Counted's runs
	failing atomic.Bool  // Maybe fails while set
	gate    chan struct{}
	gated   atomic.Int32 // Gated's runs
}

var resetProbes sync.Map // test name -> *resetProbe

func rprobe(name string) *resetProbe { p, _ := resetProbes.Load(name); return p.(*resetProbe) }

// Counted counts its runs.
func Counted(_ context.Context, name string) (string, error) {
	rprobe(name).counted.Add(1)
	return "a", nil
}

// Maybe fails, for good, while its probe says so.
func Maybe(_ context.Context, name string) (string, error) {
	if rprobe(name).failing.Load() {
		return "", workflow.NewError("Broken", "the ledger is down", true)
	}
	return "b", nil
}

// Gated runs until its probe's gate opens.
func Gated(ctx context.Context, name string) (string, error) {
	p := rprobe(name)
	p.gated.Add(1)
	select {
	case <-p.gate:
		return "g", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Resettable runs a step, waits for a signal, then runs a step that may fail.
func Resettable(ctx workflow.Context, name string) (string, error) {
	a, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Counted, name).Get(ctx)
	if err != nil {
		return "", err
	}
	sig, _ := workflow.GetSignalChannel[string](ctx, "go").Receive(ctx)
	b, err := workflow.ExecuteStep(ctx, workflow.StepOptions{Retry: &workflow.RetryPolicy{MaximumAttempts: 1}}, Maybe, name).Get(ctx)
	if err != nil {
		return "", err
	}
	return a + "+" + sig + "+" + b, nil
}

// Pending starts a step, then waits for a signal before it waits for the step.
func Pending(ctx workflow.Context, name string) (string, error) {
	g := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Gated, name)
	sig, _ := workflow.GetSignalChannel[string](ctx, "poke").Receive(ctx)
	out, err := g.Get(ctx)
	return out + "+" + sig, err
}

// Echo returns its input.
func Echo(_ workflow.Context, s string) (string, error) { return s, nil }

// TestResetPoints resets runs to each kind of point: before the first
// failed step (which runs again), before an event (the signals after it
// received again, or not), and the last workflow task of an open run
// with a step pending at the point (the old run terminated). A point that
// does not exist writes nothing. Rerun starts a closed run again.
func TestResetPoints(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		name := t.Name()
		p := &resetProbe{gate: make(chan struct{})}
		resetProbes.Store(name, p)
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Resettable)
			worker.RegisterWorkflow(w, Pending)
			worker.RegisterWorkflow(w, Echo)
			worker.RegisterStep(w, Counted)
			worker.RegisterStep(w, Maybe)
			worker.RegisterStep(w, Gated)
		})
		result := func(id, runID string) (string, error) { return client.GetRun[string](e.c, id, runID).Get(e.ctx) }

		// 1. Before the first failed step.
		p.failing.Store(true)
		run, err := client.Start(e.ctx, e.c, Resettable, name, client.StartOptions{ID: "fails"})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.c.Signal(e.ctx, "fails", "", "go", "x"); err != nil {
			t.Fatal(err)
		}
		if _, err := run.Get(e.ctx); !errors.Is(err, api.ErrStepFailed) {
			t.Fatalf("first run: %v; want the step failed", err)
		}
		n := len(e.history("fails", run.RunID))
		// A point that does not exist: refused, nothing written.
		for _, bad := range []api.ResetRequest{
			{RunRef: api.RunRef{WorkflowID: "fails"}, Point: api.ResetBeforeEvent, EventID: 9999},
			{RunRef: api.RunRef{WorkflowID: "fails"}, Point: api.ResetBeforeEvent, EventID: 1},
			{RunRef: api.RunRef{WorkflowID: "fails"}, Point: "sideways"},
		} {
			var ia *store.InvalidArgumentError
			if _, err := e.eng.ResetWorkflow(e.ctx, bad); !errors.As(err, &ia) && !errors.Is(err, api.ErrFailedPrecondition) {
				t.Fatalf("reset %+v: %v; want invalid argument or failed precondition", bad, err)
			}
		}
		if d, err := e.c.Describe(e.ctx, "fails", ""); err != nil || d.RunID != run.RunID || len(e.history("fails", run.RunID)) != n {
			t.Fatalf("a refused reset changed something: current %s, %v", d.RunID, err)
		}
		p.failing.Store(false)
		resp, err := e.eng.ResetWorkflow(e.ctx, api.ResetRequest{RunRef: api.RunRef{WorkflowID: "fails"}, Point: api.ResetFirstFailedStep, Reason: "ledger fixed", Identity: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := result("fails", resp.RunID); err != nil || out != "a+x+b" {
			t.Fatalf("reset run: %q, %v; want a+x+b", out, err)
		}
		if got := p.counted.Load(); got != 1 {
			t.Fatalf("the step before the point ran %d times; want once", got)
		}
		evs := e.history("fails", resp.RunID)
		if count(evs, api.EventWorkflowReset) != 1 || count(evs, api.EventStepFailed) != 0 {
			dump(t, evs)
			t.Fatal("want a WorkflowReset event and no failed step in the new run")
		}
		if _, err := e.eng.ResetWorkflow(e.ctx, api.ResetRequest{RunRef: api.RunRef{WorkflowID: "fails", RunID: run.RunID}, Point: api.ResetLastWorkflowTask}); err == nil {
			t.Fatal("reset of a run that is no longer current: want an error")
		}
		if _, err := e.eng.ResetWorkflow(e.ctx, api.ResetRequest{RunRef: api.RunRef{WorkflowID: "fails"}, Point: api.ResetFirstFailedStep}); !errors.Is(err, api.ErrFailedPrecondition) {
			t.Fatalf("reset to the first failed step of a run without one: %v", err)
		}

		// 2. Before an event: the signal after the point comes again, or not.
		for _, skip := range []bool{false, true} {
			id := map[bool]string{false: "signaled", true: "skipped"}[skip]
			run, err = client.Start(e.ctx, e.c, Resettable, name, client.StartOptions{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			e.eventually("the first step's result", func() bool { return count(e.history(id, run.RunID), api.EventStepCompleted) == 1 })
			if err := e.c.Signal(e.ctx, id, "", "go", "y"); err != nil {
				t.Fatal(err)
			}
			if out, err := run.Get(e.ctx); err != nil || out != "a+y+b" {
				t.Fatalf("%s: %q, %v", id, out, err)
			}
			var signal int64
			for _, ev := range e.history(id, run.RunID) {
				if ev.Type == api.EventSignalReceived {
					signal = ev.ID
				}
			}
			resp, err = e.eng.ResetWorkflow(e.ctx, api.ResetRequest{RunRef: api.RunRef{WorkflowID: id}, Point: api.ResetBeforeEvent, EventID: signal, SkipSignals: skip})
			if err != nil {
				t.Fatal(err)
			}
			want := "a+y+b"
			if skip {
				want = "a+z+b"
				if err := e.c.Signal(e.ctx, id, "", "go", "z"); err != nil {
					t.Fatal(err)
				}
			}
			if out, err := result(id, resp.RunID); err != nil || out != want {
				t.Fatalf("%s reset: %q, %v; want %s", id, out, err, want)
			}
		}

		// 3. The last workflow task of an open run, with a step pending.
		run, err = client.Start(e.ctx, e.c, Pending, name, client.StartOptions{ID: "pending"})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.c.Signal(e.ctx, "pending", "", "poke", "p"); err != nil {
			t.Fatal(err)
		}
		e.eventually("the step and the signal's task", func() bool {
			return p.gated.Load() == 1 && count(e.history("pending", run.RunID), api.EventWorkflowTaskCompleted) == 2
		})
		resp, err = e.eng.ResetWorkflow(e.ctx, api.ResetRequest{RunRef: api.RunRef{WorkflowID: "pending"}, Point: api.ResetLastWorkflowTask, Identity: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the pending step dispatched in the new run", func() bool { return p.gated.Load() == 2 })
		close(p.gate)
		if out, err := result("pending", resp.RunID); err != nil || out != "g+p" {
			t.Fatalf("reset of an open run: %q, %v", out, err)
		}
		old, err := e.c.Result(e.ctx, "pending", run.RunID)
		if err != nil || old.Status != store.StatusTerminated || old.Failure == nil || !strings.Contains(old.Failure.Message, resp.RunID) {
			t.Fatalf("the old run: %+v, %v; want terminated naming %s", old, err, resp.RunID)
		}

		// Rerun: the same input, a new run.
		echo, err := client.Start(e.ctx, e.c, Echo, "again", client.StartOptions{ID: "echo"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := echo.Get(e.ctx); err != nil {
			t.Fatal(err)
		}
		rr, err := e.eng.RerunWorkflow(e.ctx, api.RerunRequest{RunRef: api.RunRef{WorkflowID: "echo"}, Identity: "ops"})
		if err != nil || rr.RunID == echo.RunID {
			t.Fatalf("rerun: %+v, %v", rr, err)
		}
		if out, err := result("echo", rr.RunID); err != nil || out != "again" {
			t.Fatalf("rerun's result: %q, %v", out, err)
		}
	})
}
