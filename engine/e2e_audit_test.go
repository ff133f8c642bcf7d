package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// auditReceipt is a detail past the stores' document threshold (256 KiB).
var auditReceipt = strings.Repeat("one line of the carrier's receipt\n", 10000)

// Audited attaches audit details from its own code and from its steps, and
// waits for a signal between them (a point to replay from).
func Audited(ctx workflow.Context, order string) (string, error) {
	if err := workflow.AuditDetail(ctx, "plan", map[string]any{"order": order, "steps": []string{"charge", "ship"}}); err != nil {
		return "", err
	}
	charged, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, AuditedCharge, order).Get(ctx)
	if err != nil {
		return "", err
	}
	workflow.GetSignalChannel[string](ctx, "ship").Receive(ctx)
	retry := &workflow.RetryPolicy{MaximumAttempts: 2, InitialInterval: 10 * time.Millisecond}
	_, shipErr := workflow.ExecuteStep(ctx, workflow.StepOptions{Retry: retry}, AuditedShip, order).Get(ctx)
	if err := workflow.AuditDetail(ctx, "summary", fmt.Sprintf("charged %s; shipping failed: %v", charged, shipErr != nil)); err != nil {
		return "", err
	}
	return charged, nil
}

// AuditedCharge attaches its request (twice: the second replaces the
// first) and a large receipt.
func AuditedCharge(ctx context.Context, order string) (string, error) {
	for _, amount := range []int{12, 42} {
		if err := step.AuditDetail(ctx, "request", map[string]any{"order": order, "amount": amount}); err != nil {
			return "", err
		}
	}
	if err := step.AuditDetail(ctx, "receipt", auditReceipt); err != nil {
		return "", err
	}
	return "42", nil
}

// AuditedShip fails every attempt, saying what the carrier answered.
func AuditedShip(ctx context.Context, order string) (string, error) {
	if err := step.AuditDetail(ctx, "carrier", fmt.Sprintf("attempt %d: no truck for %s", step.GetInfo(ctx).Attempt, order)); err != nil {
		return "", err
	}
	return "", errors.New("no truck")
}

