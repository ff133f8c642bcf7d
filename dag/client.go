package dag

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Client starts and commands DAG instances through the public API; the CLI
// and the console use it.
type Client struct {
	svc       Service
	namespace string
	// Catalog is the client's view of the stored definitions.
	Catalog *Catalog
}

// NewClient returns a client of the DAGs of a namespace.
func NewClient(svc Service, namespace string) *Client {
	if namespace == "" {
		namespace = api.DefaultNamespace
	}
	return &Client{svc: svc, namespace: namespace, Catalog: NewCatalog(svc)}
}

// StartOptions name an instance's run.
type StartOptions struct {
	// ID is the instance's workflow id (default NAME-yyyyMMddHHmmss-XXXXXXXX).
	ID       string
	Identity string
}

// StartRequest is the kernel request that starts an instance of in: a run
// of WorkflowType on Queue, with the DAG's name as its business key. A
// schedule's action is one.
func StartRequest(namespace string, in RunInput, opts StartOptions) (api.StartRequest, error) {
	if err := in.Check(); err != nil {
		return api.StartRequest{}, err
	}
	input, err := json.Marshal(in)
	if err != nil {
		return api.StartRequest{}, err
	}
	id := opts.ID
	if id == "" {
		id = fmt.Sprintf("%s-%s-%s", in.DAG, time.Now().UTC().Format("20060102150405"), uuid.NewString()[:8])
	}
	return api.StartRequest{Namespace: namespace, WorkflowID: id, WorkflowType: WorkflowType, Queue: Queue,
		Input: api.Value(input), BusinessKey: in.DAG, Attributes: map[string]string{AttrDAG: in.DAG, AttrState: string(StateSubmitted)},
		Memo: startMemo(in, in.Version), RequestID: uuid.NewString(), Identity: opts.Identity}, nil
}

// Started names a started instance.
type Started struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Warnings are what may hold the instance up: a worker group of its
	// tasks that no worker polls (they wait for one), each at its place in
	// the definition.
	Warnings []Problem `json:"warnings,omitempty"`
}

// ScheduleAction is the action of a schedule that starts instances of
// in.DAG: its fire time is each instance's business time.
func ScheduleAction(in RunInput) (api.ScheduleAction, error) {
	req, err := StartRequest("", in, StartOptions{ID: "-"})
	if err != nil {
		return api.ScheduleAction{}, err
	}
	return api.ScheduleAction{WorkflowType: req.WorkflowType, Queue: req.Queue, Input: req.Input,
		Attributes: req.Attributes, BusinessKey: req.BusinessKey, Memo: req.Memo}, nil
}

// Start starts an instance; an offline or unknown DAG is refused here,
// before any run exists.
func (c *Client) Start(ctx context.Context, in RunInput, opts StartOptions) (Started, error) {
	if err := in.Check(); err != nil {
		return Started{}, err
	}
	res, err := c.Catalog.resolve(ctx, in)
	if err != nil {
		if errors.Is(err, ErrOffline) {
			return Started{}, fmt.Errorf("%w: %w", api.ErrFailedPrecondition, err)
		}
		return Started{}, err
	}
	s, err := c.start(ctx, in, opts, res.Version)
	if err != nil {
		return s, err
	}
	if def, perr := Parse([]byte(res.Body)); perr == nil {
		// Started either way: a warning that cannot be read is left out.
		s.Warnings, _ = groupWarnings(ctx, c.svc, c.namespace, def, in.WorkerGroup)
	}
	return s, nil
}

// Apply is Catalog.Apply, with a warning for each worker group of the
// definition's tasks that no worker of the client's namespace polls.
func (c *Client) Apply(ctx context.Context, text []byte, by string, offline bool) (Applied, error) {
	a, err := c.Catalog.Apply(ctx, text, by, offline)
	if err != nil {
		return a, err
	}
	// Applied either way: a warning that cannot be read is left out.
	ws, _ := groupWarnings(ctx, c.svc, c.namespace, a.Definition, "")
	a.Warnings = append(a.Warnings, ws...)
	return a, nil
}

