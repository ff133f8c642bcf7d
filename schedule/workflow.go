package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// WorkflowType is the type of the run that carries a schedule.
const WorkflowType = "strand.Schedule"

// Queue is the task queue of the runs that carry schedules, in each
// namespace: the system queue, which package system's worker polls.
const Queue = api.SystemQueue

// Register registers the workflow that carries schedules and its steps on
// a worker of api.SystemQueue in namespace (package system does).
func Register(w *worker.Worker, svc api.Service, namespace, identity string) {
	worker.RegisterWorkflowNamed(w, WorkflowType, Run)
	p := steps{svc: svc, namespace: namespace, identity: identity}
	worker.RegisterStepNamed(w, stepTerminate, p.terminate)
	worker.RegisterStepNamed(w, stepWatch, p.watch)
}

// WorkflowIDPrefix starts the workflow id of the run that carries a
// schedule: "strand-schedule:" and the schedule id.
const WorkflowIDPrefix = "strand-schedule:"

// signalName is the signal a schedule's commands arrive on.
const signalName = "strand.schedule"

// queryName is the query describe asks.
const queryName = "strand.schedule.describe"

// The steps the schedule's run executes on the scheduler worker.
const (
	stepTerminate = "strand.schedule.terminate"
	stepWatch     = "strand.schedule.watch"
)

// Attributes of the run that carries a schedule, for lists.
const (
	attrType    = "strand.schedule.workflow_type"
	attrPaused  = "strand.schedule.paused"
	attrSpec    = "strand.schedule.spec"
	attrCreated = "strand.schedule.created"
)

// How much of a schedule one run of its workflow carries: past either, it
// continues as new (between fires, so a fire is never split).
const (
	actionsPerRun = 100
	loopsPerRun   = 500
	// recentRuns is how many actions describe lists.
	recentRuns = 20
	// appliedIDs is how many command ids a schedule remembers, so a
	// client can see that its command took effect.
	appliedIDs = 32
	// maxCatchup bounds the fires handled in one workflow task.
	maxCatchup = 1000
)

// RunWorkflowID is the workflow id of the run a schedule starts for a fire time.
func RunWorkflowID(scheduleID string, at time.Time) string {
	return scheduleID + "-" + at.UTC().Format(time.RFC3339)
}

// state is the input of a schedule's run: the schedule and all it carries
// from one run of its workflow to the next.
type state struct {
	ID       string       `json:"id"`
	Schedule api.Schedule `json:"schedule"`
	// Watermark is the last fire time considered; later ones are to come.
	Watermark time.Time `json:"watermark"`
	// Buffer holds fires waiting for an open run to close.
	Buffer []fire `json:"buffer,omitempty"`
	// Running are the open runs the schedule started.
	Running   []openRun          `json:"running,omitempty"`
	Recent    []api.ScheduledRun `json:"recent,omitempty"`
	Backfills []backfill         `json:"backfills,omitempty"`
	// NextBackfill numbers backfills, TriggerSeq triggers.
	NextBackfill int64 `json:"next_backfill,omitempty"`
	TriggerSeq   int64 `json:"trigger_seq,omitempty"`

	Actions     int64 `json:"actions,omitempty"`
	Triggers    int64 `json:"triggers,omitempty"`
	Backfilled  int64 `json:"backfilled,omitempty"`
	Skipped     int64 `json:"skipped,omitempty"`
	Missed      int64 `json:"missed,omitempty"`
	PausedFires int64 `json:"paused_fires,omitempty"`

	PausedBy   string    `json:"paused_by,omitempty"`
	PausedAt   time.Time `json:"paused_at,omitzero"`
	CreateTime time.Time `json:"create_time"`
	UpdateTime time.Time `json:"update_time"`
	// Applied are the ids of the last commands applied.
	Applied []string `json:"applied,omitempty"`
}

// fire is an action to take: a fire time of the calendar, a trigger or a
// time of a backfill.
type fire struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	// Overlap overrides the schedule's policy (a trigger's).
	Overlap  api.OverlapPolicy `json:"overlap,omitempty"`
	Backfill int64             `json:"backfill,omitempty"`
	// N numbers a trigger among the schedule's triggers.
	N int64 `json:"n,omitempty"`
}