// TestAuditDetails: details that workflow code and steps attach land on
// the events their work ends in (the workflow task's, a step's completion,
// a failed attempt's, a step's failure), small ones inline and a large one
// as a document that a history read loads only when asked to; a replay
// after a restart attaches nothing again; a reset run keeps them; details
// a worker reports without a name are refused.
func TestAuditDetails(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Audited)
			worker.RegisterStep(w, AuditedCharge)
			worker.RegisterStep(w, AuditedShip)
			worker.RegisterWorkflow(w, AuditedByHand)
		})
		run, err := client.Start(e.ctx, e.c, Audited, "o-7", client.StartOptions{ID: "audited"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the charge", func() bool { return count(e.history("audited", run.RunID), api.EventStepCompleted) == 1 })
		// Cold caches: the rest runs after a replay of what came before.
		e.restart()
		if err := e.c.Signal(e.ctx, "audited", "", "ship", "now"); err != nil {
			t.Fatal(err)
		}
		if out, err := client.GetRun[string](e.c, "audited", run.RunID).Get(e.ctx); err != nil || out != "42" {
			t.Fatalf("result %q, %v", out, err)
		}

		evs := e.history("audited", run.RunID)
		byType := map[api.EventType][]api.Event{}
		var withDetails []string
		for _, ev := range evs {
			byType[ev.Type] = append(byType[ev.Type], ev)
			for _, d := range ev.Details {
				withDetails = append(withDetails, fmt.Sprintf("%s:%s", ev.Type, d.Name))
			}
		}
		want := []string{"WorkflowTaskCompleted:plan", "StepCompleted:request", "StepCompleted:receipt",
			"StepAttemptFailed:carrier", "StepFailed:carrier", "WorkflowTaskCompleted:summary"}
		if strings.Join(withDetails, " ") != strings.Join(want, " ") {
			dump(t, evs)
			t.Fatalf("details %v; want %v", withDetails, want)
		}
		detail := func(ev api.Event, name string) api.EventDetail {
			t.Helper()
			for _, d := range ev.Details {
				if d.Name == name {
					return d
				}
			}
			t.Fatalf("event %d has no detail %q", ev.ID, name)
			return api.EventDetail{}
		}
		completed := byType[api.EventStepCompleted][0]
		if got := string(detail(completed, "request").Value.Data); got != `{"amount":42,"order":"o-7"}` {
			t.Fatalf("request detail %s; want the second one", got)
		}
		// A history read with payloads resolved leaves the large detail a
		// reference: replays never read it.
		receipt := detail(completed, "receipt").Value
		wantReceipt, _ := json.Marshal(auditReceipt)
		if receipt.Doc == nil || receipt.Doc.Size != int64(len(wantReceipt)) || receipt.Data != nil {
			t.Fatalf("receipt detail %+v; want a document of %d bytes", receipt, len(wantReceipt))
		}
		if s := completed.Summary(); !strings.Contains(s, "details=request,receipt") {
			t.Fatalf("summary %q names no details", s)
		}
		doc, err := e.eng.GetDocument(e.ctx, api.DocumentRequest{RunRef: api.RunRef{WorkflowID: "audited", RunID: run.RunID}, ID: receipt.Doc.ID})
		if err != nil || string(doc) != string(wantReceipt) {
			t.Fatalf("receipt document: %d bytes, %v", len(doc), err)
		}
		readDetails := func(runID string) api.Event {
			t.Helper()
			page, err := e.eng.GetHistory(e.ctx, api.HistoryRequest{RunRef: api.RunRef{WorkflowID: "audited", RunID: runID}, ResolveDetails: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range page.Events {
				if ev.Type == api.EventStepCompleted && ev.Name == completed.Name {
					return ev
				}
			}
			t.Fatalf("run %s: no StepCompleted of %s", runID, completed.Name)
			return api.Event{}
		}
		if got := detail(readDetails(run.RunID), "receipt").Value; got.Doc != nil || string(got.Data) != string(wantReceipt) {
			t.Fatalf("resolved receipt: doc %v, %d bytes", got.Doc, len(got.Data))
		}
		if got := string(detail(byType[api.EventStepAttemptFailed][0], "carrier").Value.Data); got != `"attempt 1: no truck for o-7"` {
			t.Fatalf("first attempt's detail %s", got)
		}
		if got := string(detail(byType[api.EventStepFailed][0], "carrier").Value.Data); got != `"attempt 2: no truck for o-7"` {
			t.Fatalf("last attempt's detail %s", got)
		}
		last := byType[api.EventWorkflowTaskCompleted][len(byType[api.EventWorkflowTaskCompleted])-1]
		if got := string(detail(last, "summary").Value.Data); got != `"charged 42; shipping failed: true"` {
			t.Fatalf("summary detail %s", got)
		}

		// A reset run copies the details, the large one into a document of
		// its own.
		reset, err := e.eng.ResetWorkflow(e.ctx, api.ResetRequest{RunRef: api.RunRef{WorkflowID: "audited"}, Point: api.ResetFirstFailedStep, Reason: "truck found"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.GetRun[string](e.c, "audited", reset.RunID).Get(e.ctx); err != nil {
			t.Fatal(err)
		}
		if got := detail(readDetails(reset.RunID), "receipt").Value; string(got.Data) != string(wantReceipt) {
			t.Fatalf("reset run's receipt: %d bytes", len(got.Data))
		}

		// A step answered by hand (no worker polls its queue): a report with
		// a detail without a name is refused and writes nothing; a name
		// given twice keeps its last value.
		hand, err := client.StartByName[string](e.ctx, e.c, "AuditedByHand", "", client.StartOptions{ID: "by-hand"})
		if err != nil {
			t.Fatal(err)
		}
		var task *api.StepTask
		for task == nil {
			if task, err = e.eng.PollStepTask(e.ctx, api.PollRequest{Queue: "by-hand"}); err != nil {
				t.Fatal(err)
			}
		}
		n := len(e.history("by-hand", hand.RunID))
		var ia *store.InvalidArgumentError
		for _, bad := range [][]api.AuditDetail{
			{{Name: "", Value: api.Value(`1`)}},
			{{Name: "first", Value: api.Value(`1`)}, {Name: "", Value: api.Value(`2`)}},
			{{Name: "nul\x00", Value: api.Value(`1`)}},
		} {
			err := e.eng.CompleteStep(e.ctx, api.CompleteStepRequest{Token: task.Token, Result: api.Value(`"x"`), Details: bad})
			if !errors.As(err, &ia) || !strings.HasPrefix(ia.Field, "details[") {
				t.Fatalf("complete a step with details %q: %v; want invalid details", bad, err)
			}
			_, err = e.eng.CompleteWorkflowTask(e.ctx, api.CompleteWorkflowTaskRequest{Token: []byte("t"), Details: bad})
			if !errors.As(err, &ia) || !strings.HasPrefix(ia.Field, "details[") {
				t.Fatalf("complete a workflow task with details %q: %v; want invalid details", bad, err)
			}
		}
		if got := len(e.history("by-hand", hand.RunID)); got != n {
			t.Fatalf("refused details changed the history: %d events, then %d", n, got)
		}
		twice := []api.AuditDetail{{Name: "note", Value: api.Value(`"one"`)}, {Name: "other", Value: api.Value(`2`)}, {Name: "note", Value: api.Value(`"two"`)}}
		if err := e.eng.CompleteStep(e.ctx, api.CompleteStepRequest{Token: task.Token, Result: api.Value(`"x"`), Details: twice}); err != nil {
			t.Fatal(err)
		}
		if _, err := hand.Get(e.ctx); err != nil {
			t.Fatal(err)
		}
		for _, ev := range e.history("by-hand", hand.RunID) {
			if ev.Type == api.EventStepCompleted {
				if len(ev.Details) != 2 || ev.Details[0].Name != "note" || string(ev.Details[0].Value.Data) != `"two"` || ev.Details[1].Name != "other" {
					t.Fatalf("details of a name given twice: %+v; want note \"two\" then other", ev.Details)
				}
			}
		}
	})
}

// AuditedByHand runs a step on a queue no worker polls: the test answers it.
func AuditedByHand(ctx workflow.Context, _ string) (string, error) {
	return workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{Queue: "by-hand"}, "Manual", nil).Get(ctx)
}
