package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// requestTTL is how long a signal's or cancel's request id is remembered.
const requestTTL = 24 * time.Hour

func validateStart(q *api.StartRequest) error {
	q.Namespace = nsOrDefault(q.Namespace)
	switch {
	case q.WorkflowID == "":
		return api.InvalidArgument("workflow_id", "empty")
	case len(q.WorkflowID) > store.MaxIDLength:
		return api.InvalidArgument("workflow_id", "longer than %d bytes", store.MaxIDLength)
	case q.WorkflowType == "":
		return api.InvalidArgument("workflow_type", "empty")
	case q.Priority < 0 || q.Priority > api.PriorityLowest:
		return api.InvalidArgument("priority", "must be 0 (normal) or 1 to 5")
	case q.IDReuse < api.AllowDuplicate || q.IDReuse > api.TerminateIfRunning:
		return api.InvalidArgument("id_reuse_policy", "unknown policy %d", q.IDReuse)
	case q.StartDelay < 0:
		return api.InvalidArgument("start_delay", "negative")
	case q.RunTimeout < 0:
		return api.InvalidArgument("run_timeout", "negative")
	case len(q.RequestID) > store.MaxIDLength:
		return api.InvalidArgument("request_id", "longer than %d bytes", store.MaxIDLength)
	case strings.IndexByte(q.RequestID, 0) >= 0:
		return api.InvalidArgument("request_id", "contains NUL")
	}
	if err := validAttributes("attributes", q.Attributes); err != nil {
		return err
	}
	return store.RunKey{Namespace: q.Namespace, WorkflowID: q.WorkflowID, RunID: "x"}.Validate("run")
}

// validAttributes refuses an empty attribute name, which the store's
// visibility records refuse (a start that let one through left its
// visibility write retrying for ever).
func validAttributes(field string, attrs map[string]string) error {
	if _, ok := attrs[""]; ok {
		return api.InvalidArgument(field, "empty attribute name")
	}
	return nil
}

// StartWorkflow implements api.Service.
func (e *Engine) StartWorkflow(ctx context.Context, req api.StartRequest) (api.StartResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.StartResponse{}, err
	}
	if err := e.admitStart(ctx, req.Namespace, req.WorkflowType, len(req.Input)); err != nil {
		return api.StartResponse{}, err
	}
	return e.start(ctx, &startSpec{Req: req})
}

// start creates a run, applying the id reuse policy when the workflow id
// has a run already. When a worker is waiting, the run's first workflow
// task goes to it before the run is written, and the run is written with
// the task's commands.
func (e *Engine) start(ctx context.Context, spec *startSpec) (api.StartResponse, error) {
	q := &spec.Req
	if err := validateStart(q); err != nil {
		return api.StartResponse{}, err
	}
	if _, err := e.namespace(ctx, q.Namespace); err != nil {
		return api.StartResponse{}, err
	}
	if q.RequestID == "" {
		// A start tried again after its shard moved is recognised.
		q.RequestID = uuid.NewString()
	}
	var resp api.StartResponse
	err := e.route(ctx, q.Namespace, q.WorkflowID, func(s *shard) (err error) {
		resp, err = e.startOn(ctx, s, spec)
		return err
	}, func(ctx context.Context, p api.Peer) error {
		return peerCall(ctx, p, opStart, spec, &resp)
	})
	return resp, err
}

// startOn is start on the workflow id's shard, which this node serves.
func (e *Engine) startOn(ctx context.Context, s *shard, spec *startSpec) (api.StartResponse, error) {
	q := &spec.Req
	mode, prev := store.CurrentCreate, ""
	for range 3 {
		k := store.RunKey{Namespace: q.Namespace, WorkflowID: q.WorkflowID, RunID: newRunID()}
		err := e.create(ctx, s, k, spec, mode, prev)
		if err == nil {
			return api.StartResponse{RunID: k.RunID, Started: true}, nil
		}
		var we *store.WorkflowExistsError
		if !errors.As(err, &we) {
			return api.StartResponse{}, err
		}
		cur := we.Current
		if q.RequestID != "" && cur.CreateRequestID == q.RequestID {
			return api.StartResponse{RunID: cur.RunID}, nil
		}
		already := &api.AlreadyStartedError{WorkflowID: q.WorkflowID, RunID: cur.RunID}
		if cur.State != store.StateClosed {
			if q.IDReuse != api.TerminateIfRunning {
				return api.StartResponse{}, already
			}
			err := e.TerminateWorkflow(ctx, api.TerminateRequest{RunRef: api.RunRef{Namespace: q.Namespace, WorkflowID: q.WorkflowID, RunID: cur.RunID},
				Reason: "terminated by a start with policy TerminateIfRunning", Identity: q.Identity})
			if err != nil && !errors.Is(err, api.ErrRunClosed) {
				return api.StartResponse{}, err
			}
		} else {
			switch q.IDReuse {
			case api.RejectDuplicate:
				return api.StartResponse{}, already
			case api.AllowDuplicateFailedOnly:
				if cur.Status == store.StatusCompleted || cur.Status == store.StatusContinuedAsNew {
					return api.StartResponse{}, already
				}
			}
		}
		mode, prev = store.CurrentReplace, cur.RunID
	}
	return api.StartResponse{}, fmt.Errorf("%w: workflow %s keeps changing; retry", api.ErrUnavailable, q.WorkflowID)
}

