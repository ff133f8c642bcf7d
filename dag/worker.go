package dag

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/task"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Service is what the interpreter's steps and the client need of
// Strand: runs and the stored definitions.
type Service = api.FrontEndService

// Register registers the interpreter and its steps on w, a worker of
// Queue.
func Register(w *worker.Worker, svc Service) {
	worker.RegisterWorkflowNamed(w, WorkflowType, Run)
	worker.RegisterWorkflowNamed(w, BackfillWorkflowType, RunBackfill)
	s := &interpreterSteps{svc: svc, catalog: NewCatalog(svc)}
	worker.RegisterStepNamed(w, stepResolve, s.resolve)
	worker.RegisterStepNamed(w, stepDependency, s.dependency)
	// Alerts go to the system queue, where strand server delivers them
	// with its SMTP settings; one an instance scheduled here before an
	// upgrade is still delivered (its webhook; email needs the server).
	worker.RegisterStepNamed(w, stepAlert, NewAlerter(svc, AlertOptions{}).step)
	worker.RegisterStepNamed(w, stepTails, s.tails)
	worker.RegisterStepNamed(w, stepPending, s.pending)
}

// tails reads the end of the logs of running tasks from their last
// heartbeats.
func (s *interpreterSteps) tails(ctx context.Context, in TailsRequest) (map[string]TaskLog, error) {
	c := NewClient(s.svc, step.GetInfo(ctx).Run.Namespace)
	out := map[string]TaskLog{}
	for _, name := range in.Tasks {
		if l, err := c.Log(ctx, in.Instance, name); err == nil && l.Running {
			out[name] = l
		}
	}
	return out, nil
}

type interpreterSteps struct {
	svc     Service
	catalog *Catalog
}

func (s *interpreterSteps) resolve(ctx context.Context, in RunInput) (Resolved, error) {
	r, err := s.catalog.resolve(ctx, in)
	switch {
	case errors.Is(err, ErrOffline), errors.Is(err, api.ErrNotFound):
		return r, workflow.NewError(ErrorInvalid, err.Error(), true)
	}
	return r, err
}

// dependency checks each dependency: the latest instance of its DAG for
// the business date must have succeeded (and, with a task named, that
// task).
func (s *interpreterSteps) dependency(ctx context.Context, in DependencyCheck) (DependencyAnswer, error) {
	for _, d := range in.Depends {
		date := in.Date
		if d.Date != "" {
			date = d.Date
		}
		ok, failed, err := s.instanceFor(ctx, d, date)
		if err != nil {
			return DependencyAnswer{}, err
		}
		if failed {
			return DependencyAnswer{Failed: fmt.Sprintf("the instance of %s for %s failed", d.DAG, date)}, nil
		}
		if !ok {
			return DependencyAnswer{Waiting: fmt.Sprintf("no instance of %s for %s has succeeded yet", d.DAG, date)}, nil
		}
	}
	return DependencyAnswer{Done: true}, nil
}

// instanceFor looks at the newest instance of d.DAG for the business
// date (its runs' attributes say the date and the state).
func (s *interpreterSteps) instanceFor(ctx context.Context, d Dependency, date string) (ok, failed bool, err error) {
	info := step.GetInfo(ctx)
	page, err := s.svc.ListWorkflows(ctx, api.ListRequest{Namespace: info.Run.Namespace, WorkflowType: WorkflowType,
		BusinessKey: d.DAG, Attributes: map[string]string{AttrDate: date}, PageSize: 1})
	if err != nil || len(page.Runs) == 0 {
		return false, false, err
	}
	r := page.Runs[0]
	state := State(r.Attributes[AttrState])
	if d.Task != "" {
		inst, err := InstanceOf(ctx, s.svc, r)
		if err != nil || inst == nil {
			return false, false, err
		}
		state = ""
		for _, t := range inst.Tasks {
			if t.Name == d.Task {
				state = t.State
			}
		}
	}
	switch state {
	case StateSuccess:
		return true, false, nil
	case StateFailure, StateStopped, StateKill, StateSkipped:
		return false, r.Status != store.StatusRunning || d.Task != "", nil
	}
	if r.Status == store.StatusTerminated {
		return false, true, nil
	}
	return false, false, nil
}

