package statemachine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Service is what a state machine worker and the client need of Strand:
// runs and the stored definitions.
type Service = api.FrontEndService

// Context is what a state method gets: the step's context, and the
// instance's variables, keys, signal and children.
type Context interface {
	context.Context
	// Instance is the instance's id (its workflow id).
	Instance() string
	// Version is the instance's definition version: its states and
	// permitted moves are that version's, whatever the code registered
	// now. A move that version does not permit fails the execution.
	Version() int32
	State() string
	// RetryNo counts the failed runs of this state before this one.
	RetryNo() int
	BusinessKey() string
	ExternalID() string
	// Signal is the instance's signal, if one is set.
	Signal() (int, bool)
	// Var returns a state variable; SetVar sets one for this action.
	Var(name string) (string, bool)
	SetVar(name, value string)
	// StartChild asks for a child instance, started once the method
	// returned; its end wakes this instance if it waits.
	StartChild(c NewChild)
	// Children reads the state of the instances this one created.
	Children() ([]*Instance, error)
}

// GetVar reads a variable holding JSON into a T.
func GetVar[T any](ctx Context, name string) (T, bool, error) {
	var v T
	s, ok := ctx.Var(name)
	if !ok {
		return v, false, nil
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return v, true, fmt.Errorf("statemachine: variable %s: %w", name, err)
	}
	return v, true, nil
}

// PutVar writes v as a variable holding its JSON.
func PutVar(ctx Context, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("statemachine: variable %s: %w", name, err)
	}
	ctx.SetVar(name, string(b))
	return nil
}

// Register registers the interpreter and the definitions' methods on w (a
// worker of the instances' executor group, its queue), and stores each
// definition: a new version when it changed. Instances keep the version
// they started with. Code whose definition equals a stored version's
// (rolled back, say) reuses that version rather than store a new one; new
// instances get the version registered last.
func Register(ctx context.Context, w *worker.Worker, svc Service, defs ...*Definition) error {
	worker.RegisterWorkflowNamed(w, WorkflowType, Run)
	steps := &machineSteps{svc: svc, identity: w.Identity()}
	worker.RegisterStepNamed(w, stepResolve, steps.resolve)
	for _, d := range defs {
		if err := d.Check(); err != nil {
			return err
		}
		if _, err := storeDefinition(ctx, svc, d); err != nil {
			return err
		}
		worker.RegisterStepNamed(w, stepExecPrefix+d.Type, steps.exec(d))
	}
	return nil
}

// DefinitionType is the stored definition type of a state machine type.
func DefinitionType(typ string) string { return "sm/" + typ }

func hostID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

type machineSteps struct {
	svc Service
	// identity is the worker's, the executor of its actions.
	identity string
}

func (s *machineSteps) resolve(ctx context.Context, in Input) (Resolved, error) {
	d, err := getDefinition(ctx, s.svc, in.Type, in.Version)
	if errors.Is(err, api.ErrNotFound) {
		return Resolved{}, workflow.NewError("strand.sm.invalid", fmt.Sprintf("no definition %s version %d", in.Type, in.Version), true)
	}
	if err != nil {
		return Resolved{}, err
	}
	return Resolved{Version: d.Version, Body: d.Body}, nil
}

