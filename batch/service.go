package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Service implements api.Batches over an api.Service; package system's
// worker must run in the namespace (strand server runs it).
type Service struct{ svc api.Service }

// NewService returns the batches of svc.
func NewService(svc api.Service) *Service { return &Service{svc: svc} }

var _ api.Batches = (*Service)(nil)

// BatchNotFoundError says a batch does not exist.
type BatchNotFoundError struct{ ID string }

func (e *BatchNotFoundError) Error() string { return fmt.Sprintf("batch %q not found", e.ID) }

// Is makes the error match api.ErrNotFound.
func (e *BatchNotFoundError) Is(target error) bool { return target == api.ErrNotFound }

func runRef(ref api.BatchRef) api.RunRef {
	ns := ref.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	return api.RunRef{Namespace: ns, WorkflowID: WorkflowIDPrefix + ref.BatchID}
}

// Validate checks a batch request as StartBatch does.
func Validate(req api.StartBatchRequest) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if !slices.Contains(api.BatchOperations, req.Operation) {
		return api.InvalidArgument("operation", "%q; want one of %v", req.Operation, api.BatchOperations)
	}
	if req.Operation == api.BatchSignal && req.SignalName == "" {
		return api.InvalidArgument("signal_name", "empty: a signal batch names its signal")
	}
	if req.ResetEventID < 0 {
		return api.InvalidArgument("reset_event_id", "negative")
	}
	switch req.ResetPoint {
	case "", api.ResetLastWorkflowTask, api.ResetFirstFailedStep:
	case api.ResetBeforeEvent:
		if req.ResetEventID <= 0 {
			return api.InvalidArgument("reset_event_id", "want the id of an event")
		}
	default:
		return api.InvalidArgument("reset_point", "%q; want last_workflow_task, first_failed_step or before_event", req.ResetPoint)
	}
	if req.Rate < 0 || req.Rate > 10000 {
		return api.InvalidArgument("rate", "%v; want 0 (the default, %d a second) to 10000", req.Rate, api.DefaultBatchRate)
	}
	if f := req.Filter; f.PageSize < 0 || f.PageSize > 10000 {
		return api.InvalidArgument("filter.page_size", "%d; want 0 to 10000", f.PageSize)
	}
	for i, s := range req.Filter.Statuses {
		if s < store.StatusRunning || s > store.StatusTimedOut {
			return api.InvalidArgument(fmt.Sprintf("filter.statuses[%d]", i), "%d is not a status", s)
		}
	}
	return nil
}

// StartBatch starts the batch's run.
func (s *Service) StartBatch(ctx context.Context, req api.StartBatchRequest) (api.BatchRef, error) {
	if err := Validate(req); err != nil {
		return api.BatchRef{}, err
	}
	// The filter is checked as a list checks it: by a list of one run.
	probe := req.Filter
	probe.Namespace, probe.PageSize, probe.PageToken = req.Namespace, 1, nil
	if probe.Namespace == "" {
		probe.Namespace = api.DefaultNamespace
	}
	if _, err := s.svc.ListWorkflows(ctx, probe); err != nil {
		var ia *store.InvalidArgumentError
		if errors.As(err, &ia) {
			return api.BatchRef{}, api.InvalidArgument("filter."+ia.Field, "%s", ia.Reason)
		}
		return api.BatchRef{}, err
	}
	if req.BatchID == "" {
		req.BatchID = uuid.NewString()
	}
	ref := api.BatchRef{Namespace: req.Namespace, BatchID: req.BatchID}
	req.Filter.Namespace, req.Filter.PageToken = "", nil
	input, err := json.Marshal(state{ID: req.BatchID, Request: req})
	if err != nil {
		return ref, err
	}
	rr := runRef(ref)
	_, err = s.svc.StartWorkflow(ctx, api.StartRequest{Namespace: rr.Namespace, WorkflowID: rr.WorkflowID, WorkflowType: WorkflowType,
		Input: input, Queue: api.SystemQueue, IDReuse: api.RejectDuplicate, Attributes: map[string]string{attrOp: string(req.Operation)}, Identity: req.Identity})
	if errors.Is(err, api.ErrAlreadyStarted) {
		return ref, fmt.Errorf("batch %q: %w", req.BatchID, api.ErrAlreadyExists)
	}
	return ref, err
}

