package dag

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/workflow"
)

// TaskRequest is the input of StepTask: a built-in task with its
// parameters expanded.
type TaskRequest struct {
	Instance string `json:"instance"`
	Task     Task   `json:"task"`
}

// TaskResult is what a task's attempt did: its outputs, where it ran, and
// its log (also the details of a failed attempt).
type TaskResult struct {
	Outputs  map[string]string `json:"outputs,omitempty"`
	Attempt  int32             `json:"attempt,omitempty"`
	Host     string            `json:"host,omitempty"`
	PID      int               `json:"pid,omitempty"`
	ExitCode int               `json:"exit_code,omitempty"`
	Status   int               `json:"status,omitempty"`
	// Log is what the attempt wrote; LogSkipped counts the bytes left out
	// of its middle when it grew past MaxLog.
	Log        string `json:"log,omitempty"`
	LogSkipped int64  `json:"log_skipped,omitempty"`
	// Started and Finished are when the attempt ran, by the worker's clock.
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
}

// TailsRequest asks for the end of the logs of an instance's running
// tasks.
type TailsRequest struct {
	Instance string   `json:"instance"`
	Tasks    []string `json:"tasks"`
}

// LogTail is the heartbeat details of a running task: the end of its log
// so far. Size counts every byte written, so a reader that has printed n
// bytes prints Tail's last Size-n.
type LogTail struct {
	Size int64  `json:"size"`
	Tail string `json:"tail"`
}

// run runs task t (its values expanded) and returns its result.
func (ip *interpreter) run(ctx workflow.Context, i int, t Task, vars map[string]string) (*TaskResult, error) {
	ti := &ip.inst.Tasks[i]
	group := cmp.Or(t.WorkerGroup, ip.group)
	prio := cmp.Or(t.Priority, ip.prio).level()
	opts := workflow.StepOptions{Queue: GroupQueue(group), Priority: prio, StartToClose: 30 * 24 * time.Hour,
		Heartbeat: heartbeatTimeout,
		Retry: &api.RetryPolicy{MaximumAttempts: int32(t.Retries) + 1, BackoffCoefficient: 1,
			InitialInterval: max(time.Second, t.RetryInterval.Std())}}
	opts.Summary = fmt.Sprintf("task %s of DAG %s instance %s", t.Name, ip.def.Name, ip.instanceID)
	ip.waitOptions(&opts, t) // its key, and its wait for a worker bounded by a fail timeout
	if t.Timeout != nil && t.Timeout.Action == TimeoutFail {
		opts.StartToClose = t.Timeout.After.Std()
	}
	if t.Timeout != nil && t.Timeout.Action == TimeoutWarn {
		workflow.Go(ctx, func(ctx workflow.Context) {
			if workflow.Sleep(ctx, t.Timeout.After.Std()) == nil && !ti.State.done() {
				ti.Warned = true
				ip.sendAlert(ctx, Alert{Event: "task_timeout", Task: t.Name,
					Message: fmt.Sprintf("task %s has run longer than %s", t.Name, t.Timeout.After.Std())})
			}
		})
	}
	switch t.Type {
	case TypeStep:
		opts.Queue = cmp.Or(t.Queue, api.DefaultQueue)
		var in any
		if len(t.Input) > 0 {
			in = json.RawMessage(t.Input)
		}
		f := workflow.ExecuteStepByName[json.RawMessage](ctx, opts, t.Step, in)
		out, err := f.Get(ctx)
		if err != nil {
			return nil, err
		}
		return &TaskResult{Outputs: stepOutputs(t.Outputs, out)}, nil
	case TypeSubProcess:
		local := map[string]string{}
		for k := range ip.def.Tasks[i].LocalParams {
			local[k] = vars[k]
		}
		ti.Child = ip.instanceID + "." + t.Name
		in := RunInput{DAG: t.DAG, Version: t.Version, Params: local, ScheduleTime: ip.base, TimeZone: ip.zone, WorkerGroup: ip.group}
		opts := workflow.ChildOptions{WorkflowID: ti.Child, Queue: Queue, BusinessKey: t.DAG, Attributes: map[string]string{AttrDAG: t.DAG}}
		if ip.memo.on {
			// Listed and read as submitted until a worker runs it.
			opts.Attributes[AttrState], opts.Memo = string(StateSubmitted), startMemo(in, in.Version)
		}
		f := workflow.ExecuteChildByName[*Instance](ctx, opts, WorkflowType, in)
		child, err := f.Get(ctx)
		if err != nil {
			return nil, err
		}
		all := map[string]string{}
		for _, ct := range child.Tasks {
			maps.Copy(all, ct.Outputs)
		}
		return &TaskResult{Outputs: pick(t.Outputs, all)}, nil
	case TypeDependent:
		return ip.waitDependencies(ctx, t)
	}
	res, err := workflow.ExecuteStepByName[TaskResult](ctx, opts, StepTask, TaskRequest{Instance: ip.instanceID, Task: t}).Get(ctx)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// stepOutputs picks a Go step's outputs from its JSON result: each output
// is the field its selector names (its own name when empty).
func stepOutputs(sel map[string]string, out json.RawMessage) map[string]string {
	if len(sel) == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(out, &fields)
	got := map[string]string{}
	for name, field := range sel {
		raw, ok := fields[cmp.Or(field, name)]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			got[name] = s
		} else {
			got[name] = string(raw)
		}
	}
	return got
}

// DependencyCheck asks whether the instances a dependent task waits for
// succeeded.
type DependencyCheck struct {
	Depends []Dependency `json:"depends"`
	// Date is the business date (yyyyMMdd) of dependencies without one.
	Date string `json:"date"`
}

// DependencyAnswer is the check's answer: Failed names a dependency whose
// instance failed; Waiting one not yet succeeded.
type DependencyAnswer struct {
	Done    bool   `json:"done"`
	Failed  string `json:"failed,omitempty"`
	Waiting string `json:"waiting,omitempty"`
}

// waitDependencies checks the dependencies every check interval until
// they all succeeded, one failed, or the task's timeout passed.
func (ip *interpreter) waitDependencies(ctx workflow.Context, t Task) (*TaskResult, error) {
	every := cmp.Or(t.CheckInterval.Std(), time.Minute)
	var deadline time.Time
	if t.Timeout != nil && t.Timeout.Action == TimeoutFail {
		deadline = workflow.Now(ctx).Add(t.Timeout.After.Std())
	}
	ti := &ip.inst.Tasks[ip.index[t.Name]]
	for {
		a, err := workflow.ExecuteStepByName[DependencyAnswer](ctx, shortStep, stepDependency,
			DependencyCheck{Depends: t.Depends, Date: ip.base.Format("20060102")}).Get(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case a.Done:
			ti.State = StateRunning
			return &TaskResult{}, nil
		case a.Failed != "":
			return nil, workflow.NewError("strand.dag.dependency_failed", a.Failed, true)
		}
		ti.State = StateWaitingDepend
		ip.changed = true
		if !deadline.IsZero() && !workflow.Now(ctx).Add(every).Before(deadline) {
			return nil, workflow.NewError("strand.dag.dependency_timeout",
				fmt.Sprintf("still waiting after %s: %s", t.Timeout.After.Std(), a.Waiting), true)
		}
		if err := workflow.Sleep(ctx, every); err != nil {
			return nil, err
		}
	}
}
