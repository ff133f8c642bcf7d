// Package saga is StackSaga's model over the kernel: a saga coordinates a
// business transaction across services as forward steps, each with a
// compensation that undoes it. When a step fails for good, the steps that
// completed are compensated in reverse order; a step that fails with a
// retryable error (Retryable) is retried later with back-off instead, up
// to a deadline.
//
// A saga runs inside a workflow (New), so it is a run of the kernel: it
// survives crashes, runs on every store and in a cluster, and every
// attempt of every step and compensation is in its history (its tryouts,
// which Client.Get reads back). A compensation that keeps failing stops
// the saga in StateCompensationFailed until an operator retries it, marks
// it done by hand or skips it (Client.Resolve).
//
// Sagas without Go are YAML definitions whose steps are HTTP calls, run by
// `strand worker` (Definition, Interpret).
package saga

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/sdk"
	"github.com/strandhq/strand/workflow"
)

// State is a saga's lifecycle state (StackSaga's).
type State string

// States. A saga is started, in progress while its steps run, then
// completed, or compensating and compensated after a step failed for good
// (failed when nothing had to be undone). A compensation that keeps failing
// leaves it in compensation failed until an operator decides. Disabled (the
// run paused) and terminated are an operator's doing.
const (
	StateStarted            State = "started"
	StateInProgress         State = "in_progress"
	StateCompleted          State = "completed"
	StateFailed             State = "failed"
	StateCompensating       State = "compensating"
	StateCompensated        State = "compensated"
	StateCompensationFailed State = "compensation_failed"
	StateDisabled           State = "disabled"
	StateTerminated         State = "terminated"
)

// States lists the states in order, for filters and docs.
var States = []State{StateStarted, StateInProgress, StateCompleted, StateFailed, StateCompensating, StateCompensated,
	StateCompensationFailed, StateDisabled, StateTerminated}

// Attributes of a saga's run, for lists, and labels of its steps, for the
// records.
const (
	AttrName  = "strand.saga"
	AttrState = "strand.saga.state"

	LabelSaga  = "strand.saga"
	LabelStep  = "strand.saga.step"
	LabelPhase = "strand.saga.phase"
	LabelGroup = "strand.saga.group"

	PhaseForward      = "forward"
	PhaseCompensation = "compensation"

	// SignalOperator carries an Operator decision to a saga whose
	// compensation failed.
	SignalOperator = "strand.saga.operator"
)

// RetryableType is the failure type of a Retryable error.
const RetryableType = "strand.saga.Retryable"

// Retryable marks err as retryable (StackSaga's RetryableExecutorException):
// the service is down for now, so the saga retries the step later without
// compensating. Any other error from a forward step fails it for good.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &api.ApplicationError{Type: RetryableType, Message: err.Error()}
}

// RetryPolicy says how a step is retried: after Backoff, doubling up to
// MaxBackoff, at most Attempts attempts in all, and (forward steps) not
// past Deadline from the step's first attempt.
type RetryPolicy struct {
	Backoff    time.Duration `json:"backoff,omitempty"`
	MaxBackoff time.Duration `json:"max_backoff,omitempty"`
	Attempts   int32         `json:"attempts,omitempty"`
	Deadline   time.Duration `json:"deadline,omitempty"`
}

// Options configure a saga.
type Options struct {
	// Name names the saga in lists and records (default: the workflow
	// type).
	Name string
	// Step are the options of every forward step and compensation: queue,
	// priority, timeouts. The saga sets their retry policy, idempotency
	// key and labels.
	Step workflow.StepOptions
	// Retry retries a forward step's retryable failures (default: back-off
	// 1 s doubling to 1 min, for up to 10 min).
	Retry RetryPolicy
	// Compensation retries a failing compensation before the saga stops
	// for an operator (default: back-off 1 s doubling to 1 min, 10
	// attempts).
	Compensation RetryPolicy
	// LostWorker is how long the worker running a forward step or a
	// compensation may be silent before the attempt is taken as lost
	// with its worker and runs again on another (default
	// DefaultLostWorker). The worker heartbeats for the step while its
	// function runs (api.StepOptions.AutoHeartbeat). A Step.Heartbeat
	// replaces it: the step's function heartbeats itself then.
	LostWorker time.Duration
}

// DefaultLostWorker is how soon a worker that died running a saga's step
// is noticed, by default.
const DefaultLostWorker = 10 * time.Second

