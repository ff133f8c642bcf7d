package humantask_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/humantask"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// form is the expense form: an amount of at least 1.
const form = `{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "integer", "minimum": 1}}}`

// Expense asks for a person's decision on an expense with the options it
// is given and returns the outcome.
func Expense(ctx workflow.Context, o workflow.HumanTaskOptions) (workflow.TaskOutcome, error) {
	return workflow.HumanTask(ctx, o).Get(ctx)
}

type env struct {
	*testenv.Env
	tasks *humantask.Service
}

func newEnv(t *testing.T, st store.Store) *env {
	e := testenv.New(t, st, 3*time.Minute, func(w *worker.Worker) { worker.RegisterWorkflow(w, Expense) })
	return &env{Env: e, tasks: humantask.NewService(e.Engine)}
}

func (e *env) start(id string, o workflow.HumanTaskOptions) client.Run[workflow.TaskOutcome] {
	e.T.Helper()
	r, err := client.Start(e.Ctx, e.Client, Expense, o, client.StartOptions{ID: id})
	if err != nil {
		e.T.Fatal(err)
	}
	return r
}

// taskOf waits until the caller sees one task asked for by the run id, and
// returns it.
func (e *env) taskOf(parent string, c api.TaskCaller) api.TaskSummary {
	e.T.Helper()
	var found api.TaskSummary
	e.Eventually("the task of "+parent, 30*time.Second, func() bool {
		l, err := e.tasks.ListTasks(e.Ctx, api.ListTasksRequest{TaskCaller: c})
		if err != nil {
			e.T.Fatal(err)
		}
		for _, t := range l.Tasks {
			if t.Parent.WorkflowID == parent {
				found = t
				return true
			}
		}
		return false
	})
	return found
}

func (e *env) act(id string, c api.TaskCaller, req api.TaskActionRequest) (api.HumanTask, error) {
	req.TaskRef, req.TaskCaller = api.TaskRef{TaskID: id}, c
	return e.tasks.ActOnTask(e.Ctx, req)
}

var (
	alice = api.TaskCaller{User: "alice"}
	bob   = api.TaskCaller{User: "bob", Groups: []string{"finance"}}
	carol = api.TaskCaller{User: "carol", Groups: []string{"sales"}}
)