// create writes a new run k (or hands its first task to a waiting worker
// and waits for the commit that follows).
func (e *Engine) create(ctx context.Context, s *shard, k store.RunKey, spec *startSpec, mode store.CurrentMode, prev string) error {
	r := s.getRun(k)
	defer s.release(r)
	if err := r.lock(ctx); err != nil {
		return err
	}
	r.loaded = true
	t := r.begin()
	if err := t.initRun(spec); err != nil {
		r.unlock()
		return err
	}
	t.current, t.prevRunID = mode, prev
	var wait <-chan error
	var err error
	if t.exec.Task.NotBefore.IsZero() {
		wait, err = r.deliver(ctx, t)
	} else {
		err = r.commit(ctx, t)
	}
	r.unlock()
	if err != nil {
		return err
	}
	return s.await(ctx, wait)
}

// SignalWithStart implements api.Service.
func (e *Engine) SignalWithStart(ctx context.Context, req api.SignalWithStartRequest) (api.StartResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.StartResponse{}, err
	}
	if req.SignalName == "" {
		return api.StartResponse{}, api.InvalidArgument("signal_name", "empty")
	}
	if err := validateStart(&req.Start); err != nil {
		return api.StartResponse{}, err
	}
	if _, err := e.namespace(ctx, req.Start.Namespace); err != nil {
		return api.StartResponse{}, err
	}
	if err := e.admitSignal(ctx, req.Start.Namespace, req.SignalName, len(req.SignalInput)); err != nil {
		return api.StartResponse{}, err
	}
	if err := e.admitStart(ctx, req.Start.Namespace, req.Start.WorkflowType, len(req.Start.Input)); err != nil {
		return api.StartResponse{}, err
	}
	if req.Start.RequestID == "" {
		req.Start.RequestID = uuid.NewString()
	}
	return routeCall(ctx, e, req.Start.Namespace, req.Start.WorkflowID, req,
		func(s *shard) (api.StartResponse, error) { return e.signalWithStartOn(ctx, s, req) }, api.Peer.SignalWithStart)
}

func (e *Engine) signalWithStartOn(ctx context.Context, s *shard, req api.SignalWithStartRequest) (api.StartResponse, error) {
	// The start's request id dedups the signal too, so a retried
	// signal-with-start that signaled a running run does not signal twice.
	sig := api.SignalRequest{RunRef: api.RunRef{Namespace: req.Start.Namespace, WorkflowID: req.Start.WorkflowID},
		Name: req.SignalName, Input: req.SignalInput, RequestID: req.Start.RequestID, Identity: req.Start.Identity}
	for range 3 {
		runID, err := e.signalOn(ctx, s, sig)
		if err == nil {
			return api.StartResponse{RunID: runID}, nil
		}
		if !errors.Is(err, api.ErrNotFound) && !errors.Is(err, api.ErrRunClosed) {
			return api.StartResponse{}, err
		}
		// Not running: start it with the signal as its first input.
		start := req.Start
		if start.IDReuse == api.TerminateIfRunning {
			start.IDReuse = api.AllowDuplicate
		}
		spec := &startSpec{Req: start, Signal: &sig}
		resp, err := e.startOn(ctx, s, spec)
		if dup := (*store.DuplicateRequestError)(nil); errors.As(err, &dup) {
			return api.StartResponse{RunID: dup.Existing.RunID}, nil // its signal was delivered before
		}
		if errors.Is(err, api.ErrAlreadyStarted) {
			var ae *api.AlreadyStartedError
			if errors.As(err, &ae) {
				if cur, cerr := e.store.GetCurrentExecution(ctx, s.id, start.Namespace, start.WorkflowID); cerr == nil && cur.State == store.StateClosed {
					return api.StartResponse{}, err
				}
			}
			continue // started meanwhile: signal it
		}
		return resp, err
	}
	return api.StartResponse{}, fmt.Errorf("%w: workflow %s keeps changing; retry", api.ErrUnavailable, req.Start.WorkflowID)
}

