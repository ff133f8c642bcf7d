package api

import (
	"errors"
	"fmt"
	"go/token"
	"reflect"
	"unicode/utf8"

	"github.com/strandhq/strand/store"
)

// Errors a caller switches on with errors.Is.
var (
	// ErrAlreadyStarted: the workflow id has a run the id reuse policy does
	// not allow to start again. *AlreadyStartedError carries it.
	ErrAlreadyStarted = errors.New("workflow already started")
	// ErrNotFound: no such workflow, run or (for history) event.
	// Its text is only "not found": the error wrapping it names what was
	// not found (the workflow, the task, the definition).
	ErrNotFound = errors.New("not found")
	// ErrRunClosed: the run is closed and cannot take the request.
	ErrRunClosed = errors.New("workflow run already closed")
	// ErrCanceled: the run (or a step, or a child) was canceled.
	ErrCanceled = errors.New("canceled")
	// ErrTerminated: the run was terminated.
	ErrTerminated = errors.New("terminated")
	// ErrTimedOut: a run, step or child ran out of time. *TimeoutError says which.
	ErrTimedOut = errors.New("timed out")
	// ErrStepFailed: a step failed for good. *StepError carries it.
	ErrStepFailed = errors.New("step failed")
	// ErrChildFailed: a child workflow did not complete. *ChildError carries it.
	ErrChildFailed = errors.New("child workflow failed")
	// ErrNonDeterminism: replaying a run issued other commands than its
	// history holds. *NonDeterminismError carries it.
	ErrNonDeterminism = errors.New("non-determinism")
	// ErrQueryFailed: the query handler failed or does not exist.
	ErrQueryFailed = errors.New("query failed")
	// ErrNoWorker: no worker has polled the run's workflow queue for a
	// while, so a query would wait for nothing; start a worker for that
	// queue (the error names it), or check the queue the run was started on.
	ErrNoWorker = errors.New("no worker")
	// ErrInvalidArgument: the request is malformed; nothing changed.
	// *store.InvalidArgumentError names the field.
	ErrInvalidArgument = store.ErrInvalidArgument
	// ErrNamespaceNotFound: the request names a namespace that does not exist.
	ErrNamespaceNotFound = store.ErrNamespaceNotFound
	// ErrTaskNotFound: a task token names a task that is no longer open
	// (it timed out, was retried or completed already).
	ErrTaskNotFound = errors.New("task not found")
	// ErrCorruptHistory: a history block does not decode or has a gap.
	ErrCorruptHistory = errors.New("corrupt history")
	// ErrAlreadyExists: a namespace (or another named thing) of that name
	// exists already.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the update was based on a version that changed since.
	ErrConflict = errors.New("conflict")
	// ErrFailedPrecondition: the request is well formed, but the state of
	// what it names does not allow it (a reset point the run's history
	// does not have); nothing changed.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnavailable: the engine cannot serve the request now (it is
	// stopping, or it does not own the workflow's shard); retry later.
	ErrUnavailable = errors.New("unavailable")
	// ErrUnauthenticated: the request carries no credentials, or ones the
	// server does not accept (unknown, expired or revoked token, wrong
	// password); nothing changed.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: the caller is known but holds no role that
	// allows the request in its namespace; nothing changed.
	ErrPermissionDenied = errors.New("permission denied")
)

// InvalidArgument returns an error naming the field at fault; it matches
// ErrInvalidArgument.
func InvalidArgument(field, format string, args ...any) error {
	return store.InvalidArgument(field, format, args...)
}

// AlreadyStartedError names the run that blocked a start.
type AlreadyStartedError struct {
	WorkflowID string
	RunID      string
}

func (e *AlreadyStartedError) Error() string {
	return fmt.Sprintf("workflow %s already started (run %s)", e.WorkflowID, e.RunID)
}

// Unwrap returns ErrAlreadyStarted.
func (e *AlreadyStartedError) Unwrap() error { return ErrAlreadyStarted }

// Failure kinds.
const (
	KindApplication    = "application"
	KindStep           = "step"
	KindChild          = "child"
	KindTimeout        = "timeout"
	KindCanceled       = "canceled"
	KindTerminated     = "terminated"
	KindNonDeterminism = "nondeterminism"
	KindPanic          = "panic"
)

