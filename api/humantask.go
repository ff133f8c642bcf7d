package api

import (
	"context"
	"encoding/json"
	"time"
)

// HumanTasks is what people and their tools need to act on the tasks that
// runs wait on (BPEL's task table, a BPM inbox). Package humantask
// implements it over a Service; a remote service implements it over HTTP.
//
// A task is a run of the system workflow HumanTaskWorkflowType, a child of
// the run that asked for it (workflow.HumanTask), which returns the task's
// outcome to it. Every action is a signal to the task's run, recorded in
// its history with who acted.
type HumanTasks interface {
	// ListTasks lists open tasks (or closed ones) with their candidates.
	ListTasks(ctx context.Context, req ListTasksRequest) (ListTasksResponse, error)
	// DescribeTask returns a task now: its form, data, comments and the
	// actions taken.
	DescribeTask(ctx context.Context, req DescribeTaskRequest) (HumanTask, error)
	// ActOnTask claims, releases, delegates, comments on or completes a
	// task; it returns the task once the action took effect.
	ActOnTask(ctx context.Context, req TaskActionRequest) (HumanTask, error)
}

// HumanTaskWorkflowType is the type of a human task's run (on SystemQueue).
const HumanTaskWorkflowType = "strand.HumanTask"

// HumanTaskIDPrefix starts every human task's workflow id.
const HumanTaskIDPrefix = "strand-task:"

// HumanTaskOptions describe a task a run asks people to do.
type HumanTaskOptions struct {
	Title       string `json:"title" max:"500" text:"true"`
	Description string `json:"description,omitempty" max:"32768" text:"true"`
	// Assignees are the users who may do it, Groups the groups whose
	// members may: a candidate claims it, then completes it.
	Assignees []string `json:"assignees,omitempty" max:"100" maxvalue:"256"`
	Groups    []string `json:"groups,omitempty" max:"100" maxvalue:"256"`
	// Form is a JSON Schema of the data a completion carries: data that
	// does not satisfy it is refused.
	Form json.RawMessage `json:"form,omitempty" max:"1048576"`
	// Data is what the task shows and the form starts from.
	Data json.RawMessage `json:"data,omitempty" max:"1048576"`
	// Outcomes are the outcomes a completion may name (default: "done").
	Outcomes []string `json:"outcomes,omitempty" max:"20" maxvalue:"100"`
	// Priority is 1 (highest) to 5 (lowest); 0 is normal.
	Priority int8 `json:"priority,omitempty" minimum:"0" maximum:"5"`
	// Due is how long people have; zero is no limit.
	Due time.Duration `json:"due,omitempty" minimum:"0"`
	// Escalation says what happens when the task is due and not done.
	Escalation *Escalation `json:"escalation,omitempty"`
}

// Escalation is what a task that is due and not done does: it goes to
// other people, or it completes with an outcome of its own. Reminder, when
// set, is posted (JSON, the task) to ReminderURL that long before the due
// time.
type Escalation struct {
	// ReassignTo and ReassignGroups, when either is set, replace the
	// candidates (the claim is dropped), and the task is due again after
	// Due once more.
	ReassignTo     []string `json:"reassign_to,omitempty" max:"100" maxvalue:"256"`
	ReassignGroups []string `json:"reassign_groups,omitempty" max:"100" maxvalue:"256"`
	// Outcome, when nothing is reassigned, completes the task with it
	// (default "timeout").
	Outcome     string        `json:"outcome,omitempty" max:"100"`
	Reminder    time.Duration `json:"reminder,omitempty" minimum:"0"`
	ReminderURL string        `json:"reminder_url,omitempty" max:"2000"`
}

// Task statuses.
const (
	TaskOpen      = "open"      // waiting for a candidate to claim it
	TaskClaimed   = "claimed"   // a candidate works on it
	TaskCompleted = "completed" // done: the run that asked has the outcome
	TaskCanceled  = "canceled"  // the run that asked no longer needs it
)

// TaskTimeoutOutcome is the outcome of a task that escalation completed.
const TaskTimeoutOutcome = "timeout"

// TaskRef names a task.
type TaskRef struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	TaskID    string `json:"task_id" required:"true" max:"250" id:"true"`
}