// read returns a batch's state: its run's result once it closed, its
// query's answer while it runs.
func (s *Service) read(ctx context.Context, ref api.BatchRef) (state, error) {
	if ref.BatchID == "" {
		return state{}, api.InvalidArgument("batch_id", "empty")
	}
	rr := runRef(ref)
	d, err := s.svc.DescribeWorkflow(ctx, rr)
	if err != nil {
		if errors.Is(err, api.ErrNotFound) {
			return state{}, &BatchNotFoundError{ID: ref.BatchID}
		}
		return state{}, err
	}
	rr.RunID = d.RunID
	var raw []byte
	if d.Status == store.StatusRunning {
		raw, err = s.svc.QueryWorkflow(ctx, api.QueryRequest{RunRef: rr, Name: queryName})
	} else {
		var res api.Result
		res, err = s.svc.WaitResult(ctx, api.ResultRequest{RunRef: api.RunRef{Namespace: rr.Namespace, WorkflowID: rr.WorkflowID}, FollowRuns: true})
		raw = res.Output
		if err == nil && res.Status != store.StatusCompleted {
			msg := res.Status.String()
			if res.Failure != nil {
				msg += ": " + res.Failure.Message
			}
			return state{ID: ref.BatchID, State: "failed (" + msg + ")", StartTime: d.StartTime, CloseTime: res.CloseTime}, nil
		}
	}
	if err != nil {
		return state{}, err
	}
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return state{}, fmt.Errorf("batch %q: decode its state: %w", ref.BatchID, err)
	}
	return st, nil
}

// DescribeBatch returns a batch's progress and results.
func (s *Service) DescribeBatch(ctx context.Context, ref api.BatchRef) (api.BatchDescription, error) {
	st, err := s.read(ctx, ref)
	if err != nil {
		return api.BatchDescription{}, err
	}
	ns := ref.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	out := api.BatchDescription{Namespace: ns, BatchID: ref.BatchID, Request: st.Request, State: st.State, Done: st.Done,
		Succeeded: st.Succeeded, Failed: st.Failed, Results: st.Results, StartTime: st.StartTime, CloseTime: st.CloseTime, StoppedBy: st.StoppedBy}
	if out.Results == nil {
		out.Results = []api.BatchRunResult{}
	}
	return out, nil
}

// ListBatches lists a namespace's batches from their runs' visibility.
func (s *Service) ListBatches(ctx context.Context, req api.ListBatchesRequest) (api.ListBatchesResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.ListBatchesResponse{}, err
	}
	if req.PageSize < 0 || req.PageSize > 1000 {
		return api.ListBatchesResponse{}, api.InvalidArgument("page_size", "%d; want 0 to 1000", req.PageSize)
	}
	ns := req.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	page, err := s.svc.ListWorkflows(ctx, api.ListRequest{Namespace: ns, WorkflowType: WorkflowType, WorkflowIDPrefix: WorkflowIDPrefix,
		PageSize: req.PageSize, PageToken: req.PageToken})
	if err != nil {
		return api.ListBatchesResponse{}, err
	}
	out := api.ListBatchesResponse{Batches: []api.BatchSummary{}, NextPageToken: page.NextPageToken}
	for _, r := range page.Runs {
		if r.Status == store.StatusContinuedAsNew {
			continue // an earlier run of a batch listed by its last
		}
		if r.Attributes[attrOp] == "" {
			continue // not started by StartBatch (a run started through the workflows API): not a batch
		}
		state := StateRunning
		if r.Status != store.StatusRunning {
			state = r.Status.String()
		}
		out.Batches = append(out.Batches, api.BatchSummary{BatchID: strings.TrimPrefix(r.WorkflowID, WorkflowIDPrefix),
			Operation: api.BatchOperation(r.Attributes[attrOp]), State: state, StartTime: r.StartTime, CloseTime: r.CloseTime})
	}
	return out, nil
}

// StopBatch stops a running batch.
func (s *Service) StopBatch(ctx context.Context, req api.StopBatchRequest) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if req.BatchID == "" {
		return api.InvalidArgument("batch_id", "empty")
	}
	err := s.svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: runRef(req.BatchRef), Name: signalStop, Input: mustJSON(stop{Identity: req.Identity}), Identity: req.Identity})
	if errors.Is(err, api.ErrNotFound) {
		return &BatchNotFoundError{ID: req.BatchID}
	}
	return err
}
