// Package client starts workflows and talks to running ones: signal,
// cancel, terminate, query, describe, wait for results, list and read
// history. It works against any api.Service: the embedded engine, or (with
// the server) a remote one.
package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/sdk"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/workflow"
)

// Options configure a client.
type Options struct {
	// Namespace is used by every call (default "default").
	Namespace string
	// Identity names the caller in history.
	Identity string
}

// Client is a handle on a Strand service.
type Client struct {
	svc  api.Service
	opts Options

	msgOnce sync.Once
	msgs    api.Messages
}

// New returns a client of svc.
func New(svc api.Service, opts Options) *Client {
	if opts.Namespace == "" {
		opts.Namespace = api.DefaultNamespace
	}
	return &Client{svc: svc, opts: opts}
}

// Service returns the service the client talks to.
func (c *Client) Service() api.Service { return c.svc }

// IDReusePolicy says whether a workflow id whose last run closed may start
// again.
type IDReusePolicy = api.IDReusePolicy

// Id reuse policies.
const (
	AllowDuplicate           = api.AllowDuplicate
	AllowDuplicateFailedOnly = api.AllowDuplicateFailedOnly
	RejectDuplicate          = api.RejectDuplicate
	TerminateIfRunning       = api.TerminateIfRunning
)

// StartOptions say how to start a workflow.
type StartOptions struct {
	// ID is the workflow id; a random one when empty.
	ID    string
	Queue string
	// Priority runs from 1 (highest) to 5 (lowest); 0 is normal.
	Priority int8
	// RequestID makes the start idempotent: a start (or signal-with-start)
	// sent again with the same id returns the run the first one started,
	// and signals it no second time. Empty means a random id made for this
	// call, which lets the service retry the call after a transient failure
	// (package remote does) but not a caller that calls again: to retry
	// after an error yourself, set an id and send it each time.
	RequestID  string
	IDReuse    IDReusePolicy
	StartDelay time.Duration
	RunTimeout time.Duration
	// Memo holds values shown with the run (describe, the console), each
	// encoded as JSON.
	Memo        map[string]any
	BusinessKey string
	Attributes  map[string]string
}

func (c *Client) startRequest(typ string, in any, o StartOptions) (api.StartRequest, error) {
	input, err := sdk.Encode(in)
	if err != nil {
		return api.StartRequest{}, err
	}
	var memo map[string]api.Value
	for k, v := range o.Memo {
		b, err := sdk.Encode(v)
		if err != nil {
			return api.StartRequest{}, fmt.Errorf("memo %q: %w", k, err)
		}
		if memo == nil {
			memo = make(map[string]api.Value, len(o.Memo))
		}
		memo[k] = b
	}
	if o.ID == "" {
		o.ID = uuid.NewString()
	}
	if o.RequestID == "" {
		o.RequestID = uuid.NewString()
	}
	return api.StartRequest{
		Namespace: c.opts.Namespace, WorkflowID: o.ID, WorkflowType: typ, Input: input, Queue: o.Queue, Priority: o.Priority,
		RequestID: o.RequestID, IDReuse: o.IDReuse, StartDelay: o.StartDelay, RunTimeout: o.RunTimeout, Memo: memo,
		BusinessKey: o.BusinessKey, Attributes: o.Attributes, Identity: c.opts.Identity,
	}, nil
}

// Run is a started run whose result has type O.
type Run[O any] struct {
	c          *Client
	WorkflowID string
	RunID      string
}

// Start starts workflow wf with input in.
func Start[I, O any](ctx context.Context, c *Client, wf func(workflow.Context, I) (O, error), in I, o StartOptions) (Run[O], error) {
	return StartByName[O](ctx, c, sdk.FuncName(wf), in, o)
}

// StartByName starts a workflow by its registered name.
func StartByName[O any](ctx context.Context, c *Client, workflowType string, in any, o StartOptions) (Run[O], error) {
	req, err := c.startRequest(workflowType, in, o)
	if err != nil {
		return Run[O]{}, err
	}
	resp, err := c.svc.StartWorkflow(ctx, req)
	if err != nil {
		return Run[O]{}, err
	}
	return Run[O]{c: c, WorkflowID: req.WorkflowID, RunID: resp.RunID}, nil
}