// SignalWorkflow implements api.Service.
func (e *Engine) SignalWorkflow(ctx context.Context, req api.SignalRequest) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if req.Name == "" {
		return api.InvalidArgument("name", "empty")
	}
	if err := e.checkRef(ctx, req.RunRef); err != nil {
		return err
	}
	if err := e.admitSignal(ctx, req.Namespace, req.Name, len(req.Input)); err != nil {
		return err
	}
	return e.route(ctx, req.Namespace, req.WorkflowID, func(s *shard) error {
		_, err := e.signalOn(ctx, s, req)
		return err
	}, func(ctx context.Context, p api.Peer) error {
		if req.RequestID == "" {
			// A signal tried again after its node left is recognised.
			req.RequestID = uuid.NewString()
		}
		return p.SignalWorkflow(ctx, req)
	})
}

// signalOn delivers a checked signal request.
func (e *Engine) signalOn(ctx context.Context, s *shard, req api.SignalRequest) (string, error) {
	return e.inputOn(ctx, s, req.RunRef, store.RequestSignal, req.RequestID, func(r *run, t *txn) error {
		pl, err := t.payload(r.key, req.Input)
		if err != nil {
			return err
		}
		t.event(api.Event{Type: api.EventSignalReceived, Name: req.Name, Payload: api.Payload(pl), Identity: req.Identity})
		return nil
	})
}

// CancelWorkflow implements api.Service.
func (e *Engine) CancelWorkflow(ctx context.Context, req api.CancelRequest) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if err := e.checkRef(ctx, req.RunRef); err != nil {
		return err
	}
	return e.route(ctx, req.Namespace, req.WorkflowID, func(s *shard) error {
		_, err := e.inputOn(ctx, s, req.RunRef, store.RequestCancel, req.RequestID, func(r *run, t *txn) error {
			t.event(api.Event{Type: api.EventCancelRequested, Reason: req.Reason, Identity: req.Identity})
			return nil
		})
		return err
	}, func(ctx context.Context, p api.Peer) error {
		if req.RequestID == "" {
			req.RequestID = uuid.NewString() // as for a signal
		}
		return p.CancelWorkflow(ctx, req)
	})
}

// checkRef checks that a call names a workflow of a namespace that exists.
func (e *Engine) checkRef(ctx context.Context, ref api.RunRef) error {
	if ref.WorkflowID == "" {
		return api.InvalidArgument("workflow_id", "empty")
	}
	_, err := e.namespace(ctx, nsOrDefault(ref.Namespace))
	return err
}

// inputOn delivers what add puts into a transition of a running run (the
// workflow's current one when ref names none), once per request id, and
// returns the run id. The caller checked ref (checkRef).
func (e *Engine) inputOn(ctx context.Context, s *shard, ref api.RunRef, kind store.RequestKind, requestID string, add func(r *run, t *txn) error) (string, error) {
	k, err := s.currentRunID(ctx, ref)
	if err != nil {
		return "", err
	}
	err = s.update(ctx, k, func(r *run, t *txn) (bool, error) {
		if t.exec.State == store.StateClosed {
			return false, fmt.Errorf("%w: %s", api.ErrRunClosed, r.key)
		}
		if requestID != "" {
			t.part.requests = append(t.part.requests, store.Request{Kind: kind, Namespace: k.Namespace, WorkflowID: k.WorkflowID,
				RequestID: requestID, RunID: k.RunID, CreatedAt: t.now, ExpiresAt: t.now.Add(requestTTL)})
		}
		return true, add(r, t)
	})
	if errors.Is(err, store.ErrDuplicateRequest) || errors.Is(err, api.ErrRunClosed) && e.applied(ctx, s, kind, k, requestID) {
		err = nil // applied before
	}
	return k.RunID, err
}