// start starts an instance of in, shown as submitted at version (the one
// it will run, as far as its start knows) until a worker runs it.
func (c *Client) start(ctx context.Context, in RunInput, opts StartOptions, version int32) (Started, error) {
	req, err := StartRequest(c.namespace, in, opts)
	if err != nil {
		return Started{}, err
	}
	req.Memo = startMemo(in, cmp.Or(in.Version, version))
	res, err := c.svc.StartWorkflow(ctx, req)
	return Started{WorkflowID: req.WorkflowID, RunID: res.RunID}, err
}

// Instances lists a DAG's instances, newest first (all DAGs' for ""), in
// state when it is set. Each run's attributes carry its state
// (AttrState), version and business date, as of the last visibility
// write: lists lag the instances by about a second.
func (c *Client) Instances(ctx context.Context, name string, state State, pageSize int, token []byte) (api.ListResponse, error) {
	if name != "" && !validName.MatchString(name) {
		return api.ListResponse{}, fmt.Errorf("%w: no DAG is named %q: a name is letters, digits, '_', '.' and '-', at most 100", api.ErrNotFound, name)
	}
	req := api.ListRequest{Namespace: c.namespace, WorkflowType: WorkflowType, BusinessKey: name, PageSize: pageSize, PageToken: token}
	if state != "" {
		req.Attributes = map[string]string{AttrState: string(state)}
	}
	return c.svc.ListWorkflows(ctx, req)
}

// Instance returns an instance's state and tasks, by workflow id (its
// latest run).
func (c *Client) Instance(ctx context.Context, id string) (*Instance, store.VisibilityRecord, error) {
	d, err := c.describe(ctx, id)
	if err != nil {
		return nil, store.VisibilityRecord{}, err
	}
	rec := store.VisibilityRecord{Namespace: d.Namespace, WorkflowID: d.WorkflowID, RunID: d.RunID, Type: d.WorkflowType,
		Status: d.Status, StartTime: d.StartTime, CloseTime: d.CloseTime, BusinessKey: d.BusinessKey}
	var inst *Instance
	if d.Status == store.StatusRunning {
		inst, err = runningInstance(ctx, c.svc, d)
	} else {
		inst, err = InstanceOf(ctx, c.svc, rec)
	}
	if err != nil {
		return nil, rec, err
	}
	if inst == nil {
		return nil, rec, fmt.Errorf("dag: %s holds no instance state (it ended before its definition was read, or was terminated)", id)
	}
	return inst, rec, nil
}

// describe describes the latest run of an instance; a workflow that is
// not a DAG instance is not found.
func (c *Client) describe(ctx context.Context, id string) (api.Description, error) {
	d, err := c.svc.DescribeWorkflow(ctx, api.RunRef{Namespace: c.namespace, WorkflowID: id})
	if err == nil && d.WorkflowType != WorkflowType {
		err = fmt.Errorf("%w: %s is a %s, not a DAG instance", api.ErrNotFound, id, d.WorkflowType)
	}
	return d, err
}

// Command signals a running instance: pause, resume or stop.
func (c *Client) Command(ctx context.Context, id, action, identity string) error {
	switch action {
	case ActionPause, ActionResume, ActionStop:
	default:
		return api.InvalidArgument("action", "%q: want pause, resume or stop", action)
	}
	if _, err := c.describe(ctx, id); err != nil {
		return err
	}
	in, _ := json.Marshal(Command{Action: action})
	return c.svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: api.RunRef{Namespace: c.namespace, WorkflowID: id},
		Name: SignalCommand, Input: api.Value(in), RequestID: uuid.NewString(), Identity: identity})
}

// Restart starts an ended instance again under its workflow id, at its
// pinned version, with its parameters and business time: with failedOnly
// its succeeded tasks keep their outcome (start from the failed nodes);
// with from, it starts at those tasks.
func (c *Client) Restart(ctx context.Context, id string, failedOnly bool, from []string, identity string) (Started, error) {
	inst, rec, err := c.Instance(ctx, id)
	if err != nil {
		return Started{}, err
	}
	if rec.Status == store.StatusRunning {
		return Started{}, fmt.Errorf("%w: instance %s is still running", api.ErrFailedPrecondition, id)
	}
	var in RunInput
	first, err := c.startInput(ctx, id, rec.RunID)
	if err != nil {
		return Started{}, err
	}
	in = first
	in.Version, in.ScheduleTime = inst.Version, inst.ScheduleTime
	in.StartFrom = from
	in.Previous = nil
	if failedOnly {
		in.Previous = inst.Tasks
	}
	return c.start(ctx, in, StartOptions{ID: id, Identity: identity}, in.Version)
}

