package schedule

import (
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

// Service implements api.Schedules over an api.Service: a schedule is a
// run of the workflow WorkflowType in the schedule's namespace, its
// commands are signals and describe is a query. A Runner must run the
// scheduler worker for the namespace (strand server does).
type Service struct {
	svc api.Service
	// now is the clock; tests set it.
	now func() time.Time
}

// NewService returns the schedules of svc.
func NewService(svc api.Service) *Service { return &Service{svc: svc, now: time.Now} }

var _ api.Schedules = (*Service)(nil)

// ScheduleNotFoundError says a schedule does not exist (or was deleted).
type ScheduleNotFoundError struct{ ID string }

func (e *ScheduleNotFoundError) Error() string { return fmt.Sprintf("schedule %q not found", e.ID) }

// Is makes the error match api.ErrNotFound.
func (e *ScheduleNotFoundError) Is(target error) bool { return target == api.ErrNotFound }

// runRef names the run that carries a schedule now.
func runRef(ref api.ScheduleRef) api.RunRef {
	return api.RunRef{Namespace: api.NamespaceOrDefault(ref.Namespace), WorkflowID: WorkflowIDPrefix + ref.ScheduleID}
}

// Validate checks a schedule as create and update do; the error is an
// InvalidArgument naming the field ("schedule.spec.cron[0]").
func Validate(sc api.Schedule) error {
	if _, err := Compile(sc.Spec); err != nil {
		return under("schedule.spec", err)
	}
	if sc.Action.WorkflowType == "" {
		return api.InvalidArgument("schedule.action.workflow_type", "empty: name the workflow the schedule starts")
	}
	if _, ok := sc.Action.Memo[api.MemoScheduledTime]; ok {
		return api.InvalidArgument("schedule.action.memo", "%q is set by the schedule", api.MemoScheduledTime)
	}
	if _, ok := sc.Action.Attributes[api.AttributeSchedule]; ok {
		return api.InvalidArgument("schedule.action.attributes", "%q is set by the schedule", api.AttributeSchedule)
	}
	if _, ok := sc.Action.Attributes[""]; ok {
		// Every fire's start would be refused.
		return api.InvalidArgument("schedule.action.attributes", "empty attribute name")
	}
	if p := sc.Action.Priority; p < 0 || p > api.PriorityLowest {
		return api.InvalidArgument("schedule.action.priority", "%d; want 0 (normal) or 1 (highest) to 5 (lowest)", p)
	}
	if sc.Action.RunTimeout < 0 {
		return api.InvalidArgument("schedule.action.run_timeout", "negative")
	}
	if err := validOverlap("schedule.policies.overlap", sc.Policies.Overlap); err != nil {
		return err
	}
	if p := sc.Policies.Catchup; p != "" && !slices.Contains(api.CatchupPolicies, p) {
		return api.InvalidArgument("schedule.policies.catchup", "%q; want one of %v", p, api.CatchupPolicies)
	}
	if sc.Policies.CatchupWindow < 0 {
		return api.InvalidArgument("schedule.policies.catchup_window", "negative")
	}
	if sc.ActionLimit < 0 {
		return api.InvalidArgument("schedule.action_limit", "negative")
	}
	return nil
}

func validOverlap(field string, p api.OverlapPolicy) error {
	if p != "" && !slices.Contains(api.OverlapPolicies, p) {
		return api.InvalidArgument(field, "%q; want one of %v", p, api.OverlapPolicies)
	}
	return nil
}

// under puts an InvalidArgument's field under a parent field.
func under(parent string, err error) error {
	var ia *store.InvalidArgumentError
	if errors.As(err, &ia) {
		return api.InvalidArgument(parent+"."+ia.Field, "%s", ia.Reason)
	}
	return err
}

func validID(ref api.ScheduleRef) error {
	if ref.ScheduleID == "" {
		return api.InvalidArgument("schedule_id", "empty")
	}
	return store.CheckLimits(&ref)
}

// CreateSchedule starts the schedule's run. A schedule id in use is
// api.ErrAlreadyExists; a deleted schedule's id may be used again.
func (s *Service) CreateSchedule(ctx context.Context, req api.CreateScheduleRequest) error {
	if err := validID(req.ScheduleRef); err != nil {
		return err
	}
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if err := Validate(req.Schedule); err != nil {
		return err
	}
	now := s.now().UTC()
	st := state{ID: req.ScheduleID, Schedule: req.Schedule, Watermark: now, CreateTime: now, UpdateTime: now}
	if req.Schedule.Paused {
		st.PausedBy, st.PausedAt = req.Identity, now
	}
	input, err := json.Marshal(st)
	if err != nil {
		return err
	}
	ref := runRef(req.ScheduleRef)
	_, err = s.svc.StartWorkflow(ctx, api.StartRequest{
		Namespace: ref.Namespace, WorkflowID: ref.WorkflowID, WorkflowType: WorkflowType,
		Input: input, Queue: Queue, Attributes: attributes(st), Identity: req.Identity,
	})
	if errors.Is(err, api.ErrAlreadyStarted) {
		return fmt.Errorf("schedule %q: %w", req.ScheduleID, api.ErrAlreadyExists)
	}
	return err
}

// read returns a schedule's state and the run carrying it.
func (s *Service) read(ctx context.Context, ref api.ScheduleRef) (state, api.Description, error) {
	if err := validID(ref); err != nil {
		return state{}, api.Description{}, err
	}
	rr := runRef(ref)
	d, err := s.svc.DescribeWorkflow(ctx, rr)
	if err == nil && d.Status != store.StatusRunning {
		err = api.ErrNotFound
	}
	if err != nil {
		return state{}, d, s.notFound(ref, err)
	}
	rr.RunID = d.RunID
	st, err := s.query(ctx, ref, rr)
	if err != nil {
		// It continued as new meanwhile: ask the run that carries it now.
		rr.RunID = ""
		st, err = s.query(ctx, ref, rr)
	}
	if err != nil {
		return state{}, d, s.notFound(ref, err)
	}
	return st, d, nil
}

// query asks a schedule's run for its state.
func (s *Service) query(ctx context.Context, ref api.ScheduleRef, rr api.RunRef) (state, error) {
	raw, err := s.svc.QueryWorkflow(ctx, api.QueryRequest{RunRef: rr, Name: queryName})
	if err != nil {
		return state{}, err
	}
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return state{}, fmt.Errorf("schedule %q: decode its state: %w", ref.ScheduleID, err)
	}
	return st, nil
}

