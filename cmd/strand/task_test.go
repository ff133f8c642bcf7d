package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// AskFinance asks finance to approve and returns the outcome.
func AskFinance(ctx workflow.Context, title string) (string, error) {
	out, err := workflow.HumanTask(ctx, workflow.HumanTaskOptions{Title: title, Groups: []string{"finance"}, Outcomes: []string{"approve", "reject"},
		Form: json.RawMessage(`{"type": "object", "required": ["budget"]}`)}).Get(ctx)
	return out.Outcome + " by " + out.By, err
}

// TestTaskVerbs drives strand task against a server without access
// control (the caller names themselves with --user and --groups).
func TestTaskVerbs(t *testing.T) {
	url := systemServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc := remote.New(url, nil)
	w := worker.New(svc, worker.Options{Queue: "asks"})
	worker.RegisterWorkflow(w, AskFinance)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	asked, err := client.Start(ctx, client.New(svc, client.Options{}), AskFinance, "Approve the laptop", client.StartOptions{ID: "ask-1", Queue: "asks"})
	if err != nil {
		t.Fatal(err)
	}
	bob := []string{"--user", "bob", "--groups", "finance", "--server", url}
	cli := func(args ...string) string {
		t.Helper()
		out, code := run(t, append(args, bob...)...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	var list api.ListTasksResponse
	for deadline := time.Now().Add(20 * time.Second); len(list.Tasks) == 0; time.Sleep(100 * time.Millisecond) {
		if err := json.Unmarshal([]byte(cli("task", "list", "--mine", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's inbox stays empty")
		}
	}
	id := list.Tasks[0].TaskID
	if out := cli("task", "list"); !strings.Contains(out, "Approve the laptop") || !strings.Contains(out, "group:finance") {
		t.Fatalf("list: %s", out)
	}
	if out := cli("task", "claim", id); !strings.Contains(out, "claimed by bob") {
		t.Fatalf("claim: %s", out)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"task", "complete", id, "--data", "{"}, 2, "--data: not valid JSON"},
		{[]string{"task", "complete", id, "--outcome", "approve", "--data", "{}"}, 2, "budget"},
		{[]string{"task", "complete", id, "--outcome", "maybe", "--data", `{"budget": 1}`}, 2, `outcome "maybe"`},
		{[]string{"task", "show", "strand-task:none"}, 1, "no task"},
	} {
		out, code := run(t, append(c.args, bob...)...)
		if code != c.code || !strings.Contains(out, c.want) || strings.Contains(out, "store:") || strings.Contains(out, "workflow not found") {
			t.Fatalf("strand %s: exit %d: %s; want exit %d and %q", strings.Join(c.args, " "), code, out, c.code, c.want)
		}
	}
	cli("task", "comment", id, "the budget is IT's")
	cli("task", "complete", id, "--outcome", "approve", "--data", `{"budget": "IT"}`)
	got, err := asked.Get(ctx)
	if err != nil || got != "approve by bob" {
		t.Fatalf("the run got %q, %v", got, err)
	}
	if out := cli("task", "show", id); !strings.Contains(out, "the budget is IT's") || !strings.Contains(out, "Outcome:") {
		t.Fatalf("show: %s", out)
	}
}