// startInput reads the RunInput a run started with.
func (c *Client) startInput(ctx context.Context, id, run string) (RunInput, error) {
	page, err := c.svc.GetHistory(ctx, api.HistoryRequest{RunRef: api.RunRef{Namespace: c.namespace, WorkflowID: id, RunID: run}, PageSize: 1, Resolve: true})
	if err != nil {
		return RunInput{}, err
	}
	var in RunInput
	if len(page.Events) == 0 {
		return in, fmt.Errorf("dag: %s has no history", id)
	}
	err = json.Unmarshal(page.Events[0].Payload.Data, &in)
	return in, err
}

// TaskLog is the log of one attempt of a task, with what the attempt was.
type TaskLog struct {
	Task    string `json:"task"`
	Attempt int32  `json:"attempt"`
	// Attempts is how many attempts the task has had so far.
	Attempts int32 `json:"attempts,omitempty"`
	// Running says the attempt has not ended: Log is what its last
	// heartbeat carried (the end of the log, of Size bytes in all).
	Running bool   `json:"running"`
	Size    int64  `json:"size"`
	Log     string `json:"log"`
	Skipped int64  `json:"skipped,omitempty"`
	// State is the attempt's outcome: running, success, failure or stop.
	State     State     `json:"state,omitempty"`
	Host      string    `json:"host,omitempty"`
	PID       int       `json:"pid,omitempty"`
	StartTime time.Time `json:"start_time,omitzero"`
	EndTime   time.Time `json:"end_time,omitzero"`
	ExitCode  int       `json:"exit_code,omitempty"`
	Error     string    `json:"error,omitempty"`
	TimedOut  bool      `json:"timed_out,omitempty"`
}

// Log returns the log of an instance's task as its last attempt left it.
func (c *Client) Log(ctx context.Context, id, taskName string) (TaskLog, error) {
	return c.AttemptLog(ctx, id, taskName, 0)
}

// AttemptLog returns the log of attempt n of an instance's task (0: its
// last attempt).
func (c *Client) AttemptLog(ctx context.Context, id, taskName string, n int32) (TaskLog, error) {
	if n < 0 {
		return TaskLog{}, api.InvalidArgument("attempt", "%d: want 1 or more (0: the last attempt)", n)
	}
	all, err := c.Logs(ctx, id, taskName)
	if err != nil {
		return TaskLog{}, err
	}
	if n == 0 {
		return all[len(all)-1], nil
	}
	for _, l := range all {
		if l.Attempt == n {
			return l, nil
		}
	}
	return TaskLog{}, fmt.Errorf("%w: task %s of instance %s has had %d attempt(s), not an attempt %d", api.ErrNotFound, taskName, id, len(all), n)
}

// attemptKey names a step's attempt in a run's history: the attempt
// number the instance gave it, or the kernel's retry of it.
type attemptKey struct {
	seq     int64
	attempt int32
}

