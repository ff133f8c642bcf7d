package statemachine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/workflow"
)

// An instance's run keeps the instance in its memo as the interpreter
// moves it, so that reading an unfinished instance needs neither a worker
// nor a replay: DescribeWorkflow answers the memo, and the run's history
// holds every change of it.
//
//   - MemoInstance is the instance without its actions and variables, and
//     the number of its actions. The create sets it (status created), the
//     interpreter each time it changed, before it waits.
//   - MemoActions holds the actions recorded since the previous change:
//     the MemoUpserted events of the run's history, in order, hold all of
//     them, and the variables are the created ones with each action's
//     changes.
//
// A run started without MemoInstance (by a release before it) keeps no
// memo; its reads ask its interpreter (a query), as they did.
const (
	MemoInstance = "strand.sm.instance"
	MemoActions  = "strand.sm.actions"
)

// memoHead is MemoInstance's value.
type memoHead struct {
	Instance
	ActionCount int `json:"action_count"`
}

// headOf is inst as MemoInstance keeps it.
func headOf(inst Instance) memoHead {
	n := len(inst.Actions)
	inst.Actions, inst.Vars = nil, nil
	return memoHead{Instance: inst, ActionCount: n}
}

// startMemo is the memo and attributes of a new instance's run: created,
// in its start state, before any worker ran it.
func startMemo(inst Instance) (map[string]api.Value, map[string]string, error) {
	b, err := json.Marshal(headOf(inst))
	if err != nil {
		return nil, nil, fmt.Errorf("statemachine: instance %s: %w", inst.ID, err)
	}
	attrs := map[string]string{AttrType: inst.Type, AttrStatus: string(StatusCreated)}
	if inst.State != "" {
		attrs[AttrState] = inst.State
	}
	if !inst.NextActivation.IsZero() {
		attrs[AttrActivation] = inst.NextActivation.UTC().Format(ActivationFormat)
	}
	if inst.ExternalID != "" {
		attrs[AttrExternalID] = inst.ExternalID
	}
	if inst.Parent != "" {
		attrs[AttrParent] = inst.Parent
	}
	return map[string]api.Value{MemoInstance: b}, attrs, nil
}

// firstStart is the state an instance of def starts in when none is
// given: its first start state.
func firstStart(def *Definition) string {
	for _, s := range def.States {
		if s.Kind == KindStart {
			return s.Name
		}
	}
	return ""
}

// memoState is what the interpreter last put in its run's memo.
type memoState struct {
	on      bool   // the run started with a memo: it keeps one
	head    string // MemoInstance's value
	actions int    // the actions in the memo's history
}

// publishMemo puts what changed of the instance in the run's memo: its
// head, and the actions recorded since the last time. The interpreter
// calls it before it waits, so history grows by one MemoUpserted event at
// most each workflow task, and only when the instance changed.
func (m *machine) publishMemo(ctx workflow.Context) {
	if !m.memo.on {
		return
	}
	b, err := json.Marshal(headOf(m.inst))
	if err != nil || string(b) == m.memo.head {
		return
	}
	changes := map[string]any{MemoInstance: json.RawMessage(b)}
	if n := len(m.inst.Actions); n > m.memo.actions {
		changes[MemoActions] = m.inst.Actions[m.memo.actions:]
		m.memo.actions = n
	}
	m.memo.head = string(b)
	if err := workflow.UpsertMemo(ctx, changes); err != nil {
		workflow.Logger(ctx).Error("statemachine: the instance's memo", "instance", m.inst.ID, "error", err)
	}
}

// readMemo reads a running instance from its run's memo and history;
// ok is false when the run keeps no memo (it started before runs did).
func readMemo(ctx context.Context, svc api.Service, d api.Description) (inst *Instance, ok bool, err error) {
	raw, ok := d.Memo[MemoInstance]
	if !ok {
		return nil, false, nil
	}
	var h memoHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, true, fmt.Errorf("statemachine: instance %s: %w", d.WorkflowID, err)
	}
	inst = &h.Instance
	inst.Actions = []Action{}
	ref := api.RunRef{Namespace: d.Namespace, WorkflowID: d.WorkflowID, RunID: d.RunID}
	for token := []byte(nil); len(inst.Actions) < h.ActionCount; {
		page, err := svc.GetHistory(ctx, api.HistoryRequest{RunRef: ref, PageToken: token})
		if err != nil {
			return nil, true, err
		}
		for _, ev := range page.Events {
			v, ok := ev.Memo[MemoActions]
			if ev.Type != api.EventMemoUpserted || !ok {
				continue
			}
			var as []Action
			if err := json.Unmarshal(v, &as); err != nil {
				return nil, true, fmt.Errorf("statemachine: instance %s: actions of event %d: %w", d.WorkflowID, ev.ID, err)
			}
			inst.Actions = append(inst.Actions, as...)
		}
		if token = page.NextPageToken; len(token) == 0 {
			break
		}
	}
	if len(inst.Actions) < h.ActionCount {
		return nil, true, fmt.Errorf("statemachine: instance %s: its history holds %d of its %d actions", d.WorkflowID, len(inst.Actions), h.ActionCount)
	}
	inst.Actions = inst.Actions[:h.ActionCount]
	if vars := inst.VarsAfter(h.ActionCount); len(vars) > 0 {
		inst.Vars = vars
	}
	return inst, true, nil
}

// createdInstance is the instance a create starts, as its memo shows it
// until a worker runs it.
func createdInstance(id string, in Input, group string, now time.Time) Instance {
	if group == "" {
		group = api.DefaultQueue
	}
	at := in.Activation
	if at.IsZero() {
		at = now
	}
	return Instance{ID: id, Type: in.Type, Version: in.Version, Status: StatusCreated, State: in.State, NextActivation: at,
		BusinessKey: in.BusinessKey, ExternalID: in.ExternalID, Parent: in.Parent, ParentAction: in.ParentAction, Root: in.Root,
		ExecutorGroup: group, Priority: in.Priority, CreatedVars: in.Vars, Created: now, Modified: now, Actions: []Action{}}
}