// TerminateWorkflow implements api.Service.
func (e *Engine) TerminateWorkflow(ctx context.Context, req api.TerminateRequest) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if req.WorkflowID == "" {
		return api.InvalidArgument("workflow_id", "empty")
	}
	if err := e.checkRef(ctx, req.RunRef); err != nil {
		return err
	}
	return e.route(ctx, req.Namespace, req.WorkflowID, func(s *shard) error {
		return e.terminateOn(ctx, s, req)
	}, func(ctx context.Context, p api.Peer) error {
		if req.RequestID == "" {
			req.RequestID = uuid.NewString() // as for a signal
		}
		return p.TerminateWorkflow(ctx, req)
	})
}

// terminateOn closes the run, once per request id: a terminate retried
// with the id of one that closed the run answers nil, not ErrRunClosed.
func (e *Engine) terminateOn(ctx context.Context, s *shard, req api.TerminateRequest) error {
	k, err := s.currentRunID(ctx, req.RunRef)
	if err != nil {
		return err
	}
	err = s.withRun(ctx, k, func(r *run) error {
		t, err := r.tx(ctx)
		if err != nil {
			return err
		}
		if t.exec.State == store.StateClosed {
			return fmt.Errorf("%w: %s", api.ErrRunClosed, r.key)
		}
		if req.RequestID != "" {
			t.part.requests = append(t.part.requests, store.Request{Kind: store.RequestTerminate, Namespace: k.Namespace, WorkflowID: k.WorkflowID,
				RequestID: req.RequestID, RunID: k.RunID, CreatedAt: t.now, ExpiresAt: t.now.Add(requestTTL)})
		}
		if err := t.closeFromOutside(api.Event{Type: api.EventWorkflowTerminated, Reason: req.Reason, Identity: req.Identity},
			store.StatusTerminated, &api.Failure{Kind: api.KindTerminated, Message: req.Reason}); err != nil {
			return err
		}
		return r.commit(ctx, t)
	})
	if errors.Is(err, store.ErrDuplicateRequest) || errors.Is(err, api.ErrRunClosed) && e.applied(ctx, s, store.RequestTerminate, k, req.RequestID) {
		return nil // applied before
	}
	return err
}

// applied reports whether a request of kind with id requestID was applied
// to run k (its dedup row names k): a retry of a request that landed, which
// finds the run closed (by this request, or since).
func (e *Engine) applied(ctx context.Context, s *shard, kind store.RequestKind, k store.RunKey, requestID string) bool {
	if requestID == "" {
		return false
	}
	got, err := e.store.GetRequest(ctx, s.id, store.RequestKey{Kind: kind, Namespace: k.Namespace, WorkflowID: k.WorkflowID, RequestID: requestID})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		e.log.Warn("read a request's dedup row", "run", k.String(), "kind", kind.String(), "err", err)
	}
	return err == nil && got.RunID == k.RunID
}

// DescribeWorkflow implements api.Service.
func (e *Engine) DescribeWorkflow(ctx context.Context, ref api.RunRef) (api.Description, error) {
	if err := store.CheckLimits(&ref); err != nil {
		return api.Description{}, err
	}
	if ref.WorkflowID == "" {
		return api.Description{}, api.InvalidArgument("workflow_id", "empty")
	}
	return routeCall(ctx, e, ref.Namespace, ref.WorkflowID, ref,
		func(s *shard) (api.Description, error) { return e.describeOn(ctx, s, ref) }, api.Peer.DescribeWorkflow)
}

