package dag

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/task"
	"github.com/strandhq/strand/workflow"
)

// Error types of the task types of issue 35.
const (
	// ErrorTenant: a task's tenant does not exist, its OS user does not
	// exist on the worker, or the worker may not run tasks as it. It is
	// not retried.
	ErrorTenant = "strand.dag.tenant"
)

// runProcess runs a task that runs a process (shell, python, and the
// big-data types, whose command line runs as a shell script): as its
// tenant's OS user when it names a tenant, with STRAND_TENANT and
// STRAND_QUEUE in its environment.
func (r *TaskRunner) runProcess(ctx context.Context, t Task, log io.Writer) (TaskResult, error) {
	user, queue, err := r.tenantOf(ctx, t)
	if err != nil {
		return TaskResult{}, err
	}
	env := maps.Clone(t.Env)
	if env == nil {
		env = map[string]string{}
	}
	if t.Tenant != "" {
		env["STRAND_TENANT"] = t.Tenant
	}
	if queue != "" {
		env["STRAND_QUEUE"] = queue
	}
	sh := task.Shell{Script: t.Script, Env: env, WorkDir: r.WorkDir, Dir: taskDir(ctx), User: user}
	tools := r.Tools.WithDefaults(os.Getenv)
	var sr task.ShellResult
	switch t.Type {
	case TypeShell:
		sr, err = task.RunShell(ctx, sh, log)
	case TypePython:
		sr, err = task.RunPython(ctx, task.Python{Shell: sh, Interpreter: tools.Python}, log)
	default:
		var line string
		sh.Script, line, err = bigDataScript(t, queue, tools)
		if err != nil {
			return TaskResult{}, err
		}
		fmt.Fprintf(log, "command: %s\n", line)
		sr, err = task.RunShell(ctx, sh, log)
	}
	return TaskResult{ExitCode: sr.ExitCode, PID: sr.PID, Outputs: pick(t.Outputs, sr.Outputs)}, err
}

// bigDataScript is the shell script of a big-data task and its command
// line, built from the task's fields.
func bigDataScript(t Task, queue string, tools task.Tools) (script, line string, err error) {
	prog := task.Program{Type: t.ProgramType, MainClass: t.MainClass, MainJar: t.MainJar, AppName: t.AppName,
		MainArgs: t.MainArgs, Others: t.Others, Queue: queue}
	var cmd task.Command
	switch t.Type {
	case TypeSpark:
		cmd = task.Spark{Program: prog, DeployMode: t.DeployMode, DriverCores: t.DriverCores, DriverMemory: t.DriverMemory,
			NumExecutors: t.NumExecutors, ExecutorCores: t.ExecutorCores, ExecutorMemory: t.ExecutorMemory}.Command(tools.SparkSubmit)
	case TypeFlink:
		cmd = task.Flink{Program: prog, DeployMode: t.DeployMode, Slots: t.Slots, TaskManagers: t.TaskManagers,
			JobManagerMem: t.JobManagerMem, TaskManagerMem: t.TaskManagerMem, Parallelism: t.Parallelism}.Command(tools.Flink)
	case TypeMR:
		cmd = task.MapReduce{Program: prog}.Command(tools.Hadoop)
	case TypeSqoop:
		cmd = task.Sqoop{Mode: t.Mode, Connect: t.Connect, Username: t.Username, PasswordFile: t.PasswordFile, Table: t.Table,
			Columns: t.Columns, Where: t.Where, Query: t.SQL, SplitBy: t.SplitBy, Mappers: t.Mappers, TargetDir: t.TargetDir,
			DeleteTargetDir: t.DeleteTargetDir, HiveTable: t.HiveTable, ExportDir: t.ExportDir, FieldsTerminatedBy: t.FieldsTerminatedBy,
			UpdateKey: t.UpdateKey, UpdateMode: t.UpdateMode, AppName: t.AppName, Queue: queue, Others: t.Others}.Command(tools.Sqoop)
	case TypeDataX:
		if !json.Valid([]byte(t.Job)) {
			return "", "", workflow.NewError(ErrorInvalid, fmt.Sprintf("task %s: the DataX job, its parameters expanded, is not JSON", t.Name), true)
		}
		d := task.DataX{Job: t.Job, Xms: t.Xms, Xmx: t.Xmx}
		return d.Script(tools.Python, tools.DataX), d.Command(tools.Python, tools.DataX).String(), nil
	default:
		return "", "", workflow.NewError(ErrorInvalid, fmt.Sprintf("task type %q runs no command", t.Type), true)
	}
	line = cmd.String()
	return "exec " + line + "\n", line, nil
}

// tenantOf returns the OS user a task runs as (nil: the worker's own) and
// the queue it carries. A tenant that does not exist, an OS user missing
// on this worker, or a tenant this worker may not run as fails the task
// for good: another attempt would fail the same way.
func (r *TaskRunner) tenantOf(ctx context.Context, t Task) (*task.User, string, error) {
	if t.Tenant == "" {
		return nil, t.Queue, nil
	}
	worker := r.Identity
	if worker == "" {
		worker, _ = os.Hostname()
	}
	if r.Tenants == nil {
		return nil, "", workflow.NewError(ErrorTenant, fmt.Sprintf("task %s runs as tenant %s, and worker %s cannot look tenants up", t.Name, t.Tenant, worker), true)
	}
	ten, err := r.Tenants(ctx, t.Tenant)
	if errors.Is(err, api.ErrNotFound) {
		return nil, "", workflow.NewError(ErrorTenant, fmt.Sprintf("task %s runs as tenant %s, which does not exist (strand tenant create %s --user OS_USER)",
			t.Name, t.Tenant, t.Tenant), true)
	}
	if err != nil {
		return nil, "", fmt.Errorf("tenant %s: %w", t.Tenant, err)
	}
	if !r.AllTenants && !slices.Contains(r.RunAs, ten.Name) {
		return nil, "", workflow.NewError(ErrorTenant, fmt.Sprintf("worker %s may not run tasks as tenant %s (OS user %s): start it with --tenant %s or --run-as-tenants",
			worker, ten.Name, ten.User, ten.Name), true)
	}
	u, err := task.LookupUser(ten.User)
	var unknown *task.UnknownUserError
	if errors.As(err, &unknown) {
		return nil, "", workflow.NewError(ErrorTenant, fmt.Sprintf("tenant %s runs as OS user %s, which does not exist on worker %s", ten.Name, ten.User, worker), true)
	}
	if err != nil {
		return nil, "", fmt.Errorf("tenant %s: %w", ten.Name, err)
	}
	return u, cmp.Or(t.Queue, ten.Queue), nil
}

// runProcedure calls a procedure task's stored procedure on its data
// source, found as a sql task's is.
func (r *TaskRunner) runProcedure(ctx context.Context, t Task, log io.Writer) (TaskResult, error) {
	if r.DataSources == nil {
		return TaskResult{}, workflow.NewError("strand.dag.datasource", fmt.Sprintf("data source %q: this worker has none", t.DataSource), true)
	}
	args := make([]task.ProcedureArg, len(t.Args))
	for i, a := range t.Args {
		args[i] = task.ProcedureArg{In: a.In, Out: a.Out}
	}
	pr, err := task.RunProcedure(ctx, r.DataSources, task.Procedure{DataSource: t.DataSource, Name: t.Procedure, Args: args}, log)
	var unknown *task.UnknownDataSourceError
	if errors.As(err, &unknown) || errors.Is(err, task.ErrNoProcedures) {
		err = workflow.NewError("strand.dag.datasource", err.Error(), true)
	}
	return TaskResult{Outputs: pr.Outputs}, err
}
