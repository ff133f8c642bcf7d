package saga

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/internal/sdk"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/workflow"
)

// Reuse says whether a saga's id (its workflow id: an order id, the
// business's key) may run again once a saga of it ended. A saga that
// runs is never started twice.
type Reuse string

// Id reuse policies.
const (
	// ReuseNever starts a saga of an id once (the default): sending the
	// same id again is refused with an *AlreadyRanError.
	ReuseNever Reuse = "never"
	// ReuseFailed runs an id again when its last saga did not complete
	// (it failed, was compensated or terminated).
	ReuseFailed Reuse = "failed"
	// ReuseAlways runs an id again after any saga of it ended.
	ReuseAlways Reuse = "always"
)

// Reuses lists the id reuse policies, for flags and docs.
var Reuses = []Reuse{ReuseNever, ReuseFailed, ReuseAlways}

// MemoTransaction is the memo key of a saga's run that holds its
// transaction id (a JSON string), which Start and Catalog.Run set: the
// saga's id on its first run, ID/2, ID/3, … on the runs an id reuse
// policy lets start again. A run without it (started otherwise) has its
// workflow id as its transaction.
const MemoTransaction = "strand.saga.transaction"

// transactionOf is the transaction id of the run a workflow code runs in.
func transactionOf(info workflow.Info) string {
	var tx string
	if v, ok := info.Memo[MemoTransaction]; ok && json.Unmarshal(v, &tx) == nil && tx != "" {
		return tx
	}
	return info.WorkflowID
}

// AlreadyRanError is a start refused because the saga's id has a saga
// already: one that runs, or one that ended when the id reuse policy does
// not let it run again. It matches api.ErrAlreadyStarted.
type AlreadyRanError struct {
	// ID is the saga's id; Name its saga's name.
	ID   string
	Name string
	// State is the state of the saga the id has; RunID its run.
	State State
	RunID string
	// Running says that saga has not ended.
	Running bool
	// Reuse is the policy the start asked for.
	Reuse Reuse
}

func (e *AlreadyRanError) Error() string {
	what := "saga " + e.ID
	if e.Name != "" {
		what += " (" + e.Name + ")"
	}
	if e.Running {
		return fmt.Sprintf("%s is %s: it runs already, and an id runs one saga at a time", what, e.State)
	}
	again := ReuseAlways
	if e.Reuse != ReuseFailed && e.State != StateCompleted {
		again = ReuseFailed
	}
	return fmt.Sprintf("%s ran already and is %s: a saga's id is its transaction's key, so it was not run again; "+
		"to run it again as a new transaction, allow it: strand saga run --id-reuse %s (over HTTP \"id_reuse\": %q; in Go StartOptions.Reuse)",
		what, e.State, again, again)
}

// Unwrap returns api.ErrAlreadyStarted.
func (e *AlreadyRanError) Unwrap() error { return api.ErrAlreadyStarted }

// startRun starts the run of a saga: req, with the kernel's id reuse
// policy of reuse and the transaction id in its memo. A start the policy
// refuses is an *AlreadyRanError.
func startRun(ctx context.Context, svc api.Service, req api.StartRequest, reuse Reuse) (api.StartResponse, error) {
	switch reuse {
	case "", ReuseNever:
		reuse, req.IDReuse = ReuseNever, api.RejectDuplicate
	case ReuseFailed:
		req.IDReuse = api.AllowDuplicateFailedOnly
	case ReuseAlways:
		req.IDReuse = api.AllowDuplicate
	default:
		return api.StartResponse{}, api.InvalidArgument("id_reuse", "%q: want one of %v", reuse, Reuses)
	}
	tx := req.WorkflowID
	if reuse != ReuseNever {
		// A run after an earlier one is a new transaction: ID/N.
		d, err := svc.DescribeWorkflow(ctx, api.RunRef{Namespace: req.Namespace, WorkflowID: req.WorkflowID})
		switch {
		case err == nil:
			tx = nextTransaction(req.WorkflowID, d)
		case !errors.Is(err, api.ErrNotFound):
			return api.StartResponse{}, fmt.Errorf("saga %s: %w", req.WorkflowID, err)
		}
	}
	b, _ := json.Marshal(tx)
	req.Memo = maps.Clone(req.Memo)
	if req.Memo == nil {
		req.Memo = map[string]api.Value{}
	}
	req.Memo[MemoTransaction] = b
	res, err := svc.StartWorkflow(ctx, req)
	if errors.Is(err, api.ErrAlreadyStarted) {
		return res, alreadyRan(ctx, svc, req, reuse, err)
	}
	return res, err
}

