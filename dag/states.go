package dag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/workflow"
)

// Honest task states (issue 35 items 3 and 4). A task the interpreter
// launched on a queue is submitted until a worker starts it: the
// interpreter does not learn of the start, the kernel does, so a reader
// of a running instance completes its tasks with the run's pending steps
// (withPendingSteps), each found by its idempotency key (taskKey). A fail
// timeout bounds the wait for a worker as well as the run.

// stepPending answers which of an instance's tasks a worker started.
const stepPending = "strand.dag.pending"

// taskKey is the idempotency key of every attempt of task name in run
// runID: a reader finds the task's pending step by it.
func taskKey(runID, name string) string { return runID + "/task/" + name }

// runsOnQueue reports whether a task of type typ is a step a worker runs
// (the others the interpreter runs itself: a child, a wait, a branch).
func runsOnQueue(typ TaskType) bool {
	switch typ {
	case TypeSubProcess, TypeConditions, TypeSwitch, TypeDependent:
		return false
	}
	return true
}

// taskQueue returns the task queue task t waits on for a worker and its
// worker group ("" for a step task, which names its queue); "" when the
// interpreter runs t itself.
func (ip *interpreter) taskQueue(t *Task) (queue, group string) {
	return queueOf(t, ip.group)
}

// queueOf is taskQueue for a task whose instance's group is group.
func queueOf(t *Task, group string) (queue, taskGroup string) {
	switch {
	case !runsOnQueue(t.Type):
		return "", ""
	case t.Type == TypeStep:
		return cmp.Or(t.Queue, api.DefaultQueue), ""
	}
	g := cmp.Or(t.WorkerGroup, group)
	return GroupQueue(g), g
}

// waitOptions gives a task's step its key, and with a fail timeout, the
// same bound on the wait for a worker: an attempt no worker starts within
// the timeout fails (and is not retried), with waitError's words.
func (ip *interpreter) waitOptions(opts *workflow.StepOptions, t Task) {
	opts.IdempotencyKey = taskKey(ip.runID, t.Name)
	if t.Timeout.kills() {
		opts.ScheduleToStart = t.Timeout.After.Std()
	}
}

// taskError is the error of task i's failure, in its user's words: a wait
// for a worker that timed out says which group had none.
func (ip *interpreter) taskError(i int, err error) string {
	var te *api.TimeoutError
	t := &ip.def.Tasks[i]
	if !errors.As(err, &te) || te.What != api.TimeoutScheduleToStart || t.Timeout == nil {
		return err.Error()
	}
	q, g := ip.taskQueue(t)
	if g != "" {
		return fmt.Sprintf("no worker of group %s took the task within %s", g, t.Timeout.After.Std())
	}
	return fmt.Sprintf("no worker of queue %s took the task within %s", q, t.Timeout.After.Std())
}

// PendingRequest asks which of an instance's submitted tasks a worker
// started.
type PendingRequest struct {
	Instance string   `json:"instance"`
	RunID    string   `json:"run_id"`
	Tasks    []string `json:"tasks"`
}

// StartedTask is what the run's pending step says of a submitted task: a
// worker started it (which worker, when, which attempt).
type StartedTask struct {
	Started   bool      `json:"started"`
	Host      string    `json:"host,omitempty"`
	Attempt   int32     `json:"attempt,omitempty"`
	StartTime time.Time `json:"start_time,omitzero"`
}

// startedTasks says which of the named tasks (about to be killed) a
// worker started: those the interpreter runs itself, and the submitted
// ones whose step a worker holds (those get their host, attempt and
// start). Nil when the run could not be read: the tasks then count as
// started.
func (ip *interpreter) startedTasks(ctx workflow.Context, names []string) map[string]bool {
	started := map[string]bool{}
	var ask []string
	for _, name := range names {
		if ip.inst.Tasks[ip.index[name]].State == StateSubmitted {
			ask = append(ask, name)
		} else {
			started[name] = true
		}
	}
	if len(ask) == 0 {
		return started
	}
	got, err := workflow.ExecuteStepByName[map[string]StartedTask](ctx, shortStep, stepPending,
		PendingRequest{Instance: ip.instanceID, RunID: ip.runID, Tasks: ask}).Get(ctx)
	if err != nil {
		workflow.Logger(ctx).Warn("dag: which killed tasks had started is not known", "err", err)
		return nil
	}
	for name, st := range got {
		started[name] = st.Started
		if st.Started {
			// Each attempt is a step of its own: the worker that started
			// the step ran the task's last attempt.
			i := ip.index[name]
			ti := &ip.inst.Tasks[i]
			ti.Host, ti.StartTime = st.Host, st.StartTime
			if a := ip.lastAttempt(i); a != nil {
				a.Host, a.StartTime = st.Host, st.StartTime
			}
		}
	}
	return started
}

