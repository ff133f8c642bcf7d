// Package dag runs data pipelines as DolphinScheduler's users define them:
// a process definition is a directed acyclic graph of typed tasks (shell
// scripts, HTTP calls, SQL statements, sub-processes, branches, waits on
// other pipelines, Go steps), written in YAML or JSON, stored in versions,
// started by hand or from a schedule.
//
// A DAG is a front end above the kernel: an instance is a run of the
// workflow WorkflowType, whose interpreter is built in, and each task is a
// step of that run on the task queue of its worker group. So an instance
// survives crashes, moves with its shard and shows in the console like any
// other run; the engine knows nothing of DAGs. strand worker runs the
// interpreter and the built-in task types for a worker group.
package dag

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Definition is a process definition: the tasks of a pipeline and how an
// instance of it runs.
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Params are the global parameters, by name. A value may refer to
	// other parameters (${name}) and to the instance's time ($[yyyyMMdd]).
	Params map[string]string `json:"params,omitempty"`
	Tasks  []Task            `json:"tasks"`
	// FailureStrategy says what a failed task does to the others.
	FailureStrategy FailureStrategy `json:"failure_strategy,omitempty"`
	// Timeout bounds a whole instance; 0 is none.
	Timeout Duration `json:"timeout,omitempty"`
	// Warning says on which outcomes an alert goes to which group.
	Warning Warning `json:"warning,omitzero"`
	// WorkerGroup is the default worker group of the tasks ("default").
	WorkerGroup string `json:"worker_group,omitempty"`
	// Priority is the default priority of the tasks.
	Priority Priority `json:"priority,omitempty"`

	// Tenants (issue 35): Tenant names the tenant whose OS user runs the
	// tasks that run processes, unless a task names its own.
	Tenant string `json:"tenant,omitempty"`
	// tenantRefs are the tenants the definition names, each at its place
	// in the file, for Apply's warnings.
	tenantRefs []reference

	// refs are the other DAGs the tasks name (sub_process and dependent),
	// each at its place in the file, for Apply's warnings.
	refs []reference

	// Worker groups without a worker (issue 35 item 3): the place of each
	// field in the file ("tasks[2].worker_group"), for the warnings of
	// apply and run.
	pos map[string]Pos

	// uses are the resources, UDFs and data sources the tasks name, each
	// at its place, for Apply's checks of the applying user's rights.
	uses []use
}

// reference is a task's naming of another DAG.
type reference struct {
	dag   string
	field string
	pos   Pos
	// what the task does with it, for the warning ("run as a sub-process").
	what string
}

// FailureStrategy says what the first failed task does to the instance.
type FailureStrategy string

// Failure strategies: DolphinScheduler's two, and one that ends the
// instance without killing what runs.
const (
	// FailureEnd is DolphinScheduler's end: the first failure kills the
	// tasks running (they end kill; the ones no worker started yet end
	// not_run), no new task starts, and the instance fails.
	FailureEnd FailureStrategy = "end"
	// FailureFinishRunning launches no new task after the first failure;
	// the tasks a worker runs finish, those no worker started yet end
	// not_run, then the instance fails (what end did before it killed).
	FailureFinishRunning FailureStrategy = "finish_running"
	// FailureContinue runs every branch that does not depend on the
	// failed task; the instance fails at the end.
	FailureContinue FailureStrategy = "continue"
)

// Warning says when an instance alerts.
type Warning struct {
	Type WarningType `json:"type,omitempty"`
	// Group names the alert group (a webhook and its retries) to call.
	Group string `json:"group,omitempty"`
}

// WarningType is on which outcomes an alert is sent.
type WarningType string

// Warning types, DolphinScheduler's four.
const (
	WarnNone    WarningType = "none"
	WarnSuccess WarningType = "success"
	WarnFailure WarningType = "failure"
	WarnAll     WarningType = "all"
)

// Priority is one of five levels, DolphinScheduler's process and task
// instance priority.
type Priority string

// Priorities, highest first.
const (
	PriorityHighest Priority = "highest"
	PriorityHigh    Priority = "high"
	PriorityMedium  Priority = "medium"
	PriorityLow     Priority = "low"
	PriorityLowest  Priority = "lowest"
)

// level is the kernel's priority of p (1 highest to 5 lowest; 0 normal).
func (p Priority) level() int8 {
	switch p {
	case PriorityHighest:
		return 1
	case PriorityHigh:
		return 2
	case PriorityMedium:
		return 3
	case PriorityLow:
		return 4
	case PriorityLowest:
		return 5
	}
	return 0
}