// openRun is a run the schedule started that has not closed.
type openRun struct {
	api.ScheduledRun
	Backfill int64 `json:"backfill,omitempty"`
	// Stopping says it was asked to cancel or was terminated already.
	Stopping bool `json:"stopping,omitempty"`
}

// backfill is a backfill in progress: the fire times from Next on, before
// End, are still to start.
type backfill struct {
	api.BackfillProgress
	ID   int64     `json:"id"`
	Next time.Time `json:"next"`
}

// command is what the schedule's signal carries.
type command struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // update, pause, trigger, backfill
	// Schedule is an update's new schedule.
	Schedule *api.Schedule `json:"schedule,omitempty"`
	// Paused and Note are a pause's.
	Paused bool   `json:"paused,omitempty"`
	Note   string `json:"note,omitempty"`
	// Overlap is a trigger's.
	Overlap api.OverlapPolicy `json:"overlap,omitempty"`
	// Start, End and Parallelism are a backfill's.
	Start       time.Time `json:"start,omitzero"`
	End         time.Time `json:"end,omitzero"`
	Parallelism int       `json:"parallelism,omitempty"`
	Identity    string    `json:"identity,omitempty"`
}

// Command kinds.
const (
	cmdUpdate   = "update"
	cmdPause    = "pause"
	cmdTrigger  = "trigger"
	cmdBackfill = "backfill"
)

// tracked is an open run as this run of the schedule's workflow follows it:
// a child started here, or a run started earlier, watched by a step.
type tracked struct {
	*openRun
	result  workflow.Future[json.RawMessage]
	started workflow.Future[string]
	// seen says the started future was handled.
	seen bool
}

// scheduler is one run of a schedule's workflow.
type scheduler struct {
	st   state
	cal  *Calendar
	open []*tracked
	// timer is the pending wake-up, at timerAt.
	timer       workflow.Future[struct{}]
	timerAt     time.Time
	cancelTimer workflow.CancelFunc
	// dirty says the definition or the paused state changed: the run
	// continues as new so that lists see the change.
	dirty        bool
	actions      int
	loops        int
	signals      workflow.ReceiveChannel[command]
	pendingSteps int
}

// Run is the workflow that carries a schedule. It is registered on the
// scheduler worker under WorkflowType.
func Run(ctx workflow.Context, st state) (struct{}, error) {
	cal, err := Compile(st.Schedule.Spec)
	if err != nil {
		// Validated before it got here; an old run whose spec a new
		// version refuses waits, failing its task, rather than losing it.
		return struct{}{}, fmt.Errorf("schedule %s: %w", st.ID, err)
	}
	s := &scheduler{st: st, cal: cal, signals: workflow.GetSignalChannel[command](ctx, signalName)}
	if s.st.CreateTime.IsZero() {
		now := workflow.Now(ctx)
		s.st.CreateTime, s.st.UpdateTime = now, now
		if s.st.Watermark.IsZero() {
			s.st.Watermark = now
		}
	}
	workflow.SetQueryHandler(ctx, queryName, func(struct{}) (state, error) { return s.snapshot(), nil })
	for _, r := range s.st.Running {
		s.watch(ctx, &r)
	}
	s.st.Running = nil
	for {
		now := workflow.Now(ctx)
		more := s.collect(ctx, now)
		s.startBuffered(ctx)
		s.advanceBackfills(ctx)
		s.loops++
		if !more && s.settled() && (s.dirty || s.actions >= actionsPerRun || s.loops >= loopsPerRun) {
			return struct{}{}, s.continueAsNew(ctx)
		}
		if more {
			continue
		}
		sel := workflow.NewSelector(ctx)
		s.arm(ctx, now)
		if s.timer != nil {
			sel.AddFuture(s.timer, func() { s.timer, s.timerAt = nil, time.Time{} })
		}
		workflow.AddReceive(sel, s.signals, func(ch workflow.ReceiveChannel[command]) {
			c, _ := ch.Receive(ctx)
			s.apply(ctx, c)
		})
		for _, t := range s.open {
			if t.started != nil && !t.seen {
				sel.AddFuture(t.started, func() { s.onStarted(ctx, t) })
			}
			sel.AddFuture(t.result, func() { s.onClosed(ctx, t) })
		}
		sel.Select(ctx)
	}
}