// nextTransaction is the transaction of a run of id after the run d.
func nextTransaction(id string, d api.Description) string {
	n := 1
	var prev string
	if v, ok := d.Memo[MemoTransaction]; ok && json.Unmarshal(v, &prev) == nil {
		if i, err := strconv.Atoi(strings.TrimPrefix(prev, id+"/")); err == nil && strings.HasPrefix(prev, id+"/") {
			n = i
		}
	}
	return id + "/" + strconv.Itoa(n+1)
}

// alreadyRan is the *AlreadyRanError of a refused start (err when the
// saga cannot be read).
func alreadyRan(ctx context.Context, svc api.Service, req api.StartRequest, reuse Reuse, err error) error {
	d, derr := svc.DescribeWorkflow(ctx, api.RunRef{Namespace: req.Namespace, WorkflowID: req.WorkflowID})
	if derr != nil {
		return err
	}
	name := d.Attributes[AttrName]
	if name == "" {
		name = req.Attributes[AttrName]
	}
	return &AlreadyRanError{ID: req.WorkflowID, Name: name, State: stateOf(State(d.Attributes[AttrState]), d), RunID: d.RunID,
		Running: d.Status == store.StatusRunning, Reuse: reuse}
}

// StartOptions start a Go saga (Start).
type StartOptions struct {
	// ID is the saga's id (required): the business's key of the
	// transaction, an order id.
	ID string
	// Reuse says whether an id whose saga ended runs again (default
	// ReuseNever).
	Reuse    Reuse
	Queue    string
	Priority int8
	// RequestID makes the start idempotent (client.StartOptions).
	RequestID  string
	StartDelay time.Duration
	RunTimeout time.Duration
	// Memo holds values shown with the run, each encoded as JSON.
	Memo        map[string]any
	BusinessKey string
	Attributes  map[string]string
	Identity    string
}

// Start starts a Go saga in c's namespace: a run of the workflow wf
// (which calls New) with id o.ID, the saga's id. The id runs once unless
// o.Reuse lets it run again: sent again, it is refused with an
// *AlreadyRanError (which matches api.ErrAlreadyStarted) and nothing
// runs. The steps' idempotency keys come from the saga's transaction id
// (the id on its first run), so they are the same however often the
// transaction is sent.
func Start[I, O any](ctx context.Context, c *Client, wf func(workflow.Context, I) (O, error), in I, o StartOptions) (client.Run[O], error) {
	if o.ID == "" {
		return client.Run[O]{}, api.InvalidArgument("workflow_id", "a saga needs its id (the business's key, such as an order id): StartOptions.ID")
	}
	input, err := sdk.Encode(in)
	if err != nil {
		return client.Run[O]{}, err
	}
	var memo map[string]api.Value
	for k, v := range o.Memo {
		b, err := sdk.Encode(v)
		if err != nil {
			return client.Run[O]{}, fmt.Errorf("memo %q: %w", k, err)
		}
		if memo == nil {
			memo = map[string]api.Value{}
		}
		memo[k] = b
	}
	req := api.StartRequest{Namespace: c.namespace, WorkflowID: o.ID, WorkflowType: sdk.FuncName(wf), Input: input, Queue: o.Queue,
		Priority: o.Priority, RequestID: cmp.Or(o.RequestID, uuid.NewString()), StartDelay: o.StartDelay, RunTimeout: o.RunTimeout,
		Memo: memo, BusinessKey: o.BusinessKey, Attributes: o.Attributes, Identity: o.Identity}
	res, err := startRun(ctx, c.svc, req, o.Reuse)
	if err != nil {
		return client.Run[O]{}, err
	}
	return client.GetRun[O](client.New(c.svc, client.Options{Namespace: c.namespace}), o.ID, res.RunID), nil
}
