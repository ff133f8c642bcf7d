package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Reset: a new run of the workflow id gets a copy of the old run's history
// up to just before a workflow task (the reset point), its pending steps
// and timers as they stood there, a WorkflowReset event, the signals the
// old run received after the point (unless skipped), and a pending
// workflow task: the workflow code replays the copy and runs that task
// again. The old run, if open, is terminated in the same batch, and the new
// run becomes the workflow id's current run.

// opReset is the peering call of a reset.
const opReset = "reset"

// ResetWorkflow implements api.Operator.
func (e *Engine) ResetWorkflow(ctx context.Context, req api.ResetRequest) (api.StartResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.StartResponse{}, err
	}
	if req.WorkflowID == "" {
		return api.StartResponse{}, api.InvalidArgument("workflow_id", "empty")
	}
	if req.EventID < 0 {
		return api.StartResponse{}, api.InvalidArgument("event_id", "negative")
	}
	switch req.Point {
	case api.ResetLastWorkflowTask, api.ResetFirstFailedStep:
	case api.ResetBeforeEvent:
		if req.EventID <= 0 {
			return api.StartResponse{}, api.InvalidArgument("event_id", "want the id of an event of the run")
		}
	default:
		return api.StartResponse{}, api.InvalidArgument("point", "%q; want last_workflow_task, first_failed_step or before_event", req.Point)
	}
	if err := e.checkRef(ctx, req.RunRef); err != nil {
		return api.StartResponse{}, err
	}
	var out api.StartResponse
	err := e.route(ctx, req.Namespace, req.WorkflowID, func(s *shard) error {
		var err error
		out, err = e.resetOn(ctx, s, req)
		return err
	}, func(ctx context.Context, p api.Peer) error {
		return peerCall(ctx, p, opReset, req, &out)
	})
	return out, err
}

// peerReset serves a reset another node forwarded.
func (e *Engine) peerReset(ctx context.Context, in json.RawMessage) (api.StartResponse, error) {
	var req api.ResetRequest
	if err := json.Unmarshal(in, &req); err != nil {
		return api.StartResponse{}, api.InvalidArgument("body", "%v", err)
	}
	return e.ResetWorkflow(ctx, req)
}

// resetPoint returns the id of the WorkflowTaskCompleted event the reset
// goes back to (the new run keeps the events before it).
func resetPoint(events []api.Event, req api.ResetRequest) (int64, error) {
	before := int64(len(events)) + 1
	switch req.Point {
	case api.ResetFirstFailedStep:
		before = 0
		for _, ev := range events {
			if ev.Type == api.EventStepFailed || ev.Type == api.EventStepTimedOut {
				before = ev.ID
				break
			}
		}
		if before == 0 {
			return 0, fmt.Errorf("%w: reset point: the run has no failed step", api.ErrFailedPrecondition)
		}
	case api.ResetBeforeEvent:
		if req.EventID > int64(len(events)) {
			return 0, fmt.Errorf("%w: reset point: the run has %d events; there is no event %d", api.ErrFailedPrecondition, len(events), req.EventID)
		}
		before = req.EventID
	}
	for i := int(before) - 2; i >= 0; i-- {
		if events[i].Type == api.EventWorkflowTaskCompleted {
			return events[i].ID, nil
		}
	}
	return 0, fmt.Errorf("%w: reset point: no workflow task completed before event %d, so there is nothing to go back to", api.ErrFailedPrecondition, before)
}

// readHistory reads a run's whole history with its documents' bytes, its
// audit details' too.
func (e *Engine) readHistory(ctx context.Context, k store.RunKey) ([]api.Event, error) {
	var out []api.Event
	req := api.HistoryRequest{RunRef: api.RunRef{Namespace: k.Namespace, WorkflowID: k.WorkflowID, RunID: k.RunID}, Resolve: true, ResolveDetails: true, PageSize: 1000}
	for {
		page, err := e.GetHistory(ctx, req)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Events...)
		if len(page.NextPageToken) == 0 {
			return out, nil
		}
		req.PageToken = page.NextPageToken
	}
}