// settled reports whether the run may continue as new: no step of its own
// is running and every child it started has started (a run it carries over
// is followed by its run id).
func (s *scheduler) settled() bool {
	for _, t := range s.open {
		if t.started != nil && !t.seen {
			return false
		}
	}
	return s.pendingSteps == 0
}

// snapshot is the state as describe sees it.
func (s *scheduler) snapshot() state {
	st := s.st
	st.Running = make([]openRun, 0, len(s.open))
	for _, t := range s.open {
		st.Running = append(st.Running, *t.openRun)
	}
	return st
}

// collect handles the fire times that are due, at most maxCatchup of them;
// it reports whether more are due.
func (s *scheduler) collect(ctx workflow.Context, now time.Time) bool {
	window := s.st.Schedule.Policies.CatchupWindow
	if window <= 0 {
		window = api.DefaultCatchupWindow
	}
	policy := s.st.Schedule.Policies.Catchup
	for range maxCatchup {
		t := s.cal.Next(s.st.Watermark)
		if t.IsZero() || s.cal.Jittered(s.st.ID, t).After(now) {
			return false
		}
		s.st.Watermark = t
		late := now.Sub(s.cal.Jittered(s.st.ID, t))
		// A fire taken more than OnTimeGrace late came due while the
		// scheduler was not running; superseded, a later one came due too.
		next := s.cal.Next(t)
		superseded := !next.IsZero() && !s.cal.Jittered(s.st.ID, next).After(now)
		missed := late > api.OnTimeGrace
		switch limit := s.st.Schedule.ActionLimit; {
		case late > window:
			s.st.Missed++
		case s.st.Schedule.Paused:
			s.st.PausedFires++
		case limit > 0 && s.st.Actions >= limit:
			// The limit is reached: the schedule takes no more.
		case missed && (policy == api.CatchupNone || superseded && policy != api.CatchupAll): // latest: a later one is taken
			s.st.Missed++
		case missed && policy == api.CatchupAll && s.st.Schedule.Policies.Overlap != api.OverlapAllowAll:
			// Every missed fire is taken, one after another: none is
			// dropped because another missed one runs.
			s.offer(ctx, fire{At: t, Kind: api.ActionScheduled, Overlap: api.OverlapBufferAll})
		default:
			s.offer(ctx, fire{At: t, Kind: api.ActionScheduled})
		}
	}
	return true
}

// arm keeps a timer set for the next fire time.
func (s *scheduler) arm(ctx workflow.Context, now time.Time) {
	var at time.Time
	limit := s.st.Schedule.ActionLimit
	if next := s.cal.Next(s.st.Watermark); !next.IsZero() && (limit <= 0 || s.st.Actions < limit) {
		at = s.cal.Jittered(s.st.ID, next)
	}
	if at.Equal(s.timerAt) && s.timer != nil {
		return
	}
	if s.cancelTimer != nil {
		s.cancelTimer()
		s.cancelTimer = nil
	}
	s.timer, s.timerAt = nil, time.Time{}
	if at.IsZero() {
		return
	}
	tctx, cancel := workflow.WithCancel(ctx)
	s.timer, s.timerAt, s.cancelTimer = workflow.NewTimer(tctx, max(at.Sub(now), time.Millisecond)), at, cancel
}

// overlapping counts the open runs the overlap policy looks at: all but
// backfills'.
func (s *scheduler) overlapping() int {
	n := 0
	for _, t := range s.open {
		if t.Backfill == 0 {
			n++
		}
	}
	return n
}

// offer takes a fire as the overlap policy says.
func (s *scheduler) offer(ctx workflow.Context, f fire) {
	policy := f.Overlap
	if policy == "" {
		policy = s.st.Schedule.Policies.Overlap
	}
	open := s.overlapping()
	if open == 0 && len(s.st.Buffer) == 0 || policy == api.OverlapAllowAll {
		s.start(ctx, f)
		return
	}
	switch policy {
	case api.OverlapBufferAll:
		s.st.Buffer = append(s.st.Buffer, f)
	case api.OverlapBufferOne:
		if len(s.st.Buffer) == 0 {
			s.st.Buffer = append(s.st.Buffer, f)
		} else {
			s.st.Skipped++
		}
	case api.OverlapCancelOther, api.OverlapTerminateOther:
		s.st.Skipped += int64(len(s.st.Buffer))
		s.st.Buffer = []fire{f}
		s.stopOthers(ctx, policy)
	default: // skip
		s.st.Skipped++
	}
}