// notFound turns the errors of a schedule's run that does not exist into
// a ScheduleNotFoundError.
func (s *Service) notFound(ref api.ScheduleRef, err error) error {
	if errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrRunClosed) {
		return &ScheduleNotFoundError{ID: ref.ScheduleID}
	}
	return err
}

// DescribeSchedule returns a schedule with its next fire times and its
// recent actions.
func (s *Service) DescribeSchedule(ctx context.Context, ref api.ScheduleRef) (api.ScheduleDescription, error) {
	st, d, err := s.read(ctx, ref)
	if err != nil {
		return api.ScheduleDescription{}, err
	}
	out := api.ScheduleDescription{
		Namespace: api.NamespaceOrDefault(ref.Namespace), ScheduleID: st.ID, Schedule: st.Schedule,
		NextFires: nextFires(st, 10), Recent: st.Recent, Buffered: len(st.Buffer),
		Actions: st.Actions, Triggers: st.Triggers, Backfilled: st.Backfilled,
		Skipped: st.Skipped, Missed: st.Missed, PausedFires: st.PausedFires,
		PausedBy: st.PausedBy, PausedAt: st.PausedAt, CreateTime: st.CreateTime, UpdateTime: st.UpdateTime,
		WorkflowID: d.WorkflowID, RunID: d.RunID,
	}
	out.Running = make([]api.ScheduledRun, 0, len(st.Running))
	for _, r := range st.Running {
		out.Running = append(out.Running, r.ScheduledRun)
	}
	if out.Recent == nil {
		out.Recent = []api.ScheduledRun{}
	}
	for _, b := range st.Backfills {
		out.Backfills = append(out.Backfills, b.BackfillProgress)
	}
	return out, nil
}

