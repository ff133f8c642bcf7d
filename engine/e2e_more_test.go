package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Outcome completes for ok, fails otherwise, and blocks for "block".
func Outcome(ctx workflow.Context, in string) (string, error) {
	switch in {
	case "ok":
		return "done", nil
	case "block":
		return "", workflow.Await(ctx, func() bool { return false })
	}
	return "", workflow.NewError("Failed", in, false)
}

func TestIDReuseAndRequestIDs(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Outcome) })
		start := func(id, in string, o client.StartOptions) (client.Run[string], error) {
			o.ID = id
			return client.Start(e.ctx, e.c, Outcome, in, o)
		}
		finish := func(id, in string, o client.StartOptions) client.Run[string] {
			t.Helper()
			r, err := start(id, in, o)
			if err != nil {
				t.Fatal(err)
			}
			r.Get(e.ctx)
			return r
		}
		already := func(err error) {
			t.Helper()
			var ae *api.AlreadyStartedError
			if !errors.Is(err, api.ErrAlreadyStarted) || !errors.As(err, &ae) {
				t.Fatalf("got %v, want already started", err)
			}
		}

		// A running workflow id is never started twice...
		running, err := start("reuse", "block", client.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = start("reuse", "ok", client.StartOptions{IDReuse: client.AllowDuplicate})
		already(err)
		// ... unless TerminateIfRunning.
		next, err := start("reuse", "ok", client.StartOptions{IDReuse: client.TerminateIfRunning})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := running.Get(e.ctx); !errors.Is(err, api.ErrTerminated) {
			t.Fatalf("old run: %v, want terminated", err)
		}
		if v, err := next.Get(e.ctx); err != nil || v != "done" {
			t.Fatalf("new run: %q, %v", v, err)
		}
		// Closed: allowed by default, refused by RejectDuplicate.
		finish("reuse", "ok", client.StartOptions{})
		_, err = start("reuse", "ok", client.StartOptions{IDReuse: client.RejectDuplicate})
		already(err)
		// AllowDuplicateFailedOnly: not after a completion, yes after a failure.
		_, err = start("reuse", "ok", client.StartOptions{IDReuse: client.AllowDuplicateFailedOnly})
		already(err)
		finish("failing", "boom", client.StartOptions{})
		if _, err := start("failing", "ok", client.StartOptions{IDReuse: client.AllowDuplicateFailedOnly}); err != nil {
			t.Fatalf("failed-only after a failure: %v", err)
		}
		// The same request id returns the same run.
		a, err := start("dedup", "block", client.StartOptions{RequestID: "req-1"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := start("dedup", "block", client.StartOptions{RequestID: "req-1"})
		if err != nil || b.RunID != a.RunID {
			t.Fatalf("retried start: %v, run %s, want %s", err, b.RunID, a.RunID)
		}
		_, err = start("dedup", "block", client.StartOptions{RequestID: "req-2"})
		already(err)
		// A signal's request id applies it once.
		for range 2 {
			if err := e.eng.SignalWorkflow(e.ctx, api.SignalRequest{RunRef: api.RunRef{WorkflowID: "dedup"}, Name: "x", RequestID: "sig-1"}); err != nil {
				t.Fatal(err)
			}
		}
		e.eventually("the signal in history", func() bool {
			return count(e.history("dedup", ""), api.EventSignalReceived) == 1
		})
		if n := count(e.history("dedup", ""), api.EventSignalReceived); n != 1 {
			t.Fatalf("%d signals recorded, want 1", n)
		}
		// Bad input changes nothing.
		if _, err := e.eng.StartWorkflow(e.ctx, api.StartRequest{WorkflowID: "", WorkflowType: "Outcome"}); !errors.Is(err, api.ErrInvalidArgument) {
			t.Fatalf("empty id: %v", err)
		}
		if _, err := e.eng.StartWorkflow(e.ctx, api.StartRequest{WorkflowID: "x", WorkflowType: "Outcome", Priority: 9}); !errors.Is(err, api.ErrInvalidArgument) {
			t.Fatalf("priority 9: %v", err)
		}
		if _, err := e.eng.StartWorkflow(e.ctx, api.StartRequest{Namespace: "nope", WorkflowID: "x", WorkflowType: "Outcome"}); !errors.Is(err, api.ErrNamespaceNotFound) {
			t.Fatalf("unknown namespace: %v", err)
		}
		e.c.Terminate(e.ctx, "dedup", "", "test over")
	})
}

