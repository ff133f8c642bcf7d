package dag

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/param"
	"github.com/strandhq/strand/workflow"
)

// The steps of the interpreter's own queue and of the worker groups.
const (
	stepResolve    = "strand.dag.resolve"
	stepDependency = "strand.dag.dependency"
	stepAlert      = "strand.dag.alert"
	stepTails      = "strand.dag.tails"
	// StepTask runs a built-in task type on a worker group's queue.
	StepTask = "strand.dag.task"
)

// Failure types of an instance's run.
const (
	// ErrorFailed: a task failed (the details are the Instance).
	ErrorFailed = "strand.dag.failed"
	// ErrorStopped: the instance was stopped.
	ErrorStopped = "strand.dag.stopped"
	// ErrorInvalid: the definition could not be run (offline, unknown,
	// invalid).
	ErrorInvalid = "strand.dag.invalid"
)

// heartbeatEvery is how often a running task reports (with the tail of its
// log); a task whose worker is silent for heartbeatTimeout is retried by
// its retry policy on another worker.
const (
	heartbeatEvery   = 2 * time.Second
	heartbeatTimeout = 15 * time.Second
)

var shortStep = workflow.StepOptions{Queue: Queue, StartToClose: time.Minute,
	Retry: &api.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}}

// Resolved is what the resolve step returns: the definition's text at the
// version the instance pins.
type Resolved struct {
	Version int32  `json:"version"`
	Body    string `json:"body"`
}

// interpreter is one instance's state while its workflow runs.
type interpreter struct {
	def     *Definition
	inst    Instance
	index   map[string]int
	base    time.Time
	zone    string // the IANA time zone of base, or empty
	group   string
	prio    Priority
	warning Warning

	instanceID string

	cancels   map[string]workflow.CancelFunc
	running   int
	paused    bool
	stopping  bool
	killed    bool
	published State // the state attribute last set
	memo      memoState
	failed    bool
	changed   bool

	// Honest states (issue 35 items 3, 4). runID is the run's, in its
	// tasks' step keys. ending: a task failed under failure strategy end,
	// which kills the tasks running; trimming: one failed under
	// finish_running, which withdraws the tasks no worker started yet
	// (trimmed once done); started says which killed or withdrawn tasks a
	// worker had started (the others end not_run).
	runID             string
	ending            bool
	trimming, trimmed bool
	started           map[string]bool
	alerting          int // task_timeout alerts being sent
}