// InstanceOf returns what a run of WorkflowType is and did: while it runs,
// as its run's memo keeps it (no worker needed); its output or its
// failure's details once closed. A run that was terminated, or never
// resolved its definition, has none: nil.
func InstanceOf(ctx context.Context, svc api.Service, r store.VisibilityRecord) (*Instance, error) {
	if r.Status == store.StatusRunning {
		d, err := svc.DescribeWorkflow(ctx, api.RunRef{Namespace: r.Namespace, WorkflowID: r.WorkflowID, RunID: r.RunID})
		if err != nil {
			return nil, err
		}
		if d.Status == store.StatusRunning {
			return runningInstance(ctx, svc, d)
		}
		r.Status = d.Status // it closed since the list was read
	}
	res, err := svc.WaitResult(ctx, api.ResultRequest{RunRef: api.RunRef{Namespace: r.Namespace, WorkflowID: r.WorkflowID, RunID: r.RunID}})
	if err != nil {
		return nil, err
	}
	raw := []byte(res.Output)
	if res.Failure != nil {
		raw = []byte(res.Failure.Details)
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var inst Instance
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, err
	}
	if res.Status == store.StatusTerminated {
		inst.State = StateKill
	}
	return &inst, nil
}

// TaskRunner runs the built-in task types for a worker group: register it
// on a worker of GroupQueue(group).
type TaskRunner struct {
	// Identity names the worker in task instances (their host).
	Identity string
	// DataSources are the databases sql tasks may name.
	DataSources *task.DataSources
	// WorkDir is where shell tasks get their working directories.
	WorkDir string
	// HTTP is the client of http tasks (default: http.DefaultClient).
	HTTP *http.Client

	// Issue 35: tenants, python and big-data tasks.
	// Tenants looks a tenant up (Catalog.Tenant); nil fails the tasks
	// that name one.
	Tenants func(ctx context.Context, name string) (Tenant, error)
	// RunAs names the tenants whose OS users this worker may run tasks
	// as; AllTenants allows every tenant. Switching users needs root.
	RunAs      []string
	AllTenants bool
	// Tools are the programs of python and big-data tasks; blanks are
	// found as Tools.WithDefaults finds them.
	Tools task.Tools

	// Centre is the server's resource centre: the resources tasks name are
	// fetched from it into their working directories before they run
	// (nil: a task naming one fails).
	Centre Centre
	// ResourceCache is where fetched resources are kept by content hash
	// (default WorkDir/strand-resource-cache).
	ResourceCache string
}

// RegisterTasks registers the built-in task types on w, a worker of a
// group's queue.
func RegisterTasks(w *worker.Worker, r *TaskRunner) {
	worker.RegisterStepNamed(w, StepTask, r.run)
}

// MaxLog bounds the log a task's result keeps: its first and last halves
// when it grew past it. A result over the store's document threshold is
// kept as a document.
const MaxLog = 4 << 20

// tailSize is how much of a running task's log each heartbeat carries.
const tailSize = 32 << 10

// errTaskTimeout is the cause of the context of an attempt that ran past
// its task's timeout.
var errTaskTimeout = errors.New("the task ran past its timeout")

// ErrorTimeout is the failure type of an attempt stopped by its task's
// timeout (action fail or warnfail).
const ErrorTimeout = "strand.dag.task_timeout"

func (r *TaskRunner) run(ctx context.Context, req TaskRequest) (TaskResult, error) {
	started := time.Now()
	log := newTaskLog()
	stop := step.HeartbeatEvery(ctx, heartbeatEvery, func() any { return log.tail() })
	tctx := ctx
	if to := req.Task.Timeout; to.kills() {
		// The worker enforces the task's timeout itself, so that the
		// attempt's log, host and pid come back with its failure; the
		// step's own timeout, a little longer, is the backstop.
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeoutCause(ctx, to.After.Std(), errTaskTimeout)
		defer cancel()
	}
	var (
		res TaskResult
		err error
	)
	if len(req.Task.Resources) > 0 {
		// Whatever its type, a task gets its resources in its working
		// directory before it runs.
		var dir string
		if dir, err = r.prepare(tctx, req.Task, log); err == nil {
			res, err = r.runTask(context.WithValue(tctx, taskDirKey{}, dir), req.Task, log)
			os.RemoveAll(dir)
		}
	} else {
		res, err = r.runTask(tctx, req.Task, log)
	}
	res.Started, res.Finished, res.Attempt = started, time.Now(), cmp.Or(req.Attempt, step.GetInfo(ctx).Attempt)
	stop()
	res.Host = r.Identity
	if res.Host == "" {
		res.Host, _ = os.Hostname()
	}
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(tctx), errTaskTimeout) {
		msg := timeoutMessage(req.Task.Timeout)
		fmt.Fprintf(log, "%s: %s\n", res.Finished.UTC().Format("2006-01-02 15:04:05 MST"), msg)
		res.Log, res.LogSkipped = log.result()
		details, _ := json.Marshal(res)
		return res, &api.ApplicationError{Type: ErrorTimeout, Message: msg, Details: details}
	}
	res.Log, res.LogSkipped = log.result()
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		if dl, ok := ctx.Deadline(); ok {
			err = fmt.Errorf("the task timed out after %s: %w", dl.Sub(step.GetInfo(ctx).StartedTime).Round(time.Second), err)
		}
	}
	if err != nil {
		details, _ := json.Marshal(res)
		var ae *api.ApplicationError
		if errors.As(err, &ae) {
			ae.Details = details
			return res, ae
		}
		return res, &api.ApplicationError{Type: "strand.dag.task_failed", Message: err.Error(), Details: details}
	}
	return res, nil
}