func (e *Engine) describeOn(ctx context.Context, s *shard, ref api.RunRef) (api.Description, error) {
	k, err := s.currentRunID(ctx, ref)
	if err != nil {
		return api.Description{}, err
	}
	var d api.Description
	err = s.withCommittedRun(ctx, k, func(r *run) error {
		x := r.exec
		d = api.Description{Namespace: k.Namespace, WorkflowID: k.WorkflowID, RunID: k.RunID, WorkflowType: x.Info.Type,
			Status: x.Status, Queue: x.Info.Queue, StartTime: x.Info.StartTime, CloseTime: x.Info.CloseTime, NextEventID: x.NextEventID,
			BusinessKey: x.Info.BusinessKey, Attributes: x.Info.SearchAttributes, Memo: convertMemo[api.Value](x.Info.Memo), Parent: x.Info.Parent, Paused: x.Paused}
		for seq, st := range x.Steps {
			p := api.PendingStep{Seq: seq, Name: st.Name, State: "scheduled", Attempt: st.Attempt, ScheduledTime: st.ScheduledTime, LastFailure: st.LastFailure,
				HeartbeatDetails: api.Value(st.HeartbeatDetails.Data), IdempotencyKey: st.IdempotencyKey}
			if sr := r.steps[seq]; sr != nil {
				p.State, p.StartedTime, p.LastHeartbeat, p.Identity = "started", store.Time(sr.started), store.Time(sr.beat), sr.worker
				if sr.details != nil {
					p.HeartbeatDetails = api.Value(sr.details)
				}
			} else if !st.RetryAt.IsZero() {
				p.State = "backoff"
			}
			d.Steps = append(d.Steps, p)
		}
		sort.Slice(d.Steps, func(i, j int) bool { return d.Steps[i].Seq < d.Steps[j].Seq })
		for id, tm := range x.Timers {
			seq, _ := strconv.ParseInt(id, 10, 64)
			d.Timers = append(d.Timers, api.PendingTimer{Seq: seq, FireTime: tm.FireTime})
		}
		sort.Slice(d.Timers, func(i, j int) bool { return d.Timers[i].Seq < d.Timers[j].Seq })
		for seq, c := range x.Children {
			d.Children = append(d.Children, api.PendingChild{Seq: seq, WorkflowID: c.WorkflowID, RunID: c.RunID, WorkflowType: c.Type})
		}
		sort.Slice(d.Children, func(i, j int) bool { return d.Children[i].Seq < d.Children[j].Seq })
		if x.Task.Attempt > 0 && len(x.Task.FailedCause) > 0 {
			d.WorkflowTaskFailure = &api.Failure{}
			if err := api.UnmarshalStored(x.Task.FailedCause, d.WorkflowTaskFailure); err != nil {
				d.WorkflowTaskFailure = &api.Failure{Kind: api.KindApplication, Message: string(x.Task.FailedCause)}
			}
		}
		return nil
	})
	return d, err
}

// WaitResult implements api.Service.
func (e *Engine) WaitResult(ctx context.Context, req api.ResultRequest) (api.Result, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.Result{}, err
	}
	if req.WorkflowID == "" {
		return api.Result{}, api.InvalidArgument("workflow_id", "empty")
	}
	return routeCall(ctx, e, req.Namespace, req.WorkflowID, req,
		func(s *shard) (api.Result, error) { return e.waitResultOn(ctx, s, req) }, api.Peer.WaitResult)
}

func (e *Engine) waitResultOn(ctx context.Context, s *shard, req api.ResultRequest) (api.Result, error) {
	k, err := s.currentRunID(ctx, req.RunRef)
	if err != nil {
		return api.Result{}, err
	}
	for {
		var res api.Result
		err := s.awaitRun(ctx, k, func(r *run) (bool, error) {
			if r.exec == nil {
				return false, fmt.Errorf("%w: run %s", api.ErrNotFound, r.key) // not committed
			}
			if r.exec.State != store.StateClosed {
				return false, nil
			}
			var err error
			res, err = e.result(ctx, s.id, r.exec)
			return true, err
		})
		if err != nil {
			return res, err
		}
		if req.FollowRuns && res.Status == store.StatusContinuedAsNew && res.NextRunID != "" {
			k.RunID = res.NextRunID
			continue
		}
		return res, nil
	}
}

func runFilter(req api.ListRequest) store.RunFilter {
	return store.RunFilter{Namespace: nsOrDefault(req.Namespace), WorkflowID: req.WorkflowID, Type: req.WorkflowType, Statuses: req.Statuses,
		StartedAfter: req.StartedAfter, StartedBefore: req.StartedBefore, BusinessKey: req.BusinessKey, Attributes: req.Attributes,
		WorkflowIDPrefix: req.WorkflowIDPrefix, BusinessKeyPrefix: req.BusinessKeyPrefix,
		ClosedAfter: req.ClosedAfter, ClosedBefore: req.ClosedBefore, ExcludeTypes: req.ExcludeWorkflowTypes}
}

// ListWorkflows implements api.Service.
func (e *Engine) ListWorkflows(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.ListResponse{}, err
	}
	if err := checkOrder(req.Order); err != nil {
		return api.ListResponse{}, err
	}
	page, err := e.store.ListRuns(ctx, store.ListRunsRequest{RunFilter: runFilter(req), PageSize: req.PageSize, PageToken: req.PageToken,
		Oldest: req.Order == api.OrderOldest})
	if err != nil {
		return api.ListResponse{}, err
	}
	if page.Runs == nil {
		page.Runs = []store.VisibilityRecord{} // a list, never null in JSON
	}
	return api.ListResponse{Runs: page.Runs, NextPageToken: page.NextPageToken}, nil
}

