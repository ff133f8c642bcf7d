package api

import (
	"context"
	"time"
)

// Schedules is what a client needs to run workflows on a calendar. Package
// schedule implements it over a Service; a remote service implements it
// over HTTP.
type Schedules interface {
	CreateSchedule(ctx context.Context, req CreateScheduleRequest) error
	DescribeSchedule(ctx context.Context, ref ScheduleRef) (ScheduleDescription, error)
	ListSchedules(ctx context.Context, req ListSchedulesRequest) (ListSchedulesResponse, error)
	// UpdateSchedule replaces the spec, action and policies; the paused
	// state and the actions taken stay.
	UpdateSchedule(ctx context.Context, req UpdateScheduleRequest) error
	// PauseSchedule pauses (Paused) or unpauses a schedule, with a note.
	PauseSchedule(ctx context.Context, req PauseScheduleRequest) error
	// TriggerSchedule takes the schedule's action now, once.
	TriggerSchedule(ctx context.Context, req TriggerScheduleRequest) error
	// BackfillSchedule takes the action for every fire time of a past range.
	BackfillSchedule(ctx context.Context, req BackfillScheduleRequest) error
	// DeleteSchedule stops the schedule; the runs it started go on.
	DeleteSchedule(ctx context.Context, req DeleteScheduleRequest) error
}

// SystemQueue is the task queue, in every namespace, of Strand's own
// workflows: the runs that carry schedules and batch operations.
const SystemQueue = "strand.system"

// SystemWorkflowTypes are the types of Strand's own runs on SystemQueue:
// schedules, batch operations, mailboxes and human tasks. Lists leave
// them out with ListRequest.ExcludeWorkflowTypes.
var SystemWorkflowTypes = []string{"strand.Schedule", "strand.Batch", MailboxWorkflowType, HumanTaskWorkflowType}

// MemoScheduledTime is the memo key under which a run that a schedule
// started finds its fire time (RFC 3339); workflow.ScheduledTime reads it.
const MemoScheduledTime = "strand.scheduled_time"

// AttributeSchedule is the attribute naming the schedule that started a run.
const AttributeSchedule = "strand.schedule"

// ScheduleSpec is when a schedule fires.
type ScheduleSpec struct {
	// Cron holds the schedule's calendars, any number: cron expressions of
	// 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds
	// first), names (@yearly, @monthly, @weekly, @daily, @hourly) and
	// intervals ("@every 90s", anchored at the Unix epoch, so "@every 1h"
	// fires on the hour). A time any of them names is a fire time, once.
	Cron []string `json:"cron" required:"true" max:"32" maxvalue:"1000" items:"nonempty" example:"@hourly"`
	// TimeZone is the IANA name the cron expressions are read in; UTC when
	// empty. Intervals do not depend on it.
	TimeZone string `json:"time_zone,omitempty" max:"100"`
	// Start and End bound the fire times: none before Start, none at or
	// after End. Zero means unbounded.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// Jitter delays each fire by up to this long, by an amount that depends
	// only on the schedule and the fire time.
	Jitter time.Duration `json:"jitter,omitempty" maximum:"86400000000000"`
}

// ScheduleAction is the workflow a schedule starts at each fire. The run's
// workflow id is the schedule id and the fire time ("nightly-2026-01-03T00:00:00Z").
type ScheduleAction struct {
	WorkflowType string            `json:"workflow_type" required:"true" max:"250" text:"true"`
	Input        Value             `json:"input,omitempty" max:"16777216"`
	Queue        string            `json:"queue,omitempty" max:"1000"`
	Priority     int8              `json:"priority,omitempty" minimum:"0" maximum:"5"`
	RunTimeout   time.Duration     `json:"run_timeout,omitempty"`
	Memo         map[string]Value  `json:"memo,omitempty" max:"63" maxkey:"128" maxvalue:"16777216" notkeys:"strand.scheduled_time"`
	Attributes   map[string]string `json:"attributes,omitempty" max:"63" maxkey:"32" maxvalue:"500" keys:"nonempty" text:"true" notkeys:"strand.schedule"`
	// BusinessKey is the business key of every run the schedule starts.
	BusinessKey string `json:"business_key,omitempty" max:"250" text:"true"`
}

// OverlapPolicy says what a fire does while a run the schedule started is
// still open.
type OverlapPolicy string

