package dag

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/workflow"
)

// An instance's run keeps the instance in its memo as the interpreter
// moves it, so that reading a running instance (its page, a list, a
// dependent task's check) needs neither a worker nor a replay:
// DescribeWorkflow answers the memo.
//
//   - MemoInstance is the instance without its definition's text: the
//     start sets it (submitted), the interpreter each time it changed,
//     before it waits.
//   - MemoDefinition is the definition's text the instance runs, set once
//     the interpreter read it.
//
// A run started without MemoInstance (by a release before it) keeps no
// memo; its reads ask its interpreter (a query), as they did.
const (
	MemoInstance   = "strand.dag.instance"
	MemoDefinition = "strand.dag.definition"
)

// startMemo is the memo of a new instance's run: submitted, before a
// worker ran it. Its times are the run's (the reader fills them in).
func startMemo(in RunInput, version int32) map[string]api.Value {
	b, _ := json.Marshal(Instance{DAG: in.DAG, Version: version, State: StateSubmitted, ScheduleTime: in.ScheduleTime,
		FailureStrategy: in.FailureStrategy, Tasks: []TaskInstance{}})
	return map[string]api.Value{MemoInstance: b}
}

// memoState is what the interpreter last put in its run's memo.
type memoState struct {
	on         bool   // the run started with a memo: it keeps one
	instance   string // MemoInstance's value
	definition bool   // MemoDefinition is set
}

// publishMemo puts the instance in the run's memo when it changed since
// the last time; the interpreter calls it before it waits.
func (ip *interpreter) publishMemo(ctx workflow.Context) {
	if !ip.memo.on {
		return
	}
	inst := ip.inst
	inst.Definition = ""
	b, err := json.Marshal(&inst)
	if err != nil || string(b) == ip.memo.instance {
		return
	}
	changes := map[string]any{MemoInstance: json.RawMessage(b)}
	if !ip.memo.definition && ip.inst.Definition != "" {
		changes[MemoDefinition] = ip.inst.Definition
		ip.memo.definition = true
	}
	ip.memo.instance = string(b)
	if err := workflow.UpsertMemo(ctx, changes); err != nil {
		workflow.Logger(ctx).Error("dag: the instance's memo", "instance", ip.instanceID, "error", err)
	}
}

// runningInstance reads a running instance from its run's memo (d), or,
// for a run that keeps none, from its interpreter.
func runningInstance(ctx context.Context, svc api.Service, d api.Description) (*Instance, error) {
	raw, ok := d.Memo[MemoInstance]
	if !ok {
		b, err := svc.QueryWorkflow(ctx, api.QueryRequest{RunRef: api.RunRef{Namespace: d.Namespace, WorkflowID: d.WorkflowID, RunID: d.RunID}, Name: QueryInstance})
		if err != nil {
			return nil, err
		}
		var inst Instance
		if err := json.Unmarshal(b, &inst); err != nil {
			return nil, err
		}
		withPendingSteps(&inst, d)
		return &inst, nil
	}
	var inst Instance
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, fmt.Errorf("dag: instance %s: %w", d.WorkflowID, err)
	}
	if text, ok := d.Memo[MemoDefinition]; ok {
		if err := json.Unmarshal(text, &inst.Definition); err != nil {
			return nil, fmt.Errorf("dag: instance %s: its definition: %w", d.WorkflowID, err)
		}
	}
	withPendingSteps(&inst, d)
	// Submitted, not yet run: the run's times.
	if inst.StartTime.IsZero() {
		inst.StartTime = d.StartTime
	}
	if inst.ScheduleTime.IsZero() {
		var at time.Time
		if v, ok := d.Memo[api.MemoScheduledTime]; ok && json.Unmarshal(v, &at) == nil {
			inst.ScheduleTime = at
		} else {
			inst.ScheduleTime = d.StartTime
		}
	}
	return &inst, nil
}