// Logs returns the log of every attempt of an instance's task, first to
// last. The log of an attempt a worker ran is its result's (or its
// failure's details) in the run's history; a running attempt's is what its
// last heartbeat carried; the task types the instance runs itself (sub
// process, dependent, conditions, switch) keep theirs in the instance.
func (c *Client) Logs(ctx context.Context, id, taskName string) ([]TaskLog, error) {
	inst, rec, err := c.Instance(ctx, id)
	if err != nil {
		return nil, err
	}
	var ti *TaskInstance
	for i := range inst.Tasks {
		if inst.Tasks[i].Name == taskName {
			ti = &inst.Tasks[i]
		}
	}
	if ti == nil {
		return nil, fmt.Errorf("%w: instance %s has no task %q", api.ErrNotFound, id, taskName)
	}
	running := rec.Status == store.StatusRunning
	byAttempt := map[int32]*TaskLog{}
	var order []int32
	get := func(n int32) *TaskLog {
		if l, ok := byAttempt[n]; ok {
			return l
		}
		l := &TaskLog{Task: taskName, Attempt: n}
		byAttempt[n] = l
		order = append(order, n)
		return l
	}
	// The instance's record of the attempts.
	for _, a := range ti.Attempts {
		l := get(a.Attempt)
		l.State, l.Host, l.PID, l.StartTime, l.EndTime, l.ExitCode, l.Error, l.TimedOut =
			a.State, a.Host, a.PID, a.StartTime, a.EndTime, a.ExitCode, a.Error, a.TimedOut
		l.Log, l.Size = a.Log, int64(len(a.Log))
		l.Running = a.State == StateRunning && running
	}
	if ti.Type == TypeSubProcess && len(ti.Attempts) == 0 && ti.Child != "" {
		// An instance of a release that kept no attempts: the child still
		// says where to read on.
		l := get(1)
		l.State, l.Log = ti.State, fmt.Sprintf("the child instance %s\nits tasks: strand dag tasks %s\na task's log: strand dag logs %s TASK\n", ti.Child, ti.Child, ti.Child)
		l.Size = int64(len(l.Log))
	}
	// The results of the attempts a worker ran, from the run's history.
	if ti.Type != TypeSubProcess && ti.Type != TypeDependent && ti.Type != TypeConditions && ti.Type != TypeSwitch {
		if err := c.attemptResults(ctx, id, taskName, running, get); err != nil {
			return nil, err
		}
	}
	if len(ti.Attempts) == 0 && ti.LogTail != "" && len(order) > 0 {
		// A stopped task of a release that kept no attempts.
		if l := byAttempt[slices.Max(order)]; l.Log == "" {
			l.Log, l.Size = ti.LogTail, int64(len(ti.LogTail))
		}
	}
	if len(order) == 0 {
		if ti.State == StateSubmitted || ti.State == StateSkipped || ti.State == StateForbidden {
			return nil, fmt.Errorf("%w: task %s of instance %s has not run (it is %s)", api.ErrNotFound, taskName, id, ti.State)
		}
		return nil, fmt.Errorf("%w: task %s of instance %s kept no log (it is %s)", api.ErrNotFound, taskName, id, ti.State)
	}
	slices.Sort(order)
	out := make([]TaskLog, 0, len(order))
	for _, n := range order {
		l := *byAttempt[n]
		l.Attempts = int32(len(order))
		if l.State == "" {
			l.State = StateRunning
			if !l.Running {
				l.State = ti.State
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// attemptResults reads the attempts of a task a worker ran from the run's
// history: each attempt's result or failure details (its log, where it
// ran), and the last heartbeat of the one that runs.
func (c *Client) attemptResults(ctx context.Context, id, taskName string, running bool, get func(int32) *TaskLog) error {
	ref := api.RunRef{Namespace: c.namespace, WorkflowID: id}
	steps := map[int64]int32{} // seq → the attempt the instance numbered (0: the kernel's retries)
	open := map[int64]bool{}
	var token []byte
	for {
		page, err := c.svc.GetHistory(ctx, api.HistoryRequest{RunRef: ref, PageToken: token, Resolve: true})
		if err != nil {
			return err
		}
		for _, e := range page.Events {
			if e.Type == api.EventStepScheduled && e.Name == StepTask {
				var req TaskRequest
				if json.Unmarshal(e.Payload.Data, &req) == nil && req.Task.Name == taskName {
					steps[e.Seq] = req.Attempt
					open[e.Seq] = true
					if l := get(cmp.Or(req.Attempt, 1)); l.State == "" {
						l.Running = running
					}
				}
				continue
			}
			n, ok := steps[e.Seq]
			if !ok {
				continue
			}
			switch e.Type {
			case api.EventStepCompleted, api.EventStepFailed, api.EventStepAttemptFailed, api.EventStepTimedOut, api.EventStepCanceled:
			default:
				continue
			}
			if n == 0 {
				n = cmp.Or(e.Attempt, 1)
			}
			l := get(n)
			raw := e.Payload.Data
			if e.Failure != nil {
				raw = nil
				for f := e.Failure; f != nil; f = f.Cause {
					// A step's failure wraps the attempt's, which has the details.
					if len(f.Details) > 0 {
						raw = f.Details
						break
					}
				}
				if l.Error == "" {
					l.Error = e.Failure.Message
				}
			}
			var res TaskResult
			var tail LogTail
			switch {
			case len(raw) > 0 && json.Unmarshal(raw, &res) == nil && (res.Log != "" || !res.Started.IsZero()):
				l.Log, l.Skipped, l.Size = res.Log, res.LogSkipped, int64(len(res.Log))+res.LogSkipped
				l.Host, l.PID, l.ExitCode = cmp.Or(l.Host, res.Host), cmp.Or(l.PID, res.PID), cmp.Or(l.ExitCode, res.ExitCode)
				if l.StartTime.IsZero() {
					l.StartTime, l.EndTime = res.Started, res.Finished
				}
			case len(raw) > 0 && json.Unmarshal(raw, &tail) == nil && tail.Tail != "" && l.Log == "":
				// A timeout's failure carries the attempt's last heartbeat.
				l.Log, l.Size, l.Skipped = tail.Tail, tail.Size, tail.Size-int64(len(tail.Tail))
			}
			if l.State == "" || l.State == StateRunning {
				// The instance's record may lag its history.
				l.State = StateFailure
				switch e.Type {
				case api.EventStepCompleted:
					l.State = StateSuccess
				case api.EventStepCanceled:
					l.State = StateStopped
				}
			}
			l.Running = false
			if e.Type != api.EventStepAttemptFailed {
				delete(open, e.Seq)
			}
		}
		if len(page.NextPageToken) == 0 {
			break
		}
		token = page.NextPageToken
	}
	if len(open) == 0 || !running {
		return nil
	}
	// The attempt that runs: its last heartbeat carries the end of its log.
	d, err := c.describe(ctx, id)
	if err != nil {
		return err
	}
	for _, p := range d.Steps {
		n, ok := steps[p.Seq]
		if !ok || !open[p.Seq] {
			continue
		}
		l := get(cmp.Or(n, p.Attempt, 1))
		l.Running = true
		var tail LogTail
		if len(p.HeartbeatDetails) > 0 && json.Unmarshal(p.HeartbeatDetails, &tail) == nil {
			l.Size, l.Log, l.Skipped = tail.Size, tail.Tail, tail.Size-int64(len(tail.Tail))
		}
	}
	return nil
}

// Unseen returns what of log l a reader that has shown the first seen
// bytes has not: the new bytes, and how many new bytes l no longer holds
// (they went by between two reads, or are the middle of a long log).
func (l TaskLog) Unseen(seen int64) (text string, missed int64) {
	fresh := l.Size - seen
	if fresh <= 0 {
		return "", 0
	}
	if fresh > int64(len(l.Log)) {
		return l.Log, fresh - int64(len(l.Log))
	}
	return l.Log[int64(len(l.Log))-fresh:], 0
}

// Unpolled says, of the worker groups (or task queues) the submitted
// tasks of inst wait on, which no worker of the client's namespace polled
// lately: one line each, naming the tasks that wait ("no worker polls
// worker group ghost: task lost waits for one"). Empty when it cannot
// tell.
func (c *Client) Unpolled(ctx context.Context, inst *Instance) ([]string, error) {
	waiting := map[string][]string{}
	var order []string
	for _, t := range inst.Tasks {
		if t.State != StateSubmitted || t.Queue == "" {
			continue
		}
		if _, ok := waiting[t.Queue]; !ok {
			order = append(order, t.Queue)
		}
		waiting[t.Queue] = append(waiting[t.Queue], t.Name)
	}
	if len(order) == 0 {
		return nil, nil
	}
	polled, err := polledQueues(ctx, c.svc, c.namespace)
	if err != nil || polled == nil {
		return nil, err
	}
	var out []string
	for _, q := range order {
		if polled[q] {
			continue
		}
		tasks := waiting[q]
		what := "task " + tasks[0] + " waits"
		if len(tasks) > 1 {
			what = "tasks " + strings.Join(tasks, ", ") + " wait"
		}
		where := "task queue " + q
		if g, ok := strings.CutPrefix(q, GroupQueue("")); ok {
			where = "worker group " + g
		}
		out = append(out, fmt.Sprintf("no worker polls %s: %s for one", where, what))
	}
	return out, nil
}