// timeoutMessage is the error of an attempt stopped by its timeout, in
// the user's words.
func timeoutMessage(to *TaskTimeout) string {
	return fmt.Sprintf("the task ran past its timeout of %s", to.After.Std())
}

func (r *TaskRunner) runTask(ctx context.Context, t Task, log *taskLog) (TaskResult, error) {
	switch t.Type {
	case TypeShell, TypePython, TypeSpark, TypeFlink, TypeMR, TypeDataX, TypeSqoop: // issue 35: tenants, more types
		return r.runProcess(ctx, t, log)
	case TypeProcedure:
		return r.runProcedure(ctx, t, log)
	case TypeHTTP:
		client := r.HTTP
		if client == nil {
			client = http.DefaultClient
		}
		hr, err := task.RunHTTP(ctx, client, task.HTTP{Method: t.Method, URL: t.URL, Headers: t.Headers, Body: t.Body,
			ExpectStatus: t.ExpectStatus, BodyContains: t.BodyContains, BodyNotContains: t.BodyNotContains, Outputs: t.Outputs}, log)
		return TaskResult{Status: hr.Status, Outputs: hr.Outputs}, err
	case TypeSQL:
		if r.DataSources == nil {
			return TaskResult{}, workflow.NewError("strand.dag.datasource", fmt.Sprintf("data source %q: this worker has none", t.DataSource), true)
		}
		udfs, err := r.udfs(ctx, t.UDFs)
		if err != nil {
			return TaskResult{}, err
		}
		sr, err := task.RunSQL(ctx, r.DataSources, task.SQL{DataSource: t.DataSource, Pre: t.Pre, Statement: t.SQL, Post: t.Post,
			Query: t.Query, Outputs: t.Outputs, UDFs: udfs}, log)
		var unknown *task.UnknownDataSourceError
		if errors.As(err, &unknown) {
			err = workflow.NewError("strand.dag.datasource", err.Error(), true)
		}
		return TaskResult{Outputs: sr.Outputs}, err
	}
	return TaskResult{}, workflow.NewError(ErrorInvalid, fmt.Sprintf("task type %q does not run on a worker group", t.Type), true)
}

// pick keeps the outputs a shell task declares; with none declared, all.
func pick(declared, got map[string]string) map[string]string {
	if len(declared) == 0 {
		return got
	}
	out := map[string]string{}
	for k := range declared {
		if v, ok := got[k]; ok {
			out[k] = v
		}
	}
	return out
}

// taskLog keeps a running task's log: its head and a tail, and a count of
// every byte.
type taskLog struct {
	mu   sync.Mutex
	head []byte
	tl   []byte // the last bytes past head, at most MaxLog/2 (trimmed in chunks)
	size int64
}

func newTaskLog() *taskLog { return &taskLog{} }

func (l *taskLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.size += int64(len(p))
	rest := p
	if room := MaxLog/2 - len(l.head); room > 0 {
		n := min(room, len(rest))
		l.head = append(l.head, rest[:n]...)
		rest = rest[n:]
	}
	l.tl = append(l.tl, rest...)
	if len(l.tl) > MaxLog {
		l.tl = append(l.tl[:0], l.tl[len(l.tl)-MaxLog/2:]...)
	}
	return len(p), nil
}

// tail is the heartbeat's details.
func (l *taskLog) tail() LogTail {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := append(append([]byte(nil), l.head...), l.tl...)
	if len(all) > tailSize {
		all = all[len(all)-tailSize:]
	}
	return LogTail{Size: l.size, Tail: string(all)}
}

// result is the log a result keeps and how many bytes it leaves out.
func (l *taskLog) result() (string, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tl := l.tl
	if len(tl) > MaxLog/2 {
		tl = tl[len(tl)-MaxLog/2:]
	}
	kept := int64(len(l.head) + len(tl))
	return string(l.head) + string(tl), l.size - kept
}