// nextFires are a schedule's next n fire times, none while it is paused
// or has reached its action limit.
func nextFires(st state, n int) []time.Time {
	sc := st.Schedule
	cal, err := Compile(sc.Spec)
	if err != nil || sc.Paused || sc.ActionLimit > 0 && st.Actions >= sc.ActionLimit {
		return []time.Time{}
	}
	if sc.ActionLimit > 0 {
		n = int(min(int64(n), sc.ActionLimit-st.Actions))
	}
	out := cal.Upcoming(st.Watermark, n)
	if out == nil {
		out = []time.Time{}
	}
	return out
}

// starting reports whether a run the schedule started has not started yet.
func starting(st state) bool {
	return slices.ContainsFunc(st.Running, func(r openRun) bool { return r.Status == api.ActionStarting })
}

// ListSchedules returns a page of a namespace's schedules, from the
// visibility records of the runs that carry them.
func (s *Service) ListSchedules(ctx context.Context, req api.ListSchedulesRequest) (api.ListSchedulesResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.ListSchedulesResponse{}, err
	}
	if req.PageSize < 0 || req.PageSize > 1000 {
		return api.ListSchedulesResponse{}, api.InvalidArgument("page_size", "%d; want 0 to 1000", req.PageSize)
	}
	page, err := s.svc.ListWorkflows(ctx, api.ListRequest{
		Namespace: api.NamespaceOrDefault(req.Namespace), WorkflowType: WorkflowType, WorkflowIDPrefix: WorkflowIDPrefix,
		Statuses: []store.RunStatus{store.StatusRunning}, PageSize: req.PageSize, PageToken: req.PageToken,
	})
	if err != nil {
		return api.ListSchedulesResponse{}, err
	}
	out := api.ListSchedulesResponse{Schedules: make([]api.ScheduleSummary, 0, len(page.Runs)), NextPageToken: page.NextPageToken}
	now := s.now()
	for _, r := range page.Runs {
		sum := api.ScheduleSummary{
			ScheduleID:   strings.TrimPrefix(r.WorkflowID, WorkflowIDPrefix),
			WorkflowType: r.Attributes[attrType],
			Paused:       r.Attributes[attrPaused] == "true",
			CreateTime:   r.StartTime,
		}
		if t, err := time.Parse(time.RFC3339Nano, r.Attributes[attrCreated]); err == nil {
			sum.CreateTime = t
		}
		if json.Unmarshal([]byte(r.Attributes[attrSpec]), &sum.Spec) == nil && !sum.Paused {
			if cal, err := Compile(sum.Spec); err == nil {
				sum.NextFire = cal.Next(now)
			}
		}
		out.Schedules = append(out.Schedules, sum)
	}
	return out, nil
}

// UpdateSchedule replaces a schedule's spec, action and policies.
func (s *Service) UpdateSchedule(ctx context.Context, req api.UpdateScheduleRequest) error {
	if err := validID(req.ScheduleRef); err != nil {
		return err
	}
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if err := Validate(req.Schedule); err != nil {
		return err
	}
	return s.send(ctx, req.ScheduleRef, command{Kind: cmdUpdate, Schedule: &req.Schedule, Identity: req.Identity})
}

// PauseSchedule pauses or unpauses a schedule.
func (s *Service) PauseSchedule(ctx context.Context, req api.PauseScheduleRequest) error {
	if err := validID(req.ScheduleRef); err != nil {
		return err
	}
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	return s.send(ctx, req.ScheduleRef, command{Kind: cmdPause, Paused: req.Paused, Note: req.Note, Identity: req.Identity})
}

