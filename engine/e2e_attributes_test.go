package engine_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Staged moves its "stage" attribute and memo key along as it gets
// signals "next", and drops its "draft" attribute and memo key on the way.
func Staged(ctx workflow.Context, _ struct{}) (string, error) {
	next := workflow.GetSignalChannel[string](ctx, "next")
	workflow.UpsertAttributes(ctx, map[string]string{"stage": "received", "draft": "yes"})
	if err := workflow.UpsertMemo(ctx, map[string]any{"stage": "received", "draft": map[string]int{"lines": 3}}); err != nil {
		return "", err
	}
	stage, _ := next.Receive(ctx)
	if err := workflow.UpsertMemo(ctx, map[string]any{"stage": stage, "draft": nil}); err != nil {
		return "", err
	}
	workflow.UpsertAttributes(ctx, map[string]string{"stage": stage, "draft": ""})
	last, _ := next.Receive(ctx)
	return last, nil
}

// TestUpsertAttributes: a workflow's attribute changes reach the lists,
// survive a restart and a replay, and a reset takes the run back to the
// attributes it had at the reset point. Its memo changes (UpsertMemo) do
// the same in DescribeWorkflow's answer, over the memo it started with.
func TestUpsertAttributes(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Staged) })
		if _, err := client.Start(e.ctx, e.c, Staged, struct{}{}, client.StartOptions{ID: "staged", Attributes: map[string]string{"owner": "ops"},
			Memo: map[string]any{"owner": "ops"}}); err != nil {
			t.Fatal(err)
		}
		listed := func(attrs map[string]string) bool {
			page, err := e.eng.ListWorkflows(e.ctx, api.ListRequest{WorkflowID: "staged", Attributes: attrs})
			return err == nil && len(page.Runs) == 1
		}
		e.eventually("stage=received", func() bool { return listed(map[string]string{"stage": "received", "draft": "yes", "owner": "ops"}) })
		memo := func() string {
			d, err := e.eng.DescribeWorkflow(e.ctx, api.RunRef{WorkflowID: "staged"})
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(d.Memo)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if got, want := memo(), `{"draft":{"lines":3},"owner":"ops","stage":"received"}`; got != want {
			t.Fatalf("memo %s, want %s", got, want)
		}

		e.restart() // the worker's cache and the engine's are gone: the next task replays
		if err := e.c.Signal(e.ctx, "staged", "", "next", "approved"); err != nil {
			t.Fatal(err)
		}
		e.eventually("stage=approved", func() bool { return listed(map[string]string{"stage": "approved", "owner": "ops"}) })
		if listed(map[string]string{"draft": "yes"}) {
			t.Fatal("the removed attribute still matches")
		}
		d, err := e.eng.DescribeWorkflow(e.ctx, api.RunRef{WorkflowID: "staged"})
		if err != nil || len(d.Attributes) != 2 || d.Attributes["stage"] != "approved" {
			t.Fatalf("describe: %+v, %v", d.Attributes, err)
		}
		if got, want := memo(), `{"owner":"ops","stage":"approved"}`; got != want {
			t.Fatalf("memo %s, want %s", got, want)
		}
		evs := e.history("staged", "")
		if n := count(evs, api.EventAttributesUpserted); n != 2 {
			dump(t, evs)
			t.Fatalf("%d AttributesUpserted events; want 2", n)
		}

		// Reset to before the second upsert, with no worker to run the new
		// run's task: its attributes are those of the copy, the first
		// upsert's.
		e.stopWorker()
		if _, err := e.eng.ResetWorkflow(e.ctx, api.ResetRequest{RunRef: api.RunRef{WorkflowID: "staged"}, Point: api.ResetBeforeEvent,
			EventID: lastOf(evs, api.EventAttributesUpserted), Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		d, err = e.eng.DescribeWorkflow(e.ctx, api.RunRef{WorkflowID: "staged"})
		if err != nil || d.Attributes["stage"] != "received" || d.Attributes["draft"] != "yes" || d.Attributes["owner"] != "ops" {
			t.Fatalf("after the reset: %+v, %v", d.Attributes, err)
		}
		if got, want := memo(), `{"draft":{"lines":3},"owner":"ops","stage":"received"}`; got != want {
			t.Fatalf("memo after the reset %s, want %s", got, want)
		}
		if n := count(e.history("staged", ""), api.EventMemoUpserted); n != 1 {
			t.Fatalf("%d MemoUpserted events after the reset; want 1", n)
		}
	})
}

func lastOf(evs []api.Event, typ api.EventType) int64 {
	var id int64
	for _, ev := range evs {
		if ev.Type == typ {
			id = ev.ID
		}
	}
	return id
}

// TestSyncVisibility: once SyncVisibility returns, the lists show the
// runs as of the commits before it, without the second the engine takes
// to gather visibility updates into batches.
func TestSyncVisibility(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Staged) })
		for i, id := range []string{"sync-1", "sync-2", "sync-3"} {
			if _, err := client.Start(e.ctx, e.c, Staged, struct{}{}, client.StartOptions{ID: id}); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				continue // one stays open
			}
			for _, v := range []string{"approved", "done"} {
				if err := e.c.Signal(e.ctx, id, "", "next", v); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := client.GetRun[string](e.c, id, "").Get(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.eng.SyncVisibility(e.ctx); err != nil {
			t.Fatal(err)
		}
		page, err := e.eng.ListWorkflows(e.ctx, api.ListRequest{WorkflowIDPrefix: "sync-"})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]store.RunStatus{}
		for _, r := range page.Runs {
			got[r.WorkflowID] = r.Status
		}
		want := map[string]store.RunStatus{"sync-1": store.StatusRunning, "sync-2": store.StatusCompleted, "sync-3": store.StatusCompleted}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("listed right after SyncVisibility: %v, want %v", got, want)
		}
	})
}