// SignalWithStart signals a workflow, starting it first when it is not
// running.
func SignalWithStart[O any](ctx context.Context, c *Client, workflowType string, in any, o StartOptions, signal string, arg any) (Run[O], error) {
	req, err := c.startRequest(workflowType, in, o)
	if err != nil {
		return Run[O]{}, err
	}
	sig, err := sdk.Encode(arg)
	if err != nil {
		return Run[O]{}, err
	}
	resp, err := c.svc.SignalWithStart(ctx, api.SignalWithStartRequest{Start: req, SignalName: signal, SignalInput: sig})
	if err != nil {
		return Run[O]{}, err
	}
	return Run[O]{c: c, WorkflowID: req.WorkflowID, RunID: resp.RunID}, nil
}

// GetRun returns a handle on a run (the current one when runID is empty).
func GetRun[O any](c *Client, workflowID, runID string) Run[O] {
	return Run[O]{c: c, WorkflowID: workflowID, RunID: runID}
}

// Get waits for the run (and the runs it continued as) to close and returns
// its result, or the error it closed with: errors.Is matches
// api.ErrCanceled, api.ErrTerminated, api.ErrTimedOut, api.ErrStepFailed
// and the rest.
func (r Run[O]) Get(ctx context.Context) (O, error) {
	var out O
	res, err := r.c.Result(ctx, r.WorkflowID, r.RunID)
	if err != nil {
		return out, err
	}
	if res.Failure != nil {
		return out, res.Failure.Err()
	}
	if err := sdk.Decode(res.Output, &out); err != nil {
		return out, err
	}
	return out, nil
}

// Result waits for a run to close, following continue-as-new.
func (c *Client) Result(ctx context.Context, workflowID, runID string) (api.Result, error) {
	return c.svc.WaitResult(ctx, api.ResultRequest{RunRef: c.ref(workflowID, runID), FollowRuns: true})
}

func (c *Client) ref(workflowID, runID string) api.RunRef {
	return api.RunRef{Namespace: c.opts.Namespace, WorkflowID: workflowID, RunID: runID}
}

// CallOption sets something about one call of Signal, Cancel or
// Terminate.
type CallOption func(*callOptions)

type callOptions struct {
	requestID string
}

// WithRequestID makes a call idempotent under id: the call sent again with
// the same id (a retry after an error whose outcome is unknown) is applied
// once, and answers as the first did, for 24 hours. Without it each call
// gets a random id of its own, which the service's retries of that call
// keep (package remote retries transient failures), but a caller that
// calls again sends a new request.
func WithRequestID(id string) CallOption {
	return func(o *callOptions) { o.requestID = id }
}

func requestID(opts []CallOption) string {
	var o callOptions
	for _, f := range opts {
		f(&o)
	}
	if o.requestID == "" {
		return uuid.NewString()
	}
	return o.requestID
}

// Signal sends a signal to a run (the current one when runID is empty).
func (c *Client) Signal(ctx context.Context, workflowID, runID, name string, arg any, opts ...CallOption) error {
	input, err := sdk.Encode(arg)
	if err != nil {
		return err
	}
	return c.svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: c.ref(workflowID, runID), Name: name, Input: input,
		RequestID: requestID(opts), Identity: c.opts.Identity})
}

// Cancel asks a run to cancel.
func (c *Client) Cancel(ctx context.Context, workflowID, runID, reason string, opts ...CallOption) error {
	return c.svc.CancelWorkflow(ctx, api.CancelRequest{RunRef: c.ref(workflowID, runID), Reason: reason,
		RequestID: requestID(opts), Identity: c.opts.Identity})
}

// Terminate closes a run at once. A terminate sent again with the request
// id of one that closed the run answers nil; another one answers an error
// matching api.ErrRunClosed.
func (c *Client) Terminate(ctx context.Context, workflowID, runID, reason string, opts ...CallOption) error {
	return c.svc.TerminateWorkflow(ctx, api.TerminateRequest{RunRef: c.ref(workflowID, runID), Reason: reason,
		RequestID: requestID(opts), Identity: c.opts.Identity})
}

