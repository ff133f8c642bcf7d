package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Client reads sagas and acts on them, in one namespace, over the public
// API (an engine or a remote server).
type Client struct {
	svc       api.Service
	namespace string
}

// NewClient returns a client of the sagas of namespace ("" is the default
// namespace).
func NewClient(svc api.Service, namespace string) *Client {
	return &Client{svc: svc, namespace: namespace}
}

// Get reads a saga's record: its steps, tryouts and operator decisions.
func (c *Client) Get(ctx context.Context, id string) (*Record, error) {
	return ReadRecord(ctx, c.svc, c.namespace, id, "")
}

// Filter selects sagas; empty fields match all.
type Filter struct {
	Name  string `json:"name,omitempty"`
	State State  `json:"state,omitempty"`
	// StartedAfter and StartedBefore bound when the saga started.
	StartedAfter  time.Time `json:"started_after,omitzero"`
	StartedBefore time.Time `json:"started_before,omitzero"`
}

// Request is the list request of f (of every saga, by its attribute).
func (f Filter) Request(namespace string) (api.ListRequest, error) {
	req := api.ListRequest{Namespace: namespace, StartedAfter: f.StartedAfter, StartedBefore: f.StartedBefore, Attributes: map[string]string{}}
	if f.Name != "" {
		req.Attributes[AttrName] = f.Name
	}
	switch f.State {
	case "":
	case StateTerminated:
		req.Statuses = []store.RunStatus{store.StatusTerminated}
	case StateDisabled:
		// A disabled saga is a paused run, which keeps its state's
		// attribute: List picks the paused ones among the running.
		req.Statuses = []store.RunStatus{store.StatusRunning}
	default:
		if !slices.Contains(States, f.State) {
			return req, api.InvalidArgument("state", "%q: want one of %v", f.State, States)
		}
		req.Attributes[AttrState] = string(f.State)
	}
	if len(req.Attributes) == 0 {
		// Every saga has its name attribute: the kernel lists by equality,
		// so without a name, the list is of every run and sagas are picked
		// by their attribute below.
		req.Attributes = nil
	}
	return req, nil
}

// List lists sagas, newest first: the runs (of any workflow type) that
// carry a saga's attributes. Lists lag the sagas by about a second. The
// disabled sagas are the paused runs among the running sagas, each read
// (so a page of them may hold fewer than pageSize; its token goes on);
// they list with state disabled.
func (c *Client) List(ctx context.Context, f Filter, pageSize int, token []byte) (api.ListResponse, error) {
	req, err := f.Request(c.namespace)
	if err != nil {
		return api.ListResponse{}, err
	}
	req.PageSize, req.PageToken = pageSize, token
	page, err := c.svc.ListWorkflows(ctx, req)
	if err != nil {
		return page, err
	}
	if req.Attributes == nil {
		page.Runs = slices.DeleteFunc(page.Runs, func(r store.VisibilityRecord) bool { return r.Attributes[AttrName] == "" })
	}
	if f.State == StateDisabled {
		kept := page.Runs[:0]
		for _, r := range page.Runs {
			d, err := c.svc.DescribeWorkflow(ctx, api.RunRef{Namespace: c.namespace, WorkflowID: r.WorkflowID, RunID: r.RunID})
			if errors.Is(err, api.ErrNotFound) {
				continue // purged since it was listed
			}
			if err != nil {
				return api.ListResponse{}, fmt.Errorf("saga %s: %w", r.WorkflowID, err)
			}
			if d.Paused != nil && d.Status == store.StatusRunning {
				r.Attributes = maps.Clone(r.Attributes)
				r.Attributes[AttrState] = string(StateDisabled)
				kept = append(kept, r)
			}
		}
		page.Runs = kept
	}
	return page, nil
}