// Overlap policies.
const (
	// OverlapSkip drops the fire (the default).
	OverlapSkip OverlapPolicy = "skip"
	// OverlapBufferOne keeps one fire and starts it when the open run
	// closes; further fires meanwhile are dropped.
	OverlapBufferOne OverlapPolicy = "buffer_one"
	// OverlapBufferAll keeps every fire and starts them one after another.
	OverlapBufferAll OverlapPolicy = "buffer_all"
	// OverlapCancelOther asks the open run to cancel and starts the new one
	// when it has closed.
	OverlapCancelOther OverlapPolicy = "cancel_other"
	// OverlapTerminateOther terminates the open run and starts the new one.
	OverlapTerminateOther OverlapPolicy = "terminate_other"
	// OverlapAllowAll starts every fire at once.
	OverlapAllowAll OverlapPolicy = "allow_all"
)

// OverlapPolicies lists every policy, the default first.
var OverlapPolicies = []OverlapPolicy{OverlapSkip, OverlapBufferOne, OverlapBufferAll, OverlapCancelOther, OverlapTerminateOther, OverlapAllowAll}

// DefaultCatchupWindow is how late a missed fire may still be taken when a
// schedule names no window.
const DefaultCatchupWindow = time.Hour

// CatchupPolicy says which of the fires that came due while a schedule's
// scheduler was not running (Strand was down) it takes when it runs again.
type CatchupPolicy string

// Catch-up policies.
const (
	// CatchupLatest takes the latest of the fires that came due while down,
	// if it is within the catch-up window, through the overlap policy; the
	// earlier ones count as missed (the default).
	CatchupLatest CatchupPolicy = "latest"
	// CatchupNone takes none of them: every fire more than OnTimeGrace
	// late counts as missed, and the schedule goes on with its next fire.
	CatchupNone CatchupPolicy = "none"
	// CatchupAll takes every one within the catch-up window, oldest first,
	// one after another (each when the run before closed; all at once
	// under the overlap policy allow_all).
	CatchupAll CatchupPolicy = "all"
)

// CatchupPolicies lists every catch-up policy, the default first.
var CatchupPolicies = []CatchupPolicy{CatchupLatest, CatchupNone, CatchupAll}

// OnTimeGrace is how late a fire may be taken and still count as on time,
// not as one that came due while the scheduler was down: a scheduler that
// falls behind by less (a loaded machine) takes every fire.
const OnTimeGrace = 2 * time.Second

// SchedulePolicies say what a schedule does with overlaps and missed fires.
type SchedulePolicies struct {
	Overlap OverlapPolicy `json:"overlap,omitempty"`
	// CatchupWindow is how late a fire may be taken: after downtime, a
	// fire older than it counts as missed whatever Catchup says (0: an
	// hour).
	CatchupWindow time.Duration `json:"catchup_window,omitempty"`
	// Catchup says which fires that came due while Strand was down are
	// taken: latest (empty: the default), none or all.
	Catchup CatchupPolicy `json:"catchup,omitempty"`
}

// Schedule is what a schedule does and when.
type Schedule struct {
	Spec     ScheduleSpec     `json:"spec" required:"true"`
	Action   ScheduleAction   `json:"action" required:"true"`
	Policies SchedulePolicies `json:"policies,omitzero"`
	// ActionLimit, when positive, is how many fires the schedule takes in
	// all; then it takes no more (triggers and backfills are not counted).
	ActionLimit int64 `json:"action_limit,omitempty" minimum:"0"`
	// Paused and Note are the schedule's state when it is created.
	Paused bool   `json:"paused,omitempty"`
	Note   string `json:"note,omitempty" max:"32768"`
}

// ScheduleRef names a schedule.
type ScheduleRef struct {
	Namespace  string `json:"namespace,omitempty" max:"63"`
	ScheduleID string `json:"schedule_id" max:"200" id:"true" required:"true"`
}

// CreateScheduleRequest creates a schedule.
type CreateScheduleRequest struct {
	ScheduleRef
	Schedule Schedule `json:"schedule" required:"true"`
	Identity string   `json:"identity,omitempty" max:"256"`
}

// UpdateScheduleRequest replaces a schedule's spec, action and policies.
type UpdateScheduleRequest struct {
	ScheduleRef
	Schedule Schedule `json:"schedule" required:"true"`
	Identity string   `json:"identity,omitempty" max:"256"`
}

