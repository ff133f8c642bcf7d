// Package api is the model shared by Strand's engine and everything that
// talks to it: the Service interface that the embedded engine implements
// (and that a remote client implements over HTTP), its requests and
// responses, history events, workflow commands and the errors callers switch
// on. Workflow and step code never imports it; package client, worker and
// workflow wrap it.
//
// Every string, map and list of a request has a size limit, written on its
// field as a max tag (maxkey and maxvalue for a map's keys and values) that
// store.CheckLimits enforces for the engine and the server and the OpenAPI
// document states: ids, names, types and queues 1000 bytes (namespaces
// 255), identities 256, reasons and failure messages 32 KiB, payloads
// 16 MiB (the store's own limit may be lower), search attributes 64 of
// 128-byte keys and 4 KiB values, memos 64 entries.
package api

import (
	"context"
	"time"

	"github.com/strandhq/strand/store"
)

// DefaultNamespace is used when a request names none.
const DefaultNamespace = "default"

// NamespaceOrDefault is ns, or DefaultNamespace when ns is empty: the
// namespace a request that names none is about.
func NamespaceOrDefault(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// DefaultQueue is used when a request names none.
const DefaultQueue = "default"

// Priorities run from PriorityHighest (1) to PriorityLowest (5), as in the
// seeds' five levels; 0 means PriorityNormal.
const (
	PriorityHighest int8 = 1
	PriorityHigh    int8 = 2
	PriorityNormal  int8 = 3
	PriorityLow     int8 = 4
	PriorityLowest  int8 = 5
)

// Service is what a client and a worker need from Strand.
type Service interface {
	StartWorkflow(ctx context.Context, req StartRequest) (StartResponse, error)
	SignalWorkflow(ctx context.Context, req SignalRequest) error
	SignalWithStart(ctx context.Context, req SignalWithStartRequest) (StartResponse, error)
	CancelWorkflow(ctx context.Context, req CancelRequest) error
	TerminateWorkflow(ctx context.Context, req TerminateRequest) error
	QueryWorkflow(ctx context.Context, req QueryRequest) ([]byte, error)
	DescribeWorkflow(ctx context.Context, req RunRef) (Description, error)
	// WaitResult blocks until the run closes or ctx ends; with FollowRuns
	// it follows continue-as-new to the last run.
	WaitResult(ctx context.Context, req ResultRequest) (Result, error)
	ListWorkflows(ctx context.Context, req ListRequest) (ListResponse, error)
	CountWorkflows(ctx context.Context, req ListRequest) (int64, error)
	GetHistory(ctx context.Context, req HistoryRequest) (HistoryPage, error)
	// GetDocument reads a payload of a run stored apart, which an event
	// names as {"$document": {"id": ...}}.
	GetDocument(ctx context.Context, req DocumentRequest) (Value, error)

	// PollWorkflowTask waits for a workflow task (or a query) of a queue;
	// it returns nil when ctx ends first.
	PollWorkflowTask(ctx context.Context, req PollRequest) (*WorkflowTask, error)
	CompleteWorkflowTask(ctx context.Context, req CompleteWorkflowTaskRequest) (CompleteWorkflowTaskResponse, error)
	FailWorkflowTask(ctx context.Context, req FailWorkflowTaskRequest) error
	AnswerQuery(ctx context.Context, req QueryAnswer) error

	// PollStepTask waits for a step task of a queue; nil when ctx ends first.
	PollStepTask(ctx context.Context, req PollRequest) (*StepTask, error)
	CompleteStep(ctx context.Context, req CompleteStepRequest) error
	FailStep(ctx context.Context, req FailStepRequest) error
	// HeartbeatStep records progress. ErrTaskNotFound says the attempt is
	// over (it timed out, or the workflow canceled the step or closed):
	// the step should stop.
	HeartbeatStep(ctx context.Context, req HeartbeatRequest) (HeartbeatResponse, error)
}

// PollSharer is a Service whose task polls waiting at once share one
// request (remote's task exchanges and streams): a waiting poll costs it
// next to nothing, so a worker polls with each free slot rather than with
// a few pollers, and takes as many tasks as it has room for at a time.
type PollSharer interface {
	SharesPolls() bool
}

// IDReusePolicy says whether a workflow id whose last run closed may start again.
type IDReusePolicy int8

// Id reuse policies. A running workflow id is never started twice, except
// that TerminateIfRunning terminates the running one first.
const (
	// AllowDuplicate starts a new run after any closed one (the default).
	AllowDuplicate IDReusePolicy = iota
	// AllowDuplicateFailedOnly starts a new run only if the last one did not
	// complete (failed, canceled, terminated or timed out).
	AllowDuplicateFailedOnly
	// RejectDuplicate never starts a second run of a workflow id.
	RejectDuplicate
	// TerminateIfRunning terminates a running run and starts the new one.
	TerminateIfRunning
)

// StartRequest starts a workflow run.
type StartRequest struct {
	Namespace    string `json:"namespace,omitempty" max:"63"`
	WorkflowID   string `json:"workflow_id" max:"250" required:"true" id:"true"`
	WorkflowType string `json:"workflow_type" max:"250" required:"true" text:"true"`
	Input        Value  `json:"input,omitempty" max:"16777216"`
	Queue        string `json:"queue,omitempty" max:"1000"`
	Priority     int8   `json:"priority,omitempty" minimum:"0" maximum:"5"`
	// RequestID makes a retried start idempotent: the same id returns the
	// run it started.
	RequestID   string            `json:"request_id,omitempty" max:"250" id:"true"`
	IDReuse     IDReusePolicy     `json:"id_reuse_policy,omitempty"`
	StartDelay  time.Duration     `json:"start_delay,omitempty"`
	RunTimeout  time.Duration     `json:"run_timeout,omitempty"`
	Memo        map[string]Value  `json:"memo,omitempty" max:"64" maxkey:"128" maxvalue:"16777216"`
	BusinessKey string            `json:"business_key,omitempty" max:"250" text:"true"`
	Attributes  map[string]string `json:"attributes,omitempty" max:"64" maxkey:"32" maxvalue:"500" keys:"nonempty" text:"true"`
	Identity    string            `json:"identity,omitempty" max:"256"`
}

// StartResponse names the run a start created (or found, for a repeated
// request id).
type StartResponse struct {
	RunID   string `json:"run_id"`
	Started bool   `json:"started"`
}

// RunRef names a run; an empty RunID means the workflow id's current run.
type RunRef struct {
	Namespace  string `json:"namespace,omitempty" max:"63"`
	WorkflowID string `json:"workflow_id" max:"250" id:"true"`
	RunID      string `json:"run_id,omitempty" max:"250" id:"true"`
}

// SignalRequest sends a signal to a run.
type SignalRequest struct {
	RunRef
	Name      string `json:"name" max:"1000" required:"true"`
	Input     Value  `json:"input,omitempty" max:"16777216"`
	RequestID string `json:"request_id,omitempty" max:"250" id:"true"`
	Identity  string `json:"identity,omitempty" max:"256"`
}

// SignalWithStartRequest signals a workflow, starting it first if it is not running.
type SignalWithStartRequest struct {
	Start       StartRequest `json:"start" required:"true"`
	SignalName  string       `json:"signal_name" max:"1000" required:"true"`
	SignalInput Value        `json:"signal_input,omitempty" max:"16777216"`
}

// CancelRequest asks a run to cancel; the workflow decides how to wind down.
type CancelRequest struct {
	RunRef
	Reason    string `json:"reason,omitempty" max:"32768"`
	RequestID string `json:"request_id,omitempty" max:"250" id:"true"`
	Identity  string `json:"identity,omitempty" max:"256"`
}

// TerminateRequest closes a run at once, without running workflow code.
type TerminateRequest struct {
	RunRef
	Reason string `json:"reason,omitempty" max:"32768"`
	// RequestID makes a retried terminate idempotent: one that landed
	// already answers success for 24 hours, even though the run is closed
	// now (without one, a second terminate answers ErrRunClosed).
	RequestID string `json:"request_id,omitempty" max:"250"`
	Identity  string `json:"identity,omitempty" max:"256"`
}

// QueryRequest asks a run's query handler for a value.
type QueryRequest struct {
	RunRef
	Name  string `json:"name" max:"1000" required:"true"`
	Input Value  `json:"input,omitempty" max:"16777216"`
}

// ResultRequest waits for a run's result.
type ResultRequest struct {
	RunRef
	FollowRuns bool `json:"follow_runs,omitempty"`
}

// Result is how a run closed.
type Result struct {
	RunID  string          `json:"run_id"`
	Status store.RunStatus `json:"status"`
	Output Value           `json:"output,omitempty"`
	// Failure is set for every status but completed and continued-as-new.
	Failure *Failure `json:"failure,omitempty"`
	// NextRunID is set for continued-as-new.
	NextRunID string `json:"next_run_id,omitempty"`
	// StartTime and CloseTime are when the run started and closed.
	StartTime time.Time `json:"start_time"`
	CloseTime time.Time `json:"close_time"`
}

// Operator is what operators do to runs besides cancel and terminate: the
// engine implements it, and so does a remote service.
type Operator interface {
	// PauseWorkflow pauses a run: no workflow task or step is dispatched
	// until ResumeWorkflow (running steps finish and their results wait,
	// timers that fire wait). A paused run stays paused; a closed one is
	// ErrRunClosed.
	PauseWorkflow(ctx context.Context, req PauseRequest) error
	// ResumeWorkflow resumes a paused run and delivers what waited.
	ResumeWorkflow(ctx context.Context, req PauseRequest) error
	// ResetWorkflow starts a new run of the workflow id that continues
	// from a point of a run's history; the old run, if open, is
	// terminated with a reason naming the new one.
	ResetWorkflow(ctx context.Context, req ResetRequest) (StartResponse, error)
	// RerunWorkflow starts a new run of a closed run's workflow id with
	// its type, input and options.
	RerunWorkflow(ctx context.Context, req RerunRequest) (StartResponse, error)
}

// ResetPoint names where in a run's history a reset goes back to: always
// to just before a workflow task, which the new run runs again.
type ResetPoint string

// Reset points.
const (
	// ResetLastWorkflowTask runs the run's last completed workflow task again.
	ResetLastWorkflowTask ResetPoint = "last_workflow_task"
	// ResetFirstFailedStep goes back to the last workflow task before the
	// run's first failed (or timed out) step: DolphinScheduler's "start
	// from the failed node".
	ResetFirstFailedStep ResetPoint = "first_failed_step"
	// ResetBeforeEvent goes back to the last workflow task before EventID.
	ResetBeforeEvent ResetPoint = "before_event"
)

// ResetRequest resets a run (the workflow's current run when RunID is
// empty; a run that is not current cannot be reset).
type ResetRequest struct {
	RunRef
	Point   ResetPoint `json:"point" required:"true"`
	EventID int64      `json:"event_id,omitempty" minimum:"0"`
	// SkipSignals leaves out the signals the run received after the
	// point; by default the new run receives them again.
	SkipSignals bool   `json:"skip_signals,omitempty"`
	Reason      string `json:"reason,omitempty" max:"32768"`
	Identity    string `json:"identity,omitempty" max:"256"`
}

// RerunRequest starts a closed run again.
type RerunRequest struct {
	RunRef
	// RequestID makes a retried rerun start one run.
	RequestID string `json:"request_id,omitempty" max:"250" id:"true"`
	Identity  string `json:"identity,omitempty" max:"256"`
}

// PauseRequest pauses or resumes a run.
type PauseRequest struct {
	RunRef
	Reason   string `json:"reason,omitempty" max:"32768"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// PauseInfo says who paused a run, when and why.
type PauseInfo = store.PauseInfo

// Description is what describe shows of a run.
type Description struct {
	Namespace    string            `json:"namespace"`
	WorkflowID   string            `json:"workflow_id"`
	RunID        string            `json:"run_id"`
	WorkflowType string            `json:"workflow_type"`
	Status       store.RunStatus   `json:"status"`
	Queue        string            `json:"queue"`
	StartTime    time.Time         `json:"start_time"`
	CloseTime    time.Time         `json:"close_time,omitzero"`
	NextEventID  int64             `json:"next_event_id"`
	BusinessKey  string            `json:"business_key,omitempty"`
	Attributes   map[string]string `json:"attributes,omitempty"`
	Memo         map[string]Value  `json:"memo,omitempty"`
	Parent       *store.RunKey     `json:"parent,omitempty"`
	// Paused is set while an operator holds the run paused.
	Paused   *PauseInfo     `json:"paused,omitempty"`
	Steps    []PendingStep  `json:"pending_steps,omitempty"`
	Timers   []PendingTimer `json:"pending_timers,omitempty"`
	Children []PendingChild `json:"pending_children,omitempty"`
	// WorkflowTaskFailure is set while the run waits for a worker that can
	// replay it (a non-determinism error, a panic).
	WorkflowTaskFailure *Failure `json:"workflow_task_failure,omitempty"`
}

// PendingStep is a step that has not closed.
type PendingStep struct {
	Seq           int64     `json:"seq"`
	Name          string    `json:"name"`
	State         string    `json:"state"` // scheduled, started, backoff
	Attempt       int32     `json:"attempt"`
	ScheduledTime time.Time `json:"scheduled_time"`
	StartedTime   time.Time `json:"started_time,omitzero"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	LastFailure   string    `json:"last_failure,omitempty"`
	// HeartbeatDetails are what the attempt's last heartbeat carried (a
	// step's progress, a task's log so far).
	HeartbeatDetails Value `json:"heartbeat_details,omitempty"`
	// IdempotencyKey is the key every attempt of the step gets
	// (StepOptions.IdempotencyKey, or RUN_ID/SEQ): a front end that set it
	// finds its step among the pending ones by it.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Identity is the worker that runs the started attempt (its
	// worker.Options.Identity).
	Identity string `json:"identity,omitempty"`
}

// PendingTimer is a timer that has not fired.
type PendingTimer struct {
	Seq      int64     `json:"seq"`
	FireTime time.Time `json:"fire_time"`
}

// PendingChild is a child workflow that has not closed.
type PendingChild struct {
	Seq          int64  `json:"seq"`
	WorkflowID   string `json:"workflow_id"`
	RunID        string `json:"run_id,omitempty"`
	WorkflowType string `json:"workflow_type"`
}

// ListRequest filters runs.
type ListRequest struct {
	Namespace     string            `json:"namespace,omitempty" max:"63"`
	WorkflowID    string            `json:"workflow_id,omitempty" max:"250"`
	WorkflowType  string            `json:"workflow_type,omitempty" max:"250" text:"true"`
	Statuses      []store.RunStatus `json:"statuses,omitempty" max:"7"`
	StartedAfter  time.Time         `json:"started_after,omitzero"`
	StartedBefore time.Time         `json:"started_before,omitzero"`
	BusinessKey   string            `json:"business_key,omitempty" max:"250" text:"true"`
	// WorkflowIDPrefix and BusinessKeyPrefix keep the runs whose workflow
	// id or business key starts with them ("order-1" matches "order-1"
	// and "order-10"); like every field, each narrows the others.
	WorkflowIDPrefix  string            `json:"workflow_id_prefix,omitempty" max:"250" text:"true"`
	BusinessKeyPrefix string            `json:"business_key_prefix,omitempty" max:"250" text:"true"`
	Attributes        map[string]string `json:"attributes,omitempty" max:"32" maxkey:"32" maxvalue:"500" keys:"nonempty" text:"true"`
	// ClosedAfter (inclusive) and ClosedBefore (exclusive) keep the runs
	// that closed in that range; either one leaves out the open runs.
	ClosedAfter  time.Time `json:"closed_after,omitzero"`
	ClosedBefore time.Time `json:"closed_before,omitzero"`
	// ExcludeWorkflowTypes leaves out the runs of these types: Strand's own
	// runs (SystemWorkflowTypes), for one. An empty type excludes
	// nothing.
	ExcludeWorkflowTypes []string `json:"exclude_workflow_types,omitempty" max:"32" maxvalue:"250" text:"true"`
	// Order is the order of a list: OrderNewest (the default) or
	// OrderOldest, by start time. A page token goes on in the order of
	// the page that gave it.
	Order     string `json:"order,omitempty" enum:",newest,oldest"`
	PageSize  int    `json:"page_size,omitempty" minimum:"0" maximum:"10000"`
	PageToken []byte `json:"page_token,omitempty" max:"16384" token:"true"`
}

// The orders of a list of runs.
const (
	// OrderNewest lists the latest start first.
	OrderNewest = "newest"
	// OrderOldest lists the earliest start first.
	OrderOldest = "oldest"
)

// ListResponse is a page of runs.
type ListResponse struct {
	Runs          []store.VisibilityRecord `json:"runs"`
	NextPageToken []byte                   `json:"next_page_token,omitempty"`
}

// HistoryRequest reads a run's history in pages.
type HistoryRequest struct {
	RunRef
	FromEventID int64  `json:"from_event_id,omitempty"`
	PageSize    int    `json:"page_size,omitempty"` // events, roughly; 0 means 1000
	PageToken   []byte `json:"page_token,omitempty" max:"16384" token:"true"`
	// Resolve replaces the references of the events' payloads to
	// documents by the documents' bytes: what a replay needs.
	Resolve bool `json:"resolve,omitempty"`
	// ResolveDetails does the same for the events' audit details, which
	// replays never read: people ask for them (strand workflow history
	// --details, the console's run page).
	ResolveDetails bool `json:"resolve_details,omitempty"`
}

// DocumentRequest names a document of a run.
type DocumentRequest struct {
	RunRef
	// ID is the document's id (the hex SHA-256 of its bytes).
	ID string `json:"id" max:"64"`
}

// HistoryPage is a page of events.
type HistoryPage struct {
	Events        []Event `json:"events"`
	NextPageToken []byte  `json:"next_page_token,omitempty"`
}

// PollRequest asks for a task of a queue.
type PollRequest struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	Queue     string `json:"queue,omitempty" max:"1000"`
	Identity  string `json:"identity,omitempty" max:"256"`
	// Steps, on a step task poll, are the step names the worker runs: it
	// is handed only tasks of those steps, and the others wait for a
	// worker that runs them. Empty: every step (a worker that does not
	// say).
	Steps []string `json:"steps,omitempty" max:"10000" maxvalue:"1000"`
	// NoWait makes the poll answer at once: with a task that is ready, or
	// with none (204), instead of waiting for one.
	NoWait bool `json:"no_wait,omitempty"`
	// Sticky, on a workflow task poll, names the worker's cache of runs (an
	// id of the worker process's own, such as a random one made when it
	// starts): a run's workflow task goes first to a poll with the Sticky
	// of the poll that took the run's last one, while such a poll waits,
	// so that the worker holding the run advances it without replaying its
	// history. Empty: no preference.
	Sticky string `json:"sticky,omitempty" max:"256"`
}