// Run is the interpreter: the workflow of an instance. It resolves the
// definition, then launches every task whose upstream tasks passed, as
// steps, children and timers, until none is left to run.
func Run(ctx workflow.Context, in RunInput) (*Instance, error) {
	info := workflow.GetInfo(ctx)
	base := in.ScheduleTime
	if base.IsZero() {
		base = workflow.ScheduledTime(ctx)
	}
	if base.IsZero() {
		base = workflow.Now(ctx)
	}
	base, err := in.BusinessTime(base)
	if err != nil {
		return nil, workflow.NewError(ErrorInvalid, err.Error(), true)
	}
	// Answered from the start: until the definition is read, the instance
	// is submitted.
	ip := &interpreter{base: base, zone: in.TimeZone, index: map[string]int{}, cancels: map[string]workflow.CancelFunc{}}
	ip.inst = Instance{DAG: in.DAG, Version: in.Version, State: StateSubmitted, ScheduleTime: base, StartTime: workflow.Now(ctx), Tasks: []TaskInstance{}}
	workflow.SetQueryHandler(ctx, QueryInstance, func(struct{}) (*Instance, error) { return &ip.inst, nil })
	_, ip.memo.on = info.Memo[MemoInstance]
	res, err := workflow.ExecuteStepByName[Resolved](ctx, shortStep, stepResolve, in).Get(ctx)
	if err != nil {
		return nil, err
	}
	def, err := Parse([]byte(res.Body))
	if err != nil {
		return nil, workflow.NewError(ErrorInvalid, fmt.Sprintf("definition %s version %d: %v", in.DAG, res.Version, err), true)
	}
	ip.def = def
	ip.inst.Version, ip.inst.State, ip.inst.Definition = res.Version, StateRunning, res.Body
	workflow.UpsertAttributes(ctx, map[string]string{AttrVersion: strconv.Itoa(int(res.Version)), AttrDate: base.Format("20060102")})
	ip.inst.FailureStrategy = cmp.Or(in.FailureStrategy, def.FailureStrategy, FailureEnd)
	ip.group = cmp.Or(in.WorkerGroup, def.WorkerGroup, DefaultGroup)
	ip.prio = cmp.Or(in.Priority, def.Priority)
	ip.warning = def.Warning
	if in.Warning != nil {
		ip.warning = *in.Warning
	}
	ip.instanceID, ip.runID = info.WorkflowID, info.RunID

	// Global parameters: the definition's, with the start parameters over
	// them, each resolved at the instance's time.
	defs := maps.Clone(def.Params)
	if defs == nil {
		defs = map[string]string{}
	}
	maps.Copy(defs, in.Params)
	globals, err := param.Resolve(defs, param.Builtins(base), base)
	if err != nil {
		return nil, workflow.NewError(ErrorInvalid, fmt.Sprintf("global parameters: %v", err), true)
	}
	ip.inst.Params = globals

	for i, t := range def.Tasks {
		ip.index[t.Name] = i
		ti := TaskInstance{Name: t.Name, Type: t.Type, State: StateNone}
		if t.Forbidden {
			ti.State = StateForbidden
		}
		ip.inst.Tasks = append(ip.inst.Tasks, ti)
	}
	ip.carryOver(in)

	commands := workflow.GetSignalChannel[Command](ctx, SignalCommand)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			c, _ := commands.Receive(ctx)
			ip.command(c)
		}
	})
	var timedOut bool
	if def.Timeout > 0 {
		workflow.Go(ctx, func(ctx workflow.Context) {
			if workflow.Sleep(ctx, def.Timeout.Std()) == nil {
				timedOut = true
				ip.stop()
			}
		})
	}

	for {
		if !ip.paused && !ip.stopping {
			ip.launch(ctx, globals)
		}
		if ip.stopping || ip.ending {
			ip.kill(ctx)
		} else if ip.trimming {
			ip.trim(ctx)
		}
		switch {
		case ip.running == 0 && ip.stopping:
			ip.inst.State = StateStopped
		case ip.running == 0 && ip.paused:
			ip.inst.State = StatePaused
		case ip.running == 0:
			ip.inst.State = StateSuccess
			if ip.failed {
				ip.inst.State = StateFailure
			}
		}
		ip.publish(ctx)
		if ip.running == 0 && !ip.paused || ip.running == 0 && ip.stopping {
			break
		}
		ip.changed = false
		if err := workflow.Await(ctx, func() bool { return ip.changed }); err != nil {
			return nil, err
		}
	}
	// The timeout alerts go out before the instance's own.
	if err := workflow.Await(ctx, func() bool { return ip.alerting == 0 }); err != nil {
		return nil, err
	}
	ip.inst.EndTime = workflow.Now(ctx)
	// The tasks never reached did not run: the instance ended first.
	for i := range ip.inst.Tasks {
		if ip.inst.Tasks[i].State == StateNone {
			ip.inst.Tasks[i].State = StateNotRun
		}
	}
	if timedOut {
		ip.inst.State = StateFailure
		ip.inst.Error = fmt.Sprintf("the instance timed out after %s", def.Timeout.Std())
	}
	ip.publish(ctx)
	ip.alert(ctx)
	details, _ := json.Marshal(&ip.inst)
	switch ip.inst.State {
	case StateSuccess:
		return &ip.inst, nil
	case StateStopped:
		return nil, &api.ApplicationError{Type: ErrorStopped, Message: "the instance was stopped", NonRetryable: true, Details: details}
	}
	msg := ip.inst.Error
	if msg == "" {
		var names []string
		for _, t := range ip.inst.Tasks {
			if t.State == StateFailure {
				names = append(names, t.Name)
			}
		}
		msg = "failed tasks: " + strings.Join(names, ", ")
	}
	return nil, &api.ApplicationError{Type: ErrorFailed, Message: msg, NonRetryable: true, Details: details}
}