// PauseScheduleRequest pauses or unpauses a schedule.
type PauseScheduleRequest struct {
	ScheduleRef
	Paused   bool   `json:"paused"`
	Note     string `json:"note,omitempty" max:"32768"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// TriggerScheduleRequest takes a schedule's action now.
type TriggerScheduleRequest struct {
	ScheduleRef
	// Overlap overrides the schedule's policy for this action.
	Overlap  OverlapPolicy `json:"overlap,omitempty"`
	Identity string        `json:"identity,omitempty" max:"256"`
}

// MaxBackfill bounds the fire times of one backfill.
const MaxBackfill = 10000

// BackfillScheduleRequest takes a schedule's action for every fire time at
// or after Start and before End, as if it had fired then: each run finds
// its fire time with workflow.ScheduledTime.
type BackfillScheduleRequest struct {
	ScheduleRef
	Start time.Time `json:"start" required:"true" example:"2026-01-01T00:00:00Z"`
	End   time.Time `json:"end" required:"true" example:"2026-01-02T00:00:00Z"`
	// Parallelism is how many of the backfill's runs are open at once
	// (0 or 1: one after another, in time order).
	Parallelism int    `json:"parallelism,omitempty" minimum:"0" maximum:"1000"`
	Identity    string `json:"identity,omitempty" max:"256"`
}

// DeleteScheduleRequest deletes a schedule.
type DeleteScheduleRequest struct {
	ScheduleRef
	Identity string `json:"identity,omitempty" max:"256"`
}

// ListSchedulesRequest pages through a namespace's schedules.
type ListSchedulesRequest struct {
	Namespace string `json:"namespace,omitempty" max:"63"`
	PageSize  int    `json:"page_size,omitempty" minimum:"0" maximum:"1000"`
	PageToken []byte `json:"page_token,omitempty" max:"16384" token:"true"`
}

// ListSchedulesResponse is a page of schedules.
type ListSchedulesResponse struct {
	Schedules     []ScheduleSummary `json:"schedules"`
	NextPageToken []byte            `json:"next_page_token,omitempty"`
}

// ScheduleSummary is a schedule as a list shows it.
type ScheduleSummary struct {
	ScheduleID   string `json:"schedule_id"`
	WorkflowType string `json:"workflow_type"`
	// Spec is empty when it is too long for a list (describe shows it).
	Spec       ScheduleSpec `json:"spec,omitzero"`
	Paused     bool         `json:"paused,omitempty"`
	NextFire   time.Time    `json:"next_fire,omitzero"`
	CreateTime time.Time    `json:"create_time"`
}

// Schedule action kinds.
const (
	ActionScheduled = "scheduled"
	ActionTrigger   = "trigger"
	ActionBackfill  = "backfill"
)

// ScheduleAction statuses besides a run's own.
const (
	// ActionStarting: the run is being started.
	ActionStarting = "starting"
	// ActionNotStarted: the start was refused (the workflow id is taken).
	ActionNotStarted = "not_started"
)

// ScheduledRun is one action a schedule took.
type ScheduledRun struct {
	// FireTime is the time the action stands for (its workflow id has it);
	// Time is when it was taken.
	FireTime   time.Time `json:"fire_time"`
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	WorkflowID string    `json:"workflow_id"`
	RunID      string    `json:"run_id,omitempty"`
	// Status is the run's status (running, completed, failed, ...), or
	// starting or not_started.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// BackfillProgress is a backfill in progress.
type BackfillProgress struct {
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Parallelism int       `json:"parallelism"`
	Total       int       `json:"total"`
	Started     int       `json:"started"`
	Closed      int       `json:"closed"`
	Identity    string    `json:"identity,omitempty"`
}

// ScheduleDescription is what describe shows of a schedule.
type ScheduleDescription struct {
	Namespace  string   `json:"namespace"`
	ScheduleID string   `json:"schedule_id"`
	Schedule   Schedule `json:"schedule"`
	// NextFires are the next 10 fire times (empty while paused or past the
	// end or the action limit).
	NextFires []time.Time `json:"next_fires"`
	// Recent are the last 20 actions, oldest first.
	Recent []ScheduledRun `json:"recent"`
	// Running are the runs the schedule started that are still open.
	Running []ScheduledRun `json:"running"`
	// Buffered counts the fires waiting for an open run to close.
	Buffered  int                `json:"buffered"`
	Backfills []BackfillProgress `json:"backfills,omitempty"`
	// Actions counts the fires taken (against ActionLimit); Triggers and
	// Backfilled the other actions; Skipped the fires dropped by the
	// overlap policy; Missed those that came due while Strand was down and
	// were not taken (older than the catch-up window, or left by the
	// catch-up policy); Paused those that came while the schedule was
	// paused.
	Actions     int64 `json:"actions"`
	Triggers    int64 `json:"triggers"`
	Backfilled  int64 `json:"backfilled"`
	Skipped     int64 `json:"skipped"`
	Missed      int64 `json:"missed"`
	PausedFires int64 `json:"paused_fires"`
	// PausedBy and PausedAt say who last paused or unpaused it, and when.
	PausedBy   string    `json:"paused_by,omitempty"`
	PausedAt   time.Time `json:"paused_at,omitzero"`
	CreateTime time.Time `json:"create_time"`
	UpdateTime time.Time `json:"update_time"`
	// RunID is the run that carries the schedule now (its workflow id is
	// ScheduleWorkflowID).
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}
