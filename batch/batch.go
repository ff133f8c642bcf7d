// Package batch acts on every run a list filter matches: signal, cancel,
// terminate, reset, pause or resume them, at a bounded rate, with a
// result per run. A batch is a run of the workflow WorkflowType in its
// namespace (workflow id "strand-batch:" and the batch id), run by the
// system worker (package system): it pages through the filter with one
// step, acts on a few runs at a time with another, and sleeps between them
// to keep its rate. So it survives a restart, moves with its shard and can
// be stopped; every operation it applies carries a request id, so a step
// retried after a crash does not act twice.
package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/schedule"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// WorkflowType is the type of the run that carries a batch.
const WorkflowType = "strand.Batch"

// WorkflowIDPrefix starts the workflow id of a batch's run.
const WorkflowIDPrefix = "strand-batch:"

const (
	signalStop = "strand.batch.stop"
	queryName  = "strand.batch.describe"
	stepList   = "strand.batch.list"
	stepApply  = "strand.batch.apply"
	attrOp     = "strand.batch.operation"
	// pageSize runs are listed at a time, chunk acted on by one step.
	pageSize = 100
	chunk    = 20
	// pagesPerRun bound a run of the workflow: it continues as new after.
	pagesPerRun = 10
)

// Batch states.
const (
	StateRunning   = "running"
	StateCompleted = "completed"
	StateStopped   = "stopped"
)

// state is the batch's workflow input and result.
type state struct {
	ID        string                `json:"id"`
	Request   api.StartBatchRequest `json:"request"`
	PageToken []byte                `json:"page_token,omitempty"`
	State     string                `json:"state"`
	Done      int64                 `json:"done"`
	Succeeded int64                 `json:"succeeded"`
	Failed    int64                 `json:"failed"`
	Results   []api.BatchRunResult  `json:"results,omitempty"`
	StartTime time.Time             `json:"start_time"`
	CloseTime time.Time             `json:"close_time,omitzero"`
	StoppedBy string                `json:"stopped_by,omitempty"`
}

// stop is the stop signal's value.
type stop struct {
	Identity string `json:"identity,omitempty"`
}

var stepOptions = workflow.StepOptions{
	Queue: api.SystemQueue, StartToClose: 5 * time.Minute,
	Retry: &workflow.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
}

// Run is the workflow that carries a batch.
func Run(ctx workflow.Context, st state) (state, error) {
	if st.StartTime.IsZero() {
		st.StartTime = workflow.Now(ctx)
	}
	st.State = StateRunning
	workflow.SetQueryHandler(ctx, queryName, func(struct{}) (state, error) { return st, nil })
	stops := workflow.GetSignalChannel[stop](ctx, signalStop)
	stopped := func() bool {
		if s, ok := stops.ReceiveAsync(); ok {
			st.State, st.StoppedBy = StateStopped, s.Identity
		}
		return st.State == StateStopped
	}
	rate := st.Request.Rate
	if rate <= 0 {
		rate = api.DefaultBatchRate
	}
	for pages := 0; ; pages++ {
		if pages == pagesPerRun {
			return st, &workflow.ContinueAsNewError{WorkflowType: WorkflowType, Input: mustJSON(st),
				Options: workflow.ChildOptions{Queue: api.SystemQueue}}
		}
		if stopped() {
			return closed(ctx, st), nil
		}
		page, err := workflow.ExecuteStepByName[listOutput](ctx, stepOptions, stepList, listInput{Filter: st.Request.Filter, PageToken: st.PageToken}).Get(ctx)
		if err != nil {
			return st, err
		}
		for i := 0; i < len(page.Runs); i += chunk {
			if stopped() {
				return closed(ctx, st), nil
			}
			runs := page.Runs[i:min(i+chunk, len(page.Runs))]
			results, err := workflow.ExecuteStepByName[[]api.BatchRunResult](ctx, stepOptions, stepApply, applyInput{BatchID: st.ID, Request: st.Request, Runs: runs}).Get(ctx)
			if err != nil {
				return st, err
			}
			st.record(results)
			// Keep the rate: the next chunk waits, unless a stop comes.
			timer := workflow.NewTimer(ctx, time.Duration(float64(len(runs))/rate*float64(time.Second)))
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(timer, func() {})
			workflow.AddReceive(sel, stops, func(workflow.ReceiveChannel[stop]) {})
			sel.Select(ctx)
		}
		if len(page.NextPageToken) == 0 {
			st.State = StateCompleted
			return closed(ctx, st), nil
		}
		st.PageToken = page.NextPageToken
	}
}