// publish sets the run's state attribute when the instance's state
// changed, so that lists filter instances by state, and keeps the
// instance in the run's memo, so that reads need no worker.
func (ip *interpreter) publish(ctx workflow.Context) {
	if ip.inst.State != ip.published {
		ip.published = ip.inst.State
		workflow.UpsertAttributes(ctx, map[string]string{AttrState: string(ip.inst.State)})
	}
	ip.publishMemo(ctx)
}

// carryOver applies StartFrom and Previous: tasks that need not run again
// count as succeeded, with their outputs.
func (ip *interpreter) carryOver(in RunInput) {
	prev := map[string]TaskInstance{}
	for _, t := range in.Previous {
		prev[t.Name] = t
	}
	keep := func(i int) {
		ti := &ip.inst.Tasks[i]
		if ti.State == StateForbidden {
			return
		}
		ti.State = StateSuccess
		if p, ok := prev[ti.Name]; ok {
			ti.Outputs, ti.StartTime, ti.EndTime, ti.Attempt, ti.Branch = p.Outputs, p.StartTime, p.EndTime, p.Attempt, p.Branch
			return
		}
		// Taken as done without having run: its outputs are empty, and a
		// branch it would choose is every branch.
		t := ip.def.Tasks[i]
		for name := range t.Outputs {
			if ti.Outputs == nil {
				ti.Outputs = map[string]string{}
			}
			ti.Outputs[name] = ""
		}
		ti.Branch = append(append(append([]string(nil), t.Success...), t.Failure...), t.Default)
		for _, c := range t.Cases {
			ti.Branch = append(ti.Branch, c.Next)
		}
	}
	if len(in.StartFrom) > 0 {
		// Everything the chosen tasks do not lead to is taken as done.
		reach := map[string]bool{}
		for _, s := range in.StartFrom {
			reach[s] = true
		}
		for changed := true; changed; {
			changed = false
			for _, t := range ip.def.Tasks {
				if reach[t.Name] {
					continue
				}
				for _, up := range t.Upstream {
					if reach[up] {
						reach[t.Name], changed = true, true
						break
					}
				}
			}
		}
		for i, t := range ip.def.Tasks {
			if !reach[t.Name] {
				keep(i)
			}
		}
	}
	for i, t := range ip.def.Tasks {
		if p, ok := prev[t.Name]; ok && p.State == StateSuccess && !slices.Contains(in.StartFrom, t.Name) {
			keep(i)
		}
	}
}

func (ip *interpreter) command(c Command) {
	switch c.Action {
	case ActionPause:
		if !ip.stopping && ip.inst.State == StateRunning {
			ip.paused = true
			ip.inst.State = StateReadyPause
		}
	case ActionResume:
		if ip.paused && !ip.stopping {
			ip.paused = false
			ip.inst.State = StateRunning
		}
	case ActionStop:
		ip.stop()
	}
	ip.changed = true
}

// stop asks every running task to stop; none starts any more.
func (ip *interpreter) stop() {
	if ip.stopping {
		return
	}
	ip.stopping = true
	ip.inst.State = StateReadyStop
	ip.changed = true
}

