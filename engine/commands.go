package engine

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// validateCommands refuses a malformed task completion before anything of
// it is applied.
func validateCommands(cmds []api.Command) error {
	for i, c := range cmds {
		f := fmt.Sprintf("commands[%d]", i)
		if c.Type.EventType() == "" {
			return api.InvalidArgument(f+".type", "unknown command %q", c.Type)
		}
		if c.Timer < 0 {
			return api.InvalidArgument(f+".timer", "negative")
		}
		for name, o := range map[string]*api.ChildOptions{"child": c.Child, "continue_as_new": c.ContinueAsNew} {
			if err := validChildOptions(f+"."+name, o); err != nil {
				return err
			}
		}
		switch c.Type {
		case api.CommandComplete, api.CommandFail, api.CommandCancel, api.CommandContinueAsNew:
			if i != len(cmds)-1 {
				return api.InvalidArgument(f, "%s must be the last command", c.Type)
			}
		default:
			if c.Seq <= 0 {
				return api.InvalidArgument(f+".seq", "must be positive")
			}
		}
		switch c.Type {
		case api.CommandScheduleStep:
			if c.Name == "" {
				return api.InvalidArgument(f+".name", "empty step name")
			}
			if o := c.Step; o != nil {
				if o.ScheduleToStart < 0 || o.StartToClose < 0 || o.ScheduleToClose < 0 || o.Heartbeat < 0 {
					return api.InvalidArgument(f+".step", "negative timeout")
				}
				if o.Priority < 0 || o.Priority > api.PriorityLowest {
					return api.InvalidArgument(f+".step.priority", "must be 0 to 5")
				}
				if p := o.Retry; p != nil && (p.InitialInterval < 0 || p.MaximumInterval < 0 || p.MaximumAttempts < 0 || (p.BackoffCoefficient != 0 && p.BackoffCoefficient < 1)) {
					return api.InvalidArgument(f+".step.retry", "intervals and attempts must not be negative, the coefficient at least 1")
				}
			}
		case api.CommandStartTimer:
			if c.Timer <= 0 {
				return api.InvalidArgument(f+".timer", "must be positive")
			}
		case api.CommandStartChild:
			if c.Name == "" {
				return api.InvalidArgument(f+".name", "empty workflow type")
			}
			if c.Child == nil || c.Child.WorkflowID == "" {
				return api.InvalidArgument(f+".child.workflow_id", "empty")
			}
		case api.CommandSignalExternal, api.CommandCancelExternal:
			if c.Target == nil || c.Target.WorkflowID == "" {
				return api.InvalidArgument(f+".target.workflow_id", "empty")
			}
			if c.Type == api.CommandSignalExternal && c.Name == "" {
				return api.InvalidArgument(f+".name", "empty signal name")
			}
			if st := c.SignalStart; st != nil {
				switch {
				case c.Type != api.CommandSignalExternal:
					return api.InvalidArgument(f+".signal_start", "only a SignalExternal starts its target")
				case c.Target.RunID != "":
					return api.InvalidArgument(f+".signal_start", "the target names a run: a start needs a workflow id alone")
				case st.WorkflowType == "":
					return api.InvalidArgument(f+".signal_start.workflow_type", "empty")
				case st.Priority < 0 || st.Priority > api.PriorityLowest:
					return api.InvalidArgument(f+".signal_start.priority", "%d; want 0 (normal) or 1 (highest) to %d (lowest)", st.Priority, api.PriorityLowest)
				}
			}
		case api.CommandFail, api.CommandCancel:
			if c.Failure == nil {
				return api.InvalidArgument(f+".failure", "missing")
			}
		}
	}
	return nil
}