func (e *Engine) resetOn(ctx context.Context, s *shard, req api.ResetRequest) (api.StartResponse, error) {
	cur, err := s.currentRunID(ctx, api.RunRef{Namespace: req.Namespace, WorkflowID: req.WorkflowID})
	if err != nil {
		return api.StartResponse{}, err
	}
	k := cur
	if req.RunID != "" && req.RunID != cur.RunID {
		return api.StartResponse{}, fmt.Errorf("%w: run %s is not the workflow's current run (%s): only the current run can be reset", api.ErrFailedPrecondition, req.RunID, cur.RunID)
	}
	// The history is read before the run is locked (it may be long); the
	// run must not have moved on meanwhile.
	for attempt := 0; ; attempt++ {
		events, err := e.readHistory(ctx, k)
		if err != nil {
			return api.StartResponse{}, err
		}
		var out api.StartResponse
		err = s.withRun(ctx, k, func(r *run) error {
			if r.exec == nil {
				return fmt.Errorf("%w: run %s", api.ErrNotFound, k)
			}
			if r.exec.NextEventID != int64(len(events))+1 {
				return errHistoryMoved
			}
			next, err := r.reset(ctx, events, req)
			out = api.StartResponse{RunID: next, Started: true}
			return err
		})
		if errors.Is(err, errHistoryMoved) && attempt < 5 {
			continue
		}
		if errors.Is(err, errHistoryMoved) {
			err = fmt.Errorf("%w: the run's history kept growing while the reset read it; try again", api.ErrConflict)
		}
		return out, err
	}
}

var errHistoryMoved = errors.New("engine: the run's history grew while it was read")

// reset writes the new run and closes the old one, in one batch.
func (r *run) reset(ctx context.Context, events []api.Event, req api.ResetRequest) (string, error) {
	w, err := resetPoint(events, req)
	if err != nil {
		return "", err
	}
	prefix := events[:w-1]
	t, err := r.tx(ctx)
	if err != nil {
		return "", err
	}
	old := t.exec
	next := store.RunKey{Namespace: r.key.Namespace, WorkflowID: r.key.WorkflowID, RunID: newRunID()}
	nt := newRun(r.s, next).begin()
	info := old.Info
	info.StartTime, info.CreateRequestID = t.now, ""
	x := &store.Execution{RunKey: next, State: store.StateRunning, Status: store.StatusRunning, NextEventID: 1, Info: info}
	nt.exec, nt.expected, nt.buffer = x, 0, false

	// The copy, with what was pending at its end.
	var last int64 // the last event of the last workflow task in the copy
	// What is open at the end of the copy, by seq: steps and timers, which
	// the new run takes along, and children and requests to other runs,
	// which it cannot.
	steps, timers, others := map[int64]api.Event{}, map[int64]api.Event{}, map[int64]api.Event{}
	for _, ev := range prefix {
		if ev.Payload.Data != nil {
			pl, err := nt.payload(next, ev.Payload.Data)
			if err != nil {
				return "", err
			}
			ev.Payload = api.Payload(pl)
		}
		if len(ev.Details) > 0 {
			ev.Details = slices.Clone(ev.Details)
			for i, d := range ev.Details {
				pl, err := nt.payload(next, d.Value.Data)
				if err != nil {
					return "", err
				}
				ev.Details[i].Value = api.Payload(pl)
			}
		}
		x.NextEventID = ev.ID + 1
		nt.events = append(nt.events, ev)
		if ev.Type == api.EventWorkflowTaskCompleted || ev.Type.IsCommand() {
			last = ev.ID
		}
		switch ev.Type {
		case api.EventWorkflowStarted:
			// The attributes as they were at the reset point: the start's,
			// with the upserts the copy holds.
			if ev.Start != nil {
				x.Info.SearchAttributes = ev.Start.Attributes
				x.Info.Memo = convertMemo[[]byte](ev.Start.Memo)
			}
		case api.EventAttributesUpserted:
			attrs, err := upsertAttributes(x.Info.SearchAttributes, ev.Attributes)
			if err != nil {
				return "", err
			}
			x.Info.SearchAttributes = attrs
		case api.EventMemoUpserted:
			memo, err := upsertMemo(x.Info.Memo, ev.Memo)
			if err != nil {
				return "", err
			}
			x.Info.Memo = memo
		case api.EventStepScheduled:
			steps[ev.Seq] = ev
		case api.EventStepCompleted, api.EventStepFailed, api.EventStepTimedOut, api.EventStepCanceled, api.EventStepCancelScheduled:
			delete(steps, ev.Seq)
		case api.EventTimerStarted:
			timers[ev.Seq] = ev
		case api.EventTimerFired, api.EventTimerCanceled:
			delete(timers, ev.Seq)
		case api.EventChildInitiated, api.EventSignalExternal, api.EventCancelExternal:
			others[ev.Seq] = ev
		case api.EventChildClosed, api.EventChildStartFailed, api.EventExternalSignaled, api.EventExternalCancelRequested:
			delete(others, ev.Seq)
		}
	}
	for _, ev := range others {
		return "", fmt.Errorf("%w: reset point: event %d (%s #%d) is still open there, and a reset cannot take a child or a request to another run along; reset to a point before it or after it closed",
			api.ErrFailedPrecondition, ev.ID, ev.Type, ev.Seq)
	}
	for seq, ev := range steps {
		o := api.StepOptions{}
		if ev.Step != nil {
			o = *ev.Step
		}
		si := store.StepInfo{
			ScheduledEventID: ev.ID, Name: ev.Name, Queue: o.Queue, Priority: o.Priority, Attempt: 1,
			IdempotencyKey: cmp.Or(o.IdempotencyKey, fmt.Sprintf("%s/%d", next.RunID, seq)), ScheduledTime: nt.now,
			ScheduleToStart: o.ScheduleToStart, StartToClose: o.StartToClose, ScheduleToClose: o.ScheduleToClose,
			Heartbeat: o.Heartbeat, AutoHeartbeat: o.AutoHeartbeat, Retry: o.Retry,
		}
		put(&x.Steps, seq, si)
		nt.dispatchStep(seq, si, store.Payload(ev.Payload))
		if o.ScheduleToClose > 0 {
			nt.timer(timerStepTimeout, nt.now.Add(o.ScheduleToClose), &taskData{Seq: seq, Kind: api.TimeoutScheduleToClose})
		}
	}
	for seq, ev := range timers {
		fire := nt.now
		if ev.Timer != nil {
			fire = ev.Timer.FireTime
		}
		id := strconv.FormatInt(seq, 10)
		put(&x.Timers, id, store.TimerInfo{TimerID: id, StartedEventID: ev.ID, FireTime: fire})
		nt.timer(timerUser, fire, &taskData{Seq: seq})
	}

	nt.event(api.Event{Type: api.EventWorkflowReset, Reason: req.Reason, Identity: req.Identity,
		Target: &api.Target{Namespace: r.key.Namespace, WorkflowID: r.key.WorkflowID, RunID: r.key.RunID}})
	if !req.SkipSignals {
		for _, ev := range events[w-1:] {
			if ev.Type != api.EventSignalReceived {
				continue
			}
			pl, err := nt.payload(next, ev.Payload.Data)
			if err != nil {
				return "", err
			}
			nt.event(api.Event{Type: api.EventSignalReceived, Name: ev.Name, Payload: api.Payload(pl), Identity: ev.Identity})
		}
	}
	x.Task = store.WorkflowTaskInfo{LastEventID: last, Pending: true}
	nt.transfer(transferWorkflowTask, next, &taskData{})
	if info.RunTimeout > 0 {
		nt.timer(timerRunTimeout, nt.now.Add(info.RunTimeout), &taskData{})
	}
	nt.transfer(transferVisibility, next, &taskData{})

	if old.State != store.StateClosed {
		reason := fmt.Sprintf("reset: continued as run %s", next.RunID)
		if req.Reason != "" {
			reason += ": " + req.Reason
		}
		if err := t.closeFromOutside(api.Event{Type: api.EventWorkflowTerminated, Reason: reason, Identity: req.Identity},
			store.StatusTerminated, &api.Failure{Kind: api.KindTerminated, Message: reason}); err != nil {
			return "", err
		}
	}
	nw, err := nt.write()
	if err != nil {
		return "", err
	}
	nw.Current, nw.PrevRunID = store.CurrentReplace, r.key.RunID
	t.extra = append(t.extra, nw)
	t.after = append(t.after, nt.after...)
	t.part.tasks = append(t.part.tasks, nt.part.tasks...)
	t.part.docs = append(t.part.docs, nt.part.docs...)
	return next.RunID, r.commit(ctx, t)
}