// Operator is an operator's decision on a failed compensation.
type Operator struct {
	// Action is ActionRetry, ActionDone or ActionSkip.
	Action string `json:"action"`
	// Step is the saga step whose compensation failed; empty: every
	// compensation that failed (a batch's decision).
	Step     string `json:"step,omitempty"`
	Note     string `json:"note,omitempty"`
	Identity string `json:"identity,omitempty"`
}

// Operator actions.
const (
	// ActionRetry runs the compensation again, with a fresh policy.
	ActionRetry = "retry"
	// ActionDone records that someone undid the step by hand.
	ActionDone = "done"
	// ActionSkip leaves the step as it is.
	ActionSkip = "skip"
)

// Error is how a saga that did not complete ends: the step that failed
// (empty when the workflow's own code failed it), what the saga did about
// it, and the cause. It does not unwrap to the cause, so that the run
// fails with the saga's message (a failure of type ErrorFailed), not
// with the step's.
type Error struct {
	Saga  string
	Step  string
	State State
	Cause error
}

// ErrorFailed is the failure type of a run that ends with a saga's *Error.
const ErrorFailed = "strand.saga.failed"

func (e *Error) Error() string {
	what, cause := "failed", e.Cause
	if e.Step != "" {
		what = "step " + e.Step + " failed"
		// The step's own error: the saga names the step already, and
		// its record the attempts.
		if se, ok := cause.(*api.StepError); ok && se.Cause != nil {
			cause = se.Cause
		}
	}
	return fmt.Sprintf("saga %s: %s (%s): %v", e.Saga, what, e.State, cause)
}

// FailureType is ErrorFailed (api.TypedError).
func (e *Error) FailureType() string { return ErrorFailed }

// Saga is one saga in a workflow. Its methods are called from the
// workflow's code (one coroutine at a time, as all workflow code).
type Saga struct {
	ctx   workflow.Context
	opts  Options
	name  string
	tx    string
	state State
	names map[string]bool
	// layers are the completed steps, in order: a sequential step alone, a
	// parallel group's completed steps together. They are compensated
	// last layer first.
	layers [][]*Step
	groups int
	err    *Error
	// decisions are operators' decisions not yet applied.
	decisions []Operator
}

// New starts a saga in the workflow ctx.
func New(ctx workflow.Context, opts Options) *Saga {
	info := workflow.GetInfo(ctx)
	s := &Saga{ctx: ctx, opts: opts, name: opts.Name, tx: transactionOf(info), names: map[string]bool{}}
	if s.name == "" {
		s.name = info.WorkflowType
	}
	ch := workflow.GetSignalChannel[Operator](ctx, SignalOperator)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			o, ok := ch.Receive(ctx)
			if !ok {
				return
			}
			s.decisions = append(s.decisions, o)
		}
	})
	workflow.UpsertAttributes(ctx, map[string]string{AttrName: s.name, AttrState: string(StateStarted)})
	s.state = StateStarted
	return s
}

// TransactionID is the saga's transaction id, which every step gets
// with its idempotency key: the saga's id (its run's workflow id), the
// same however often the transaction is sent; a run that an id reuse
// policy let start again after an earlier one is a new transaction,
// ID/2, ID/3, … (MemoTransaction).
func (s *Saga) TransactionID() string { return s.tx }

// State is the saga's state now.
func (s *Saga) State() State { return s.state }

// Err is the saga's failure once a step failed for good (an *Error), nil
// before.
func (s *Saga) Err() error {
	if s.err == nil {
		return nil
	}
	return s.err
}

func (s *Saga) setState(st State) {
	if s.state == st {
		return
	}
	s.state = st
	workflow.UpsertAttributes(s.ctx, map[string]string{AttrState: string(st)})
}

// Step is a forward step of a saga and its compensation.
type Step struct {
	s       *Saga
	name    string
	group   int
	fut     workflow.Future[json.RawMessage]
	result  json.RawMessage
	err     error
	done    bool
	comp    string // the compensation's step name
	undone  bool   // compensated, or settled by an operator
	skipped bool
}

// Step runs a forward step now and returns when it completed or failed
// for good. fn is a step function registered on the worker (func(ctx
// context.Context, in I) (O, error)) or a registered step's name; in is
// its input. When the step fails for good, the steps that completed are
// compensated before Step returns, and Err and every later Step return
// the saga's *Error.
func (s *Saga) Step(name string, fn any, in any) *Step {
	st := s.add(name, fn, in, 0)
	if s.err == nil {
		st.wait()
		if st.err == nil {
			s.layers = append(s.layers, []*Step{st})
		} else {
			s.fail(st.name, st.err)
		}
	}
	return st
}