// Failure is an error as it travels between processes and sits in history:
// a kind, a type name, a message and a cause chain.
type Failure struct {
	Kind    string `json:"kind" max:"64"`
	Type    string `json:"type,omitempty" max:"1000"`
	Message string `json:"message" max:"32768"`
	// NonRetryable stops a step's retries regardless of its policy.
	NonRetryable bool `json:"non_retryable,omitempty"`
	// Step, Seq and Attempt locate a step failure; WorkflowID and RunID a
	// child failure.
	Step string `json:"step,omitempty" max:"1000"`
	// Summary is a step failure's step in its user's words
	// (StepOptions.Summary).
	Summary    string   `json:"summary,omitempty" max:"1000"`
	Seq        int64    `json:"seq,omitempty"`
	Attempt    int32    `json:"attempt,omitempty"`
	WorkflowID string   `json:"workflow_id,omitempty" max:"1000"`
	RunID      string   `json:"run_id,omitempty" max:"1000"`
	Details    Value    `json:"details,omitempty" max:"16777216"`
	Cause      *Failure `json:"cause,omitempty"`
}

func (f *Failure) Error() string {
	if f == nil {
		return "<nil>"
	}
	return f.Err().Error()
}

// Err turns a failure back into the Go error a caller switches on.
func (f *Failure) Err() error {
	if f == nil {
		return nil
	}
	var cause error
	if f.Cause != nil {
		cause = f.Cause.Err()
	}
	switch f.Kind {
	case KindStep:
		return &StepError{Step: f.Step, Summary: f.Summary, Seq: f.Seq, Attempt: f.Attempt, Cause: cause}
	case KindChild:
		return &ChildError{WorkflowID: f.WorkflowID, RunID: f.RunID, Cause: cause}
	case KindTimeout:
		return &TimeoutError{What: f.Type, Details: f.Details, Cause: cause}
	case KindCanceled:
		return &CanceledError{Reason: f.Message}
	case KindTerminated:
		return &TerminatedError{Reason: f.Message}
	case KindNonDeterminism:
		return &NonDeterminismError{Message: f.Message}
	case KindPanic:
		return &PanicError{Message: f.Message, Stack: string(f.Details)}
	}
	return &ApplicationError{Type: f.Type, Message: f.Message, NonRetryable: f.NonRetryable, Details: f.Details, Cause: cause}
}

// FailureOf encodes err for the wire and for history. A message above
// store.MaxReason bytes is cut to it, so that the report is not refused.
func FailureOf(err error) *Failure {
	f := failureOf(err)
	if f != nil && len(f.Message) > store.MaxReason {
		const more = "… (truncated)"
		cut := store.MaxReason - len(more)
		for cut > 0 && !utf8.RuneStart(f.Message[cut]) {
			cut--
		}
		f.Message = f.Message[:cut] + more
	}
	return f
}

func failureOf(err error) *Failure {
	if err == nil {
		return nil
	}
	var (
		app   *ApplicationError
		step  *StepError
		child *ChildError
		to    *TimeoutError
		can   *CanceledError
		term  *TerminatedError
		nd    *NonDeterminismError
		pe    *PanicError
	)
	switch {
	case errors.As(err, &step):
		return &Failure{Kind: KindStep, Message: step.Error(), Step: step.Step, Summary: step.Summary, Seq: step.Seq, Attempt: step.Attempt, Cause: FailureOf(step.Cause)}
	case errors.As(err, &child):
		return &Failure{Kind: KindChild, Message: child.Error(), WorkflowID: child.WorkflowID, RunID: child.RunID, Cause: FailureOf(child.Cause)}
	case errors.As(err, &to):
		return &Failure{Kind: KindTimeout, Type: to.What, Message: to.Error(), Details: to.Details, Cause: FailureOf(to.Cause)}
	case errors.As(err, &can):
		return &Failure{Kind: KindCanceled, Message: can.Reason}
	case errors.Is(err, ErrCanceled):
		return &Failure{Kind: KindCanceled, Message: err.Error()}
	case errors.As(err, &term):
		return &Failure{Kind: KindTerminated, Message: term.Reason}
	case errors.As(err, &nd):
		return &Failure{Kind: KindNonDeterminism, Message: nd.Message}
	case errors.As(err, &pe):
		return &Failure{Kind: KindPanic, Message: pe.Message, Details: []byte(pe.Stack)}
	case errors.As(err, &app):
		return &Failure{Kind: KindApplication, Type: app.Type, Message: app.Message, NonRetryable: app.NonRetryable, Details: app.Details, Cause: FailureOf(app.Cause)}
	}
	return &Failure{Kind: KindApplication, Type: typeName(err), Message: err.Error()}
}