// stopOthers asks the open runs (not backfills') to cancel, or terminates them.
func (s *scheduler) stopOthers(ctx workflow.Context, policy api.OverlapPolicy) {
	for _, t := range s.open {
		if t.Backfill != 0 || t.Stopping || t.started != nil && !t.seen {
			// A child not started yet is stopped once it has (onStarted).
			continue
		}
		t.Stopping = true
		target := api.Target{WorkflowID: t.WorkflowID, RunID: t.RunID}
		if policy == api.OverlapCancelOther {
			workflow.CancelExternal(ctx, target)
			continue
		}
		s.pendingSteps++
		f := workflow.ExecuteStepByName[struct{}](ctx, stepOptions, stepTerminate, terminateInput{
			Target: target, Reason: fmt.Sprintf("terminated by schedule %s (overlap policy terminate_other)", s.st.ID)})
		workflow.Go(ctx, func(ctx workflow.Context) {
			_, _ = f.Get(ctx) // the run closes either way; its close is what counts
			s.pendingSteps--
		})
	}
}

// stepOptions run the schedule's own steps: retried until they succeed.
var stepOptions = workflow.StepOptions{
	Queue:        Queue,
	StartToClose: time.Minute,
	Heartbeat:    30 * time.Second,
	Retry:        &workflow.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
}

// watchOptions run the watch step, which lasts as long as the run it
// watches.
var watchOptions = workflow.StepOptions{
	Queue:        Queue,
	StartToClose: 100 * 365 * 24 * time.Hour,
	Heartbeat:    time.Minute,
	Retry:        stepOptions.Retry,
}

// startBuffered starts the buffered fires while no other run is open.
func (s *scheduler) startBuffered(ctx workflow.Context) {
	for len(s.st.Buffer) > 0 && s.overlapping() == 0 {
		f := s.st.Buffer[0]
		s.st.Buffer = s.st.Buffer[1:]
		s.start(ctx, f)
	}
}

// advanceBackfills starts each backfill's next fire times up to its
// parallelism, and drops the backfills that are done.
func (s *scheduler) advanceBackfills(ctx workflow.Context) {
	all := s.cal.Unbounded()
	for i := range s.st.Backfills {
		b := &s.st.Backfills[i]
		for b.Started-b.Closed < max(1, b.Parallelism) {
			t := all.Next(b.Next.Add(-time.Nanosecond))
			if t.IsZero() || !t.Before(b.End) {
				b.Next = b.End
				break
			}
			b.Next = t.Add(time.Second)
			b.Started++
			s.start(ctx, fire{At: t, Kind: api.ActionBackfill, Backfill: b.ID})
		}
	}
	s.st.Backfills = slices.DeleteFunc(s.st.Backfills, func(b backfill) bool { return !b.Next.Before(b.End) && b.Closed >= b.Started })
}

// start starts the action's run for a fire.
func (s *scheduler) start(ctx workflow.Context, f fire) {
	a := s.st.Schedule.Action
	id := RunWorkflowID(s.st.ID, f.At)
	if f.Kind == api.ActionTrigger {
		// Two triggers may come in one second; each starts a run.
		id = fmt.Sprintf("%s-trigger-%d", id, f.N)
	}
	memo := make(map[string]api.Value, len(a.Memo)+1)
	for k, v := range a.Memo {
		memo[k] = v
	}
	at, _ := json.Marshal(f.At.UTC())
	memo[api.MemoScheduledTime] = at
	attrs := make(map[string]string, len(a.Attributes)+1)
	for k, v := range a.Attributes {
		attrs[k] = v
	}
	attrs[api.AttributeSchedule] = s.st.ID
	reuse := api.AllowDuplicate
	switch f.Kind {
	case api.ActionScheduled:
		// A fire time is taken once, whatever happens to this run.
		reuse = api.RejectDuplicate
		s.st.Actions++
		s.actions++
	case api.ActionTrigger:
		s.st.Triggers++
	case api.ActionBackfill:
		s.st.Backfilled++
	}
	queue := a.Queue
	if queue == "" {
		queue = api.DefaultQueue // not the schedule's own
	}
	cf := workflow.ExecuteChildByName[json.RawMessage](ctx, workflow.ChildOptions{
		WorkflowID: id, Queue: queue, Priority: a.Priority, RunTimeout: a.RunTimeout,
		ParentClose: workflow.ParentCloseAbandon, IDReuse: reuse, Memo: memo, Attributes: attrs, BusinessKey: a.BusinessKey,
	}, a.WorkflowType, a.Input)
	r := &openRun{ScheduledRun: api.ScheduledRun{FireTime: f.At, Time: workflow.Now(ctx), Kind: f.Kind,
		WorkflowID: id, Status: api.ActionStarting}, Backfill: f.Backfill}
	s.open = append(s.open, &tracked{openRun: r, result: cf, started: cf.Started()})
	s.remember(r.ScheduledRun)
}