// HumanTask is a task as people see it.
type HumanTask struct {
	TaskID    string           `json:"task_id"`
	Namespace string           `json:"namespace"`
	Options   HumanTaskOptions `json:"options"`
	Status    string           `json:"status"`
	// Assignee is who claimed it.
	Assignee string `json:"assignee,omitempty"`
	// Candidates are the users and groups who may claim it now.
	Candidates TaskCandidates `json:"candidates"`
	Created    time.Time      `json:"created"`
	DueAt      time.Time      `json:"due_at,omitzero"`
	// Overdue says the task is open or claimed past its due time, as of
	// the answer.
	Overdue   bool `json:"overdue,omitempty"`
	Escalated int  `json:"escalated,omitempty"`
	// Parent is the run that asked for it.
	Parent             RunRef        `json:"parent"`
	ParentWorkflowType string        `json:"parent_workflow_type,omitempty"`
	Comments           []TaskComment `json:"comments,omitempty"`
	Actions            []TaskAction  `json:"actions,omitempty"`
	Outcome            *TaskOutcome  `json:"outcome,omitempty"`
}

// TaskCandidates are who may claim a task.
type TaskCandidates struct {
	Users  []string `json:"users,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// TaskComment is a comment on a task.
type TaskComment struct {
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// TaskAction is one action taken on a task, for the record.
type TaskAction struct {
	Kind string    `json:"kind"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	// To is a delegation's new assignee.
	To string `json:"to,omitempty"`
}

// TaskOutcome is how a task ended: what the run that asked gets.
type TaskOutcome struct {
	Outcome string          `json:"outcome"`
	Data    json.RawMessage `json:"data,omitempty"`
	By      string          `json:"by,omitempty"`
	At      time.Time       `json:"at"`
}

// Task actions.
const (
	TaskActionClaim    = "claim"
	TaskActionRelease  = "release"
	TaskActionDelegate = "delegate"
	TaskActionComment  = "comment"
	TaskActionComplete = "complete"
)

// TaskCaller is who asks: a user and the groups they are in. A server with
// access control sets them from the caller's identity (and Admin from the
// namespace's admin role); one without takes what the request says, and
// everyone is an admin.
type TaskCaller struct {
	User string `json:"user,omitempty" max:"256" text:"true"`
	// Groups are only compared, never kept: no limit.
	Groups []string `json:"groups,omitempty"`
	// Admin may see and act on every task of the namespace.
	Admin bool `json:"-"`
}

// DescribeTaskRequest asks for a task: a caller who is not among its
// candidates, its assignee or the namespace's admins does not see it.
type DescribeTaskRequest struct {
	TaskRef
	TaskCaller
}

// TaskActionRequest is an action on a task by a user.
type TaskActionRequest struct {
	TaskRef
	TaskCaller
	Action string `json:"action" required:"true" enum:"claim,release,delegate,comment,complete"`
	// To is a delegation's new assignee.
	To string `json:"to,omitempty" max:"256"`
	// Text is a comment's.
	Text string `json:"text,omitempty" max:"32768" text:"true"`
	// Outcome and Data are a completion's.
	Outcome string          `json:"outcome,omitempty" max:"100"`
	Data    json.RawMessage `json:"data,omitempty" max:"1048576"`
}

// ListTasksRequest lists tasks.
type ListTasksRequest struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	// Status is open (the default: open and claimed), claimed, or closed.
	Status string `json:"status,omitempty" enum:",open,claimed,closed"`
	// Mine keeps the tasks the caller may claim or holds.
	Mine bool `json:"mine,omitempty"`
	// Priority, when set, keeps the tasks of that priority.
	Priority int8 `json:"priority,omitempty" minimum:"0" maximum:"5"`
	// DueBefore keeps the tasks due before it.
	DueBefore time.Time `json:"due_before,omitzero"`
	// ParentWorkflowType keeps the tasks asked for by runs of that type.
	ParentWorkflowType string `json:"parent_workflow_type,omitempty" max:"250" text:"true"`
	// TaskCaller is who asks: one who is not the namespace's admin sees
	// only the tasks they may claim or hold.
	TaskCaller
}

// ListTasksResponse is the tasks, highest priority and soonest due first.
type ListTasksResponse struct {
	Tasks []TaskSummary `json:"tasks"`
}

// TaskSummary is a task as the inbox lists it.
type TaskSummary struct {
	TaskID     string         `json:"task_id"`
	Title      string         `json:"title"`
	Status     string         `json:"status"`
	Assignee   string         `json:"assignee,omitempty"`
	Candidates TaskCandidates `json:"candidates"`
	Priority   int8           `json:"priority,omitempty"`
	Created    time.Time      `json:"created"`
	DueAt      time.Time      `json:"due_at,omitzero"`
	// Overdue says the task is open or claimed past its due time, as of
	// the answer.
	Overdue            bool   `json:"overdue,omitempty"`
	ParentWorkflowType string `json:"parent_workflow_type,omitempty"`
	Parent             RunRef `json:"parent"`
}

// HumanTaskInput is the input of a task's run: what the run that asked
// for it said, and its type, for lists.
type HumanTaskInput struct {
	Options    HumanTaskOptions `json:"options"`
	ParentType string           `json:"parent_type,omitempty"`
}
