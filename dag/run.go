package dag

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/workflow"
)

// TaskRequest is the input of StepTask: a built-in task with its
// parameters expanded.
type TaskRequest struct {
	Instance string `json:"instance"`
	Task     Task   `json:"task"`
	// Attempt is the attempt's number (the instance counts a task's
	// attempts, each a step of its own).
	Attempt int32 `json:"attempt,omitempty"`
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

// backstop is the step's own start-to-close timeout of a task whose
// timeout stops it: the worker stops the attempt at the task's timeout and
// reports it with its log; the kernel's timeout fires only when the worker
// does not (it was cut off), a little later.
func backstop(after time.Duration) time.Duration { return after + max(15*time.Second, after/10) }

// run runs task t (its values expanded) and returns its result. Each
// attempt of a task a worker runs is a step of its own (the instance
// counts the attempts and waits the retry interval between them), so that
// every attempt's result, its log included, is kept in the run's history.
func (ip *interpreter) run(ctx workflow.Context, i int, t Task, vars map[string]string) (*TaskResult, error) {
	ti := &ip.inst.Tasks[i]
	group := cmp.Or(t.WorkerGroup, ip.group)
	prio := cmp.Or(t.Priority, ip.prio).level()
	opts := workflow.StepOptions{Queue: GroupQueue(group), Priority: prio, StartToClose: 30 * 24 * time.Hour,
		Heartbeat: heartbeatTimeout, Retry: &api.RetryPolicy{MaximumAttempts: 1}}
	opts.Summary = fmt.Sprintf("task %s of DAG %s instance %s", t.Name, ip.def.Name, ip.instanceID)
	ip.waitOptions(&opts, t) // its key, and its wait for a worker bounded by a fail timeout
	if t.Timeout.kills() {
		opts.StartToClose = backstop(t.Timeout.After.Std())
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
	case TypeSubProcess:
		return ip.runSubProcess(ctx, i, t, vars)
	case TypeDependent:
		ip.beginAttempt(ctx, i, 1)
		res, err := ip.waitDependencies(ctx, i, t)
		return res, ip.endAttempt(ctx, i, t, res, err)
	}
	last := int32(t.Retries) + 1
	for n := int32(1); ; n++ {
		ip.beginAttempt(ctx, i, n)
		var res *TaskResult
		var err error
		if t.Type == TypeStep {
			sopts := opts
			sopts.Queue = cmp.Or(t.Queue, api.DefaultQueue)
			if t.Timeout.kills() {
				sopts.StartToClose = t.Timeout.After.Std() // a Go step: the kernel stops it
			}
			var in any
			if len(t.Input) > 0 {
				in = json.RawMessage(t.Input)
			}
			var out json.RawMessage
			if out, err = workflow.ExecuteStepByName[json.RawMessage](ctx, sopts, t.Step, in).Get(ctx); err == nil {
				res = &TaskResult{Outputs: stepOutputs(t.Outputs, out)}
			}
		} else {
			var r TaskResult
			if r, err = workflow.ExecuteStepByName[TaskResult](ctx, opts, StepTask, TaskRequest{Instance: ip.instanceID, Task: t, Attempt: n}).Get(ctx); err == nil {
				res = &r
			}
		}
		err = ip.endAttempt(ctx, i, t, res, err)
		if err == nil || n >= last || !retryable(err) || ip.stopping {
			return res, err
		}
		if err := workflow.Sleep(ctx, max(time.Second, t.RetryInterval.Std())); err != nil {
			return nil, err
		}
	}
}

// runSubProcess runs a sub_process task: its DAG as a child instance. Its
// log names the child and how to read it.
func (ip *interpreter) runSubProcess(ctx workflow.Context, i int, t Task, vars map[string]string) (*TaskResult, error) {
	ti := &ip.inst.Tasks[i]
	local := map[string]string{}
	for k := range ip.def.Tasks[i].LocalParams {
		local[k] = vars[k]
	}
	ti.Child = ip.instanceID + "." + t.Name
	a := ip.beginAttempt(ctx, i, 1)
	a.Log = fmt.Sprintf("%s: runs DAG %s as the child instance %s\nits tasks: strand dag tasks %s\na task's log: strand dag logs %s TASK\n",
		logTime(ctx), t.DAG, ti.Child, ti.Child, ti.Child)
	in := RunInput{DAG: t.DAG, Version: t.Version, Params: local, ScheduleTime: ip.base, TimeZone: ip.zone, WorkerGroup: ip.group}
	opts := workflow.ChildOptions{WorkflowID: ti.Child, Queue: Queue, BusinessKey: t.DAG, Attributes: map[string]string{AttrDAG: t.DAG}}
	if ip.memo.on {
		// Listed and read as submitted until a worker runs it.
		opts.Attributes[AttrState], opts.Memo = string(StateSubmitted), startMemo(in, in.Version)
	}
	f := workflow.ExecuteChildByName[*Instance](ctx, opts, WorkflowType, in)
	child, err := f.Get(ctx)
	var res *TaskResult
	if err == nil {
		all := map[string]string{}
		for _, ct := range child.Tasks {
			maps.Copy(all, ct.Outputs)
		}
		res = &TaskResult{Outputs: pick(t.Outputs, all)}
	}
	err = ip.endAttempt(ctx, i, t, res, err)
	a = ip.lastAttempt(i)
	if err == nil {
		a.Log += fmt.Sprintf("%s: the child instance %s succeeded\n", logTime(ctx), ti.Child)
	} else {
		a.Log += fmt.Sprintf("%s: the child instance %s did not succeed: %s\n", logTime(ctx), ti.Child, a.Error)
	}
	return res, err
}

// logTime is the instance's time now, as the logs the instance writes
// itself show it.
func logTime(ctx workflow.Context) string {
	return workflow.Now(ctx).UTC().Format("2006-01-02 15:04:05 MST")
}

// beginAttempt records that attempt n of task i starts now.
func (ip *interpreter) beginAttempt(ctx workflow.Context, i int, n int32) *TaskAttempt {
	ti := &ip.inst.Tasks[i]
	ti.Attempt = n
	ti.Attempts = append(ti.Attempts, TaskAttempt{Attempt: n, State: StateRunning, StartTime: workflow.Now(ctx)})
	ip.changed = true
	return ip.lastAttempt(i)
}

// lastAttempt is task i's latest attempt (nil before the first).
func (ip *interpreter) lastAttempt(i int) *TaskAttempt {
	ti := &ip.inst.Tasks[i]
	if len(ti.Attempts) == 0 {
		return nil
	}
	return &ti.Attempts[len(ti.Attempts)-1]
}

// endAttempt records how task i's latest attempt ended (res on success,
// err otherwise: its failure's details are the attempt's result), sends
// the task_timeout alert of a timeout that stopped it, and returns err as
// the task's error, in the user's words.
func (ip *interpreter) endAttempt(ctx workflow.Context, i int, t Task, res *TaskResult, err error) error {
	a := ip.lastAttempt(i)
	a.EndTime = workflow.Now(ctx)
	ip.changed = true
	if res == nil {
		// A failed attempt's result is its failure's details.
		var ae *api.ApplicationError
		var r TaskResult
		if errors.As(err, &ae) && len(ae.Details) > 0 && json.Unmarshal(ae.Details, &r) == nil {
			res = &r
		}
	}
	if res != nil {
		a.Host, a.PID, a.ExitCode = res.Host, res.PID, res.ExitCode
		if !res.Started.IsZero() {
			a.StartTime, a.EndTime = res.Started, res.Finished
		}
	}
	switch {
	case err == nil:
		a.State = StateSuccess
		return nil
	case ip.stopping && errors.Is(err, api.ErrCanceled):
		a.State, a.Error = StateStopped, "stopped"
		return err
	}
	a.State = StateFailure
	msg := attemptMessage(t, err)
	var ae *api.ApplicationError
	var te *api.TimeoutError
	switch {
	case errors.As(err, &ae) && ae.Type == ErrorTimeout:
		a.TimedOut = true
	case errors.As(err, &te) && te.What == api.TimeoutStartToClose && t.Timeout.kills():
		// The worker did not report in time: the backstop fired. The end
		// of the log is its last heartbeat's.
		a.TimedOut = true
		msg = timeoutMessage(t.Timeout)
		var tail LogTail
		if json.Unmarshal(te.Details, &tail) == nil {
			a.Log = tail.Tail
		}
	case errors.As(err, &te) && te.What == api.TimeoutScheduleToStart:
		// No worker of its group took it: it never started.
		msg = ip.taskError(i, err)
	case errors.As(err, &te) && te.What == api.TimeoutHeartbeat:
		msg = fmt.Sprintf("the worker running the task stopped answering (no heartbeat for %s)", heartbeatTimeout)
		var tail LogTail
		if json.Unmarshal(te.Details, &tail) == nil {
			a.Log = tail.Tail
		}
	}
	a.Error = msg
	full := &attemptError{msg: msg, err: err}
	var se *api.StepError
	if errors.As(err, &se) {
		c := *se
		c.Attempt, c.Cause = a.Attempt, errors.New(msg)
		full.msg = c.Error()
	}
	if a.TimedOut {
		final := a.Attempt > int32(t.Retries) || !retryable(err)
		ip.timeoutAlert(ctx, t, full.msg, final)
	}
	return full
}

// attemptMessage is why an attempt failed: its error without the step
// around it.
func attemptMessage(t Task, err error) string {
	var se *api.StepError
	if errors.As(err, &se) && se.Cause != nil {
		err = se.Cause
	}
	var te *api.TimeoutError
	if errors.As(err, &te) && te.What == api.TimeoutStartToClose && t.Timeout.kills() {
		return timeoutMessage(t.Timeout)
	}
	return err.Error()
}

// attemptError is a task's error as its last attempt ended, in the user's
// words; it wraps the step's error.
type attemptError struct {
	msg string
	err error
}

func (e *attemptError) Error() string { return e.msg }
func (e *attemptError) Unwrap() error { return e.err }

// retryable reports whether a failed attempt may be tried again: not
// one that was non-retryable, canceled, or that no worker took within the
// task's timeout (another attempt would wait for the same group).
func retryable(err error) bool {
	var ae *api.ApplicationError
	if errors.As(err, &ae) && ae.NonRetryable {
		return false
	}
	var te *api.TimeoutError
	if errors.As(err, &te) && te.What == api.TimeoutScheduleToStart {
		return false
	}
	return !errors.Is(err, api.ErrCanceled)
}

// timeoutAlert sends the task_timeout alert of a timeout that stopped an
// attempt: with action warnfail always, with fail when the attempt was
// the task's last and the warning type sends failure alerts. It is sent
// beside the task, which goes on; the instance ends once it was.
func (ip *interpreter) timeoutAlert(ctx workflow.Context, t Task, msg string, final bool) {
	send := t.Timeout.Action == TimeoutWarnFail ||
		final && (ip.warning.Type == WarnFailure || ip.warning.Type == WarnAll)
	if !send {
		return
	}
	ip.alerting++
	// Not canceled with the task: a stop does not take the alert back.
	workflow.Go(workflow.NewDisconnectedContext(ctx), func(ctx workflow.Context) {
		defer func() { ip.alerting--; ip.changed = true }()
		ip.sendAlert(ctx, Alert{Event: "task_timeout", Task: t.Name, Message: msg})
	})
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
// they all succeeded, one failed, or the task's timeout passed. The
// attempt's log lists what it waits for and each check whose answer
// differs from the one before.
func (ip *interpreter) waitDependencies(ctx workflow.Context, i int, t Task) (*TaskResult, error) {
	every := cmp.Or(t.CheckInterval.Std(), time.Minute)
	var deadline time.Time
	if t.Timeout.kills() {
		deadline = workflow.Now(ctx).Add(t.Timeout.After.Std())
	}
	ti := &ip.inst.Tasks[i]
	date := ip.base.Format("20060102")
	var b strings.Builder
	fmt.Fprintf(&b, "%s: waits for, every %s:\n", logTime(ctx), every)
	for _, d := range t.Depends {
		what := "an instance of DAG " + d.DAG
		if d.Task != "" {
			what = fmt.Sprintf("task %s of an instance of DAG %s", d.Task, d.DAG)
		}
		fmt.Fprintf(&b, "  %s for %s to succeed\n", what, cmp.Or(d.Date, date))
	}
	ip.lastAttempt(i).Log = b.String()
	logLine := func(format string, args ...any) {
		ip.lastAttempt(i).Log += logTime(ctx) + ": " + fmt.Sprintf(format, args...) + "\n"
		ip.changed = true
	}
	var said string
	for checks := 1; ; checks++ {
		a, err := workflow.ExecuteStepByName[DependencyAnswer](ctx, shortStep, stepDependency,
			DependencyCheck{Depends: t.Depends, Date: date}).Get(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case a.Done:
			logLine("check %d: every dependency succeeded", checks)
			ti.State = StateRunning
			return &TaskResult{}, nil
		case a.Failed != "":
			logLine("check %d: %s", checks, a.Failed)
			return nil, workflow.NewError("strand.dag.dependency_failed", a.Failed, true)
		}
		if a.Waiting != said {
			logLine("check %d: waiting: %s", checks, a.Waiting)
			said = a.Waiting
		}
		ti.State = StateWaitingDepend
		ip.changed = true
		if !deadline.IsZero() && !workflow.Now(ctx).Add(every).Before(deadline) {
			logLine("check %d: still waiting; the timeout of %s passed", checks, t.Timeout.After.Std())
			return nil, workflow.NewError(ErrorTimeout,
				fmt.Sprintf("%s: still waiting: %s", timeoutMessage(t.Timeout), a.Waiting), true)
		}
		if err := workflow.Sleep(ctx, every); err != nil {
			return nil, err
		}
	}
}