// kill cancels the running tasks, first keeping the end of each one's log
// (its last heartbeat's): a canceled step's own result never comes back.
func (ip *interpreter) kill(ctx workflow.Context) {
	if ip.killed {
		return
	}
	ip.killed = true
	names := slices.Sorted(maps.Keys(ip.cancels))
	if len(names) == 0 {
		return
	}
	tails, err := workflow.ExecuteStepByName[map[string]TaskLog](ctx, shortStep, stepTails, TailsRequest{Instance: ip.instanceID, Tasks: names}).Get(ctx)
	if err != nil {
		workflow.Logger(ctx).Warn("dag: the logs of the stopped tasks are not kept", "err", err)
	}
	ip.noteStarted(ip.startedTasks(ctx, names))
	for _, name := range names {
		if l, ok := tails[name]; ok {
			ip.inst.Tasks[ip.index[name]].LogTail = l.Log
			if a := ip.lastAttempt(ip.index[name]); a != nil && a.State == StateRunning {
				a.Log = l.Log
			}
		}
		if cancel := ip.cancels[name]; cancel != nil {
			cancel()
		}
	}
}

// launch starts every task that may run now, and settles the ones that
// never will (below a failure, on a branch not taken).
func (ip *interpreter) launch(ctx workflow.Context, globals map[string]string) {
	for progress := true; progress; {
		progress = false
		type ready struct {
			i    int
			prio int8
		}
		var list []ready
		for i, t := range ip.def.Tasks {
			ti := &ip.inst.Tasks[i]
			if ti.State != StateNone {
				continue
			}
			switch ip.readiness(i) {
			case blocked:
				ti.State, progress = StateSkipped, true
			case runnable:
				if ip.failed && ip.inst.FailureStrategy != FailureContinue {
					continue // no new task after a failure; they end not_run
				}
				list = append(list, ready{i, cmp.Or(t.Priority, ip.prio).level()})
			}
		}
		slices.SortStableFunc(list, func(a, b ready) int { return cmp.Compare(levelOrNormal(a.prio), levelOrNormal(b.prio)) })
		for _, r := range list {
			ip.start(ctx, r.i, globals)
			progress = true
		}
	}
}

func levelOrNormal(l int8) int8 {
	if l == 0 {
		return 3
	}
	return l
}

type readiness int

const (
	waiting readiness = iota
	runnable
	blocked
)

// readiness says whether task i may run: every upstream task ended and
// let it (a conditions task runs whatever its upstream tasks' outcome).
func (ip *interpreter) readiness(i int) readiness {
	t := &ip.def.Tasks[i]
	for _, up := range t.Upstream {
		u := ip.index[up]
		us := ip.inst.Tasks[u]
		if !us.State.done() {
			return waiting
		}
		ut := &ip.def.Tasks[u]
		if (ut.Type == TypeConditions || ut.Type == TypeSwitch) && us.State == StateSuccess && !slices.Contains(us.Branch, t.Name) {
			return blocked // a branch not taken
		}
		if t.Type == TypeConditions {
			if us.State == StateSkipped {
				return blocked
			}
			continue
		}
		if !us.State.passes() {
			return blocked
		}
	}
	return runnable
}

// vars returns what task i's values may use: the global parameters, the
// outputs of the tasks it depends on (nearer ones win), and its own.
func (ip *interpreter) vars(i int, globals map[string]string) (map[string]string, error) {
	vars := maps.Clone(globals)
	var visit func(j int, seen map[int]bool) []int
	visit = func(j int, seen map[int]bool) []int {
		var order []int
		for _, up := range ip.def.Tasks[j].Upstream {
			u := ip.index[up]
			if seen[u] {
				continue
			}
			seen[u] = true
			order = append(order, visit(u, seen)...)
			order = append(order, u)
		}
		return order
	}
	for _, u := range visit(i, map[int]bool{}) {
		maps.Copy(vars, ip.inst.Tasks[u].Outputs)
	}
	return param.Resolve(ip.def.Tasks[i].LocalParams, vars, ip.base)
}

