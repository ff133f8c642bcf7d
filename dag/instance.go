package dag

import (
	"time"

	"github.com/strandhq/strand/api"
)

// RunInput starts an instance: the run of WorkflowType that interprets a
// definition.
type RunInput struct {
	// DAG names the definition; Version pins one (0: the current version
	// at start).
	DAG     string `json:"dag"`
	Version int32  `json:"version,omitempty"`
	// Params are start parameters: they override the global parameters
	// of the same name.
	Params map[string]string `json:"params,omitempty"`
	// The instance's options, over the definition's (a schedule's
	// options carry them): empty fields leave the definition's.
	FailureStrategy FailureStrategy `json:"failure_strategy,omitempty"`
	Warning         *Warning        `json:"warning,omitempty"`
	WorkerGroup     string          `json:"worker_group,omitempty"`
	Priority        Priority        `json:"priority,omitempty"`
	// StartFrom starts at these tasks: the tasks they do not depend on
	// count as succeeded (DolphinScheduler's "start from current node").
	StartFrom []string `json:"start_from,omitempty"`
	// Previous are the tasks of an earlier instance: those that succeeded
	// keep their outcome and outputs and do not run again (start from the
	// failed nodes).
	Previous []TaskInstance `json:"previous,omitempty"`
	// ScheduleTime is the business time the time expressions count from;
	// zero: the schedule's fire time, or the instance's start.
	ScheduleTime time.Time `json:"schedule_time,omitzero"`
	// TimeZone is the IANA time zone (such as Asia/Shanghai) the business
	// dates, time expressions and system parameters are computed in: a
	// schedule's zone; empty: UTC.
	TimeZone string `json:"time_zone,omitempty"`
}

// BusinessTime returns at in the instance's time zone: the time its
// business dates, time expressions and system parameters count from.
// Without a zone, at is as given (a schedule's fire time is in UTC).
func (in RunInput) BusinessTime(at time.Time) (time.Time, error) {
	if in.TimeZone == "" {
		return at, nil
	}
	loc, err := loadZone(in.TimeZone)
	if err != nil {
		return time.Time{}, err
	}
	return at.In(loc), nil
}

// loadZone returns the IANA time zone name, refusing the machine's own
// ("Local"), which differs from one worker to the next.
func loadZone(name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return nil, api.InvalidArgument("time_zone", "%q is not an IANA time zone (such as Asia/Shanghai or UTC)", name)
	}
	return loc, nil
}

// Check reports the first invalid option of in, as an invalid argument.
func (in RunInput) Check() error {
	switch {
	case in.DAG == "":
		return api.InvalidArgument("dag", "empty")
	case !in.FailureStrategy.valid():
		return api.InvalidArgument("failure_strategy", "%q: want end, finish_running or continue", in.FailureStrategy)
	case in.Priority != "" && in.Priority.level() == 0:
		return api.InvalidArgument("priority", "%q: want highest, high, medium, low or lowest", in.Priority)
	}
	if in.TimeZone != "" {
		if _, err := loadZone(in.TimeZone); err != nil {
			return err
		}
	}
	if w := in.Warning; w != nil {
		switch w.Type {
		case "", WarnNone:
		case WarnSuccess, WarnFailure, WarnAll:
			if w.Group == "" {
				return api.InvalidArgument("warning.group", "warning type %s needs an alert group", w.Type)
			}
		default:
			return api.InvalidArgument("warning.type", "%q: want none, success, failure or all", w.Type)
		}
	}
	return nil
}

// valid reports whether s is a failure strategy, or empty.
func (s FailureStrategy) valid() bool {
	switch s {
	case "", FailureEnd, FailureContinue, FailureFinishRunning:
		return true
	}
	return false
}

// Instance is what an instance is and has done: its query answers it while
// it runs, and it is the run's output (or its failure's details) once it
// closed.
type Instance struct {
	DAG          string    `json:"dag"`
	Version      int32     `json:"version"`
	State        State     `json:"state"`
	ScheduleTime time.Time `json:"schedule_time"`
	StartTime    time.Time `json:"start_time"`
	EndTime      time.Time `json:"end_time,omitzero"`
	// Params are the global parameters as resolved for this instance.
	Params          map[string]string `json:"params,omitempty"`
	FailureStrategy FailureStrategy   `json:"failure_strategy"`
	Tasks           []TaskInstance    `json:"tasks"`
	// Definition is the definition's text the instance runs (its pinned
	// version).
	Definition string `json:"definition,omitempty"`
	Error      string `json:"error,omitempty"`
}

