package saga

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/workflow"
)

// The interpreter of defined sagas, its queues and its steps. A run of
// WorkflowType on Queue is one saga of a Definition; it reads its
// definition's version in the step strand.saga.resolve (on Queue), and
// makes each call as a step StepHTTP, and each compensation as a step
// StepHTTPCompensate, on the queue of the definition's worker group,
// GroupQueue(group). strand worker polls them all.
const (
	// WorkflowType is the type of a defined saga's run.
	WorkflowType = "strand.Saga"
	// Queue is the task queue of the interpreter and its resolve step.
	Queue = "strand.saga"
	// StepHTTP makes a forward call: its input is an HTTPCall, its result
	// an HTTPResult (the answer, and the compensation rendered with it).
	StepHTTP = "strand.saga.http"
	// StepHTTPCompensate makes a compensating call: its input is the
	// forward call's HTTPResult, as the saga model gives a compensation.
	StepHTTPCompensate = "strand.saga.http.compensate"
	// DefaultGroup is the worker group of definitions that name none.
	DefaultGroup = "default"

	stepResolve = "strand.saga.resolve"
)

// GroupQueue is the task queue of the HTTP steps of worker group g: what
// strand worker --group g polls for sagas.
func GroupQueue(g string) string { return "saga." + g }

// AttrVersion is the attribute of a defined saga's run that says which
// version of its definition it runs.
const AttrVersion = "strand.saga.version"

// Failure types of defined sagas.
const (
	// ErrorInvalid: the definition or the input could not be run (no such
	// definition, an input that is not JSON, a compensation that could not
	// be rendered with the forward call's answer).
	ErrorInvalid = "strand.saga.invalid"
	// ErrorHTTP: a call got an answer that fails it for good.
	ErrorHTTP = "strand.saga.http"
)

// attemptMargin is how much longer than a call's timeout its step may
// run: the call gives up first, so that a late answer is a connection
// error (retryable) rather than the kernel's timeout (final).
const attemptMargin = 10 * time.Second