// Task is a node of the graph.
type Task struct {
	Name        string   `json:"name"`
	Type        TaskType `json:"type"`
	Description string   `json:"description,omitempty"`
	// Upstream names the tasks this one waits for.
	Upstream []string `json:"upstream,omitempty"`
	// Retries is how many times a failed task runs again, RetryInterval
	// apart.
	Retries       int      `json:"retries,omitempty"`
	RetryInterval Duration `json:"retry_interval,omitempty"`
	// Timeout bounds one attempt; its action says whether the task then
	// fails or only warns.
	Timeout     *TaskTimeout `json:"timeout,omitempty"`
	Priority    Priority     `json:"priority,omitempty"`
	WorkerGroup string       `json:"worker_group,omitempty"`
	// Forbidden skips the task: its dependants run as if it succeeded.
	Forbidden bool `json:"forbidden,omitempty"`
	// LocalParams are the task's own parameters, over the global ones.
	LocalParams map[string]string `json:"local_params,omitempty"`
	// Outputs are the output parameters the task sets for the tasks
	// downstream: for shell, names set by ${setValue(name=value)} lines;
	// for http, a JSONPath into the answer; for sql, a column of the
	// first row.
	Outputs map[string]string `json:"outputs,omitempty"`

	// shell
	Script string            `json:"script,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	// http
	Method          string            `json:"method,omitempty"`
	URL             string            `json:"url,omitempty"`
	Headers         map[string]string `json:"headers,omitempty"`
	Body            string            `json:"body,omitempty"`
	ExpectStatus    []int             `json:"expect_status,omitempty"`
	BodyContains    string            `json:"body_contains,omitempty"`
	BodyNotContains string            `json:"body_not_contains,omitempty"`
	// sql
	DataSource string   `json:"datasource,omitempty"`
	SQL        string   `json:"sql,omitempty"`
	Pre        []string `json:"pre,omitempty"`
	Post       []string `json:"post,omitempty"`
	Query      bool     `json:"query,omitempty"`
	// sub_process
	DAG     string `json:"dag,omitempty"`
	Version int32  `json:"version,omitempty"`
	// conditions: the branch taken when When holds, and the other one.
	When    *Condition `json:"when,omitempty"`
	Success []string   `json:"success,omitempty"`
	Failure []string   `json:"failure,omitempty"`
	// switch: the first case whose expression holds, else Default.
	Cases   []SwitchCase `json:"cases,omitempty"`
	Default string       `json:"default,omitempty"`
	// dependent
	Depends       []Dependency `json:"depends,omitempty"`
	CheckInterval Duration     `json:"check_interval,omitempty"`
	// step: a Go step registered on a worker of Queue. For the task types
	// that run processes (shell, python, spark, flink, mr, datax, sqoop),
	// Queue is the (YARN) queue the task carries, default its tenant's.
	Step  string          `json:"step,omitempty"`
	Queue string          `json:"queue,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	// Tenants, python, procedure and big-data tasks (issue 35); their
	// parsing and checks are in tasktypes.go.
	// Tenant names the tenant whose OS user runs the task's processes
	// (default the definition's).
	Tenant string `json:"tenant,omitempty"`
	// procedure: a stored procedure of DataSource called with Args.
	Procedure string         `json:"procedure,omitempty"`
	Args      []ProcedureArg `json:"args,omitempty"`
	// spark, flink, mr: the program and its resources.
	ProgramType    string `json:"program_type,omitempty"`
	MainClass      string `json:"main_class,omitempty"`
	MainJar        string `json:"main_jar,omitempty"`
	DeployMode     string `json:"deploy_mode,omitempty"`
	AppName        string `json:"app_name,omitempty"`
	DriverCores    int    `json:"driver_cores,omitempty"`
	DriverMemory   string `json:"driver_memory,omitempty"`
	NumExecutors   int    `json:"num_executors,omitempty"`
	ExecutorCores  int    `json:"executor_cores,omitempty"`
	ExecutorMemory string `json:"executor_memory,omitempty"`
	Slots          int    `json:"slots,omitempty"`
	TaskManagers   int    `json:"task_managers,omitempty"`
	JobManagerMem  string `json:"job_manager_memory,omitempty"`
	TaskManagerMem string `json:"task_manager_memory,omitempty"`
	Parallelism    int    `json:"parallelism,omitempty"`
	// MainArgs and Others are command-line text as written in bash: the
	// program's arguments, and more options of the tool.
	MainArgs string `json:"main_args,omitempty"`
	Others   string `json:"others,omitempty"`
	// datax: the job (JSON) and the JVM's heap in GB.
	Job string `json:"job,omitempty"`
	Xms int    `json:"xms,omitempty"`
	Xmx int    `json:"xmx,omitempty"`
	// sqoop: an import into HDFS (or Hive) or an export from HDFS; a
	// free-form import query is SQL.
	Mode               string   `json:"mode,omitempty"`
	Connect            string   `json:"connect,omitempty"`
	Username           string   `json:"username,omitempty"`
	PasswordFile       string   `json:"password_file,omitempty"`
	Table              string   `json:"table,omitempty"`
	Columns            []string `json:"columns,omitempty"`
	Where              string   `json:"where,omitempty"`
	SplitBy            string   `json:"split_by,omitempty"`
	Mappers            int      `json:"mappers,omitempty"`
	TargetDir          string   `json:"target_dir,omitempty"`
	DeleteTargetDir    bool     `json:"delete_target_dir,omitempty"`
	ExportDir          string   `json:"export_dir,omitempty"`
	HiveTable          string   `json:"hive_table,omitempty"`
	FieldsTerminatedBy string   `json:"fields_terminated_by,omitempty"`
	UpdateKey          string   `json:"update_key,omitempty"`
	UpdateMode         string   `json:"update_mode,omitempty"`

	// Resource centre (issue 35 item 11). Resources are fetched into the
	// task's working directory before it runs, each at its name's path:
	// NAME (the latest version when the task runs) or NAME@VERSION. UDFs
	// (sql tasks) are created in the task's session before its statements.
	Resources []string `json:"resources,omitempty"`
	UDFs      []string `json:"udfs,omitempty"`
}