// checkOrder checks a list's order.
func checkOrder(order string) error {
	switch order {
	case "", api.OrderNewest, api.OrderOldest:
		return nil
	}
	return api.InvalidArgument("order", "%q is not an order: newest (start time, latest first) or oldest", order)
}

// CountWorkflows implements api.Service.
func (e *Engine) CountWorkflows(ctx context.Context, req api.ListRequest) (int64, error) {
	if err := store.CheckLimits(&req); err != nil {
		return 0, err
	}
	if req.PageSize < 0 || req.PageSize > store.MaxPageSize {
		// Not used by a count, but the request is the list's.
		return 0, api.InvalidArgument("page_size", "must be 0 to %d", store.MaxPageSize)
	}
	if err := checkOrder(req.Order); err != nil {
		return 0, err
	}
	return e.store.CountRuns(ctx, runFilter(req))
}

// GetDocument implements api.Service. Documents are read from the store:
// any node serves them.
func (e *Engine) GetDocument(ctx context.Context, req api.DocumentRequest) (api.Value, error) {
	if err := store.CheckLimits(&req); err != nil {
		return nil, err
	}
	if req.WorkflowID == "" {
		return nil, api.InvalidArgument("workflow_id", "empty")
	}
	if req.ID == "" {
		return nil, api.InvalidArgument("id", "empty")
	}
	id := e.shardID(nsOrDefault(req.Namespace), req.WorkflowID)
	k, err := e.currentRunID(ctx, id, req.RunRef)
	if err != nil {
		return nil, err
	}
	data, _, err := e.store.GetDocument(ctx, id, k, req.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: document %s of run %s", api.ErrNotFound, req.ID, k)
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

// GetHistory implements api.Service.
func (e *Engine) GetHistory(ctx context.Context, req api.HistoryRequest) (api.HistoryPage, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.HistoryPage{}, err
	}
	if req.WorkflowID == "" {
		return api.HistoryPage{}, api.InvalidArgument("workflow_id", "empty")
	}
	if req.PageSize < 0 || req.PageSize > store.MaxPageSize {
		return api.HistoryPage{}, api.InvalidArgument("page_size", "must be 0 to %d", store.MaxPageSize)
	}
	// History is read from the store: any node serves it.
	id := e.shardID(nsOrDefault(req.Namespace), req.WorkflowID)
	k, err := e.currentRunID(ctx, id, req.RunRef)
	if err != nil {
		return api.HistoryPage{}, err
	}
	blocks := 250
	if req.PageSize > 0 {
		blocks = max(1, req.PageSize/4)
	}
	page, err := e.store.ReadHistory(ctx, store.ReadHistoryRequest{ShardID: id, Run: k, FromEventID: req.FromEventID, PageSize: blocks, PageToken: req.PageToken})
	if errors.Is(err, store.ErrNotFound) {
		return api.HistoryPage{}, fmt.Errorf("%w: run %s", api.ErrNotFound, k)
	}
	if err != nil {
		return api.HistoryPage{}, err
	}
	if len(page.Blocks) == 0 && len(req.PageToken) == 0 {
		// Nothing at all: say whether the run exists (every run has a
		// first event, so this read happens only for a bad request).
		if _, err := e.store.GetExecution(ctx, id, k); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return api.HistoryPage{}, fmt.Errorf("%w: run %s", api.ErrNotFound, k)
			}
			return api.HistoryPage{}, err
		}
	}
	out := api.HistoryPage{Events: []api.Event{}} // a list, never null in JSON
	for _, b := range page.Blocks {
		evs, err := api.DecodeEvents(b.Events, b.FirstEventID, b.LastEventID)
		if err != nil {
			return api.HistoryPage{}, err
		}
		for _, ev := range evs {
			if ev.ID >= req.FromEventID {
				out.Events = append(out.Events, ev)
			}
		}
	}
	if req.Resolve || req.ResolveDetails {
		if out.Events, err = e.resolveEvents(ctx, id, k, out.Events, req.Resolve, req.ResolveDetails); err != nil {
			return api.HistoryPage{}, err
		}
	}
	out.NextPageToken = page.NextPageToken
	return out, nil
}

// newRunID returns a new run id: a UUID of version 7, whose first bits are
// the time it was made. Runs started together then sit together in every
// index that begins with the run id (visibility's primary key), so the
// retention purge, which deletes runs in the order they closed, dirties a
// few pages of such an index rather than one page a run: with random ids
// SQLite purged a million runs in 3m34s, with these in 37s.
func newRunID() string { return uuid.Must(uuid.NewV7()).String() }