// RerunWorkflow implements api.Operator: it reads the run's start and
// starts the workflow id again with it.
func (e *Engine) RerunWorkflow(ctx context.Context, req api.RerunRequest) (api.StartResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.StartResponse{}, err
	}
	if req.WorkflowID == "" {
		return api.StartResponse{}, api.InvalidArgument("workflow_id", "empty")
	}
	page, err := e.GetHistory(ctx, api.HistoryRequest{RunRef: req.RunRef, PageSize: 1, Resolve: true})
	if err != nil {
		return api.StartResponse{}, err
	}
	if len(page.Events) == 0 || page.Events[0].Type != api.EventWorkflowStarted || page.Events[0].Start == nil {
		return api.StartResponse{}, fmt.Errorf("%w: %s/%s has no start event", api.ErrCorruptHistory, req.WorkflowID, req.RunID)
	}
	ev := page.Events[0]
	st := ev.Start
	return e.StartWorkflow(ctx, api.StartRequest{
		Namespace: req.Namespace, WorkflowID: req.WorkflowID, WorkflowType: ev.Name, Input: api.Value(ev.Payload.Data),
		Queue: st.Queue, Priority: st.Priority, RunTimeout: st.RunTimeout, Memo: st.Memo, BusinessKey: st.BusinessKey,
		Attributes: st.Attributes, RequestID: req.RequestID, IDReuse: api.AllowDuplicate, Identity: req.Identity,
	})
}
