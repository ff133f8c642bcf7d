package statemachine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/workflow"
)

// The interpreter's steps.
const (
	stepResolve = "strand.sm.resolve"
	// stepExecPrefix and the type name the step that runs a definition's
	// methods.
	stepExecPrefix = "strand.sm.exec/"
)

// Resolved is a definition version as stored.
type Resolved struct {
	Version int32           `json:"version"`
	Body    json.RawMessage `json:"body"`
}

// ExecRequest is what a state execution gets.
type ExecRequest struct {
	Instance string `json:"instance"`
	Type     string `json:"type"`
	// Version is the instance's definition version.
	Version     int32             `json:"version,omitempty"`
	State       string            `json:"state"`
	RetryNo     int               `json:"retry_no"`
	Vars        map[string]string `json:"vars,omitempty"`
	BusinessKey string            `json:"business_key,omitempty"`
	ExternalID  string            `json:"external_id,omitempty"`
	Signal      *int              `json:"signal,omitempty"`
	Children    []string          `json:"children,omitempty"`
}

// ExecResult is what a state execution did.
type ExecResult struct {
	Next Next `json:"next"`
	// Set are the variables the method set, with their new values.
	Set map[string]string `json:"set,omitempty"`
	// Children are the instances the method asked for.
	Children []NewChild `json:"children,omitempty"`
	// Executor is the worker that ran it; Recovered says the engine
	// offered this run of the method again after losing track of an
	// earlier one (its node died).
	Executor  string    `json:"executor,omitempty"`
	Recovered bool      `json:"recovered,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	// Failure, when set, is why the method failed (its error or panic):
	// a failed execution, retried by the state's retries.
	Failure string `json:"failure,omitempty"`
}

// NewChild is a child instance a state method creates.
type NewChild struct {
	Type        string            `json:"type"`
	State       string            `json:"state,omitempty"`
	Vars        map[string]string `json:"vars,omitempty"`
	BusinessKey string            `json:"business_key,omitempty"`
	ExternalID  string            `json:"external_id,omitempty"`
}

// machine is one instance's state while its workflow runs.
type machine struct {
	def       *Definition
	inst      Instance
	updates   []Update
	woken     bool
	children  int    // open children
	published string // the state, status and activation the attributes last said
	memo      memoState
}

// Run is the interpreter: the workflow of an instance.
func Run(ctx workflow.Context, in Input) (*Instance, error) {
	info := workflow.GetInfo(ctx)
	now := workflow.Now(ctx)
	m := &machine{inst: Instance{ID: info.WorkflowID, Type: in.Type, Status: StatusCreated, BusinessKey: in.BusinessKey,
		ExternalID: in.ExternalID, Parent: in.Parent, ParentAction: in.ParentAction, Root: in.Root, Created: now, Modified: now,
		ExecutorGroup: info.Queue, Priority: in.Priority,
		Vars: maps.Clone(in.Vars), CreatedVars: in.Vars, Actions: []Action{}}}
	workflow.SetQueryHandler(ctx, QueryInstance, func(struct{}) (*Instance, error) { return &m.inst, nil })
	_, m.memo.on = info.Memo[MemoInstance]

	res := Resolved{Version: in.Version, Body: in.Definition}
	if len(in.Definition) == 0 || in.Version == 0 {
		var err error
		if res, err = workflow.ExecuteStepByName[Resolved](ctx, shortStep, stepResolve, in).Get(ctx); err != nil {
			return nil, err
		}
	}
	var def Definition
	if err := json.Unmarshal(res.Body, &def); err != nil {
		return nil, workflow.NewError("strand.sm.invalid", fmt.Sprintf("definition %s version %d: %v", in.Type, res.Version, err), true)
	}
	m.def, m.inst.Version = &def, res.Version
	state := in.State
	if state == "" {
		for _, s := range def.States {
			if s.Kind == KindStart {
				state = s.Name
				break
			}
		}
	}
	if def.state(state) == nil {
		return nil, workflow.NewError("strand.sm.invalid", fmt.Sprintf("definition %s version %d has no state %q", in.Type, res.Version, state), true)
	}
	m.inst.State, m.inst.NextActivation = state, in.Activation
	if m.inst.NextActivation.IsZero() {
		m.inst.NextActivation = now
	}

	// Changes from outside queue up; the loop applies them between state
	// executions.
	listen := func(name string, apply func(raw json.RawMessage)) {
		ch := workflow.GetSignalChannel[json.RawMessage](ctx, name)
		workflow.Go(ctx, func(ctx workflow.Context) {
			for {
				v, _ := ch.Receive(ctx)
				apply(v)
			}
		})
	}
	listen(SignalUpdate, func(raw json.RawMessage) {
		var u Update
		if json.Unmarshal(raw, &u) == nil {
			m.updates = append(m.updates, u)
			m.woken = true
		}
	})
	listen(SignalWakeup, func(raw json.RawMessage) {
		var w Wakeup
		if json.Unmarshal(raw, &w) == nil && (len(w.States) == 0 || slices.Contains(w.States, m.inst.State)) {
			m.woken = true
		}
	})
	listen(SignalSignal, func(raw json.RawMessage) {
		var s SignalValue
		if json.Unmarshal(raw, &s) == nil {
			m.inst.Signal = s.Signal
			m.woken = true
			// Recorded as nFlow does: an external change with the reason.
			text := "signal cleared"
			if s.Signal != nil {
				text = fmt.Sprintf("signal set to %d", *s.Signal)
			}
			if s.Reason != "" {
				text += ": " + s.Reason
			}
			now := workflow.Now(ctx)
			m.record(ctx, Action{Type: ActionExternalChange, State: m.inst.State, Text: text, RetryNo: m.inst.Retries,
				Start: now, End: now, Executor: s.Identity})
		}
	})
	m.publish(ctx, true)

	for {
		m.applyUpdates(ctx)
		st := def.state(m.inst.State)
		switch st.Kind {
		case KindEnd:
			m.inst.Status, m.inst.NextActivation = StatusFinished, time.Time{}
			m.publish(ctx, false)
			return &m.inst, nil
		case KindManual, KindError:
			// The error state is a manual one: an operator moves it on.
			m.inst.Status, m.inst.NextActivation = StatusManual, time.Time{}
			m.publish(ctx, false)
			m.sleep(ctx, time.Time{})
			continue
		}
		if m.inst.Status != StatusCreated {
			m.inst.Status = StatusInProgress
		}
		m.publish(ctx, false)
		if at := m.inst.NextActivation; at.IsZero() || at.After(workflow.Now(ctx)) {
			if m.sleep(ctx, at) {
				continue // woken: updates first; a woken instance runs its state now
			}
		}
		m.execute(ctx, st)
	}
}

// heartbeatTimeout is how long a worker running a state's method may be
// silent before the method is taken as lost with its worker; the worker
// beats every heartbeatEvery.
const (
	heartbeatTimeout = 10 * time.Second
	heartbeatEvery   = 2 * time.Second
)

var shortStep = workflow.StepOptions{StartToClose: time.Minute,
	Retry: &api.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}}

// sleep waits until at (forever when zero) or until the instance is woken;
// it reports whether it was woken, and when woken sets the next activation
// to now.
func (m *machine) sleep(ctx workflow.Context, at time.Time) bool {
	if m.woken {
		m.woken = false
		m.inst.NextActivation = workflow.Now(ctx)
		return true
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	var timer workflow.Future[struct{}]
	if !at.IsZero() {
		timer = workflow.NewTimer(tctx, at.Sub(workflow.Now(ctx)))
	}
	m.publishMemo(ctx)
	_ = workflow.Await(ctx, func() bool { return m.woken || timer != nil && timer.IsReady() })
	if m.woken {
		m.woken = false
		m.inst.NextActivation = workflow.Now(ctx)
		return true
	}
	return false
}

// applyUpdates applies the external changes that came in, each an action.
func (m *machine) applyUpdates(ctx workflow.Context) {
	for len(m.updates) > 0 {
		u := m.updates[0]
		m.updates = m.updates[1:]
		now := workflow.Now(ctx)
		a := Action{Type: ActionExternalChange, State: m.inst.State, Text: u.Reason, RetryNo: m.inst.Retries, Start: now, End: now, Executor: u.Identity}
		if u.State != "" && m.def.state(u.State) != nil {
			m.inst.State, m.inst.Retries, m.inst.StateText = u.State, 0, u.Reason
			a.State = u.State
			m.inst.NextActivation = now
		}
		if u.Activation != nil {
			m.inst.NextActivation = *u.Activation
		}
		a.Updated = m.setVars(u.Vars)
		m.record(ctx, a)
	}
}

func (m *machine) setVars(set map[string]string) map[string]string {
	if len(set) == 0 {
		return nil
	}
	if m.inst.Vars == nil {
		m.inst.Vars = map[string]string{}
	}
	maps.Copy(m.inst.Vars, set)
	return maps.Clone(set)
}

func (m *machine) record(ctx workflow.Context, a Action) {
	a.ID = len(m.inst.Actions) + 1
	m.inst.Actions = append(m.inst.Actions, a)
	m.inst.Modified = workflow.Now(ctx)
}

// execute runs the state's method once and applies what it decided.
func (m *machine) execute(ctx workflow.Context, st *State) {
	m.inst.Status = StatusExecuting // in the query's answer; lists show the state it runs in
	opts := workflow.StepOptions{Queue: workflow.GetInfo(ctx).Queue, StartToClose: 10 * time.Minute,
		Heartbeat: heartbeatTimeout, Retry: &api.RetryPolicy{MaximumAttempts: 1}}
	opts.Summary = fmt.Sprintf("state %s of instance %s", st.Name, m.inst.ID) // the id is TYPE/EXTERNAL_ID
	if st.Timeout > 0 {
		opts.StartToClose = st.Timeout
	}
	req := ExecRequest{Instance: m.inst.ID, Type: m.def.Type, Version: m.inst.Version, State: st.Name, RetryNo: m.inst.Retries, Vars: m.inst.Vars,
		BusinessKey: m.inst.BusinessKey, ExternalID: m.inst.ExternalID, Signal: m.inst.Signal, Children: m.inst.Children}
	began := workflow.Now(ctx)
	f := workflow.ExecuteStepByName[ExecResult](ctx, opts, stepExecPrefix+m.def.Type, req)
	m.publishMemo(ctx)
	res, err := f.Get(ctx)
	var timeout *api.TimeoutError
	if errors.As(err, &timeout) && timeout.What == api.TimeoutHeartbeat {
		// The worker running the method went silent (it died): nFlow's
		// recovery. The method runs again; the retry is not counted.
		now := workflow.Now(ctx)
		m.record(ctx, Action{Type: ActionRecovery, State: st.Name, Text: "the worker running this state stopped answering; it runs again",
			RetryNo: m.inst.Retries, Start: began, End: now})
		m.inst.NextActivation = now
		return
	}
	if err == nil && res.Recovered {
		m.record(ctx, Action{Type: ActionRecovery, State: st.Name, Text: "the node running this state died; it runs again",
			RetryNo: m.inst.Retries, Start: res.Start, End: res.Start, Executor: res.Executor})
	}
	if err == nil && res.Failure != "" {
		err = errors.New(res.Failure)
	}
	next := res.Next.State
	if err == nil && next != "" && next != st.Name && m.def.state(next) == nil {
		err = fmt.Errorf("the method moved to %q, which is not a state of %s version %d (the instance's version)", next, m.def.Type, m.inst.Version)
	}
	if err == nil && next != "" && next != st.Name && !m.def.permits(st.Name, next) {
		err = fmt.Errorf("%s version %d (the instance's version) does not permit a move from %q to %q", m.def.Type, m.inst.Version, st.Name, next)
	}
	if err != nil {
		m.failed(ctx, st, began, err, res)
		return
	}
	a := Action{Type: ActionStateExecution, State: st.Name, Text: res.Next.Reason, RetryNo: m.inst.Retries,
		Start: res.Start, End: res.End, Executor: res.Executor}
	a.Updated = m.setVars(res.Set)
	m.startChildren(ctx, res.Children, len(m.inst.Actions)+1)
	m.record(ctx, a)
	now := workflow.Now(ctx)
	m.inst.StateText = res.Next.Reason
	if next != "" && next != st.Name {
		m.inst.State, m.inst.Retries = next, 0
	}
	switch {
	case !res.Next.At.IsZero():
		m.inst.NextActivation = res.Next.At
	case res.Next.After > 0:
		m.inst.NextActivation = now.Add(res.Next.After)
	case next == "" || next == st.Name:
		m.inst.NextActivation = time.Time{} // stays: until woken
	default:
		m.inst.NextActivation = now
	}
}

// failed counts a failed state execution: it is retried after a back-off
// until the state's retries run out, then the instance moves to the
// state's failure state (or the error state).
func (m *machine) failed(ctx workflow.Context, st *State, began time.Time, err error, res ExecResult) {
	now := workflow.Now(ctx)
	if res.Start.IsZero() {
		res.Start, res.End = began, now
	}
	m.record(ctx, Action{Type: ActionStateExecutionFailed, State: st.Name, Text: err.Error(), RetryNo: m.inst.Retries,
		Start: res.Start, End: res.End, Executor: res.Executor})
	retries := m.def.Retries
	if st.Retries != nil {
		retries = *st.Retries
	}
	if m.inst.Retries < retries {
		m.inst.Retries++
		backoff := st.Backoff
		if backoff <= 0 {
			backoff = time.Second
		}
		for range m.inst.Retries - 1 {
			backoff *= 2
		}
		if st.MaxBackoff > 0 && backoff > st.MaxBackoff {
			backoff = st.MaxBackoff
		}
		m.inst.NextActivation, m.inst.StateText = now.Add(backoff), err.Error()
		return
	}
	to := m.def.failureOf(st.Name)
	m.inst.StateText = fmt.Sprintf("%s: retries exhausted: %v", st.Name, err)
	if to == "" {
		// No failure state: it stays, until an update moves it.
		m.inst.NextActivation = time.Time{}
		return
	}
	m.inst.State, m.inst.Retries, m.inst.NextActivation = to, 0, now
}

// startChildren starts the child instances a method asked for; each one's
// end wakes this one.
func (m *machine) startChildren(ctx workflow.Context, children []NewChild, action int) {
	info := workflow.GetInfo(ctx)
	root := m.inst.Root
	if root == "" {
		root = m.inst.ID
	}
	for _, c := range children {
		id := childID(c, m.inst.ID, len(m.inst.Children))
		m.inst.Children = append(m.inst.Children, id)
		in := Input{Type: c.Type, State: c.State, Vars: c.Vars, BusinessKey: c.BusinessKey, ExternalID: c.ExternalID,
			Parent: m.inst.ID, ParentAction: action, Root: root}
		opts := workflow.ChildOptions{WorkflowID: id, Queue: info.Queue, ParentClose: workflow.ParentCloseAbandon, BusinessKey: c.BusinessKey}
		if m.memo.on {
			// Listed and read as created until a worker runs it.
			opts.Memo, opts.Attributes, _ = startMemo(createdInstance(id, in, info.Queue, workflow.Now(ctx)))
		}
		f := workflow.ExecuteChildByName[*Instance](ctx, opts, WorkflowType, in)
		m.children++
		workflow.Go(ctx, func(ctx workflow.Context) {
			_, _ = f.Get(ctx)
			m.children--
			if st := m.def.state(m.inst.State); st != nil && st.Kind == KindWait {
				m.woken = true
			}
		})
	}
}

// childID is a child instance's workflow id: its type and external id
// when it has one, else the parent's id and its number.
func childID(c NewChild, parent string, n int) string {
	if c.ExternalID != "" {
		return InstanceID(c.Type, c.ExternalID)
	}
	return fmt.Sprintf("%s/child-%d", parent, n+1)
}

// InstanceID is the workflow id of the instance of a type with an
// external id: external ids are unique per type.
func InstanceID(typ, externalID string) string { return typ + "/" + externalID }

// publish sets the run's attributes to the instance's state, status and
// next activation, when they changed.
func (m *machine) publish(ctx workflow.Context, first bool) {
	attrs := map[string]string{AttrState: m.inst.State, AttrStatus: string(m.inst.Status), AttrActivation: ""}
	if at := m.inst.NextActivation; !at.IsZero() && (m.inst.Status == StatusCreated || m.inst.Status == StatusInProgress) {
		attrs[AttrActivation] = at.UTC().Format(ActivationFormat)
	}
	key := attrs[AttrState] + "|" + attrs[AttrStatus] + "|" + attrs[AttrActivation]
	if first {
		attrs[AttrType] = m.inst.Type
		if m.inst.ExternalID != "" {
			attrs[AttrExternalID] = m.inst.ExternalID
		}
		if m.inst.Parent != "" {
			attrs[AttrParent] = m.inst.Parent
		}
	} else if m.published == key {
		return
	}
	m.published = key
	workflow.UpsertAttributes(ctx, attrs)
}