// Query asks a run's query handler name for a value.
func Query[O any](ctx context.Context, c *Client, workflowID, runID, name string, arg any) (O, error) {
	var out O
	input, err := sdk.Encode(arg)
	if err != nil {
		return out, err
	}
	res, err := c.svc.QueryWorkflow(ctx, api.QueryRequest{RunRef: c.ref(workflowID, runID), Name: name, Input: input})
	if err != nil {
		return out, err
	}
	err = sdk.Decode(res, &out)
	return out, err
}

// Describe returns a run's state with its pending steps, timers and children.
func (c *Client) Describe(ctx context.Context, workflowID, runID string) (api.Description, error) {
	return c.svc.DescribeWorkflow(ctx, c.ref(workflowID, runID))
}

// List returns a page of runs matching req (its namespace defaults to the client's).
func (c *Client) List(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	if req.Namespace == "" {
		req.Namespace = c.opts.Namespace
	}
	return c.svc.ListWorkflows(ctx, req)
}

// Count counts the runs matching req.
func (c *Client) Count(ctx context.Context, req api.ListRequest) (int64, error) {
	if req.Namespace == "" {
		req.Namespace = c.opts.Namespace
	}
	return c.svc.CountWorkflows(ctx, req)
}

// History returns a page of a run's history; pass the page's NextPageToken
// to get the next one.
func (c *Client) History(ctx context.Context, workflowID, runID string, pageToken []byte) (api.HistoryPage, error) {
	return c.svc.GetHistory(ctx, api.HistoryRequest{RunRef: c.ref(workflowID, runID), PageToken: pageToken, Resolve: true})
}

// AllHistory reads a run's whole history.
func (c *Client) AllHistory(ctx context.Context, workflowID, runID string) ([]api.Event, error) {
	var all []api.Event
	var token []byte
	for {
		page, err := c.History(ctx, workflowID, runID, token)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Events...)
		if token = page.NextPageToken; len(token) == 0 {
			return all, nil
		}
	}
}

// Status is a run's status (re-exported for callers that switch on it).
type Status = store.RunStatus

// IsAlreadyStarted reports whether err says the workflow id is taken.
func IsAlreadyStarted(err error) bool { return errors.Is(err, api.ErrAlreadyStarted) }

// MessageOptions say how to send a message.
type MessageOptions struct {
	// TTL is how long the message is kept while no run waits for it
	// (api.DefaultMessageTTL when zero).
	TTL time.Duration
	// Broadcast delivers it to every run that waits within its TTL.
	Broadcast bool
	// Priority runs from 1 (highest) to 5 (lowest); 0 is normal.
	Priority int8
	// ID identifies the message, so that sending it again is harmless; a
	// random one when empty.
	ID string
}

// SendMessage posts a message of name with correlation key key: a run
// waiting for them (workflow.Receive) gets it, or it is kept until one
// waits, or it starts a run under the namespace's rule for name. It
// returns once the message's mailbox has it. The service is asked
// directly when it takes messages (a remote one does); over an engine,
// package message carries it.
func (c *Client) SendMessage(ctx context.Context, name, key string, payload any, opts MessageOptions) (api.SendMessageResponse, error) {
	raw, err := sdk.Encode(payload)
	if err != nil {
		return api.SendMessageResponse{}, err
	}
	if opts.ID == "" {
		opts.ID = uuid.NewString()
	}
	return c.messages().SendMessage(ctx, api.SendMessageRequest{Namespace: c.opts.Namespace, Name: name, CorrelationKey: key, Payload: raw,
		TTL: opts.TTL, Broadcast: opts.Broadcast, Priority: opts.Priority, MessageID: opts.ID, Identity: c.opts.Identity})
}

// messages is the service's messages, or package message's over it.
func (c *Client) messages() api.Messages {
	if m, ok := c.svc.(api.Messages); ok {
		return m
	}
	c.msgOnce.Do(func() { c.msgs = message.NewService(c.svc) })
	return c.msgs
}
