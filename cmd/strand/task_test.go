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

// AskLegal asks legal, due at once, and returns the outcome and who gave it.
func AskLegal(ctx workflow.Context, title string) (string, error) {
	out, err := workflow.HumanTask(ctx, workflow.HumanTaskOptions{Title: title, Groups: []string{"legal"}, Due: time.Millisecond}).Get(ctx)
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
	worker.RegisterWorkflow(w, AskLegal)
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
	if strings.Contains(cli("task", "show", id), "overdue") {
		t.Fatal("a task with no due time is shown overdue")
	}

	t.Log("a task past its due time is overdue in the API, the list and show")
	legal, err := client.Start(ctx, client.New(svc, client.Options{}), AskLegal, "Check the contract", client.StartOptions{ID: "ask-2", Queue: "asks"})
	if err != nil {
		t.Fatal(err)
	}
	// The API's answers, as a client reads them.
	type overdueTask struct {
		TaskID  string `json:"task_id"`
		Title   string `json:"title"`
		Overdue bool   `json:"overdue"`
	}
	var late overdueTask
	for deadline := time.Now().Add(20 * time.Second); late.TaskID == "" || !late.Overdue; time.Sleep(100 * time.Millisecond) {
		var all struct{ Tasks []overdueTask }
		if err := json.Unmarshal([]byte(cli("task", "list", "-o", "json")), &all); err != nil {
			t.Fatal(err)
		}
		for _, lt := range all.Tasks {
			if lt.Title == "Check the contract" {
				late = lt
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task due at once is not listed overdue: %+v", all.Tasks)
		}
	}
	if out := cli("task", "list"); !strings.Contains(out, "(overdue)") {
		t.Fatalf("list does not mark the overdue task: %s", out)
	}
	var shown overdueTask
	if err := json.Unmarshal([]byte(cli("task", "show", late.TaskID, "-o", "json")), &shown); err != nil || !shown.Overdue {
		t.Fatalf("show -o json: overdue %v, %v", shown.Overdue, err)
	}
	if out := cli("task", "show", late.TaskID); !strings.Contains(out, "(overdue)") {
		t.Fatalf("show does not mark the overdue task: %s", out)
	}

	t.Log("a task completed by an admin while another holds it says who completed it")
	carol := []string{"--user", "carol", "--groups", "legal", "--server", url}
	if out, code := run(t, append([]string{"task", "claim", late.TaskID}, carol...)...); code != 0 || !strings.Contains(out, "claimed by carol") {
		t.Fatalf("carol's claim: exit %d: %s", code, out)
	}
	dave := []string{"--user", "dave", "--server", url}
	if out, code := run(t, append([]string{"task", "complete", late.TaskID}, dave...)...); code != 0 || !strings.Contains(out, "completed by dave") {
		t.Fatalf("dave's completion: exit %d: %s", code, out)
	}
	if got, err := legal.Get(ctx); err != nil || got != "done by dave" {
		t.Fatalf("the run got %q, %v", got, err)
	}
	if strings.Contains(cli("task", "show", late.TaskID), "overdue") {
		t.Fatal("a completed task is shown overdue")
	}
}