// WorkflowTask asks a worker to advance a run (or to answer a query).
type WorkflowTask struct {
	Token        []byte       `json:"token"`
	Run          store.RunKey `json:"run"`
	WorkflowType string       `json:"workflow_type"`
	// PrevEventID is the last event the worker's copy of the run must have
	// seen; a worker whose copy is elsewhere replays history up to it.
	PrevEventID int64 `json:"prev_event_id"`
	// Events are the new inputs, from PrevEventID+1 on.
	Events []Event `json:"events,omitempty"`
	// Query, when set, makes this a query task: answer it with AnswerQuery
	// from the state at PrevEventID, without commands.
	Query *QueryRequest `json:"query,omitempty"`
	// Time is the workflow's deterministic "now" for this task.
	Time time.Time `json:"time"`
	// Timeout is how long from its hand-out the engine waits for the
	// task's answer: past it, the answer is refused and the task offered
	// again (zero: not said).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// CommandType names a workflow command.
type CommandType string

// Commands a workflow task returns.
const (
	CommandScheduleStep   CommandType = "ScheduleStep"
	CommandCancelStep     CommandType = "CancelStep"
	CommandStartTimer     CommandType = "StartTimer"
	CommandCancelTimer    CommandType = "CancelTimer"
	CommandStartChild     CommandType = "StartChild"
	CommandSignalExternal CommandType = "SignalExternal"
	CommandCancelExternal CommandType = "CancelExternal"
	CommandSideEffect     CommandType = "SideEffect"
	// CommandUpsertAttributes sets the run's attributes (its searchable
	// key-value pairs in lists): each given key to its value, a key given
	// an empty value removed.
	CommandUpsertAttributes CommandType = "UpsertAttributes"
	// CommandUpsertMemo sets keys of the run's memo (what DescribeWorkflow
	// answers, not searchable): each given key to its value, a key given
	// an empty value removed. A front end keeps there what its reads
	// show of a running run, so that they need no worker.
	CommandUpsertMemo    CommandType = "UpsertMemo"
	CommandComplete      CommandType = "CompleteWorkflow"
	CommandFail          CommandType = "FailWorkflow"
	CommandCancel        CommandType = "CancelWorkflow"
	CommandContinueAsNew CommandType = "ContinueAsNew"
)

// EventType is the event a command is recorded as.
func (c CommandType) EventType() EventType {
	switch c {
	case CommandScheduleStep:
		return EventStepScheduled
	case CommandCancelStep:
		return EventStepCancelScheduled
	case CommandStartTimer:
		return EventTimerStarted
	case CommandCancelTimer:
		return EventTimerCanceled
	case CommandStartChild:
		return EventChildInitiated
	case CommandSignalExternal:
		return EventSignalExternal
	case CommandCancelExternal:
		return EventCancelExternal
	case CommandSideEffect:
		return EventSideEffect
	case CommandUpsertAttributes:
		return EventAttributesUpserted
	case CommandUpsertMemo:
		return EventMemoUpserted
	case CommandComplete:
		return EventWorkflowCompleted
	case CommandFail:
		return EventWorkflowFailed
	case CommandCancel:
		return EventWorkflowCanceled
	case CommandContinueAsNew:
		return EventWorkflowContinuedAsNew
	}
	return ""
}

// Command is one decision of a workflow task.
type Command struct {
	Type CommandType `json:"type" required:"true"`
	// Seq identifies the step, timer, child, side effect or external
	// request; CancelStep and CancelTimer name the Seq they cancel.
	Seq int64 `json:"seq,omitempty"`
	// Name is the step name, the child's workflow type, the signal name, or
	// the workflow type to continue as.
	Name    string        `json:"name,omitempty" max:"1000" text:"true"`
	Payload Value         `json:"payload,omitempty" max:"16777216"`
	Failure *Failure      `json:"failure,omitempty"`
	Step    *StepOptions  `json:"step,omitempty"`
	Timer   time.Duration `json:"timer,omitempty"`
	Child   *ChildOptions `json:"child,omitempty"`
	Target  *Target       `json:"target,omitempty"`
	// ContinueAsNew carries the new run's queue and timeout.
	ContinueAsNew *ChildOptions `json:"continue_as_new,omitempty"`
	// Attributes are UpsertAttributes's changes.
	Attributes map[string]string `json:"attributes,omitempty" max:"64" maxkey:"32" maxvalue:"500" keys:"nonempty" text:"true"`
	// Memo are UpsertMemo's changes (the limits of a start's memo); each
	// value is kept inline in the run's state and its MemoUpserted event.
	Memo map[string]Value `json:"memo,omitempty" max:"64" maxkey:"128" maxvalue:"16777216" keys:"nonempty"`
	// SignalStart, on a SignalExternal to a workflow id (no run id),
	// starts the target when it has no open run, with the signal as its
	// first input (signal-with-start); the run started has no input.
	SignalStart *SignalStart `json:"signal_start,omitempty"`
}

// SignalStart is how a SignalExternal starts its target workflow when the
// target has no open run.
type SignalStart struct {
	WorkflowType string `json:"workflow_type" max:"1000" required:"true" text:"true"`
	Queue        string `json:"queue,omitempty" max:"1000"`
	Priority     int8   `json:"priority,omitempty" minimum:"0" maximum:"5"`
}

// StepOptions are a step's queue, priority, timeouts and retry policy, and
// what it does in its user's words (Summary).
type StepOptions struct {
	Queue string `json:"queue,omitempty" max:"1000"`
	// Priority orders the step among the tasks waiting on its queue; 0
	// gives it its run's priority.
	Priority        int8          `json:"priority,omitempty" minimum:"0" maximum:"5"`
	ScheduleToStart time.Duration `json:"schedule_to_start,omitempty"`
	StartToClose    time.Duration `json:"start_to_close,omitempty"`
	ScheduleToClose time.Duration `json:"schedule_to_close,omitempty"`
	Heartbeat       time.Duration `json:"heartbeat,omitempty"`
	Retry           *RetryPolicy  `json:"retry,omitempty"`
	// IdempotencyKey, when set, is the key every attempt of the step gets
	// (step.Info.IdempotencyKey) instead of RUN_ID/SEQ: a front end that
	// runs one logical step as several steps (a saga's retries) keeps one
	// key for all of them.
	IdempotencyKey string `json:"idempotency_key,omitempty" max:"250"`
	// Labels stay with the step in its StepScheduled event, for tools
	// that read a history (a saga's steps and phases); the step does not
	// get them.
	Labels map[string]string `json:"labels,omitempty" max:"16" maxkey:"64" maxvalue:"500"`
	// Summary says in its user's words what the step does ("state
	// validate of credit instance c7"); a step's failure (*StepError)
	// reads "SUMMARY failed after N attempts: …" with it, instead of the
	// step's name. The StepScheduled event keeps it; the step does not
	// get it.
	Summary string `json:"summary,omitempty" max:"1000" text:"true"`
	// AutoHeartbeat has the worker that runs the step heartbeat for it
	// while the step's function runs, so that Heartbeat notices a worker
	// that died (the attempt then runs again elsewhere), not a function
	// that hangs: StartToClose bounds that. Without Heartbeat it does
	// nothing.
	AutoHeartbeat bool `json:"auto_heartbeat,omitempty"`
}

// RetryPolicy says how a failed step is retried.
type RetryPolicy = store.RetryPolicy

// ParentClosePolicy says what happens to a running child when its parent closes.
type ParentClosePolicy int8

// Parent-close policies.
const (
	// ParentCloseTerminate terminates the child (the default).
	ParentCloseTerminate ParentClosePolicy = iota
	// ParentCloseRequestCancel asks the child to cancel.
	ParentCloseRequestCancel
	// ParentCloseAbandon leaves the child running.
	ParentCloseAbandon
)

// ChildOptions describe a child workflow (or a continued-as-new run).
type ChildOptions struct {
	Namespace   string            `json:"namespace,omitempty" max:"63"`
	WorkflowID  string            `json:"workflow_id,omitempty" max:"250" id:"true"`
	Queue       string            `json:"queue,omitempty" max:"1000"`
	Priority    int8              `json:"priority,omitempty" minimum:"0" maximum:"5"`
	RunTimeout  time.Duration     `json:"run_timeout,omitempty"`
	ParentClose ParentClosePolicy `json:"parent_close,omitempty"`
	IDReuse     IDReusePolicy     `json:"id_reuse_policy,omitempty"`
	Memo        map[string]Value  `json:"memo,omitempty" max:"64" maxkey:"128" maxvalue:"16777216"`
	BusinessKey string            `json:"business_key,omitempty" max:"250" text:"true"`
	Attributes  map[string]string `json:"attributes,omitempty" max:"64" maxkey:"32" maxvalue:"500" keys:"nonempty" text:"true"`
}

// CompleteWorkflowTaskRequest returns a workflow task's commands.
type CompleteWorkflowTaskRequest struct {
	Token    []byte    `json:"token" max:"16384" token:"true" required:"true"`
	Commands []Command `json:"commands" max:"100000"`
	Identity string    `json:"identity,omitempty" max:"256"`
	// Details are the audit details the workflow code attached while it
	// ran; the task's WorkflowTaskCompleted event keeps them.
	Details []AuditDetail `json:"details,omitempty" max:"100"`
}

// CompleteWorkflowTaskResponse says where the run's history stands after the
// task's commands were recorded.
type CompleteWorkflowTaskResponse struct {
	// LastEventID is the id of the task's last command event: the worker's
	// copy of the run is now there.
	LastEventID int64 `json:"last_event_id"`
}

// FailWorkflowTaskRequest reports a workflow task the worker could not
// complete (non-determinism, a panic). The run waits and the task is
// retried later; the run itself does not fail.
type FailWorkflowTaskRequest struct {
	Token    []byte   `json:"token" max:"16384" token:"true" required:"true"`
	Failure  *Failure `json:"failure" required:"true"`
	Identity string   `json:"identity,omitempty" max:"256"`
}

// QueryAnswer answers a query task.
type QueryAnswer struct {
	Token   []byte   `json:"token" max:"16384" token:"true" required:"true"`
	Result  Value    `json:"result,omitempty" max:"16777216"`
	Failure *Failure `json:"failure,omitempty"`
}

// StepTask asks a worker to run one attempt of a step.
type StepTask struct {
	Token        []byte       `json:"token"`
	Run          store.RunKey `json:"run"`
	WorkflowType string       `json:"workflow_type"`
	Seq          int64        `json:"seq"`
	Name         string       `json:"name"`
	Input        Value        `json:"input,omitempty"`
	Attempt      int32        `json:"attempt"`
	// IdempotencyKey is the same for every attempt of the step.
	IdempotencyKey   string        `json:"idempotency_key"`
	ScheduledTime    time.Time     `json:"scheduled_time"`
	StartedTime      time.Time     `json:"started_time"`
	Deadline         time.Time     `json:"deadline,omitzero"`
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	HeartbeatDetails Value         `json:"heartbeat_details,omitempty"`
	// AutoHeartbeat says the worker heartbeats for the step while its
	// function runs (StepOptions.AutoHeartbeat).
	AutoHeartbeat bool `json:"auto_heartbeat,omitempty"`
	// Redelivered says this attempt may have run before: it was in flight
	// when its shard changed hands (a crash, a restart, a failover), and is
	// offered again under the same Attempt and token rules.
	Redelivered bool `json:"redelivered,omitempty"`
}

// CompleteStepRequest returns a step's result.
type CompleteStepRequest struct {
	Token    []byte `json:"token" max:"16384" token:"true" required:"true"`
	Result   Value  `json:"result,omitempty" max:"16777216"`
	Identity string `json:"identity,omitempty" max:"256"`
	// Details are the audit details the attempt attached; the
	// StepCompleted event keeps them.
	Details []AuditDetail `json:"details,omitempty" max:"100"`
}

// FailStepRequest reports a failed attempt; the engine retries it by policy.
type FailStepRequest struct {
	Token    []byte   `json:"token" max:"16384" token:"true" required:"true"`
	Failure  *Failure `json:"failure" required:"true"`
	Identity string   `json:"identity,omitempty" max:"256"`
	// Details are the audit details the attempt attached; the event that
	// records the failure (StepAttemptFailed, or StepFailed when no retry
	// follows) keeps them.
	Details []AuditDetail `json:"details,omitempty" max:"100"`
}

// HeartbeatRequest records a running step's progress.
type HeartbeatRequest struct {
	Token   []byte `json:"token" max:"16384" token:"true" required:"true"`
	Details Value  `json:"details,omitempty" max:"16777216"`
}

// HeartbeatResponse answers a heartbeat; a step told to stop gets
// ErrTaskNotFound instead.
type HeartbeatResponse struct{}

// Namespaces is what operators need besides Service: namespaces and their
// retention. The engine implements it, and so does a remote service.
type Namespaces interface {
	CreateNamespace(ctx context.Context, ns Namespace) (Namespace, error)
	DescribeNamespace(ctx context.Context, name string) (Namespace, error)
	UpdateNamespace(ctx context.Context, ns Namespace) (Namespace, error)
	ListNamespaces(ctx context.Context) ([]Namespace, error)
}

// Namespace isolates workflows and says how long closed runs are kept.
type Namespace = store.Namespace

// Cluster is what operators see of the nodes and stored definitions.
type Cluster interface {
	// ListNodes returns the live nodes (all known ones with all set).
	ListNodes(ctx context.Context, all bool) ([]Node, error)
	// PutDefinition stores a workflow definition; Version 0 stores a new
	// version unless the latest has the same content.
	PutDefinition(ctx context.Context, d Definition) (Definition, error)
	// GetDefinition returns one version, the latest for version 0.
	GetDefinition(ctx context.Context, typ string, version int32) (Definition, error)
	// ListDefinitions returns every version of a type, or of all types.
	ListDefinitions(ctx context.Context, typ string) ([]Definition, error)
	// ListShards returns every shard as the store records it, marking the
	// ones the answering node serves.
	ListShards(ctx context.Context) ([]ShardInfo, error)
}

// Node is a running Strand process.
type Node = store.Node

// FrontEndService is what a front end (DAGs, state machines) needs of
// Strand: runs and the stored definitions. The engine and a remote
// service are both.
type FrontEndService interface {
	Service
	Cluster
}

// Definition is a stored workflow definition (a DAG, a state machine), by
// type and version.
type Definition = store.Definition