// TaskInstance is one task of an instance.
type TaskInstance struct {
	Name string   `json:"name"`
	Type TaskType `json:"type"`
	// State is empty while the task is not reached (its upstream tasks
	// have not all ended).
	State   State `json:"state,omitempty"`
	Attempt int32 `json:"attempt,omitempty"`
	// SubmitTime is when the instance launched the task; StartTime and
	// EndTime when its last attempt ran (by its worker's clock, for the
	// task types a worker group runs).
	SubmitTime time.Time         `json:"submit_time,omitzero"`
	StartTime  time.Time         `json:"start_time,omitzero"`
	EndTime    time.Time         `json:"end_time,omitzero"`
	Outputs    map[string]string `json:"outputs,omitempty"`
	Error      string            `json:"error,omitempty"`
	// Host and PID say where the last attempt ran (shell tasks have a
	// PID).
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Child is the workflow id of a sub-process's instance.
	Child string `json:"child,omitempty"`
	// Branch is the task a conditions or switch task chose.
	Branch []string `json:"branch,omitempty"`
	// Warned says a warn timeout fired.
	Warned bool `json:"warned,omitempty"`
	// LogTail is the end of a stopped task's log, as its last heartbeat
	// carried it (a killed attempt's result never comes back).
	LogTail string `json:"log_tail,omitempty"`

	// Honest states (issue 35 items 3, 4): where a launched task waits
	// for a worker. WorkerGroup is the worker group of the task types a
	// group runs; Queue is the task queue a worker of it polls (a step
	// task's own queue). A submitted task waits there until a worker
	// starts it.
	WorkerGroup string `json:"worker_group,omitempty"`
	Queue       string `json:"queue,omitempty"`
	// Attempts are every attempt of the task, first to last (Attempt is
	// the last one's number).
	Attempts []TaskAttempt `json:"attempts,omitempty"`
}

// TaskAttempt is one attempt of a task: where and when it ran and how it
// ended. The log of an attempt a worker ran is kept with its result in
// the run's history (Client.Log reads it); Log holds the log of the task
// types the instance runs itself (sub_process, dependent, conditions,
// switch), and the end of the log of an attempt whose result never came
// back (stopped, or past its timeout with its worker silent), as its last
// heartbeat carried it.
type TaskAttempt struct {
	Attempt int32 `json:"attempt"`
	// State is running, success, failure or stop.
	State     State     `json:"state"`
	Host      string    `json:"host,omitempty"`
	PID       int       `json:"pid,omitempty"`
	StartTime time.Time `json:"start_time,omitzero"`
	EndTime   time.Time `json:"end_time,omitzero"`
	ExitCode  int       `json:"exit_code,omitempty"`
	Error     string    `json:"error,omitempty"`
	// TimedOut says the attempt ran past the task's timeout.
	TimedOut bool   `json:"timed_out,omitempty"`
	Log      string `json:"log,omitempty"`
}

// State is an instance's or a task's state, DolphinScheduler's names.
type State string

// States. docs/storage.md maps them to the kernel's run and step states.
const (
	// StateNone is a task not reached yet: its upstream tasks have not
	// all ended (DolphinScheduler has no task instance for it yet).
	StateNone State = ""
	// StateSubmitted is an instance before its definition is read, and a
	// task launched and waiting for a worker of its group to start it.
	StateSubmitted      State = "submitted"
	StateRunning        State = "running"
	StateReadyPause     State = "ready_pause"
	StatePaused         State = "paused"
	StateReadyStop      State = "ready_stop"
	StateStopped        State = "stop"
	StateFailure        State = "failure"
	StateSuccess        State = "success"
	StateFaultTolerance State = "need_fault_tolerance"
	StateKill           State = "kill"
	StateWaitingThread  State = "waiting_thread"
	StateWaitingDepend  State = "waiting_dependency"
	// StateForbidden is a forbidden task: skipped, its dependants run.
	StateForbidden State = "forbidden"
	// StateSkipped is a task on a branch not taken, or below a failure.
	StateSkipped State = "skipped"
	// StateNotRun is a task that never ran: its instance ended (failed
	// under failure strategy end or finish_running, or was stopped)
	// before a worker started it.
	StateNotRun State = "not_run"
)

// done reports whether a task in state s has ended.
func (s State) done() bool {
	switch s {
	case StateSuccess, StateFailure, StateForbidden, StateSkipped, StateStopped, StateKill, StateNotRun:
		return true
	}
	return false
}

// passes reports whether a task in state s lets its dependants run.
func (s State) passes() bool { return s == StateSuccess || s == StateForbidden }

// Signals and queries of an instance's run.
const (
	// SignalCommand carries a Command.
	SignalCommand = "strand.dag.command"
	// QueryInstance answers the Instance.
	QueryInstance = "strand.dag.instance"
)

// Command is what a signal asks of a running instance.
type Command struct {
	// Action is pause, resume or stop.
	Action string `json:"action"`
}

// Commands.
const (
	ActionPause  = "pause"
	ActionResume = "resume"
	ActionStop   = "stop"
)

// Attributes of an instance's run, for lists: the DAG's name (set at
// start), the version and business date (yyyyMMdd; set once the definition
// is read) and the instance's state (set as it changes).
const (
	AttrDAG     = "strand.dag"
	AttrVersion = "strand.dag.version"
	AttrDate    = "strand.dag.date"
	AttrState   = "strand.dag.state"
)