// start launches task i in a workflow goroutine of its own.
func (ip *interpreter) start(ctx workflow.Context, i int, globals map[string]string) {
	t := ip.def.Tasks[i]
	ti := &ip.inst.Tasks[i]
	now := workflow.Now(ctx)
	ti.State, ti.SubmitTime, ti.StartTime = StateRunning, now, now
	if q, group := ip.taskQueue(&t); q != "" {
		// It waits for a worker of its group; the run's pending step says
		// when one started it (see withPendingSteps).
		ti.State, ti.StartTime, ti.Queue, ti.WorkerGroup = StateSubmitted, time.Time{}, q, group
	}
	vars, err := ip.vars(i, globals)
	if err == nil {
		t, err = expandTask(t, vars, ip.base)
	}
	if err != nil {
		ip.finish(ctx, i, nil, fmt.Errorf("parameters: %w", err))
		return
	}
	switch t.Type {
	case TypeConditions:
		branch, log := ip.condition(&t)
		a := ip.beginAttempt(ctx, i, 1)
		a.Log = log
		ip.finishBranch(ctx, i, branch)
		return
	case TypeSwitch:
		a := ip.beginAttempt(ctx, i, 1)
		next, log, err := evalSwitch(&t)
		a.Log = log
		if err != nil {
			a.Log += "the case's expression does not evaluate: " + err.Error() + "\n"
			a.State, a.Error, a.EndTime = StateFailure, err.Error(), workflow.Now(ctx)
			ip.finish(ctx, i, nil, err)
			return
		}
		ip.finishBranch(ctx, i, next)
		return
	}
	tctx, cancel := workflow.WithCancel(ctx)
	ip.cancels[t.Name] = cancel
	ip.running++
	workflow.Go(tctx, func(tctx workflow.Context) {
		out, err := ip.run(tctx, i, t, vars)
		delete(ip.cancels, t.Name)
		ip.running--
		ip.finish(ctx, i, out, err)
	})
}

func (ip *interpreter) finishBranch(ctx workflow.Context, i int, branch []string) {
	ti := &ip.inst.Tasks[i]
	ti.Branch = branch
	ti.State, ti.EndTime = StateSuccess, workflow.Now(ctx)
	if a := ip.lastAttempt(i); a != nil {
		a.State, a.EndTime = StateSuccess, ti.EndTime
		if len(branch) == 0 {
			a.Log += "the branch taken: none\n"
		} else {
			a.Log += "the branch taken: " + strings.Join(branch, ", ") + "\n"
		}
	}
	ip.changed = true
}

// finish records the outcome of task i: its last attempt's.
func (ip *interpreter) finish(ctx workflow.Context, i int, out *TaskResult, err error) {
	ti := &ip.inst.Tasks[i]
	ti.EndTime = workflow.Now(ctx)
	if out != nil {
		ti.Outputs = out.Outputs
	}
	if a := ip.lastAttempt(i); a != nil {
		ti.Host, ti.PID = a.Host, a.PID
		if !a.StartTime.IsZero() && !a.EndTime.IsZero() {
			ti.StartTime, ti.EndTime = a.StartTime, a.EndTime
		}
	}
	canceled := (ip.stopping || ip.ending || ip.trimming) && errors.Is(err, api.ErrCanceled)
	switch {
	case err == nil:
		ti.State = StateSuccess
	case canceled && ip.started != nil && !ip.started[ti.Name]:
		ti.State, ti.Error, ti.StartTime = StateNotRun, "", time.Time{}
		// Its last attempt never started on a worker: it is no attempt.
		if a := ip.lastAttempt(i); a != nil && a.Host == "" {
			ti.Attempts = ti.Attempts[:len(ti.Attempts)-1]
			ti.Attempt = int32(len(ti.Attempts))
		}
	case canceled && ip.stopping:
		ti.State, ti.Error = StateStopped, "stopped"
		if a := ip.lastAttempt(i); a != nil && (a.State == StateRunning || a.State == StateFailure) {
			a.State, a.Error, a.EndTime = StateStopped, "stopped", ti.EndTime
		}
	case canceled:
		ti.State, ti.Error = StateKill, "killed: another task failed (failure strategy end)"
		if a := ip.lastAttempt(i); a != nil && (a.State == StateRunning || a.State == StateFailure) {
			a.State, a.Error, a.EndTime = StateKill, ti.Error, ti.EndTime
		}
	default:
		ti.State, ti.Error = StateFailure, ip.taskError(i, err)
		if !ip.failed && ip.inst.FailureStrategy == FailureEnd {
			ip.ending = true
		}
		if !ip.failed && ip.inst.FailureStrategy == FailureFinishRunning {
			ip.trimming = true
		}
		ip.failed = true
	}
	ip.changed = true
}