// Versioned is changed between workers to cause a non-determinism error.
func versionedV1(ctx workflow.Context, _ struct{}) (string, error) {
	a, err := workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{}, "echo", "A").Get(ctx)
	if err != nil {
		return "", err
	}
	workflow.GetSignalChannel[string](ctx, "go").Receive(ctx)
	b, err := workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{}, "echo", "B").Get(ctx)
	return a + b, err
}

func versionedV2(ctx workflow.Context, _ struct{}) (string, error) {
	// The "fix" that broke replay: a new first step.
	if _, err := workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{}, "audit", "x").Get(ctx); err != nil {
		return "", err
	}
	return versionedV1(ctx, struct{}{})
}

func TestNonDeterminismThenRecovery(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		echo := func(ctx context.Context, in string) (string, error) { return in, nil }
		with := func(wf func(workflow.Context, struct{}) (string, error)) func(w *worker.Worker) {
			return func(w *worker.Worker) {
				worker.RegisterWorkflowNamed(w, "Versioned", wf)
				worker.RegisterStepNamed(w, "echo", echo)
				worker.RegisterStepNamed(w, "audit", echo)
			}
		}
		e := newEnv(t, st, with(versionedV1))
		r, err := client.StartByName[string](e.ctx, e.c, "Versioned", struct{}{}, client.StartOptions{ID: "versioned"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the workflow to wait for its signal", func() bool {
			return count(e.history("versioned", ""), api.EventStepCompleted) == 1 &&
				count(e.history("versioned", ""), api.EventWorkflowTaskCompleted) == 2
		})
		e.stopWorker()
		e.startWorker(with(versionedV2)) // new code, empty cache: replays
		if err := e.c.Signal(e.ctx, "versioned", "", "go", "now"); err != nil {
			t.Fatal(err)
		}
		e.eventually("a non-determinism error", func() bool {
			d, err := e.c.Describe(e.ctx, "versioned", "")
			return err == nil && d.WorkflowTaskFailure != nil
		})
		d, _ := e.c.Describe(e.ctx, "versioned", "")
		if d.Status != store.StatusRunning || d.WorkflowTaskFailure.Kind != api.KindNonDeterminism || !strings.Contains(d.WorkflowTaskFailure.Message, "audit") {
			t.Fatalf("describe: status %s, failure %+v", d.Status, d.WorkflowTaskFailure)
		}
		evs := e.history("versioned", "")
		if n := count(evs, api.EventWorkflowTaskFailed); n != 1 {
			dump(t, evs)
			t.Fatalf("%d task failures in history, want 1 (retries are not recorded again)", n)
		}
		e.stopWorker()
		e.startWorker(with(versionedV1)) // the fixed code
		if got, err := r.Get(e.ctx); err != nil || got != "AB" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
}

// Big passes large values through a step.
func Big(ctx workflow.Context, in string) (string, error) {
	out, err := workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{}, "grow", in).Get(ctx)
	if err != nil {
		return "", err
	}
	return out + "!", nil
}

func TestLargePayloadOffload(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Big)
			worker.RegisterStepNamed(w, "grow", func(ctx context.Context, in string) (string, error) { return in + in, nil })
		})
		in := strings.Repeat("0123456789abcdef", 300<<10/16) // 300 KiB, above the 256 KiB threshold
		r, err := client.Start(e.ctx, e.c, Big, in, client.StartOptions{ID: "big"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Get(e.ctx)
		if err != nil || got != in+in+"!" {
			t.Fatalf("got %d bytes, %v", len(got), err)
		}
		page, err := e.eng.GetHistory(e.ctx, api.HistoryRequest{RunRef: api.RunRef{WorkflowID: "big"}})
		if err != nil {
			t.Fatal(err)
		}
		docs := 0
		for _, ev := range page.Events {
			if ev.Payload.Doc != nil {
				docs++
			}
		}
		// Input, step input, step result and output are documents.
		if docs < 4 {
			dump(t, page.Events)
			t.Fatalf("%d events refer to documents, want at least 4", docs)
		}
		// Replay (a new worker) resolves them.
		e.restart()
		if _, err := client.Query[int](e.ctx, e.c, "big", "", "none", 0); !errors.Is(err, api.ErrQueryFailed) {
			t.Fatalf("query after restart: %v", err)
		}
	})
}