// TaskType is the kind of a task.
type TaskType string

// Task types.
const (
	TypeShell      TaskType = "shell"
	TypeHTTP       TaskType = "http"
	TypeSQL        TaskType = "sql"
	TypeSubProcess TaskType = "sub_process"
	TypeConditions TaskType = "conditions"
	TypeSwitch     TaskType = "switch"
	TypeDependent  TaskType = "dependent"
	TypeStep       TaskType = "step"

	// Python, procedure and big-data task types (issue 35).
	TypePython    TaskType = "python"
	TypeProcedure TaskType = "procedure"
	TypeSpark     TaskType = "spark"
	TypeFlink     TaskType = "flink"
	TypeMR        TaskType = "mr"
	TypeDataX     TaskType = "datax"
	TypeSqoop     TaskType = "sqoop"
)

// TaskTimeout bounds one attempt of a task.
type TaskTimeout struct {
	After  Duration      `json:"after"`
	Action TimeoutAction `json:"action,omitempty"`
}

// TimeoutAction is what a task's timeout does.
type TimeoutAction string

// Timeout actions.
const (
	// TimeoutFail stops the attempt and fails it (it may be retried); a
	// task_timeout alert goes out when the definition's warning type
	// sends failure alerts (failure, all).
	TimeoutFail TimeoutAction = "fail"
	// TimeoutWarn sends an alert and lets the task run on.
	TimeoutWarn TimeoutAction = "warn"
	// TimeoutWarnFail does both, DolphinScheduler's "warn and fail": it
	// sends a task_timeout alert whatever the definition's warning type,
	// and stops and fails the attempt (it may be retried).
	TimeoutWarnFail TimeoutAction = "warnfail"
)

// kills reports whether the timeout stops the attempt (fail, warnfail).
func (to *TaskTimeout) kills() bool {
	return to != nil && (to.Action == TimeoutFail || to.Action == TimeoutWarnFail)
}

// Condition is what a conditions task checks of the upstream tasks'
// outcomes: all of them (relation "and", the default) or any.
type Condition struct {
	Relation string        `json:"relation,omitempty"`
	Tasks    []TaskOutcome `json:"tasks"`
}

// TaskOutcome is one test of a condition: the task ended in State
// ("success" or "failure").
type TaskOutcome struct {
	Task  string `json:"task"`
	State string `json:"state"`
}

// SwitchCase is a branch of a switch task: Next runs when When, an
// expression over the parameters, holds.
type SwitchCase struct {
	When string `json:"when"`
	Next string `json:"next"`
}

// Dependency is what a dependent task waits for: an instance of another
// definition (and, when Task is set, that task in it) succeeded for the
// same business date as this instance, or for the date Date names (a time
// expression such as $[yyyyMMdd-1]).
type Dependency struct {
	DAG  string `json:"dag"`
	Task string `json:"task,omitempty"`
	Date string `json:"date,omitempty"`
}

// Duration is a time.Duration written as Go writes one ("90s", "1h30m").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("want a duration such as 90s or 1h30m, got %q", b)
	}
	if v < 0 {
		return fmt.Errorf("a duration may not be negative, got %q", b)
	}
	*d = Duration(v)
	return nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// group returns the task's worker group.
func (t *Task) group(def *Definition) string {
	switch {
	case t.WorkerGroup != "":
		return t.WorkerGroup
	case def.WorkerGroup != "":
		return def.WorkerGroup
	}
	return DefaultGroup
}

// DefaultGroup is the worker group of tasks that name none.
const DefaultGroup = "default"

// GroupQueue is the task queue of worker group g: what strand worker
// --group g polls for the built-in task types.
func GroupQueue(g string) string { return "dag." + g }

// Queue is the task queue of the interpreter: the runs of WorkflowType.
// Every strand worker polls it, whatever its group.
const Queue = "strand.dag"

// WorkflowType is the type of a DAG instance's run.
const WorkflowType = "strand.DAG"