func TestInbox(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		run := e.start("expense-1", workflow.HumanTaskOptions{Title: "Approve 120 EUR", Assignees: []string{"alice"}, Groups: []string{"finance"},
			Form: json.RawMessage(form), Data: json.RawMessage(`{"amount": 120}`), Outcomes: []string{"approve", "reject"}, Priority: 2})
		task := e.taskOf("expense-1", bob)
		if task.Title != "Approve 120 EUR" || task.Status != api.TaskOpen || task.Priority != 2 {
			t.Fatalf("bob's inbox: %+v", task)
		}

		t.Log("a user outside the task's users and groups neither sees nor acts on it")
		if l, err := e.tasks.ListTasks(e.Ctx, api.ListTasksRequest{TaskCaller: carol}); err != nil || len(l.Tasks) != 0 {
			t.Fatalf("carol's inbox: %+v, %v", l, err)
		}
		if _, err := e.tasks.DescribeTask(e.Ctx, api.DescribeTaskRequest{TaskRef: api.TaskRef{TaskID: task.TaskID}, TaskCaller: carol}); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("carol describes it: %v", err)
		}
		if _, err := e.act(task.TaskID, carol, api.TaskActionRequest{Action: api.TaskActionClaim}); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("carol claims it: %v", err)
		}

		t.Log("bob (finance) claims it; alice cannot claim it too")
		got, err := e.act(task.TaskID, bob, api.TaskActionRequest{Action: api.TaskActionClaim})
		if err != nil || got.Status != api.TaskClaimed || got.Assignee != "bob" {
			t.Fatalf("bob's claim: %+v, %v", got, err)
		}
		if _, err := e.act(task.TaskID, alice, api.TaskActionRequest{Action: api.TaskActionClaim}); !errors.Is(err, api.ErrConflict) {
			t.Fatalf("alice's claim of a claimed task: %v", err)
		}

		t.Log("bob delegates it to alice, who comments")
		if got, err = e.act(task.TaskID, bob, api.TaskActionRequest{Action: api.TaskActionDelegate, To: "alice"}); err != nil || got.Assignee != "alice" {
			t.Fatalf("delegation: %+v, %v", got, err)
		}
		if got, err = e.act(task.TaskID, alice, api.TaskActionRequest{Action: api.TaskActionComment, Text: "checking the receipt"}); err != nil || len(got.Comments) != 1 {
			t.Fatalf("comment: %+v, %v", got, err)
		}

		t.Log("data that fails the form, or an unknown outcome, is refused and changes nothing")
		if _, err := e.act(task.TaskID, alice, api.TaskActionRequest{Action: api.TaskActionComplete, Outcome: "approve", Data: json.RawMessage(`{"amount": 0}`)}); !errors.Is(err, api.ErrInvalidArgument) {
			t.Fatalf("invalid data: %v", err)
		}
		if _, err := e.act(task.TaskID, alice, api.TaskActionRequest{Action: api.TaskActionComplete, Outcome: "maybe", Data: json.RawMessage(`{"amount": 5}`)}); !errors.Is(err, api.ErrInvalidArgument) {
			t.Fatalf("unknown outcome: %v", err)
		}
		if _, err := e.act(task.TaskID, bob, api.TaskActionRequest{Action: api.TaskActionComplete, Outcome: "approve", Data: json.RawMessage(`{"amount": 5}`)}); !errors.Is(err, api.ErrPermissionDenied) {
			t.Fatalf("bob completes alice's task: %v", err)
		}
		d, err := e.tasks.DescribeTask(e.Ctx, api.DescribeTaskRequest{TaskRef: api.TaskRef{TaskID: task.TaskID}, TaskCaller: alice})
		if err != nil || d.Status != api.TaskClaimed || d.Outcome != nil {
			t.Fatalf("after the refusals: %+v, %v", d, err)
		}

		t.Log("alice completes it with valid data: the run that asked gets the outcome")
		if _, err := e.act(task.TaskID, alice, api.TaskActionRequest{Action: api.TaskActionComplete, Outcome: "approve", Data: json.RawMessage(`{"amount": 100}`)}); err != nil {
			t.Fatal(err)
		}
		out, err := run.Get(e.Ctx)
		if err != nil || out.Outcome != "approve" || out.By != "alice" || string(out.Data) != `{"amount":100}` {
			t.Fatalf("outcome: %+v, %v", out, err)
		}

		t.Log("who did what is in the task's history")
		evs, err := e.Client.AllHistory(e.Ctx, task.TaskID, "")
		if err != nil {
			t.Fatal(err)
		}
		var who []string
		for _, ev := range evs {
			if ev.Type == api.EventSignalReceived {
				who = append(who, ev.Identity)
			}
		}
		if want := []string{"bob", "bob", "alice", "alice"}; !equal(who, want) {
			t.Fatalf("signals by %v; want %v", who, want)
		}
		e.Eventually("the task to leave bob's inbox (lists lag by a second or so)", 30*time.Second, func() bool {
			l, err := e.tasks.ListTasks(e.Ctx, api.ListTasksRequest{TaskCaller: bob})
			return err == nil && len(l.Tasks) == 0
		})
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEscalation(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		var mu sync.Mutex
		var reminded []api.HumanTask
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			var task api.HumanTask
			if err := json.Unmarshal(b, &task); err == nil {
				mu.Lock()
				reminded = append(reminded, task)
				mu.Unlock()
			}
		}))
		defer hook.Close()

		// The second case's run starts first, so that the two wait for
		// their due times at the same time.
		expired := e.start("expense-expired", workflow.HumanTaskOptions{Title: "Expires", Assignees: []string{"alice"}, Due: time.Second,
			Escalation: &api.Escalation{}})

		t.Log("due and not done: the task goes to the managers, after a reminder")
		e.start("expense-late", workflow.HumanTaskOptions{Title: "Late", Groups: []string{"finance"}, Due: 2 * time.Second,
			Escalation: &api.Escalation{ReassignGroups: []string{"managers"}, Reminder: time.Second, ReminderURL: hook.URL}})
		manager := api.TaskCaller{User: "mia", Groups: []string{"managers"}}
		task := e.taskOf("expense-late", manager)
		if task.Candidates.Groups[0] != "managers" {
			t.Fatalf("escalated: %+v", task)
		}
		mu.Lock()
		got := slices.Clone(reminded) // a later reminder may come meanwhile
		mu.Unlock()
		if len(got) == 0 || got[0].Options.Title != "Late" {
			t.Fatalf("reminders: %+v", got)
		}

		t.Log("due and not done, with no one to go to: it completes with the timeout outcome")
		out, err := expired.Get(e.Ctx)
		if err != nil || out.Outcome != api.TaskTimeoutOutcome || out.By != "strand" {
			t.Fatalf("expired task: %+v, %v", out, err)
		}
	})
}