// Group is a parallel group of steps.
type Group struct {
	s     *Saga
	n     int
	steps []*Step
}

// Step starts a step of the group; the group's steps run together and
// Parallel waits for them all.
func (g *Group) Step(name string, fn any, in any) *Step {
	st := g.s.add(name, fn, in, g.n)
	g.steps = append(g.steps, st)
	return st
}

// Parallel runs the steps fn adds to its group at the same time and waits
// for all of them. If any fails for good, the others that completed are
// compensated together, then the earlier steps in reverse order; Parallel
// returns the saga's *Error then.
func (s *Saga) Parallel(fn func(g *Group)) error {
	if s.err != nil {
		return s.err
	}
	s.groups++
	g := &Group{s: s, n: s.groups}
	fn(g)
	var failed *Step
	var done []*Step
	for _, st := range g.steps {
		if st.fut == nil {
			continue // refused when added: st.err says why
		}
		st.wait()
		if st.err == nil {
			done = append(done, st)
		} else if failed == nil {
			failed = st
		}
	}
	for _, st := range g.steps {
		if st.fut == nil && st.err != nil && failed == nil {
			failed = st
		}
	}
	if len(done) > 0 {
		s.layers = append(s.layers, done)
	}
	if failed != nil {
		s.fail(failed.name, failed.err)
		return s.err
	}
	return nil
}

// add schedules a forward step.
func (s *Saga) add(name string, fn any, in any, group int) *Step {
	st := &Step{s: s, name: name, group: group}
	if s.err != nil {
		st.err = s.err
		return st
	}
	stepName, err := stepNameOf(fn)
	switch {
	case err != nil:
	case name == "":
		err = errors.New("a saga step needs a name")
	case s.names[name]:
		err = fmt.Errorf("the saga has a step %q already: step names are unique in a saga", name)
	}
	if err != nil {
		st.err = workflow.NewError("strand.saga.Invalid", err.Error(), true)
		st.done = true
		return st
	}
	s.names[name] = true
	if s.state == StateStarted {
		s.setState(StateInProgress)
	}
	st.fut = workflow.ExecuteStepByName[json.RawMessage](s.ctx, s.stepOptions(name, PhaseForward, group), stepName, in)
	return st
}

// wait waits for the forward step's end.
func (st *Step) wait() {
	if st.done {
		return
	}
	st.result, st.err = st.fut.Get(st.s.ctx)
	st.done = true
}

// Compensate names the step's compensation: a step function (func(ctx
// context.Context, result O) (R, error)) or a registered step's name,
// which gets the forward step's result. It returns st.
func (st *Step) Compensate(fn any) *Step {
	name, err := stepNameOf(fn)
	if err != nil {
		panic("saga: compensation of " + st.name + ": " + err.Error())
	}
	st.comp = name
	return st
}

// Get waits for the forward step (a group's is waited for by Parallel)
// and decodes its result into out (a pointer; nil to ignore it). It
// returns the step's error: the saga's *Error when the step, or an
// earlier one, failed for good.
func (st *Step) Get(out any) error {
	if st.fut != nil && !st.done {
		st.wait()
	}
	if st.err != nil {
		if st.s.err != nil {
			return st.s.err
		}
		return st.err
	}
	if out == nil || len(st.result) == 0 {
		return nil
	}
	return json.Unmarshal(st.result, out)
}

// End ends the saga with the workflow's outcome: nil completes it; an
// error (the workflow's own, when no step failed) compensates the steps
// that completed. It returns the saga's *Error, or nil. Return it from
// the workflow.
func (s *Saga) End(err error) error {
	if s.err != nil {
		return s.err
	}
	if err == nil {
		s.setState(StateCompleted)
		return nil
	}
	s.fail("", err)
	return s.err
}

// fail compensates what completed after step (empty: the workflow's code)
// failed for good.
func (s *Saga) fail(step string, cause error) {
	s.err = &Error{Saga: s.name, Step: step, Cause: cause}
	var undo []*Step
	for _, l := range s.layers {
		for _, st := range l {
			if st.comp != "" {
				undo = append(undo, st)
			}
		}
	}
	if len(undo) == 0 {
		s.err.State = StateFailed
		s.setState(StateFailed)
		return
	}
	s.setState(StateCompensating)
	// A canceled workflow still compensates.
	ctx := workflow.NewDisconnectedContext(s.ctx)
	for i := len(s.layers) - 1; i >= 0; i-- {
		s.compensate(ctx, s.layers[i])
	}
	s.err.State = StateCompensated
	s.setState(StateCompensated)
}