func closed(ctx workflow.Context, st state) state {
	st.CloseTime = workflow.Now(ctx)
	return st
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// record adds results: counts, and the list describe shows (failures
// kept before successes when it is full).
func (st *state) record(results []api.BatchRunResult) {
	for _, r := range results {
		st.Done++
		if r.Error != "" {
			st.Failed++
		} else {
			st.Succeeded++
		}
		st.Results = append(st.Results, r)
	}
	for len(st.Results) > api.MaxBatchResults {
		drop := 0
		for i, r := range st.Results {
			if r.Error == "" {
				drop = i
				break
			}
		}
		st.Results = append(st.Results[:drop], st.Results[drop+1:]...)
	}
}

// listInput and listOutput are the list step's.
type listInput struct {
	Filter    api.ListRequest `json:"filter"`
	PageToken []byte          `json:"page_token,omitempty"`
}

type listOutput struct {
	Runs          []store.RunKey `json:"runs"`
	NextPageToken []byte         `json:"next_page_token,omitempty"`
}

// applyInput is the apply step's.
type applyInput struct {
	BatchID string                `json:"batch_id"`
	Request api.StartBatchRequest `json:"request"`
	Runs    []store.RunKey        `json:"runs"`
}

// steps are the batch workflow's steps, over the service.
type steps struct {
	svc       api.Service
	namespace string
	identity  string
}

// Register registers the batch workflow and its steps on a worker of
// api.SystemQueue in namespace (package system does).
func Register(w *worker.Worker, svc api.Service, namespace, identity string) {
	worker.RegisterWorkflowNamed(w, WorkflowType, Run)
	p := steps{svc: svc, namespace: namespace, identity: identity}
	worker.RegisterStepNamed(w, stepList, p.list)
	worker.RegisterStepNamed(w, stepApply, p.apply)
}

func (p steps) list(ctx context.Context, in listInput) (listOutput, error) {
	req := in.Filter
	req.Namespace, req.PageSize, req.PageToken = p.namespace, pageSize, in.PageToken
	page, err := p.svc.ListWorkflows(ctx, req)
	if err != nil {
		return listOutput{}, err
	}
	out := listOutput{NextPageToken: page.NextPageToken}
	for _, r := range page.Runs {
		if systemRun(r) && r.Type != in.Filter.WorkflowType {
			// Strand's own runs (batches, schedules) are acted on only when
			// the filter names their type: a batch of every running run
			// leaves them be.
			continue
		}
		out.Runs = append(out.Runs, store.RunKey{Namespace: p.namespace, WorkflowID: r.WorkflowID, RunID: r.RunID})
	}
	return out, nil
}

// systemRun reports whether a run is one of Strand's own: a batch or a
// schedule.
func systemRun(r store.VisibilityRecord) bool {
	return r.Type == WorkflowType && strings.HasPrefix(r.WorkflowID, WorkflowIDPrefix) ||
		r.Type == schedule.WorkflowType && strings.HasPrefix(r.WorkflowID, schedule.WorkflowIDPrefix)
}

// apply acts on runs; a run's failure is its result, not the step's.
func (p steps) apply(ctx context.Context, in applyInput) ([]api.BatchRunResult, error) {
	req := in.Request
	identity := req.Identity
	if identity == "" {
		identity = p.identity
	}
	reason := req.Reason
	if reason == "" {
		reason = "batch " + in.BatchID
	}
	op, _ := p.svc.(api.Operator)
	// The runs of a chunk are acted on at once (a few at a time): on a
	// store whose commits take tens of milliseconds, one after another
	// would bound a batch well under its rate.
	out := make([]api.BatchRunResult, len(in.Runs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(applyConcurrency)
	for i, k := range in.Runs {
		g.Go(func() error {
			res, err := p.act(gctx, op, in.BatchID, req, identity, reason, k)
			out[i] = res
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// applyConcurrency is how many runs of a chunk are acted on at once.
const applyConcurrency = 8

// act applies the batch's operation to one run; an error is returned only
// when the step should be retried, and is the run's result otherwise.
func (p steps) act(ctx context.Context, op api.Operator, batchID string, req api.StartBatchRequest, identity, reason string, k store.RunKey) (api.BatchRunResult, error) {
	ref := api.RunRef{Namespace: k.Namespace, WorkflowID: k.WorkflowID, RunID: k.RunID}
	requestID := batchID + "/" + k.RunID
	res := api.BatchRunResult{WorkflowID: k.WorkflowID, RunID: k.RunID}
	var err error
	switch req.Operation {
	case api.BatchSignal:
		err = p.svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: ref, Name: req.SignalName, Input: req.SignalInput, RequestID: requestID, Identity: identity})
	case api.BatchCancel:
		err = p.svc.CancelWorkflow(ctx, api.CancelRequest{RunRef: ref, Reason: reason, RequestID: requestID, Identity: identity})
	case api.BatchTerminate:
		err = p.svc.TerminateWorkflow(ctx, api.TerminateRequest{RunRef: ref, Reason: reason, RequestID: requestID, Identity: identity})
	case api.BatchReset, api.BatchPause, api.BatchResume:
		if op == nil {
			err = fmt.Errorf("%w: the service cannot %s runs", api.ErrInvalidArgument, req.Operation)
			break
		}
		switch req.Operation {
		case api.BatchReset:
			point := req.ResetPoint
			if point == "" {
				point = api.ResetLastWorkflowTask
			}
			var resp api.StartResponse
			resp, err = op.ResetWorkflow(ctx, api.ResetRequest{RunRef: ref, Point: point, EventID: req.ResetEventID, Reason: reason, Identity: identity})
			res.NewRunID = resp.RunID
		case api.BatchPause:
			err = op.PauseWorkflow(ctx, api.PauseRequest{RunRef: ref, Reason: reason, Identity: identity})
		default:
			err = op.ResumeWorkflow(ctx, api.PauseRequest{RunRef: ref, Reason: reason, Identity: identity})
		}
	}
	if transient(err) {
		return res, err // the step is retried: every operation is idempotent or pinned to its run
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res, nil
}

// transient reports whether an error may pass if the step is retried.
func transient(err error) bool {
	return errors.Is(err, api.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