// remember records an action in Recent, or updates its entry there.
func (s *scheduler) remember(r api.ScheduledRun) {
	for i := len(s.st.Recent) - 1; i >= 0; i-- {
		if e := &s.st.Recent[i]; e.WorkflowID == r.WorkflowID && e.Time.Equal(r.Time) {
			*e = r
			return
		}
	}
	s.st.Recent = append(s.st.Recent, r)
	if n := len(s.st.Recent); n > recentRuns {
		s.st.Recent = slices.Delete(s.st.Recent, 0, n-recentRuns)
	}
}

// onStarted records a child's run id once it runs.
func (s *scheduler) onStarted(ctx workflow.Context, t *tracked) {
	t.seen = true
	runID, err := t.started.Get(ctx)
	if err != nil {
		return // onClosed says why
	}
	t.RunID, t.Status = runID, store.StatusRunning.String()
	s.remember(t.ScheduledRun)
	if len(s.st.Buffer) > 0 && t.Backfill == 0 {
		policy := s.st.Buffer[0].Overlap
		if policy == "" {
			policy = s.st.Schedule.Policies.Overlap
		}
		if policy == api.OverlapCancelOther || policy == api.OverlapTerminateOther {
			s.stopOthers(ctx, policy)
		}
	}
}

// onClosed records how an open run ended and lets what waited for it go.
func (s *scheduler) onClosed(ctx workflow.Context, t *tracked) {
	raw, err := t.result.Get(ctx)
	switch {
	case t.started == nil: // watched by a step, which returns the status
		var status string
		if err != nil || json.Unmarshal(raw, &status) != nil {
			status = "unknown"
		}
		t.Status = status
	default:
		if runID, serr := t.started.Get(ctx); serr != nil {
			t.Status, t.Reason = api.ActionNotStarted, serr.Error()
		} else {
			t.RunID, t.Status = runID, statusOf(err).String()
		}
	}
	s.remember(t.ScheduledRun)
	s.open = slices.DeleteFunc(s.open, func(x *tracked) bool { return x == t })
	for i := range s.st.Backfills {
		if b := &s.st.Backfills[i]; b.ID == t.Backfill {
			b.Closed++
		}
	}
}

// statusOf is the status of a closed child from its result's error.
func statusOf(err error) store.RunStatus {
	switch {
	case err == nil:
		return store.StatusCompleted
	case errors.Is(err, api.ErrTerminated):
		return store.StatusTerminated
	case errors.Is(err, api.ErrCanceled):
		return store.StatusCanceled
	case errors.Is(err, api.ErrTimedOut):
		return store.StatusTimedOut
	}
	return store.StatusFailed
}

// watch follows an open run that an earlier run of the schedule's
// workflow started, with a step that waits for its close.
func (s *scheduler) watch(ctx workflow.Context, r *openRun) {
	f := workflow.ExecuteStepByName[json.RawMessage](ctx, watchOptions, stepWatch,
		api.RunRef{WorkflowID: r.WorkflowID, RunID: r.RunID})
	s.open = append(s.open, &tracked{openRun: r, result: f})
}