// compensate runs a layer's compensations together, then holds the saga
// for an operator until each failed one is retried to success, marked
// done or skipped.
func (s *Saga) compensate(ctx workflow.Context, layer []*Step) {
	pending := map[string]*Step{}
	run := func(sts []*Step) {
		futs := make([]workflow.Future[json.RawMessage], len(sts))
		for i, st := range sts {
			futs[i] = workflow.ExecuteStepByName[json.RawMessage](ctx, s.stepOptions(st.name, PhaseCompensation, st.group), st.comp, st.result)
		}
		for i, st := range sts {
			if _, err := futs[i].Get(ctx); err != nil {
				pending[st.name] = st
			} else {
				st.undone = true
				delete(pending, st.name)
			}
		}
	}
	var todo []*Step
	for _, st := range layer {
		if st.comp != "" {
			todo = append(todo, st)
		}
	}
	run(todo)
	for len(pending) > 0 {
		s.setState(StateCompensationFailed)
		_ = workflow.Await(ctx, func() bool { return len(s.decisions) > 0 })
		d := s.decisions[0]
		s.decisions = s.decisions[1:]
		var sts []*Step
		for _, st := range layer {
			if pending[st.name] != nil && (d.Step == "" || d.Step == st.name) {
				sts = append(sts, st)
			}
		}
		if len(sts) == 0 {
			continue // not a failed compensation (any more): nothing to do
		}
		switch d.Action {
		case ActionRetry:
			s.setState(StateCompensating)
			run(sts)
		case ActionDone, ActionSkip:
			for _, st := range sts {
				st.undone, st.skipped = d.Action == ActionDone, d.Action == ActionSkip
				delete(pending, st.name)
			}
		}
	}
	s.setState(StateCompensating)
}

// stepOptions are a forward step's or compensation's kernel options.
func (s *Saga) stepOptions(step, phase string, group int) workflow.StepOptions {
	o := s.opts.Step
	o.Labels = map[string]string{LabelSaga: s.name, LabelStep: step, LabelPhase: phase}
	if group > 0 {
		o.Labels[LabelGroup] = strconv.Itoa(group)
	}
	o.IdempotencyKey = s.tx + "/" + step
	o.Summary = "step " + step + " of saga " + s.name
	p := s.opts.Retry
	if phase == PhaseCompensation {
		o.IdempotencyKey += "/compensation"
		o.Summary = "compensation of " + o.Summary
		p = s.opts.Compensation
		if p.Attempts == 0 {
			p.Attempts = 10
		}
	} else if p.Deadline == 0 {
		p.Deadline = 10 * time.Minute
	}
	if p.Backoff <= 0 {
		p.Backoff = time.Second
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = time.Minute
	}
	o.Retry = &api.RetryPolicy{InitialInterval: p.Backoff, BackoffCoefficient: 2, MaximumInterval: p.MaxBackoff, MaximumAttempts: p.Attempts}
	if o.Heartbeat == 0 {
		// The worker heartbeats for the step: a worker that dies is
		// noticed in seconds, not at the step's start-to-close.
		o.Heartbeat, o.AutoHeartbeat = cmp.Or(s.opts.LostWorker, DefaultLostWorker), true
	}
	if phase == PhaseForward {
		// Only a retryable failure is retried: any other, or a timeout,
		// fails the step for good; but an attempt lost with its worker
		// (its heartbeat stopped) runs again.
		o.Retry.RetryableTypes = []string{RetryableType}
		if o.AutoHeartbeat {
			o.Retry.RetryableTypes = append(o.Retry.RetryableTypes, api.TimeoutHeartbeat)
		}
		o.ScheduleToClose = p.Deadline
	}
	return o
}

// stepNameOf is the registered name of a step given as a function or a
// name.
func stepNameOf(fn any) (string, error) {
	switch f := fn.(type) {
	case string:
		if f == "" {
			return "", errors.New("empty step name")
		}
		return f, nil
	case nil:
		return "", errors.New("no step function")
	}
	t := reflect.TypeOf(fn)
	if t.Kind() != reflect.Func || t.NumIn() != 2 || t.NumOut() != 2 {
		return "", fmt.Errorf("%T is not a step function (func(context.Context, I) (O, error)) or a step's name", fn)
	}
	return sdk.FuncName(fn), nil
}
