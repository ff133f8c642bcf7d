// Package humantask gives runs tasks for people, as Oracle BPEL's task
// table and TaskManager process do: a run asks (workflow.HumanTask) with a
// title, the users and groups who may do it, a form (a JSON Schema), a
// due time and an escalation, and waits for the outcome.
//
// A task is a run of the system workflow api.HumanTaskWorkflowType, a
// child of the run that asked. People act on it through api.HumanTasks
// (Service, the HTTP API, strand task, the console's inbox): each action
// is a signal to the task's run with who acted, so the task's history is
// the record of who did what and when, and the task inherits every
// store and the cluster. Lists read the task's attributes.
package humantask

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Register registers the task workflow and its reminder step on a worker
// of api.SystemQueue (package system does).
func Register(w *worker.Worker) {
	worker.RegisterWorkflowNamed(w, api.HumanTaskWorkflowType, Run)
	worker.RegisterStepNamed(w, stepRemind, remind)
}

// The task's signal, query and step.
const (
	signalName = "strand.task"
	queryName  = "strand.task.describe"
	stepRemind = "strand.task.remind"
)

// Attributes of a task's run, for lists.
const (
	attrStatus     = "strand.task.status"
	attrAssignee   = "strand.task.assignee"
	attrPriority   = "strand.task.priority"
	attrDue        = "strand.task.due"
	attrCandidates = "strand.task.candidates"
	attrParentType = "strand.task.parent_type"
	attrParent     = "strand.task.parent"
	attrTitle      = "strand.task.title"
)

// maxActions bounds the actions and the comments a task keeps.
const maxActions = 1000

