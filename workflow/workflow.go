// Package workflow is what workflow code uses: durable steps, timers,
// signals, child workflows, selectors and deterministic helpers.
//
// A workflow is a Go function
//
//	func(ctx workflow.Context, in I) (O, error)
//
// registered on a worker. Strand records every decision it makes, and after
// a crash replays the function against that record to rebuild its state, so
// a workflow must be deterministic: it takes time from Now, randomness from
// Rand or UUID, runs goroutines with Go, waits with Sleep, futures, channels
// and selectors, and does everything that touches the world in steps.
package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/sdk"
)

// Context is a workflow's deterministic context.
type Context = sdk.Context

// CancelFunc cancels a context.
type CancelFunc = sdk.CancelFunc

// Future is the result of an asynchronous workflow call.
type Future[T any] = sdk.Future[T]

// ChildFuture is a child workflow's result, with its start.
type ChildFuture[O any] = sdk.ChildFuture[O]

// ReceiveChannel is the receiving end of a channel.
type ReceiveChannel[T any] = sdk.ReceiveChannel[T]

// Channel is a channel between workflow goroutines.
type Channel[T any] = sdk.Channel[T]

// Selector waits for the first ready future or channel.
type Selector = sdk.Selector

// Info describes the running workflow.
type Info = sdk.Info

// StepOptions are a step's queue, priority, timeouts and retry policy, and
// what it does in its user's words (Summary).
type StepOptions = api.StepOptions

// RetryPolicy says how a failed step is retried.
type RetryPolicy = api.RetryPolicy

// ChildOptions describe a child workflow.
type ChildOptions = api.ChildOptions

// Target names another workflow.
type Target = api.Target

// SignalStart is how SignalExternalWithStart starts a target that has no
// open run: its workflow type, task queue (default: this run's) and
// priority.
type SignalStart = api.SignalStart

// ContinueAsNewError closes the run and starts the workflow again with new
// input and fresh history; return it from the workflow function.
type ContinueAsNewError = sdk.ContinueAsNewError

// ParentClosePolicy says what happens to a running child when its parent
// closes.
type ParentClosePolicy = api.ParentClosePolicy

// Parent-close policies for ChildOptions.ParentClose.
const (
	ParentCloseTerminate     = api.ParentCloseTerminate
	ParentCloseRequestCancel = api.ParentCloseRequestCancel
	ParentCloseAbandon       = api.ParentCloseAbandon
)

// Priorities for steps and children.
const (
	PriorityHighest = api.PriorityHighest
	PriorityHigh    = api.PriorityHigh
	PriorityNormal  = api.PriorityNormal
	PriorityLow     = api.PriorityLow
	PriorityLowest  = api.PriorityLowest
)

// ExecuteStep schedules step with input in and returns the future of its
// result. The step is registered on a worker under its function name.
func ExecuteStep[I, O any](ctx Context, opts StepOptions, step func(context.Context, I) (O, error), in I) Future[O] {
	return sdk.ExecuteStep[O](ctx, opts, sdk.FuncName(step), in)
}

// ExecuteStepByName schedules a step registered under name.
func ExecuteStepByName[O any](ctx Context, opts StepOptions, name string, in any) Future[O] {
	return sdk.ExecuteStep[O](ctx, opts, name, in)
}

// ExecuteChild starts a child workflow and returns the future of its result.
func ExecuteChild[I, O any](ctx Context, opts ChildOptions, wf func(Context, I) (O, error), in I) ChildFuture[O] {
	return sdk.ExecuteChild[O](ctx, opts, sdk.FuncName(wf), in)
}

// ExecuteChildByName starts a child workflow registered under name.
func ExecuteChildByName[O any](ctx Context, opts ChildOptions, workflowType string, in any) ChildFuture[O] {
	return sdk.ExecuteChild[O](ctx, opts, workflowType, in)
}

// NewTimer returns a future that is ready after d.
func NewTimer(ctx Context, d time.Duration) Future[struct{}] { return sdk.NewTimer(ctx, d) }

// Sleep waits d durably: a restart in between does not shorten or repeat it.
func Sleep(ctx Context, d time.Duration) error { return sdk.Sleep(ctx, d) }