// exec runs one state's method of definition d.
func (s *machineSteps) exec(d *Definition) func(ctx context.Context, req ExecRequest) (ExecResult, error) {
	return func(ctx context.Context, req ExecRequest) (res ExecResult, err error) {
		info := step.GetInfo(ctx)
		res.Start, res.Executor, res.Recovered = time.Now(), s.identity, info.Redelivered
		m, ok := d.methods[req.State]
		if !ok {
			res.End = time.Now()
			res.Failure = fmt.Sprintf("state %q of %s has no method in the code of worker %s", req.State, d.Type, s.identity)
			return res, nil
		}
		c := &methodContext{Context: ctx, req: req, svc: s.svc, set: map[string]string{}}
		stop := step.HeartbeatEvery(ctx, heartbeatEvery, nil)
		// A method's error or panic is a failed execution, reported with
		// who ran it and when: the result says so (the step itself ends
		// well), and the interpreter retries it by the state's retries.
		defer func() {
			stop()
			if p := recover(); p != nil {
				res = ExecResult{Start: res.Start, Executor: res.Executor, Recovered: res.Recovered,
					Failure: fmt.Sprintf("state %s panicked: %v", req.State, p)}
			}
			res.End = time.Now()
		}()
		next, merr := m(c)
		if merr != nil {
			if ctx.Err() != nil {
				// Its time ran out or its worker stopped: the kernel's
				// timeout or the worker's stop says so.
				return res, merr
			}
			res.Failure = merr.Error()
			return res, nil
		}
		res.Next, res.Set, res.Children = next, c.set, c.children
		if len(res.Set) == 0 {
			res.Set = nil
		}
		return res, nil
	}
}

type methodContext struct {
	context.Context
	req      ExecRequest
	svc      Service
	set      map[string]string
	children []NewChild
}

func (c *methodContext) Instance() string    { return c.req.Instance }
func (c *methodContext) Version() int32      { return c.req.Version }
func (c *methodContext) State() string       { return c.req.State }
func (c *methodContext) RetryNo() int        { return c.req.RetryNo }
func (c *methodContext) BusinessKey() string { return c.req.BusinessKey }
func (c *methodContext) ExternalID() string  { return c.req.ExternalID }
func (c *methodContext) Signal() (int, bool) {
	if c.req.Signal == nil {
		return 0, false
	}
	return *c.req.Signal, true
}
func (c *methodContext) Var(name string) (string, bool) {
	if v, ok := c.set[name]; ok {
		return v, true
	}
	v, ok := c.req.Vars[name]
	return v, ok
}
func (c *methodContext) SetVar(name, value string) { c.set[name] = value }
func (c *methodContext) StartChild(n NewChild)     { c.children = append(c.children, n) }
func (c *methodContext) Children() ([]*Instance, error) {
	ns := step.GetInfo(c).Run.Namespace
	var out []*Instance
	for _, id := range c.req.Children {
		inst, err := ReadInstance(c, c.svc, ns, id)
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	return out, nil
}

// ReadInstance returns an instance by id: while it runs, as its run's
// memo and history keep it (no worker needed); its output once it
// finished.
func ReadInstance(ctx context.Context, svc api.Service, namespace, id string) (*Instance, error) {
	d, err := svc.DescribeWorkflow(ctx, api.RunRef{Namespace: namespace, WorkflowID: id})
	if err == nil && d.WorkflowType != WorkflowType {
		err = fmt.Errorf("%w: %s is a %s, not a state machine instance", api.ErrNotFound, id, d.WorkflowType)
	}
	if err != nil {
		return nil, err
	}
	ref := api.RunRef{Namespace: namespace, WorkflowID: id, RunID: d.RunID}
	var raw []byte
	if d.Status == store.StatusRunning {
		if inst, ok, err := readMemo(ctx, svc, d); ok {
			return inst, err
		}
		// A run started before runs kept their instance in the memo.
		raw, err = svc.QueryWorkflow(ctx, api.QueryRequest{RunRef: ref, Name: QueryInstance})
	} else {
		var r api.Result
		r, err = svc.WaitResult(ctx, api.ResultRequest{RunRef: ref})
		raw = r.Output
		if r.Failure != nil {
			return nil, fmt.Errorf("%w: instance %s ended %s without a state: %s", api.ErrFailedPrecondition, id, r.Status, r.Failure.Message)
		}
	}
	if err != nil {
		return nil, err
	}
	var inst Instance
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, fmt.Errorf("statemachine: instance %s: %w", id, err)
	}
	return &inst, nil
}
