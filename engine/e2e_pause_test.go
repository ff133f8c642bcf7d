package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// pauseProbe is what the pause test's steps report.
type pauseProbe struct {
	gate    chan struct{} // Slow waits for it
	started atomic.Bool
	fast    atomic.Int32
	flaky   atomic.Int32
}

var probes sync.Map // test name -> *pauseProbe

func probe(name string) *pauseProbe { p, _ := probes.Load(name); return p.(*pauseProbe) }

// Slow runs until its probe's gate opens.
func Slow(ctx context.Context, name string) (string, error) {
	p := probe(name)
	p.started.Store(true)
	select {
	case <-p.gate:
		return "slow", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Fast counts its runs.
func Fast(_ context.Context, name string) (string, error) {
	probe(name).fast.Add(1)
	return "fast", nil
}

// Flaky fails its first attempt.
func Flaky(_ context.Context, name string) (string, error) {
	if probe(name).flaky.Add(1) == 1 {
		return "", errors.New("first attempt fails")
	}
	return "flaky", nil
}

// Pausable runs a slow step beside a timer, then a fast step. The timer
// is long enough that the test pauses the run before it fires, however
// loaded the machine (300 ms fired before the pause beside two CPU-bound
// processes).
func Pausable(ctx workflow.Context, name string) (string, error) {
	slow := workflow.ExecuteStep(ctx, workflow.StepOptions{StartToClose: time.Minute}, Slow, name)
	timer := workflow.NewTimer(ctx, 5*time.Second)
	a, err := slow.Get(ctx)
	if err != nil {
		return "", err
	}
	if _, err := timer.Get(ctx); err != nil {
		return "", err
	}
	b, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Fast, name).Get(ctx)
	return a + "+" + b, err
}

// Retrying runs a step whose first attempt fails, retried after a second.
func Retrying(ctx workflow.Context, name string) (string, error) {
	return workflow.ExecuteStep(ctx, workflow.StepOptions{Retry: &workflow.RetryPolicy{InitialInterval: time.Second}}, Flaky, name).Get(ctx)
}

// TestPauseResume pauses a run while a step runs and a timer is due: the
// step finishes and the timer fires, but the workflow sees neither and no
// new step starts until resume; a step's retry that comes due while the
// run is paused waits too, across a restart. A closed run cannot be paused.
func TestPauseResume(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		name := t.Name()
		p := &pauseProbe{gate: make(chan struct{})}
		probes.Store(name, p)
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Pausable)
			worker.RegisterWorkflow(w, Retrying)
			worker.RegisterStep(w, Slow)
			worker.RegisterStep(w, Fast)
			worker.RegisterStep(w, Flaky)
		})
		run, err := client.Start(e.ctx, e.c, Pausable, name, client.StartOptions{ID: "pausable"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the slow step running", p.started.Load)
		req := api.PauseRequest{RunRef: api.RunRef{WorkflowID: "pausable"}, Reason: "checking the ledger", Identity: "ops@example"}
		if err := e.eng.PauseWorkflow(e.ctx, req); err != nil {
			t.Fatal(err)
		}
		d, err := e.c.Describe(e.ctx, "pausable", "")
		if err != nil || d.Paused == nil || d.Paused.Identity != "ops@example" || d.Paused.Reason != "checking the ledger" || d.Paused.Time.IsZero() {
			t.Fatalf("describe of a paused run: %+v, %v", d.Paused, err)
		}
		close(p.gate) // the running step finishes
		// The step's result and the timer are recorded while paused...
		afterPause := func() []api.Event {
			evs := e.history("pausable", "")
			paused := 0
			for i, ev := range evs {
				if ev.Type == api.EventWorkflowPaused {
					paused = i
				}
			}
			return evs[paused:]
		}
		e.eventually("the step's result and the timer recorded while paused", func() bool {
			after := afterPause()
			return count(after, api.EventStepCompleted) == 1 && count(after, api.EventTimerFired) == 1
		})
		// ...and no workflow task follows them: one would be offered as
		// soon as they were recorded, and run in a few milliseconds.
		time.Sleep(300 * time.Millisecond)
		evs := e.history("pausable", "")
		after := afterPause()
		if count(after, api.EventStepCompleted) != 1 || count(after, api.EventTimerFired) != 1 {
			dump(t, evs)
			t.Fatalf("the step's result and the timer should be recorded while paused")
		}
		if count(after, api.EventWorkflowTaskCompleted) != 0 || p.fast.Load() != 0 {
			dump(t, evs)
			t.Fatalf("a workflow task ran (or the fast step, %d times) while paused", p.fast.Load())
		}
		if err := e.eng.PauseWorkflow(e.ctx, req); err != nil {
			t.Fatalf("pausing a paused run: %v", err)
		}
		if err := e.eng.ResumeWorkflow(e.ctx, api.PauseRequest{RunRef: req.RunRef, Identity: "ops@example"}); err != nil {
			t.Fatal(err)
		}
		out, err := run.Get(e.ctx)
		if err != nil || out != "slow+fast" {
			t.Fatalf("result %q, %v", out, err)
		}
		evs = e.history("pausable", "")
		if count(evs, api.EventWorkflowPaused) != 1 || count(evs, api.EventWorkflowResumed) != 1 {
			dump(t, evs)
			t.Fatal("want one pause and one resume in history")
		}
		for _, ev := range evs {
			if (ev.Type == api.EventWorkflowPaused || ev.Type == api.EventWorkflowResumed) && ev.Identity != "ops@example" {
				t.Fatalf("%s by %q; want ops@example", ev.Type, ev.Identity)
			}
		}
		// Closed: refused, and nothing written.
		n := len(evs)
		if err := e.eng.PauseWorkflow(e.ctx, req); !errors.Is(err, api.ErrRunClosed) {
			t.Fatalf("pausing a closed run: %v; want ErrRunClosed", err)
		}
		if len(e.history("pausable", "")) != n {
			t.Fatal("a refused pause wrote history")
		}

		// A retry that comes due while paused waits, across a restart.
		run2, err := client.Start(e.ctx, e.c, Retrying, name, client.StartOptions{ID: "retrying"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the first attempt", func() bool { return p.flaky.Load() == 1 })
		if err := e.eng.PauseWorkflow(e.ctx, api.PauseRequest{RunRef: api.RunRef{WorkflowID: "retrying"}, Identity: "ops"}); err != nil {
			t.Fatal(err)
		}
		// The retry comes due a second after the first attempt's failure
		// is recorded: let it come due while paused...
		e.eventually("the first attempt's failure recorded", func() bool {
			return count(e.history("retrying", ""), api.EventStepAttemptFailed) == 1
		})
		time.Sleep(time.Second + 300*time.Millisecond)
		e.restart()
		// ...and after the restart, which would offer it at once if it
		// forgot the pause.
		time.Sleep(300 * time.Millisecond)
		if got := p.flaky.Load(); got != 1 {
			t.Fatalf("%d attempts while paused; want the first only", got)
		}
		if err := e.eng.ResumeWorkflow(e.ctx, api.PauseRequest{RunRef: api.RunRef{WorkflowID: "retrying"}, Identity: "ops"}); err != nil {
			t.Fatal(err)
		}
		if out, err := client.GetRun[string](e.c, "retrying", run2.RunID).Get(e.ctx); err != nil || out != "flaky" {
			t.Fatalf("retrying: %q, %v", out, err)
		}
	})
}