// RunInput starts a defined saga: the run of WorkflowType that
// interprets version Version of definition Name (0: the latest when it
// starts) with Input, a JSON value ({} when empty).
type RunInput struct {
	Name    string          `json:"name"`
	Version int32           `json:"version,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
}

// Resolved is what the resolve step returns: the definition's text at
// the version the run pins.
type Resolved struct {
	Version int32  `json:"version"`
	Body    string `json:"body"`
}

// Outcome is a completed defined saga's output: the answer of each step.
type Outcome struct {
	Saga          string            `json:"saga"`
	Version       int32             `json:"version"`
	TransactionID string            `json:"transaction_id"`
	Steps         map[string]Answer `json:"steps"`
}

var resolveOptions = workflow.StepOptions{Queue: Queue, StartToClose: time.Minute,
	Retry: &api.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}}

// Interpret is the interpreter: the workflow of a defined saga. It reads
// the definition's version, then runs its steps as a Saga: each call
// rendered from the input and the earlier answers, each compensation
// given the forward call's result (which holds it rendered). A step that
// cannot be rendered fails the saga like the workflow's own error: the
// completed steps are compensated.
func Interpret(ctx workflow.Context, in RunInput) (*Outcome, error) {
	res, err := workflow.ExecuteStepByName[Resolved](ctx, resolveOptions, stepResolve, in).Get(ctx)
	if err != nil {
		return nil, err
	}
	def, err := Parse([]byte(res.Body))
	if err != nil {
		return nil, workflow.NewError(ErrorInvalid, fmt.Sprintf("saga %s version %d: %v", in.Name, res.Version, err), true)
	}
	input, err := inputValue(in.Input)
	if err != nil {
		return nil, workflow.NewError(ErrorInvalid, err.Error(), true)
	}
	workflow.UpsertAttributes(ctx, map[string]string{AttrVersion: strconv.Itoa(int(res.Version))})
	timeout := cmp.Or(def.Options.Timeout.Std(), DefaultTimeout)
	s := New(ctx, Options{Name: def.Name,
		Step:         workflow.StepOptions{Queue: GroupQueue(cmp.Or(def.Options.WorkerGroup, DefaultGroup)), StartToClose: timeout + attemptMargin},
		Retry:        def.Options.Retry.Policy(),
		Compensation: def.Options.CompensationRetry.Policy()})
	ip := &interpreter{def: def, input: input, answers: map[string]*Answer{}, tx: s.TransactionID(), timeout: timeout}
	out := &Outcome{Saga: def.Name, Version: res.Version, TransactionID: s.TransactionID(), Steps: map[string]Answer{}}
	keep := func(name string, st *Step) {
		var r HTTPResult
		if st.Get(&r) == nil {
			ip.answers[name] = &r.Answer
			out.Steps[name] = r.Answer
		}
	}
	for _, e := range def.Steps {
		if e.Parallel == nil {
			call, err := ip.call(e)
			if err != nil {
				return nil, s.End(err)
			}
			st := s.Step(e.Name, StepHTTP, call)
			if e.Compensate != nil {
				st.Compensate(StepHTTPCompensate)
			}
			keep(e.Name, st)
		} else {
			// Every call of the group is rendered before any starts.
			calls := make([]*HTTPCall, len(e.Parallel))
			for i, m := range e.Parallel {
				if calls[i], err = ip.call(m); err != nil {
					return nil, s.End(err)
				}
			}
			sts := make([]*Step, len(e.Parallel))
			_ = s.Parallel(func(g *Group) {
				for i, m := range e.Parallel {
					sts[i] = g.Step(m.Name, StepHTTP, calls[i])
					if m.Compensate != nil {
						sts[i].Compensate(StepHTTPCompensate)
					}
				}
			})
			for i, m := range e.Parallel {
				keep(m.Name, sts[i])
			}
		}
		if s.Err() != nil {
			break
		}
	}
	if err := s.End(nil); err != nil {
		return nil, err
	}
	return out, nil
}

// inputValue decodes a saga's input ({} when empty).
func inputValue(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("the input is not JSON: %w", err)
	}
	return v, nil
}

// interpreter is what a defined saga's run knows while its steps run.
type interpreter struct {
	def     *Definition
	input   any
	answers map[string]*Answer
	tx      string
	timeout time.Duration
}

// resolve is a reference's value in the workflow: the input, or an
// earlier step's answer.
func (ip *interpreter) resolve(r *ref) (any, error) {
	var v any
	var err error
	switch r.root {
	case refInput:
		v, err = lookup(ip.input, r.path, "input")
	case refSteps:
		a := ip.answers[r.step]
		if a == nil {
			return nil, fmt.Errorf("${%s}: step %s has no answer", r.raw, r.step)
		}
		v, err = answerValue(a, r.path, "steps."+r.step)
	default:
		return nil, fmt.Errorf("${%s}: only a compensation reads ${result…}", r.raw)
	}
	if err != nil {
		return nil, fmt.Errorf("${%s}: %w", r.raw, err)
	}
	return v, nil
}

// call renders a step's forward call, and the values its compensation
// reads of the input and earlier answers.
func (ip *interpreter) call(s StepSpec) (*HTTPCall, error) {
	req, err := renderCall(s.Call, ip.resolve)
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", s.Name, err)
	}
	c := &HTTPCall{Saga: ip.def.Name, Step: s.Name, Transaction: ip.tx, Request: req, Timeout: Duration(ip.timeout),
		Success: s.Call.Success, Retryable: s.Call.Retryable}
	if s.Compensate == nil {
		return c, nil
	}
	refs, err := callRefs(s.Compensate)
	if err != nil {
		return nil, fmt.Errorf("step %s: compensate: %w", s.Name, err)
	}
	pc := &PendingCall{Call: *s.Compensate, Values: map[string]json.RawMessage{}}
	for _, r := range refs {
		if r.root == refResult {
			continue
		}
		v, err := ip.resolve(r)
		if err != nil {
			return nil, fmt.Errorf("step %s: compensate: %w", s.Name, err)
		}
		if pc.Values[r.raw], err = marshal(v); err != nil {
			return nil, fmt.Errorf("step %s: compensate: ${%s}: %w", s.Name, r.raw, err)
		}
	}
	c.Compensate = pc
	return c, nil
}