// Resolve sends an operator's decision to a saga whose compensation of
// o.Step failed (every failed one when o.Step is empty): retry it, mark it
// done by hand (with a note) or skip it. A saga not waiting on that
// step's compensation is api.ErrFailedPrecondition, and nothing is sent.
func (c *Client) Resolve(ctx context.Context, id string, o Operator) error {
	switch o.Action {
	case ActionRetry, ActionDone, ActionSkip:
	default:
		return api.InvalidArgument("action", "%q: want retry, done or skip", o.Action)
	}
	rec, err := c.Get(ctx, id)
	if err != nil {
		return err
	}
	if o.Step != "" {
		i := slices.IndexFunc(rec.Steps, func(s StepRecord) bool { return s.Name == o.Step })
		if i < 0 {
			return api.InvalidArgument("step", "saga %s has no step %q", id, o.Step)
		}
		if rec.State != StateCompensationFailed || rec.Steps[i].Compensation.State != PhaseFailed {
			return fmt.Errorf("%w: saga %s is %s and the compensation of %s is %s: only a failed compensation of a saga in compensation_failed waits for a decision",
				api.ErrFailedPrecondition, id, rec.State, o.Step, rec.Steps[i].Compensation.State)
		}
	} else if rec.State != StateCompensationFailed {
		return fmt.Errorf("%w: saga %s is %s: only a saga in compensation_failed waits for a decision", api.ErrFailedPrecondition, id, rec.State)
	}
	in, _ := json.Marshal(o)
	return c.svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: api.RunRef{Namespace: c.namespace, WorkflowID: id, RunID: rec.RunID},
		Name: SignalOperator, Input: in, RequestID: uuid.NewString(), Identity: o.Identity})
}

// Terminate ends a saga where it is, without compensating.
func (c *Client) Terminate(ctx context.Context, id, reason, identity string) error {
	return c.svc.TerminateWorkflow(ctx, api.TerminateRequest{RunRef: api.RunRef{Namespace: c.namespace, WorkflowID: id},
		Reason: reason, Identity: identity, RequestID: uuid.NewString()})
}

// Disable pauses a saga's run (nothing of it runs until Enable); Enable
// resumes it. The service must be an api.Operator (the engine, a server).
func (c *Client) Disable(ctx context.Context, id, reason, identity string) error {
	op, err := c.operator()
	if err != nil {
		return err
	}
	return op.PauseWorkflow(ctx, api.PauseRequest{RunRef: api.RunRef{Namespace: c.namespace, WorkflowID: id}, Reason: reason, Identity: identity})
}

// Enable resumes a disabled saga.
func (c *Client) Enable(ctx context.Context, id, reason, identity string) error {
	op, err := c.operator()
	if err != nil {
		return err
	}
	return op.ResumeWorkflow(ctx, api.PauseRequest{RunRef: api.RunRef{Namespace: c.namespace, WorkflowID: id}, Reason: reason, Identity: identity})
}

func (c *Client) operator() (api.Operator, error) {
	op, ok := c.svc.(api.Operator)
	if !ok {
		return nil, fmt.Errorf("%w: %T cannot pause runs", api.ErrFailedPrecondition, c.svc)
	}
	return op, nil
}

// Batch acts on every saga f selects, at the batch's rate: retry, done or
// skip decides every failed compensation of the sagas in
// compensation_failed (f's state is that); terminate ends them where they
// are. It returns the kernel's batch, which the batches API follows.
func (c *Client) Batch(ctx context.Context, b api.Batches, f Filter, action, note, identity string) (api.BatchRef, error) {
	req := api.StartBatchRequest{Namespace: c.namespace, Reason: note, Identity: identity}
	switch action {
	case ActionRetry, ActionDone, ActionSkip:
		if f.State != "" && f.State != StateCompensationFailed {
			return api.BatchRef{}, api.InvalidArgument("state", "a %s decides failed compensations: only sagas in compensation_failed wait for one, not %s", action, f.State)
		}
		f.State = StateCompensationFailed
		in, _ := json.Marshal(Operator{Action: action, Note: note, Identity: identity})
		req.Operation, req.SignalName, req.SignalInput = api.BatchSignal, SignalOperator, in
	case "terminate":
		req.Operation = api.BatchTerminate
	default:
		return api.BatchRef{}, api.InvalidArgument("action", "%q: want retry, done, skip or terminate", action)
	}
	if f.State == StateDisabled {
		return api.BatchRef{}, api.InvalidArgument("state", "a batch acts on the sagas the kernel lists by name and state, and a disabled saga keeps the state it was disabled in: "+
			"list the disabled ones (strand saga list --state disabled) and enable or terminate each")
	}
	filter, err := f.Request(c.namespace)
	if err != nil {
		return api.BatchRef{}, err
	}
	if filter.Attributes == nil {
		return api.BatchRef{}, api.InvalidArgument("filter", "a batch needs a saga name or state: it acts on the runs the kernel lists")
	}
	req.Filter = filter
	return b.StartBatch(ctx, req)
}
