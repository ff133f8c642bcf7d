package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
)

// TestRetriedRequests: a terminate, cancel or signal-with-start delivered
// again with the request id of one that landed (a client retrying after a
// lost answer) answers as the first did and changes nothing more, even
// when the first closed the run.
func TestRetriedRequests(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Outcome) })
		block := func(id string) client.Run[string] {
			t.Helper()
			r, err := client.Start(e.ctx, e.c, Outcome, "block", client.StartOptions{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		status := func(id, runID string) store.RunStatus {
			t.Helper()
			d, err := e.c.Describe(e.ctx, id, runID)
			if err != nil {
				t.Fatal(err)
			}
			return d.Status
		}

		// Terminate: the retry answers nil though the run is closed now;
		// another request id, or none, gets run_closed.
		first := block("term")
		term := func(requestID string) error {
			return e.eng.TerminateWorkflow(e.ctx, api.TerminateRequest{RunRef: api.RunRef{WorkflowID: "term"}, Reason: "test", RequestID: requestID})
		}
		if err := term("t-1"); err != nil {
			t.Fatal(err)
		}
		if err := term("t-1"); err != nil {
			t.Fatalf("retried terminate: %v, want nil", err)
		}
		if err := term("t-2"); !errors.Is(err, api.ErrRunClosed) {
			t.Fatalf("another terminate of the closed run: %v, want run_closed", err)
		}
		if err := term(""); !errors.Is(err, api.ErrRunClosed) {
			t.Fatalf("a terminate without a request id: %v, want run_closed", err)
		}
		if n := count(e.history("term", first.RunID), api.EventWorkflowTerminated); n != 1 {
			t.Fatalf("%d terminations recorded, want 1", n)
		}
		// A retry arriving after a new run started never closes that run.
		second := block("term")
		if err := term("t-1"); err != nil {
			t.Fatalf("terminate retried after a new run started: %v, want nil", err)
		}
		if s := status("term", second.RunID); s != store.StatusRunning {
			t.Fatalf("the new run is %s after an old terminate's retry, want running", s)
		}
		if err := term("t-3"); err != nil {
			t.Fatal(err)
		}

		// Cancel: the workflow closes on the first; the retry answers nil.
		canceled := block("cancel")
		cancel := func(requestID string) error {
			return e.eng.CancelWorkflow(e.ctx, api.CancelRequest{RunRef: api.RunRef{WorkflowID: "cancel"}, RequestID: requestID})
		}
		if err := cancel("c-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := canceled.Get(e.ctx); !errors.Is(err, api.ErrCanceled) {
			t.Fatalf("canceled run: %v, want canceled", err)
		}
		if err := cancel("c-1"); err != nil {
			t.Fatalf("cancel retried after the run closed: %v, want nil", err)
		}
		if err := cancel("c-2"); !errors.Is(err, api.ErrRunClosed) {
			t.Fatalf("another cancel of the closed run: %v, want run_closed", err)
		}

		// Signal-with-start: the retry of one that started the run does not
		// signal it again; another request id does.
		sws := func(requestID string) (client.Run[string], error) {
			return client.SignalWithStart[string](e.ctx, e.c, "Outcome", "block", client.StartOptions{ID: "sws", RequestID: requestID}, "go", 1)
		}
		a, err := sws("s-1")
		if err != nil {
			t.Fatal(err)
		}
		b, err := sws("s-1")
		if err != nil || b.RunID != a.RunID {
			t.Fatalf("retried signal-with-start: %v, run %s, want %s", err, b.RunID, a.RunID)
		}
		if _, err := sws("s-2"); err != nil {
			t.Fatal(err)
		}
		if _, err := sws("s-2"); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Terminate(e.ctx, "sws", "", "test over"); err != nil {
			t.Fatal(err)
		}
		// Read after the close: a signal that arrived while a workflow task
		// was in flight waits in the run's buffer until the task completes
		// or the run closes.
		if n := count(e.history("sws", a.RunID), api.EventSignalReceived); n != 2 {
			t.Fatalf("%d signals recorded for two signal-with-start request ids sent twice each, want 2", n)
		}
	})
}

// TestCloseKeepsBufferedInputs: signals acknowledged while a workflow task
// is in flight are in the history of a run that a terminate or its run
// timeout then closes, before the closing event.
func TestCloseKeepsBufferedInputs(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Outcome) })
		for _, c := range []struct {
			id      string
			timeout time.Duration // the run's timeout closes it; else a terminate
			closing api.EventType
		}{
			{id: "buffered-term", closing: api.EventWorkflowTerminated},
			{id: "buffered-timeout", timeout: time.Second, closing: api.EventWorkflowTimedOut},
		} {
			// Queue "held" has no worker: the raw poll below holds its task.
			r, err := client.Start(e.ctx, e.c, Outcome, "block", client.StartOptions{ID: c.id, Queue: "held", RunTimeout: c.timeout})
			if err != nil {
				t.Fatal(err)
			}
			pctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			task, err := e.eng.PollWorkflowTask(pctx, api.PollRequest{Queue: "held", Identity: "raw"})
			cancel()
			if err != nil || task == nil {
				t.Fatalf("poll: %+v, %v", task, err)
			}
			for i := range 2 {
				if err := e.c.Signal(e.ctx, c.id, "", "go", i); err != nil {
					t.Fatal(err)
				}
			}
			if c.timeout == 0 {
				if err := e.c.Terminate(e.ctx, c.id, "", "test"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.Get(e.ctx); err == nil {
				t.Fatalf("%s closed without an error", c.id)
			}
			evs := e.history(c.id, r.RunID)
			if n := count(evs, api.EventSignalReceived); n != 2 {
				t.Fatalf("%s: %d signals in history, want 2: %+v", c.id, n, evs)
			}
			if last := evs[len(evs)-1]; last.Type != c.closing {
				t.Fatalf("%s: history ends with %s, want %s", c.id, last.Type, c.closing)
			}
		}
	})
}