// TypedError is an error that declares its failure type (Failure.Type,
// what a retry policy's NonRetryableTypes and RetryableTypes match), so
// that the type its users read and match is a word of theirs rather than
// a Go type's name.
type TypedError interface {
	error
	FailureType() string
}

// typeName is the failure type of an error that is not an
// *ApplicationError: the type the error (or one it wraps) declares with
// FailureType; otherwise the declared name of the innermost wrapped
// error's type, without pointer and package ("InsufficientFunds" for a
// *bank.InsufficientFunds); "error" when that type is not exported (the
// errors.New and fmt.Errorf kinds).
func typeName(err error) string {
	var typed TypedError
	if errors.As(err, &typed) {
		if name := typed.FailureType(); name != "" {
			return name
		}
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name := t.Name(); token.IsExported(name) {
		return name
	}
	return "error"
}

// ApplicationError is an error raised by workflow or step code. Type is
// what a retry policy's NonRetryableTypes match.
type ApplicationError struct {
	Type         string
	Message      string
	NonRetryable bool
	Details      []byte
	Cause        error
}

func (e *ApplicationError) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *ApplicationError) Unwrap() error { return e.Cause }

// StepError is how a workflow sees a step that failed for good: the step,
// its last attempt and the cause (the step's error or a *TimeoutError).
// Summary, when the step's options gave one, is the step in its user's
// words, which the error's text uses instead of the step's name.
type StepError struct {
	Step    string
	Summary string
	Seq     int64
	Attempt int32
	Cause   error
}

func (e *StepError) Error() string {
	what := e.Summary
	if what == "" {
		what = "step " + e.Step
	}
	switch {
	case e.Attempt == 1:
		what += " failed after 1 attempt"
	case e.Attempt > 1:
		what += fmt.Sprintf(" failed after %d attempts", e.Attempt)
	default:
		what += " failed"
	}
	if e.Cause == nil {
		return what
	}
	return what + ": " + e.Cause.Error()
}

// Unwrap returns the cause and ErrStepFailed.
func (e *StepError) Unwrap() []error { return []error{ErrStepFailed, e.Cause} }

// ChildError is how a parent sees a child workflow that did not complete.
type ChildError struct {
	WorkflowID string
	RunID      string
	Cause      error
}

func (e *ChildError) Error() string {
	return fmt.Sprintf("child workflow %s (run %s): %v", e.WorkflowID, e.RunID, e.Cause)
}

// Unwrap returns the cause and ErrChildFailed.
func (e *ChildError) Unwrap() []error { return []error{ErrChildFailed, e.Cause} }

// Timeout kinds (TimeoutError.What).
const (
	TimeoutScheduleToStart = "schedule_to_start"
	TimeoutStartToClose    = "start_to_close"
	TimeoutScheduleToClose = "schedule_to_close"
	TimeoutHeartbeat       = "heartbeat"
	TimeoutRun             = "run"
)

// TimeoutError says which timeout fired; Details are a step's last
// heartbeat details.
type TimeoutError struct {
	What    string
	Details []byte
	Cause   error
}

func (e *TimeoutError) Error() string { return e.What + " timeout" }

// Unwrap returns ErrTimedOut.
func (e *TimeoutError) Unwrap() []error { return []error{ErrTimedOut, e.Cause} }

// CanceledError is a cancellation with its reason.
type CanceledError struct{ Reason string }

func (e *CanceledError) Error() string {
	if e.Reason == "" {
		return "canceled"
	}
	return "canceled: " + e.Reason
}

// Unwrap returns ErrCanceled.
func (e *CanceledError) Unwrap() error { return ErrCanceled }

// TerminatedError is a termination with its reason.
type TerminatedError struct{ Reason string }

func (e *TerminatedError) Error() string { return "terminated: " + e.Reason }

// Unwrap returns ErrTerminated.
func (e *TerminatedError) Unwrap() error { return ErrTerminated }

// NonDeterminismError names the mismatch between a replay and history.
type NonDeterminismError struct{ Message string }

func (e *NonDeterminismError) Error() string { return "non-determinism: " + e.Message }

// Unwrap returns ErrNonDeterminism.
func (e *NonDeterminismError) Unwrap() error { return ErrNonDeterminism }

// PanicError is a panic in workflow or step code.
type PanicError struct {
	Message string
	Stack   string
}

func (e *PanicError) Error() string { return "panic: " + e.Message }