// condition returns the branch a conditions task takes, and its log:
// what it evaluated.
func (ip *interpreter) condition(t *Task) ([]string, string) {
	and := t.When.Relation != "or"
	holds := and
	var b strings.Builder
	rel := "and"
	if !and {
		rel = "or"
	}
	fmt.Fprintf(&b, "evaluates (relation %s):\n", rel)
	for _, o := range t.When.Tasks {
		st := ip.inst.Tasks[ip.index[o.Task]].State
		ok := o.State == "success" && st.passes() || o.State == "failure" && st == StateFailure
		fmt.Fprintf(&b, "  task %s is %s (wanted %s): %v\n", o.Task, st, o.State, ok)
		if and {
			holds = holds && ok
		} else {
			holds = holds || ok
		}
	}
	if holds {
		fmt.Fprintf(&b, "the condition holds: the success branch\n")
		return t.Success, b.String()
	}
	fmt.Fprintf(&b, "the condition does not hold: the failure branch\n")
	return t.Failure, b.String()
}

// evalSwitch returns the branch of the first case that holds, and its log:
// each case it evaluated; the task's expressions are already expanded.
func evalSwitch(t *Task) ([]string, string, error) {
	var b strings.Builder
	for _, c := range t.Cases {
		v, err := expr.Eval(c.When, nil)
		if err != nil {
			fmt.Fprintf(&b, "case %s (to %s): %s\n", c.When, c.Next, firstLine(err.Error()))
			return nil, b.String(), fmt.Errorf("case %q: %v", c.When, firstLine(err.Error()))
		}
		fmt.Fprintf(&b, "case %s (to %s): %v\n", c.When, c.Next, v)
		if ok, _ := v.(bool); ok {
			return []string{c.Next}, b.String(), nil
		}
	}
	if t.Default != "" {
		fmt.Fprintf(&b, "no case holds: the default\n")
		return []string{t.Default}, b.String(), nil
	}
	fmt.Fprintf(&b, "no case holds, and there is no default\n")
	return nil, b.String(), nil
}

// expandTask returns t with every value's parameters expanded.
func expandTask(t Task, vars map[string]string, base time.Time) (Task, error) {
	var firstErr error
	x := func(s string) string {
		if s == "" || firstErr != nil {
			return s
		}
		v, err := param.Expand(s, vars, base)
		if err != nil {
			firstErr = err
		}
		return v
	}
	xm := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = x(v)
		}
		return out
	}
	xs := func(l []string) []string {
		out := slices.Clone(l)
		for i := range out {
			out[i] = x(out[i])
		}
		return out
	}
	t.Script, t.Env = x(shellTemplate(t.Script)), xm(t.Env)
	t.URL, t.Body, t.Headers = x(t.URL), x(t.Body), xm(t.Headers)
	t.SQL, t.Pre, t.Post = x(t.SQL), xs(t.Pre), xs(t.Post)
	t.Cases = slices.Clone(t.Cases)
	for i := range t.Cases {
		t.Cases[i].When = x(t.Cases[i].When)
	}
	t.Depends = slices.Clone(t.Depends)
	for i := range t.Depends {
		t.Depends[i].Date = x(t.Depends[i].Date)
	}
	expandTaskType(&t, x, xs) // issue 35: python, procedure and big-data tasks
	return t, firstErr
}
