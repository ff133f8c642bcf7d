package dag

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
	"github.com/strandhq/strand/workflow"
)

// A backfill (DolphinScheduler's "complement data") runs a DAG once for
// each business date of a past range or list: a run of the workflow
// BackfillWorkflowType, on Queue, which the interpreter's workers run. It
// starts each date's instance as a child that outlives it, so a backfill
// survives restarts like any run; its progress is what its query
// (QueryBackfill) answers while it runs, and its result once it ended.

// BackfillWorkflowType is the type of a backfill's run.
const BackfillWorkflowType = "strand.DAGBackfill"

// QueryBackfill is the query a backfill's run answers with its progress.
const QueryBackfill = "strand.dag.backfill"

// AttrBackfill is the attribute of the instances a backfill started: its id.
const AttrBackfill = "strand.dag.backfill"

// MaxBackfillDates bounds the business dates of one backfill.
const MaxBackfillDates = 1000

// maxBackfillID bounds a backfill's id, so that its instances' ids (the
// id, a DAG's name and the date) stay within a workflow id's 250 bytes.
const maxBackfillID = 250 - 1 - 100 - 1 - 8

// MaxBackfillParallelism bounds how many dates a backfill runs at once.
const MaxBackfillParallelism = 100

// BackfillRequest asks for a backfill of a DAG: either a range of dates
// (From to To, both included) or a list (Dates), as yyyy-MM-dd.
type BackfillRequest struct {
	DAG   string   `json:"dag"`
	From  string   `json:"from,omitempty"`
	To    string   `json:"to,omitempty"`
	Dates []string `json:"dates,omitempty"`
	// At is the time of day of each instance's business time, HH:MM in
	// TimeZone (default 00:00: the date's midnight, as DolphinScheduler's
	// complement of a date).
	At       string `json:"at,omitempty"`
	TimeZone string `json:"time_zone,omitempty"`
	// Parallelism is how many dates run at once; 0 or 1: one after another
	// (serial), each date once the one before it has ended, stopping at the
	// first date that does not succeed.
	Parallelism int `json:"parallelism,omitempty"`
	// Dependents also runs, for each date, the DAGs whose dependent tasks
	// name this one (DolphinScheduler's complement dependency mode), once
	// this DAG's instance of the date succeeded.
	Dependents bool `json:"dependents,omitempty"`
	// The instances' options, as strand dag run's.
	Version         int32             `json:"version,omitempty"`
	Params          map[string]string `json:"params,omitempty"`
	FailureStrategy FailureStrategy   `json:"failure_strategy,omitempty"`
	WorkerGroup     string            `json:"worker_group,omitempty"`
	Priority        Priority          `json:"priority,omitempty"`
	// ID is the backfill's workflow id (default NAME-backfill-TIME-RANDOM).
	ID       string `json:"id,omitempty"`
	Identity string `json:"identity,omitempty"`
}

// BackfillInput is the input of a backfill's run.
type BackfillInput struct {
	// Run is every instance's input but its business time.
	Run         RunInput `json:"run"`
	Parallelism int      `json:"parallelism,omitempty"`
	// Days are the dates to run, in order, with their instances' ids.
	Days []BackfillDay `json:"days"`
}

// Backfill states besides an instance's own.
const (
	// BackfillRunning: dates are still to run or running.
	BackfillRunning = "running"
	// BackfillSuccess: every date's instances succeeded.
	BackfillSuccess = "success"
	// BackfillFailure: some date's instance did not succeed.
	BackfillFailure = "failure"
	// BackfillPending: the date has not started yet.
	BackfillPending = "pending"
	// BackfillNotRun: the date will not run (a serial backfill stopped
	// at an earlier date's failure, or this DAG's instance of the date
	// failed, so its dependents do not run).
	BackfillNotRun = "not_run"
)

// Backfill is a backfill's progress: its query's answer while it runs,
// its result once it ended.
type Backfill struct {
	ID          string `json:"id"`
	DAG         string `json:"dag"`
	TimeZone    string `json:"time_zone,omitempty"`
	Parallelism int    `json:"parallelism"`
	// Dependents are the DAGs run for each date after this one.
	Dependents []string `json:"dependents,omitempty"`
	// State is running, success or failure.
	State string        `json:"state"`
	Days  []BackfillDay `json:"days"`
}

// BackfillDay is one business date of a backfill and its instances: this
// DAG's first, then its dependents'.
type BackfillDay struct {
	Date         string    `json:"date"`
	ScheduleTime time.Time `json:"schedule_time"`
	// State is pending, running, success, failure or not_run.
	State     string             `json:"state"`
	Instances []BackfillInstance `json:"instances"`
}