// apply carries out a command.
func (s *scheduler) apply(ctx workflow.Context, c command) {
	now := workflow.Now(ctx)
	switch c.Kind {
	case cmdUpdate:
		if c.Schedule == nil {
			break
		}
		cal, err := Compile(c.Schedule.Spec)
		if err != nil {
			workflow.Logger(ctx).Warn("schedule update refused", "schedule", s.st.ID, "error", err)
			break
		}
		// The state stays: paused, note and counts are not the update's.
		next := *c.Schedule
		next.Paused, next.Note = s.st.Schedule.Paused, s.st.Schedule.Note
		s.st.Schedule, s.cal = next, cal
		s.st.UpdateTime = now
		s.dirty = true
	case cmdPause:
		s.st.Schedule.Paused, s.st.Schedule.Note = c.Paused, c.Note
		s.st.PausedBy, s.st.PausedAt, s.st.UpdateTime = c.Identity, now, now
		s.dirty = true
	case cmdTrigger:
		s.st.TriggerSeq++
		s.offer(ctx, fire{At: now.Truncate(time.Second), Kind: api.ActionTrigger, Overlap: c.Overlap, N: s.st.TriggerSeq})
	case cmdBackfill:
		s.st.NextBackfill++
		total := len(s.cal.Unbounded().Between(c.Start.Add(-time.Nanosecond), c.End.Add(-time.Nanosecond), api.MaxBackfill))
		s.st.Backfills = append(s.st.Backfills, backfill{ID: s.st.NextBackfill, Next: c.Start,
			BackfillProgress: api.BackfillProgress{Start: c.Start, End: c.End, Parallelism: max(1, c.Parallelism), Total: total, Identity: c.Identity}})
	}
	if c.ID != "" {
		s.st.Applied = append(s.st.Applied, c.ID)
		if n := len(s.st.Applied); n > appliedIDs {
			s.st.Applied = slices.Delete(s.st.Applied, 0, n-appliedIDs)
		}
	}
}

// continueAsNew hands the schedule to a new run of its workflow, with the
// commands that arrived meanwhile applied first.
func (s *scheduler) continueAsNew(ctx workflow.Context) error {
	for {
		c, ok := s.signals.ReceiveAsync()
		if !ok {
			break
		}
		s.apply(ctx, c)
	}
	st := s.snapshot()
	input, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return &workflow.ContinueAsNewError{WorkflowType: WorkflowType, Input: input,
		Options: workflow.ChildOptions{Queue: Queue, Attributes: attributes(st)}}
}

// attributes are the attributes of a schedule's run, for lists.
func attributes(st state) map[string]string {
	sc := st.Schedule
	out := map[string]string{attrType: sc.Action.WorkflowType, attrPaused: fmt.Sprint(sc.Paused),
		attrCreated: st.CreateTime.UTC().Format(time.RFC3339Nano)}
	if b, err := json.Marshal(sc.Spec); err == nil && len(b) <= 500 {
		out[attrSpec] = string(b)
	}
	if len(out[attrType]) > 500 {
		delete(out, attrType)
	}
	return out
}

// terminateInput is the terminate step's input.
type terminateInput struct {
	Target api.Target `json:"target"`
	Reason string     `json:"reason"`
}

// steps are the schedule workflow's steps, over the service.
type steps struct {
	svc       api.Service
	namespace string
	identity  string
}

// terminate terminates a run; one that closed already is fine.
func (p steps) terminate(ctx context.Context, in terminateInput) (struct{}, error) {
	err := p.svc.TerminateWorkflow(ctx, api.TerminateRequest{
		RunRef:   api.RunRef{Namespace: p.namespace, WorkflowID: in.Target.WorkflowID, RunID: in.Target.RunID},
		Reason:   in.Reason,
		Identity: p.identity,
	})
	if errors.Is(err, api.ErrRunClosed) || errors.Is(err, api.ErrNotFound) {
		err = nil
	}
	return struct{}{}, err
}

// watch waits for a run to close and returns its status, heartbeating
// while it waits.
func (p steps) watch(ctx context.Context, ref api.RunRef) (string, error) {
	ref.Namespace = p.namespace
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := p.svc.WaitResult(wctx, api.ResultRequest{RunRef: ref})
		cancel()
		switch {
		case err == nil:
			return res.Status.String(), nil
		case errors.Is(err, api.ErrNotFound):
			return "", workflow.NewError("NotFound", err.Error(), true)
		case ctx.Err() != nil:
			return "", ctx.Err()
		}
		if herr := step.Heartbeat(ctx, nil); herr != nil {
			return "", herr
		}
	}
}