// GetSignalChannel returns the channel of signals named name; signals sent
// before the workflow asked for them wait in it.
func GetSignalChannel[T any](ctx Context, name string) ReceiveChannel[T] {
	return sdk.GetSignalChannel[T](ctx, name)
}

// NewChannel returns a channel between workflow goroutines.
func NewChannel[T any](ctx Context, capacity int) Channel[T] { return sdk.NewChannel[T](ctx, capacity) }

// NewFuture returns a future and the function that settles it.
func NewFuture[T any](ctx Context) (Future[T], func(T, error)) { return sdk.NewFuture[T](ctx) }

// NewSelector returns an empty selector.
func NewSelector(ctx Context) *Selector { return sdk.NewSelector(ctx) }

// AddReceive adds a channel case to a selector.
func AddReceive[T any](s *Selector, ch ReceiveChannel[T], fn func(ch ReceiveChannel[T])) *Selector {
	return sdk.AddReceive(s, ch, fn)
}

// Go runs fn as a workflow goroutine.
func Go(ctx Context, fn func(ctx Context)) { sdk.Go(ctx, fn) }

// Await blocks until cond holds or ctx is canceled.
func Await(ctx Context, cond func() bool) error { return sdk.Await(ctx, cond) }

// SignalExternal signals another workflow.
func SignalExternal(ctx Context, target Target, name string, in any) Future[struct{}] {
	return sdk.SignalExternal(ctx, target, name, in)
}

// SignalExternalWithStart signals the workflow target.WorkflowID and,
// when it has no open run, starts it as start says with the signal as its
// first input (signal-with-start). The future is ready once the signal was
// delivered.
func SignalExternalWithStart(ctx Context, target Target, name string, in any, start SignalStart) Future[struct{}] {
	return sdk.SignalExternalWithStart(ctx, target, name, in, &start)
}

// Message is a message a run received: its payload and where it came from.
type Message = api.MessageDelivery

// Receive waits for the next message of name with correlation key key
// (a sender posts it with the Go client's SendMessage, the HTTP API or
// `strand message send`, knowing no run) and decodes its payload into T.
// A message sent before the run waits is kept for it; two runs waiting
// for one name and key get one message each, the first to wait first.
// Several waits go in a selector; for a timeout, select a timer beside it
// and cancel the wait's context: the future then fails with the context's
// error. A message already on its way when the wait was withdrawn still
// lands in the run's history, and the run's next Receive of the same name
// and key returns it.
func Receive[T any](ctx Context, name, key string) Future[T] { return sdk.Receive[T](ctx, name, key) }

// ReceiveMessage is Receive with the whole message: its id, payload,
// sender and time.
func ReceiveMessage(ctx Context, name, key string) Future[Message] {
	return sdk.ReceiveMessage(ctx, name, key)
}

// HumanTaskOptions describe a task for people: see HumanTask.
type HumanTaskOptions = api.HumanTaskOptions

// TaskOutcome is how a human task ended.
type TaskOutcome = api.TaskOutcome

// HumanTask asks people to do a task and waits for its outcome: the title
// and description they see, the users and groups who may do it, a form
// (a JSON Schema) the data they complete it with must satisfy, the data
// it shows, the outcomes it may end with, a priority, a due time and an
// escalation (reassign, or complete with a timeout outcome, and a
// reminder). People act on it in the console's inbox, with `strand task`
// or the API (package humantask). The task is a child run of the system
// workflow api.HumanTaskWorkflowType; canceling ctx withdraws it.
func HumanTask(ctx Context, opts HumanTaskOptions) Future[TaskOutcome] {
	info := GetInfo(ctx)
	id := fmt.Sprintf("%s%s-%s", api.HumanTaskIDPrefix, info.RunID, UUID(ctx)[:8])
	child := ExecuteChildByName[TaskOutcome](ctx, ChildOptions{WorkflowID: id, Queue: api.SystemQueue, Priority: opts.Priority},
		api.HumanTaskWorkflowType, api.HumanTaskInput{Options: opts, ParentType: info.WorkflowType})
	return child
}

// CancelExternal asks another workflow to cancel.
func CancelExternal(ctx Context, target Target) Future[struct{}] {
	return sdk.CancelExternal(ctx, target)
}