// validChildOptions refuses what a start would refuse of a child's or a
// continued run's options.
func validChildOptions(f string, o *api.ChildOptions) error {
	switch {
	case o == nil:
		return nil
	case o.Priority < 0 || o.Priority > api.PriorityLowest:
		return api.InvalidArgument(f+".priority", "must be 0 to 5")
	case o.RunTimeout < 0:
		return api.InvalidArgument(f+".run_timeout", "negative")
	case o.IDReuse < api.AllowDuplicate || o.IDReuse > api.TerminateIfRunning:
		return api.InvalidArgument(f+".id_reuse_policy", "unknown policy %d", o.IDReuse)
	case o.ParentClose < api.ParentCloseTerminate || o.ParentClose > api.ParentCloseAbandon:
		return api.InvalidArgument(f+".parent_close", "unknown policy %d", o.ParentClose)
	case len(o.WorkflowID) > store.MaxIDLength:
		return api.InvalidArgument(f+".workflow_id", "longer than %d bytes", store.MaxIDLength)
	case strings.IndexByte(o.WorkflowID, 0) >= 0:
		return api.InvalidArgument(f+".workflow_id", "contains NUL")
	}
	return validAttributes(f+".attributes", o.Attributes)
}

// applyCommands records a workflow task's commands in t: their events, the
// state they create and the tasks that carry them out.
func (r *run) applyCommands(ctx context.Context, t *txn, cmds []api.Command) error {
	x := t.exec
	e := r.s.e
	for _, c := range cmds {
		if x.State == store.StateClosed {
			break
		}
		switch c.Type {
		case api.CommandScheduleStep:
			o := api.StepOptions{}
			if c.Step != nil {
				o = *c.Step
			}
			if o.Queue == "" {
				o.Queue = queueOrDefault(x.Info.Queue)
			}
			if o.Priority == 0 {
				// A step is as urgent as its run unless it says otherwise.
				o.Priority = x.Info.Priority
			}
			if o.StartToClose == 0 && o.ScheduleToClose == 0 {
				o.StartToClose = e.opts.DefaultStartToClose
			}
			pl, err := t.payload(r.key, c.Payload)
			if err != nil {
				return err
			}
			t.event(api.Event{Type: api.EventStepScheduled, Seq: c.Seq, Name: c.Name, Payload: api.Payload(pl), Step: &o})
			info := store.StepInfo{
				ScheduledEventID: t.lastEventID(), Name: c.Name, Queue: o.Queue, Priority: o.Priority, Attempt: 1,
				IdempotencyKey: cmp.Or(o.IdempotencyKey, fmt.Sprintf("%s/%d", r.key.RunID, c.Seq)), ScheduledTime: t.now,
				ScheduleToStart: o.ScheduleToStart, StartToClose: o.StartToClose, ScheduleToClose: o.ScheduleToClose,
				Heartbeat: o.Heartbeat, AutoHeartbeat: o.AutoHeartbeat, Retry: o.Retry,
			}
			put(&x.Steps, c.Seq, info)
			t.dispatchStep(c.Seq, info, pl)
			if o.ScheduleToClose > 0 {
				t.timer(timerStepTimeout, t.now.Add(o.ScheduleToClose), &taskData{Seq: c.Seq, Kind: api.TimeoutScheduleToClose})
			}
		case api.CommandCancelStep:
			t.event(api.Event{Type: api.EventStepCancelScheduled, Seq: c.Seq, Name: c.Name})
			if _, ok := x.Steps[c.Seq]; ok {
				delete(x.Steps, c.Seq)
				seq := c.Seq
				t.onCommit(func() { r.forgetStep(seq) })
			}
		case api.CommandStartTimer:
			fire := store.Time(t.now.Add(c.Timer))
			t.event(api.Event{Type: api.EventTimerStarted, Seq: c.Seq, Timer: &api.TimerAttrs{Duration: c.Timer, FireTime: fire}})
			id := strconv.FormatInt(c.Seq, 10)
			put(&x.Timers, id, store.TimerInfo{TimerID: id, StartedEventID: t.lastEventID(), FireTime: fire})
			t.timer(timerUser, fire, &taskData{Seq: c.Seq})
		case api.CommandCancelTimer:
			t.event(api.Event{Type: api.EventTimerCanceled, Seq: c.Seq})
			delete(x.Timers, strconv.FormatInt(c.Seq, 10))
		case api.CommandStartChild:
			o := *c.Child
			if o.Namespace == "" {
				o.Namespace = r.key.Namespace
			}
			if o.Queue == "" {
				o.Queue = x.Info.Queue
			}
			pl, err := t.payload(r.key, c.Payload)
			if err != nil {
				return err
			}
			t.event(api.Event{Type: api.EventChildInitiated, Seq: c.Seq, Name: c.Name, Payload: api.Payload(pl), Child: &api.ChildAttrs{Options: o}})
			reqID := fmt.Sprintf("%s/%d", r.key.RunID, c.Seq)
			put(&x.Children, c.Seq, store.ChildInfo{InitiatedEventID: t.lastEventID(), Namespace: o.Namespace, WorkflowID: o.WorkflowID,
				Type: c.Name, ParentClosePolicy: int8(o.ParentClose), CreateRequestID: reqID})
			t.transfer(transferStartChild, r.key, &taskData{Seq: c.Seq, Name: c.Name, Input: pl, Child: &o, RequestID: reqID})
		case api.CommandSignalExternal, api.CommandCancelExternal:
			target := store.RunKey{Namespace: c.Target.Namespace, WorkflowID: c.Target.WorkflowID, RunID: c.Target.RunID}
			if target.Namespace == "" {
				target.Namespace = r.key.Namespace
			}
			reqID := fmt.Sprintf("%s/%d", r.key.RunID, c.Seq)
			if c.Type == api.CommandSignalExternal {
				pl, err := t.payload(r.key, c.Payload)
				if err != nil {
					return err
				}
				t.event(api.Event{Type: api.EventSignalExternal, Seq: c.Seq, Name: c.Name, Payload: api.Payload(pl), Target: c.Target})
				put(&x.Signals, c.Seq, store.SignalInfo{InitiatedEventID: t.lastEventID(), Target: target, Name: c.Name, Input: pl, RequestID: reqID})
				start := c.SignalStart
				if start != nil && start.Queue == "" {
					start = &api.SignalStart{WorkflowType: start.WorkflowType, Queue: x.Info.Queue, Priority: start.Priority}
				}
				t.transfer(transferSignal, r.key, &taskData{Seq: c.Seq, Name: c.Name, Input: pl, Target: &target, RequestID: reqID, SignalStart: start})
			} else {
				t.event(api.Event{Type: api.EventCancelExternal, Seq: c.Seq, Name: c.Name, Target: c.Target})
				put(&x.CancelRequests, c.Seq, store.RequestCancelInfo{InitiatedEventID: t.lastEventID(), Target: target, RequestID: reqID})
				t.transfer(transferCancel, r.key, &taskData{Seq: c.Seq, Target: &target, RequestID: reqID})
			}
		case api.CommandSideEffect:
			pl, err := t.payload(r.key, c.Payload)
			if err != nil {
				return err
			}
			t.event(api.Event{Type: api.EventSideEffect, Seq: c.Seq, Payload: api.Payload(pl)})
		case api.CommandUpsertAttributes:
			attrs, err := upsertAttributes(x.Info.SearchAttributes, c.Attributes)
			if err != nil {
				return err
			}
			x.Info.SearchAttributes = attrs
			t.event(api.Event{Type: api.EventAttributesUpserted, Seq: c.Seq, Attributes: c.Attributes})
			t.transfer(transferVisibility, r.key, &taskData{})
		case api.CommandUpsertMemo:
			memo, err := upsertMemo(x.Info.Memo, c.Memo)
			if err != nil {
				return err
			}
			x.Info.Memo = memo
			t.event(api.Event{Type: api.EventMemoUpserted, Seq: c.Seq, Memo: c.Memo})
		case api.CommandComplete:
			pl, err := t.payload(r.key, c.Payload)
			if err != nil {
				return err
			}
			t.event(api.Event{Type: api.EventWorkflowCompleted, Payload: api.Payload(pl)})
			t.closeRun(store.StatusCompleted, pl, nil, "")
		case api.CommandFail:
			t.event(api.Event{Type: api.EventWorkflowFailed, Failure: c.Failure})
			t.closeRun(store.StatusFailed, store.Payload{}, c.Failure, "")
		case api.CommandCancel:
			t.event(api.Event{Type: api.EventWorkflowCanceled, Failure: c.Failure})
			t.closeRun(store.StatusCanceled, store.Payload{}, c.Failure, "")
		case api.CommandContinueAsNew:
			if err := r.continueAsNew(ctx, t, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// continueAsNew closes the run and creates its successor in the same batch.
func (r *run) continueAsNew(ctx context.Context, t *txn, c api.Command) error {
	x := t.exec
	o := api.ChildOptions{}
	if c.ContinueAsNew != nil {
		o = *c.ContinueAsNew
	}
	spec := startSpec{
		Req: api.StartRequest{
			Namespace: r.key.Namespace, WorkflowID: r.key.WorkflowID, WorkflowType: c.Name, Input: c.Payload,
			Queue: o.Queue, Priority: o.Priority, RunTimeout: o.RunTimeout, Memo: o.Memo, BusinessKey: o.BusinessKey, Attributes: o.Attributes,
		},
		Parent: x.Info.Parent, ParentSeq: x.Info.ParentInitiated, Root: x.Info.Root, ContinuedFrom: r.key.RunID,
	}
	if spec.Req.WorkflowType == "" {
		spec.Req.WorkflowType = x.Info.Type
	}
	if spec.Req.Queue == "" {
		spec.Req.Queue = x.Info.Queue
	}
	if spec.Req.Priority == 0 {
		spec.Req.Priority = x.Info.Priority
	}
	if spec.Req.RunTimeout == 0 {
		spec.Req.RunTimeout = x.Info.RunTimeout
	}
	if spec.Req.BusinessKey == "" {
		spec.Req.BusinessKey = x.Info.BusinessKey
	}
	if spec.Req.Attributes == nil {
		spec.Req.Attributes = x.Info.SearchAttributes
	}
	next := store.RunKey{Namespace: r.key.Namespace, WorkflowID: r.key.WorkflowID, RunID: newRunID()}
	// The successor is built detached from the cache; it is loaded from the
	// store when first used.
	nt := newRun(r.s, next).begin()
	if err := nt.initRun(&spec); err != nil {
		return err
	}
	nt.exec.Task.Pending = true
	nt.transfer(transferWorkflowTask, next, &taskData{})
	pl, err := t.payload(r.key, c.Payload)
	if err != nil {
		return err
	}
	t.event(api.Event{Type: api.EventWorkflowContinuedAsNew, Name: spec.Req.WorkflowType, Payload: api.Payload(pl), Target: &api.Target{WorkflowID: next.WorkflowID, RunID: next.RunID}})
	t.closeRun(store.StatusContinuedAsNew, store.Payload{}, nil, next.RunID)
	w, err := nt.write()
	if err != nil {
		return err
	}
	w.Current, w.PrevRunID = store.CurrentReplace, r.key.RunID
	t.extra = append(t.extra, w)
	t.after = append(t.after, nt.after...)
	t.part.tasks = append(t.part.tasks, nt.part.tasks...)
	t.part.docs = append(t.part.docs, nt.part.docs...)
	return nil
}

// startSpec is what a new run starts from: a client's request, a parent's
// child command or a continue-as-new.
// startSpec is a start with what only the engine sets (a child's parent, a
// continued run); it travels as JSON to the node that serves the shard.
type startSpec struct {
	Req           api.StartRequest `json:"req"`
	Parent        *store.RunKey    `json:"parent,omitempty"`
	ParentSeq     int64            `json:"parent_seq,omitempty"`
	Root          *store.RunKey    `json:"root,omitempty"`
	ContinuedFrom string           `json:"continued_from,omitempty"`
	// Signal is delivered with the start (signal-with-start).
	Signal *api.SignalRequest `json:"signal,omitempty"`
}

// initRun builds a new run's state and first event in t.
func (t *txn) initRun(spec *startSpec) error {
	q := spec.Req
	k := t.r.key
	x := &store.Execution{
		RunKey: k, State: store.StateRunning, Status: store.StatusRunning, NextEventID: 1,
		Info: store.RunInfo{
			Type: q.WorkflowType, Queue: queueOrDefault(q.Queue), Priority: q.Priority, BusinessKey: q.BusinessKey,
			Parent: spec.Parent, ParentInitiated: spec.ParentSeq, Root: spec.Root, CreateRequestID: q.RequestID,
			StartTime: t.now, RunTimeout: q.RunTimeout, ContinuedFrom: spec.ContinuedFrom, Memo: convertMemo[[]byte](q.Memo), SearchAttributes: q.Attributes,
		},
	}
	t.exec, t.expected = x, 0
	t.buffer = false
	pl, err := t.payload(k, q.Input)
	if err != nil {
		return err
	}
	t.onCommit(func() { t.r.s.e.stats.started(x.Info.StartTime, k.Namespace, x.Info.Type) })
	t.event(api.Event{Type: api.EventWorkflowStarted, Name: q.WorkflowType, Payload: api.Payload(pl), Identity: q.Identity, Start: &api.StartAttrs{
		Queue: x.Info.Queue, Priority: q.Priority, RunTimeout: q.RunTimeout, Parent: spec.Parent, ParentSeq: spec.ParentSeq,
		ContinuedFrom: spec.ContinuedFrom, BusinessKey: q.BusinessKey, Memo: q.Memo, Attributes: q.Attributes, RequestID: q.RequestID,
	}})
	if sig := spec.Signal; sig != nil {
		spl, err := t.payload(k, sig.Input)
		if err != nil {
			return err
		}
		t.event(api.Event{Type: api.EventSignalReceived, Name: sig.Name, Payload: api.Payload(spl), Identity: sig.Identity})
		if sig.RequestID != "" {
			// A signal-with-start retried after it started the run signals it no more.
			t.part.requests = append(t.part.requests, store.Request{Kind: store.RequestSignal, Namespace: k.Namespace, WorkflowID: k.WorkflowID,
				RequestID: sig.RequestID, RunID: k.RunID, CreatedAt: t.now, ExpiresAt: t.now.Add(requestTTL)})
		}
	}
	if q.RunTimeout > 0 {
		t.timer(timerRunTimeout, t.now.Add(q.RunTimeout), &taskData{})
	}
	if q.StartDelay > 0 {
		x.Task.NotBefore = store.Time(t.now.Add(q.StartDelay))
		x.Task.Pending = true
		t.timer(timerStartDelay, x.Task.NotBefore, &taskData{})
	}
	t.transfer(transferVisibility, k, &taskData{})
	return nil
}

// maxAttributes bounds a run's attributes, as a start's.
const maxAttributes = 64

// upsertAttributes returns a run's attributes with changes applied: a key
// given an empty value is removed. More than maxAttributes in all is an
// invalid argument.
func upsertAttributes(attrs, changes map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(attrs)+len(changes))
	for k, v := range attrs {
		out[k] = v
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) > maxAttributes {
		return nil, api.InvalidArgument("attributes", "a run has at most %d attributes; these changes make %d", maxAttributes, len(out))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// upsertMemo returns a run's memo with changes applied: each key set to
// its value, a key given an empty value removed. A run has at most
// store.MaxMemo keys.
func upsertMemo(memo map[string][]byte, changes map[string]api.Value) (map[string][]byte, error) {
	out := make(map[string][]byte, len(memo)+len(changes))
	for k, v := range memo {
		out[k] = v
	}
	for k, v := range changes {
		switch {
		case k == "":
			return nil, api.InvalidArgument("memo", "a memo key is not empty")
		case len(v) == 0:
			delete(out, k)
		default:
			out[k] = []byte(v)
		}
	}
	if len(out) > store.MaxMemo {
		return nil, api.InvalidArgument("memo", "a run's memo has at most %d keys; these changes make %d", store.MaxMemo, len(out))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