// command is an action on a task, as its signal carries it.
type command struct {
	// ID names the action, so that the service sees it taken.
	ID     string          `json:"id"`
	Kind   string          `json:"kind"`
	By     string          `json:"by"`
	Admin  bool            `json:"admin,omitempty"`
	To     string          `json:"to,omitempty"`
	Text   string          `json:"text,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
	Result string          `json:"outcome,omitempty"`
}

// task is one task's run.
type task struct {
	t api.HumanTask
	// applied are the ids of the commands taken, refused the reasons of
	// those refused, by id: what the service reads back.
	applied map[string]string
	// shown is what the run's attributes say.
	shown map[string]string
}

// describe is the query's answer.
type describe struct {
	api.HumanTask
	// Applied are the commands seen: "" when taken, else why refused.
	Applied map[string]string `json:"applied,omitempty"`
}

// Run is a task: it waits for people's actions, escalates when due, and
// returns the outcome to the run that asked for it.
func Run(ctx workflow.Context, in api.HumanTaskInput) (api.TaskOutcome, error) {
	info := workflow.GetInfo(ctx)
	now := workflow.Now(ctx)
	o := in.Options
	if len(o.Outcomes) == 0 {
		o.Outcomes = []string{"done"}
	}
	k := &task{applied: map[string]string{}, t: api.HumanTask{TaskID: info.WorkflowID, Namespace: info.Namespace, Options: o,
		Status: api.TaskOpen, Candidates: api.TaskCandidates{Users: o.Assignees, Groups: o.Groups}, Created: now, ParentWorkflowType: in.ParentType}}
	if p := info.Parent; p != nil {
		k.t.Parent = api.RunRef{Namespace: p.Namespace, WorkflowID: p.WorkflowID, RunID: p.RunID}
	}
	if o.Due > 0 {
		k.t.DueAt = now.Add(o.Due)
	}
	workflow.SetQueryHandler(ctx, queryName, func(struct{}) (describe, error) { return describe{HumanTask: k.t, Applied: k.applied}, nil })
	commands := workflow.GetSignalChannel[command](ctx, signalName)
	var due, reminder workflow.Future[struct{}]
	var cancelDue, cancelReminder workflow.CancelFunc
	arm := func() {
		if cancelDue != nil {
			cancelDue()
		}
		if cancelReminder != nil {
			cancelReminder()
		}
		due, reminder, cancelDue, cancelReminder = nil, nil, nil, nil
		if k.t.DueAt.IsZero() {
			return
		}
		dctx, cancel := workflow.WithCancel(ctx)
		due, cancelDue = workflow.NewTimer(dctx, max(k.t.DueAt.Sub(workflow.Now(ctx)), time.Millisecond)), cancel
		if e := o.Escalation; e != nil && e.Reminder > 0 && e.ReminderURL != "" {
			if at := k.t.DueAt.Add(-e.Reminder); at.After(workflow.Now(ctx)) {
				rctx, cancel := workflow.WithCancel(ctx)
				reminder, cancelReminder = workflow.NewTimer(rctx, at.Sub(workflow.Now(ctx))), cancel
			}
		}
	}
	arm()
	for {
		k.show(ctx)
		if out := k.t.Outcome; out != nil {
			return *out, nil
		}
		sel := workflow.NewSelector(ctx)
		workflow.AddReceive(sel, commands, func(ch workflow.ReceiveChannel[command]) {
			c, _ := ch.ReceiveAsync()
			k.apply(ctx, c)
		})
		if due != nil {
			sel.AddFuture(due, func() {
				due, cancelDue = nil, nil
				if k.escalate(ctx) {
					arm()
				}
			})
		}
		if reminder != nil {
			sel.AddFuture(reminder, func() {
				reminder, cancelReminder = nil, nil
				// Fire and forget: a reminder that cannot be posted is
				// retried by the step, and the task goes on meanwhile.
				workflow.ExecuteStepByName[struct{}](ctx, workflow.StepOptions{StartToClose: 30 * time.Second, Summary: "reminder of human task " + k.t.TaskID,
					Retry: &workflow.RetryPolicy{MaximumAttempts: 5}}, stepRemind, reminderOf(k.t))
			})
		}
		workflow.AddReceive(sel, ctx.Done(), func(workflow.ReceiveChannel[struct{}]) {})
		sel.Select(ctx)
		if err := ctx.Err(); err != nil {
			return api.TaskOutcome{}, err // the run that asked no longer needs it
		}
	}
}

// apply takes an action, or records why it was refused.
func (k *task) apply(ctx workflow.Context, c command) {
	if _, seen := k.applied[c.ID]; seen && c.ID != "" {
		return
	}
	why := k.refusal(c)
	if c.ID != "" {
		k.applied[c.ID] = why
	}
	if why != "" {
		return
	}
	now := workflow.Now(ctx)
	t := &k.t
	switch c.Kind {
	case api.TaskActionClaim:
		t.Status, t.Assignee = api.TaskClaimed, c.By
	case api.TaskActionRelease:
		t.Status, t.Assignee = api.TaskOpen, ""
	case api.TaskActionDelegate:
		t.Status, t.Assignee = api.TaskClaimed, c.To
	case api.TaskActionComment:
		t.Comments = append(t.Comments, api.TaskComment{By: c.By, At: now, Text: c.Text})
		if len(t.Comments) > maxActions {
			t.Comments = t.Comments[1:]
		}
	case api.TaskActionComplete:
		t.Status = api.TaskCompleted
		t.Outcome = &api.TaskOutcome{Outcome: c.Result, Data: c.Data, By: c.By, At: now}
	}
	t.Actions = append(t.Actions, api.TaskAction{Kind: c.Kind, By: c.By, At: now, To: c.To})
	if len(t.Actions) > maxActions {
		t.Actions = t.Actions[1:]
	}
}

// refusal says why an action may not be taken now, "" when it may. The
// service checks the same before it signals; this is the word that holds
// when two people act at once.
func (k *task) refusal(c command) string {
	t := k.t
	holder := t.Status == api.TaskClaimed && (t.Assignee == c.By || c.Admin)
	switch c.Kind {
	case api.TaskActionClaim:
		if t.Status != api.TaskOpen {
			return "the task is " + t.Status + ", by " + t.Assignee
		}
	case api.TaskActionRelease:
		if !holder {
			return "only the assignee releases the task"
		}
	case api.TaskActionDelegate:
		if c.To == "" {
			return "delegate to whom?"
		}
		if !holder && !(c.Admin && t.Status == api.TaskOpen) {
			return "only the assignee delegates the task"
		}
	case api.TaskActionComment:
		if strings.TrimSpace(c.Text) == "" {
			return "an empty comment"
		}
	case api.TaskActionComplete:
		if !holder {
			return "claim the task before completing it"
		}
		if !slices.Contains(t.Options.Outcomes, c.Result) {
			return fmt.Sprintf("outcome %q is not one of %s", c.Result, strings.Join(t.Options.Outcomes, ", "))
		}
		if err := checkData(t.Options.Form, c.Data); err != nil {
			return err.Error()
		}
	default:
		return "no such action: " + c.Kind
	}
	return ""
}

// escalate handles the due time: the task goes to the escalation's users
// and groups (true: due again later), or completes with its outcome.
func (k *task) escalate(ctx workflow.Context) bool {
	e := k.t.Options.Escalation
	if e == nil {
		return false // due, not done: lists show it overdue
	}
	now := workflow.Now(ctx)
	if len(e.ReassignTo) > 0 || len(e.ReassignGroups) > 0 {
		k.t.Candidates = api.TaskCandidates{Users: e.ReassignTo, Groups: e.ReassignGroups}
		k.t.Status, k.t.Assignee = api.TaskOpen, ""
		k.t.Escalated++
		k.t.DueAt = now.Add(k.t.Options.Due)
		k.t.Actions = append(k.t.Actions, api.TaskAction{Kind: "escalate", By: "strand", At: now})
		return true
	}
	outcome := e.Outcome
	if outcome == "" {
		outcome = api.TaskTimeoutOutcome
	}
	k.t.Status = api.TaskCompleted
	k.t.Outcome = &api.TaskOutcome{Outcome: outcome, By: "strand", At: now}
	k.t.Actions = append(k.t.Actions, api.TaskAction{Kind: "expire", By: "strand", At: now})
	return false
}

// show writes the task's attributes, which lists read.
func (k *task) show(ctx workflow.Context) {
	t := k.t
	due := ""
	if !t.DueAt.IsZero() {
		due = t.DueAt.UTC().Format(time.RFC3339)
	}
	attrs := map[string]string{
		attrStatus: t.Status, attrAssignee: t.Assignee, attrPriority: strconv.Itoa(int(priorityOf(t.Options.Priority))),
		attrDue: due, attrCandidates: candidatesText(t.Candidates), attrParentType: t.ParentWorkflowType, attrParent: t.Parent.WorkflowID,
		attrTitle: truncate(t.Options.Title, 500),
	}
	if maps.Equal(attrs, k.shown) {
		return
	}
	workflow.UpsertAttributes(ctx, attrs)
	k.shown = attrs
}

// priorityOf is a priority with 0 read as normal.
func priorityOf(p int8) int8 {
	if p <= 0 || p > api.PriorityLowest {
		return api.PriorityNormal
	}
	return p
}

// candidatesText is the candidates as their attribute holds them:
// " u:alice g:finance ", each one between spaces (cut at 500 bytes).
func candidatesText(c api.TaskCandidates) string {
	var b strings.Builder
	b.WriteString(" ")
	for _, u := range c.Users {
		b.WriteString("u:" + u + " ")
	}
	for _, g := range c.Groups {
		b.WriteString("g:" + g + " ")
	}
	return truncate(b.String(), 500)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// reminder is what a reminder posts.
type reminder struct {
	URL  string        `json:"url"`
	Task api.HumanTask `json:"task"`
}

func reminderOf(t api.HumanTask) reminder {
	return reminder{URL: t.Options.Escalation.ReminderURL, Task: t}
}

// remind posts a task's reminder: the task as JSON.
func remind(ctx context.Context, r reminder) (struct{}, error) {
	body, err := json.Marshal(r.Task)
	if err != nil {
		return struct{}{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return struct{}{}, workflow.NewError("BadURL", err.Error(), true)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return struct{}{}, err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return struct{}{}, fmt.Errorf("reminder to %s: %s", r.URL, resp.Status)
	}
	return struct{}{}, nil
}