// UpsertAttributes sets the run's attributes, the key-value pairs that
// lists filter on (api.ListRequest.Attributes): each key to its value, a
// key given "" removed. Lists show the change once the workflow task that
// made it completed (and the list's visibility caught up).
func UpsertAttributes(ctx Context, attrs map[string]string) { sdk.UpsertAttributes(ctx, attrs) }

// UpsertMemo sets keys of the run's memo, which DescribeWorkflow answers
// without a worker: each key to its value as JSON, a key given nil
// removed. It takes effect when the workflow task completes. History
// keeps every change, so set what changed, once a task. A run has at
// most 64 memo keys, each value at most 16 MiB (keep them small: the
// run's state holds them, and each change is an event).
// GetInfo(ctx).Memo is the memo the run started with.
func UpsertMemo(ctx Context, memo map[string]any) error { return sdk.UpsertMemo(ctx, memo) }

// AuditDetail attaches value, encoded as JSON (a string is text), under
// name to the run's history: to the WorkflowTaskCompleted event of the
// workflow task running now, for the people who read the history
// (`strand workflow history --details`, the console's run page). A name
// given again in the same task replaces its value. Small values are kept
// with the event, large ones (past the store's document threshold) as
// documents loaded when asked for. Replay reads none of it: it is not
// part of what the workflow decides, and a replay attaches nothing.
func AuditDetail(ctx Context, name string, value any) error { return sdk.AuditDetail(ctx, name, value) }

// SideEffect runs fn once and replays its recorded result.
func SideEffect[T any](ctx Context, fn func() T) T { return sdk.SideEffect(ctx, fn) }

// Now is the workflow's deterministic time.
func Now(ctx Context) time.Time { return sdk.Now(ctx) }

// Rand is a random source that replays identically.
func Rand(ctx Context) *rand.Rand { return sdk.Rand(ctx) }

// UUID returns a random UUID that replays identically.
func UUID(ctx Context) string { return sdk.UUID(ctx) }

// SetQueryHandler answers queries named name with fn.
func SetQueryHandler[I, O any](ctx Context, name string, fn func(I) (O, error)) {
	sdk.SetQueryHandler(ctx, name, fn)
}

// GetInfo describes the running workflow.
func GetInfo(ctx Context) Info { return sdk.GetInfo(ctx) }

// ScheduledTime is the fire time of a run that a schedule started (the time
// it stands for: a backfilled daily run of 2026-01-03 gets midnight of that
// day), and the zero time for a run started otherwise.
func ScheduledTime(ctx Context) time.Time { return sdk.GetInfo(ctx).ScheduledTime }

// Logger returns a logger that is quiet during replay.
func Logger(ctx Context) *slog.Logger { return sdk.Logger(ctx) }

// IsReplaying reports whether the workflow is replaying history.
func IsReplaying(ctx Context) bool { return sdk.IsReplaying(ctx) }

// WithCancel returns a child context and its cancel function.
func WithCancel(ctx Context) (Context, CancelFunc) { return sdk.WithCancel(ctx) }

// WithValue returns a child context carrying val under key.
func WithValue(ctx Context, key, val any) Context { return sdk.WithValue(ctx, key, val) }

// NewDisconnectedContext returns a context that a cancellation of ctx does
// not reach, for clean-up after a cancel.
func NewDisconnectedContext(ctx Context) Context { return sdk.NewDisconnectedContext(ctx) }

// NewContinueAsNewError returns the error that continues the workflow as
// wf with input in.
func NewContinueAsNewError[I, O any](ctx Context, wf func(Context, I) (O, error), in I) error {
	p, err := sdk.Encode(in)
	if err != nil {
		return err
	}
	info := sdk.GetInfo(ctx)
	return &sdk.ContinueAsNewError{WorkflowType: sdk.FuncName(wf), Input: p, Options: api.ChildOptions{Queue: info.Queue}}
}

// NewError returns an application error of a type that retry policies can
// name; nonRetryable stops retries at once.
func NewError(typ, message string, nonRetryable bool) error {
	return &api.ApplicationError{Type: typ, Message: message, NonRetryable: nonRetryable}
}

// TypedError is an error type of a step's that declares its failure type
// (what retry policies name) with a FailureType method. A step's error
// that neither declares one nor is a NewError has the declared name of its
// type ("InsufficientFunds" for a *InsufficientFunds), or "error" for
// errors.New and fmt.Errorf.
type TypedError = api.TypedError