// noteStarted records which killed or canceled tasks had started (nil:
// not known, they count as started).
func (ip *interpreter) noteStarted(started map[string]bool) {
	if started == nil {
		ip.started = nil
		return
	}
	if ip.started == nil {
		ip.started = map[string]bool{}
	}
	for name, ok := range started {
		ip.started[name] = ok
	}
}

// trim cancels, under failure strategy finish_running, the launched tasks
// no worker started yet: they end not_run; the ones running finish.
func (ip *interpreter) trim(ctx workflow.Context) {
	if ip.trimmed {
		return
	}
	ip.trimmed = true
	var names []string
	for _, name := range slices.Sorted(maps.Keys(ip.cancels)) {
		if ip.inst.Tasks[ip.index[name]].State == StateSubmitted {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	started := ip.startedTasks(ctx, names)
	if started == nil {
		return // not known: they finish
	}
	ip.noteStarted(started)
	for _, name := range names {
		if cancel := ip.cancels[name]; cancel != nil && !started[name] {
			cancel()
		}
	}
}

// pending answers a PendingRequest from the run's pending steps.
func (s *interpreterSteps) pending(ctx context.Context, in PendingRequest) (map[string]StartedTask, error) {
	d, err := s.svc.DescribeWorkflow(ctx, api.RunRef{Namespace: step.GetInfo(ctx).Run.Namespace, WorkflowID: in.Instance, RunID: in.RunID})
	if err != nil {
		return nil, err
	}
	out := map[string]StartedTask{}
	for _, name := range in.Tasks {
		key := taskKey(in.RunID, name)
		for _, p := range d.Steps {
			if p.IdempotencyKey == key && p.State == "started" {
				out[name] = StartedTask{Started: true, Host: p.Identity, Attempt: p.Attempt, StartTime: p.StartedTime}
			}
		}
	}
	return out, nil
}

// withPendingSteps completes a running instance's launched tasks with its
// run's pending steps: a task whose step a worker started is running,
// with the worker as its host, its attempt and its start; one whose step
// waits for a worker (or for its next attempt) is submitted.
func withPendingSteps(inst *Instance, d api.Description) {
	byKey := map[string]api.PendingStep{}
	prefix := taskKey(d.RunID, "")
	for _, p := range d.Steps {
		if strings.HasPrefix(p.IdempotencyKey, prefix) {
			byKey[p.IdempotencyKey] = p
		}
	}
	if len(byKey) == 0 {
		return
	}
	for i := range inst.Tasks {
		ti := &inst.Tasks[i]
		if ti.State != StateSubmitted && ti.State != StateRunning {
			continue
		}
		p, ok := byKey[taskKey(d.RunID, ti.Name)]
		if !ok {
			continue
		}
		// Each attempt is a step of its own: the pending step is the
		// task's last attempt (ti.Attempt, as the instance counts them).
		var last *TaskAttempt
		if n := len(ti.Attempts); n > 0 && ti.Attempts[n-1].State == StateRunning {
			last = &ti.Attempts[n-1]
		}
		if p.State == "started" {
			ti.State, ti.Host, ti.PID = StateRunning, p.Identity, 0
			ti.StartTime, ti.EndTime = p.StartedTime, time.Time{}
			if last != nil {
				last.Host, last.StartTime = p.Identity, p.StartedTime
			}
			continue
		}
		// Scheduled: it waits for a worker, its last attempt not begun.
		ti.State, ti.StartTime = StateSubmitted, time.Time{}
		if last != nil {
			last.State, last.StartTime = StateSubmitted, time.Time{}
			ti.Attempt = last.Attempt - 1
		}
	}
}