// BackfillInstance is an instance a backfill starts.
type BackfillInstance struct {
	DAG        string `json:"dag"`
	WorkflowID string `json:"workflow_id"`
	// State is pending, then the instance's state (submitted, running,
	// success, failure, stop, ...), or not_run.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Backfill checks a backfill request and starts it; nothing starts when
// the request is refused (an unknown or offline DAG, a bad date or range).
func (c *Client) Backfill(ctx context.Context, req BackfillRequest) (Backfill, error) {
	in, err := c.backfillInput(ctx, req)
	if err != nil {
		return Backfill{}, err
	}
	id := req.ID
	if id == "" {
		id = fmt.Sprintf("%s-backfill-%s-%s", req.DAG, time.Now().UTC().Format("20060102150405"), uuid.NewString()[:6])
	}
	if len(id) > maxBackfillID {
		// Its instances' ids add a DAG's name and the date.
		return Backfill{}, api.InvalidArgument("id", "%d bytes; at most %d", len(id), maxBackfillID)
	}
	for i := range in.Days {
		d := &in.Days[i]
		compact := strings.ReplaceAll(d.Date, "-", "")
		for j := range d.Instances {
			x := &d.Instances[j]
			if j == 0 {
				x.WorkflowID = id + "-" + compact
			} else {
				x.WorkflowID = id + "-" + x.DAG + "-" + compact
			}
		}
	}
	input, err := json.Marshal(in)
	if err != nil {
		return Backfill{}, err
	}
	_, err = c.svc.StartWorkflow(ctx, api.StartRequest{Namespace: c.namespace, WorkflowID: id, WorkflowType: BackfillWorkflowType, Queue: Queue,
		Input: input, BusinessKey: req.DAG, Attributes: map[string]string{AttrDAG: req.DAG}, RequestID: uuid.NewString(), Identity: req.Identity})
	if err != nil {
		return Backfill{}, fmt.Errorf("dag: start the backfill of %s: %w", req.DAG, err)
	}
	return progressOf(id, in), nil
}

// backfillInput checks req and returns the backfill's input, its
// instances' ids not yet set.
func (c *Client) backfillInput(ctx context.Context, req BackfillRequest) (BackfillInput, error) {
	run := RunInput{DAG: req.DAG, Version: req.Version, Params: req.Params, FailureStrategy: req.FailureStrategy,
		WorkerGroup: req.WorkerGroup, Priority: req.Priority, TimeZone: req.TimeZone}
	if err := run.Check(); err != nil {
		return BackfillInput{}, err
	}
	if req.DAG != "" && !validName.MatchString(req.DAG) {
		return BackfillInput{}, fmt.Errorf("%w: no DAG is named %q: a name is letters, digits, '_', '.' and '-', at most 100", api.ErrNotFound, req.DAG)
	}
	dates, err := backfillDates(req)
	if err != nil {
		return BackfillInput{}, err
	}
	if req.Parallelism < 0 || req.Parallelism > MaxBackfillParallelism {
		return BackfillInput{}, api.InvalidArgument("parallelism", "%d; want 0 or 1 (one date after another) to %d", req.Parallelism, MaxBackfillParallelism)
	}
	hour, minute := 0, 0
	if req.At != "" {
		at, err := time.Parse("15:04", req.At)
		if err != nil {
			return BackfillInput{}, api.InvalidArgument("at", "%q: want a time of day HH:MM, such as 02:00", req.At)
		}
		hour, minute = at.Hour(), at.Minute()
	}
	loc := time.UTC
	if req.TimeZone != "" {
		if loc, err = loadZone(req.TimeZone); err != nil {
			return BackfillInput{}, err
		}
	}
	if _, err := c.Catalog.resolve(ctx, run); err != nil {
		if errors.Is(err, ErrOffline) {
			return BackfillInput{}, fmt.Errorf("%w: %w", api.ErrFailedPrecondition, err)
		}
		return BackfillInput{}, err
	}
	var deps []string
	if req.Dependents {
		if deps, err = c.dependents(ctx, req.DAG); err != nil {
			return BackfillInput{}, err
		}
	}
	in := BackfillInput{Run: run, Parallelism: req.Parallelism}
	for _, d := range dates {
		day := BackfillDay{Date: d.Format(time.DateOnly), State: BackfillPending,
			ScheduleTime: time.Date(d.Year(), d.Month(), d.Day(), hour, minute, 0, 0, loc)}
		day.Instances = append(day.Instances, BackfillInstance{DAG: req.DAG, State: BackfillPending})
		for _, dep := range deps {
			day.Instances = append(day.Instances, BackfillInstance{DAG: dep, State: BackfillPending})
		}
		in.Days = append(in.Days, day)
	}
	return in, nil
}

// backfillDates are the dates a request names, in order, each once.
func backfillDates(req BackfillRequest) ([]time.Time, error) {
	parse := func(field, s string) (time.Time, error) {
		d, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
		if err != nil {
			return time.Time{}, api.InvalidArgument(field, "%q is not a date: want yyyy-MM-dd, such as 2026-01-01", s)
		}
		return d, nil
	}
	var out []time.Time
	switch {
	case len(req.Dates) > 0 && (req.From != "" || req.To != ""):
		return nil, api.InvalidArgument("dates", "give either a range (from and to) or a list of dates, not both")
	case len(req.Dates) > 0:
		if len(req.Dates) > MaxBackfillDates {
			return nil, api.InvalidArgument("dates", "%d dates; at most %d", len(req.Dates), MaxBackfillDates)
		}
		for _, s := range req.Dates {
			d, err := parse("dates", s)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
		out = slices.Compact(out)
	case req.From == "" && req.To == "":
		return nil, api.InvalidArgument("from", "missing: give a range of dates (from and to) or a list (dates)")
	case req.From == "":
		return nil, api.InvalidArgument("from", "missing: a range needs its first date")
	case req.To == "":
		return nil, api.InvalidArgument("to", "missing: a range needs its last date")
	default:
		from, err := parse("from", req.From)
		if err != nil {
			return nil, err
		}
		to, err := parse("to", req.To)
		if err != nil {
			return nil, err
		}
		if to.Before(from) {
			return nil, api.InvalidArgument("to", "%s is before the first date, %s", req.To, req.From)
		}
		for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
			if len(out) == MaxBackfillDates {
				return nil, api.InvalidArgument("to", "more than %d dates from %s to %s; backfill a shorter range", MaxBackfillDates, req.From, req.To)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// dependents are the online DAGs with a dependent task naming name.
func (c *Client) dependents(ctx context.Context, name string) ([]string, error) {
	all, err := c.Catalog.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range all {
		if s.Name == name || !s.Online {
			continue
		}
		d, err := c.Catalog.Get(ctx, s.Name, 0)
		if err != nil {
			return nil, err
		}
		def, err := Parse(d.Body)
		if err != nil {
			continue // a version stored before a check it fails does not run either
		}
		if slices.ContainsFunc(def.Tasks, func(t Task) bool {
			return t.Type == TypeDependent && slices.ContainsFunc(t.Depends, func(dep Dependency) bool { return dep.DAG == name })
		}) {
			out = append(out, s.Name)
		}
	}
	return out, nil
}

// progressOf is a backfill's progress before it ran anything.
func progressOf(id string, in BackfillInput) Backfill {
	b := Backfill{ID: id, DAG: in.Run.DAG, TimeZone: in.Run.TimeZone, Parallelism: max(1, in.Parallelism), State: BackfillRunning, Days: in.Days}
	if len(in.Days) > 0 {
		for _, x := range in.Days[0].Instances[1:] {
			b.Dependents = append(b.Dependents, x.DAG)
		}
	}
	return b
}

// BackfillProgress returns a backfill's progress, by its id.
func (c *Client) BackfillProgress(ctx context.Context, id string) (Backfill, error) {
	d, err := c.svc.DescribeWorkflow(ctx, api.RunRef{Namespace: c.namespace, WorkflowID: id})
	if err != nil {
		return Backfill{}, err
	}
	if d.WorkflowType != BackfillWorkflowType {
		return Backfill{}, fmt.Errorf("%w: %s is not a backfill", api.ErrNotFound, id)
	}
	ref := api.RunRef{Namespace: c.namespace, WorkflowID: id, RunID: d.RunID}
	var b Backfill
	if d.Status == store.StatusRunning {
		raw, err := c.svc.QueryWorkflow(ctx, api.QueryRequest{RunRef: ref, Name: QueryBackfill})
		if err == nil {
			err = json.Unmarshal(raw, &b)
		}
		if err != nil {
			return Backfill{}, fmt.Errorf("dag: the progress of backfill %s (the DAG workers answer it): %w", id, err)
		}
		return b, nil
	}
	res, err := c.svc.WaitResult(ctx, api.ResultRequest{RunRef: ref})
	if err != nil {
		return Backfill{}, err
	}
	if res.Failure != nil || json.Unmarshal(res.Output, &b) != nil || b.ID == "" {
		// Terminated or canceled before it ended: the instances it started
		// are listed with its id as their attribute AttrBackfill.
		b = Backfill{ID: id, DAG: d.BusinessKey, State: d.Status.String(), Days: []BackfillDay{}}
	}
	return b, nil
}

// RunBackfill is the workflow of a backfill: it runs the dates, at most
// Parallelism at once (one after another when 0 or 1, stopping at the
// first date that does not succeed), each date's dependents once its
// instance succeeded, and returns its progress.
func RunBackfill(ctx workflow.Context, in BackfillInput) (Backfill, error) {
	b := progressOf(workflow.GetInfo(ctx).WorkflowID, in)
	// The progress is a query's answer, not a memo kept at each change: a
	// long backfill's history stays its instances' starts and ends.
	workflow.SetQueryHandler(ctx, QueryBackfill, func(struct{}) (Backfill, error) { return b, nil })
	serial := in.Parallelism <= 1
	open, stopped := 0, false
	for i := range b.Days {
		if err := workflow.Await(ctx, func() bool { return open < b.Parallelism }); err != nil {
			return b, err
		}
		if stopped {
			break
		}
		open++
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer func() { open-- }()
			ok := runDay(ctx, in.Run, &b.Days[i])
			if !ok && serial {
				stopped = true
			}
		})
	}
	if err := workflow.Await(ctx, func() bool { return open == 0 }); err != nil {
		return b, err
	}
	b.State = BackfillSuccess
	for i := range b.Days {
		d := &b.Days[i]
		if d.State == BackfillPending {
			d.State = BackfillNotRun
			for j := range d.Instances {
				d.Instances[j].State, d.Instances[j].Reason = BackfillNotRun, "an earlier date did not succeed (serial)"
			}
		}
		if d.State != BackfillSuccess {
			b.State = BackfillFailure
		}
	}
	return b, nil
}

// runDay runs a date's instance, then, when it succeeded, its dependents'
// at once; it reports whether all succeeded.
func runDay(ctx workflow.Context, run RunInput, day *BackfillDay) bool {
	day.State = BackfillRunning
	run.ScheduleTime = day.ScheduleTime
	ok := runInstance(ctx, run, &day.Instances[0])
	if !ok {
		for j := range day.Instances[1:] {
			day.Instances[1+j].State, day.Instances[1+j].Reason = BackfillNotRun, day.Instances[0].DAG+" did not succeed"
		}
	} else if len(day.Instances) > 1 {
		done := 0
		for j := range day.Instances[1:] {
			x := &day.Instances[1+j]
			dep := RunInput{DAG: x.DAG, ScheduleTime: day.ScheduleTime, TimeZone: run.TimeZone, WorkerGroup: run.WorkerGroup, Priority: run.Priority}
			workflow.Go(ctx, func(ctx workflow.Context) {
				defer func() { done++ }()
				if !runInstance(ctx, dep, x) {
					ok = false
				}
			})
		}
		if err := workflow.Await(ctx, func() bool { return done == len(day.Instances)-1 }); err != nil {
			ok = false // the backfill was canceled while its dependents ran
		}
	}
	day.State = BackfillSuccess
	if !ok {
		day.State = BackfillFailure
	}
	return ok
}

// runInstance starts an instance as a child that outlives the backfill
// and waits for it to end; it reports whether it succeeded.
func runInstance(ctx workflow.Context, run RunInput, x *BackfillInstance) bool {
	backfill := workflow.GetInfo(ctx).WorkflowID
	opts := workflow.ChildOptions{WorkflowID: x.WorkflowID, Queue: Queue, BusinessKey: run.DAG, ParentClose: workflow.ParentCloseAbandon,
		Attributes: map[string]string{AttrDAG: run.DAG, AttrState: string(StateSubmitted), AttrBackfill: backfill},
		Memo:       startMemo(run, run.Version)}
	f := workflow.ExecuteChildByName[*Instance](ctx, opts, WorkflowType, run)
	x.State = string(StateSubmitted)
	if _, err := f.Started().Get(ctx); err != nil {
		x.State, x.Reason = BackfillNotRun, err.Error()
		return false
	}
	x.State = string(StateRunning)
	inst, err := f.Get(ctx)
	switch {
	case err == nil && inst != nil:
		x.State = string(inst.State)
	case err != nil:
		x.State, x.Reason = string(StateFailure), err.Error()
		var ae *api.ApplicationError
		var failed Instance
		if errors.As(err, &ae) && len(ae.Details) > 0 && json.Unmarshal(ae.Details, &failed) == nil && failed.State != "" {
			x.State, x.Reason = string(failed.State), ae.Message
		} else if errors.Is(err, api.ErrTerminated) {
			x.State = string(StateKill)
		}
	default:
		x.State = string(StateFailure)
	}
	return x.State == string(StateSuccess)
}