// TriggerSchedule takes the schedule's action now.
func (s *Service) TriggerSchedule(ctx context.Context, req api.TriggerScheduleRequest) error {
	if err := validID(req.ScheduleRef); err != nil {
		return err
	}
	if err := validOverlap("overlap", req.Overlap); err != nil {
		return err
	}
	return s.send(ctx, req.ScheduleRef, command{Kind: cmdTrigger, Overlap: req.Overlap, Identity: req.Identity})
}

// BackfillSchedule takes the action for each fire time of a past range.
func (s *Service) BackfillSchedule(ctx context.Context, req api.BackfillScheduleRequest) error {
	if err := validID(req.ScheduleRef); err != nil {
		return err
	}
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	switch {
	case req.Start.IsZero():
		return api.InvalidArgument("start", "missing")
	case req.End.IsZero():
		return api.InvalidArgument("end", "missing")
	case !req.End.After(req.Start):
		return api.InvalidArgument("end", "%s is not after the start, %s", req.End.Format(time.RFC3339), req.Start.Format(time.RFC3339))
	case req.Parallelism < 0 || req.Parallelism > 1000:
		return api.InvalidArgument("parallelism", "%d; want 0 to 1000", req.Parallelism)
	}
	st, _, err := s.read(ctx, req.ScheduleRef)
	if err != nil {
		return err
	}
	cal, err := Compile(st.Schedule.Spec)
	if err != nil {
		return err
	}
	n := len(cal.Unbounded().Between(req.Start.Add(-time.Nanosecond), req.End.Add(-time.Nanosecond), api.MaxBackfill+1))
	switch {
	case n == 0:
		return api.InvalidArgument("end", "the schedule has no fire time from %s to %s", req.Start.Format(time.RFC3339), req.End.Format(time.RFC3339))
	case n > api.MaxBackfill:
		return api.InvalidArgument("end", "more than %d fire times from %s to %s; backfill a shorter range", api.MaxBackfill,
			req.Start.Format(time.RFC3339), req.End.Format(time.RFC3339))
	}
	return s.send(ctx, req.ScheduleRef, command{Kind: cmdBackfill, Start: req.Start.UTC(), End: req.End.UTC(),
		Parallelism: req.Parallelism, Identity: req.Identity})
}

// DeleteSchedule terminates the schedule's run; the runs it started go on.
func (s *Service) DeleteSchedule(ctx context.Context, req api.DeleteScheduleRequest) error {
	if err := validID(req.ScheduleRef); err != nil {
		return err
	}
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	rr := runRef(req.ScheduleRef)
	err := s.svc.TerminateWorkflow(ctx, api.TerminateRequest{RunRef: rr, Reason: "schedule deleted", Identity: req.Identity})
	return s.notFound(req.ScheduleRef, err)
}

// applyWait bounds how long a command waits to see itself applied.
const applyWait = 5 * time.Second

// send signals a command to a schedule's run and waits (up to applyWait)
// until the schedule has applied it and the runs it started have started,
// so that a describe after it sees it and the runs can be asked for.
// The signal is durable once sent: a command not yet applied when the wait
// ends is applied later.
func (s *Service) send(ctx context.Context, ref api.ScheduleRef, c command) error {
	c.ID = uuid.NewString()
	input, err := json.Marshal(c)
	if err != nil {
		return err
	}
	// A deleted schedule's run is closed: the signal is refused (run
	// closed), which notFound reports as the schedule not found.
	rr := runRef(ref)
	err = s.svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: rr, Name: signalName, Input: input, RequestID: c.ID, Identity: c.Identity})
	if err != nil {
		return s.notFound(ref, err)
	}
	wctx, cancel := context.WithTimeout(ctx, applyWait)
	defer cancel()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		// The run that carries the schedule now (it may have continued as new).
		if st, err := s.query(wctx, ref, rr); err == nil && slices.Contains(st.Applied, c.ID) && !starting(st) {
			return nil
		}
		select {
		case <-wctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}
