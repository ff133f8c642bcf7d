package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Precision is the resolution at which every backend stores times. It is the
// resolution of Cassandra's timestamp type; backends truncate to it and tests
// compare at it.
const Precision = time.Millisecond

// Time returns t in UTC truncated to Precision: the value a store gives back.
func Time(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(Precision)
}

// UnixMilli converts t to the integer form SQL backends store; the zero time
// maps to 0.
func UnixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromUnixMilli is the inverse of UnixMilli.
func FromUnixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// RunKey names one run of a workflow.
type RunKey struct {
	Namespace  string `json:"ns"`
	WorkflowID string `json:"wf"`
	RunID      string `json:"run"`
}

func (k RunKey) String() string { return k.Namespace + "/" + k.WorkflowID + "/" + k.RunID }

// Validate reports an empty part of the key.
func (k RunKey) Validate(field string) error {
	switch {
	case k.Namespace == "":
		return invalid(field+".namespace", "empty")
	case k.WorkflowID == "":
		return invalid(field+".workflow_id", "empty")
	case k.RunID == "":
		return invalid(field+".run_id", "empty")
	}
	for _, f := range []struct{ name, v string }{{"namespace", k.Namespace}, {"workflow_id", k.WorkflowID}, {"run_id", k.RunID}} {
		if err := validID(field+"."+f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// MaxIDLength bounds every id (namespace, workflow, run, request): ids are
// index keys on every backend.
const MaxIDLength = 1000

// validID checks what every id must be besides non-empty: valid UTF-8
// without NUL (every backend's text type), at most MaxIDLength bytes.
func validID(field, v string) error {
	switch {
	case len(v) > MaxIDLength:
		return invalid(field, "longer than %d bytes", MaxIDLength)
	case !utf8.ValidString(v):
		return invalid(field, "not valid UTF-8")
	case strings.IndexByte(v, 0) >= 0:
		return invalid(field, "contains NUL")
	}
	return nil
}

// TaskIDBlockBits is the width of the block of task ids an owner may allocate
// for one range_id: ids of range r lie in [r<<TaskIDBlockBits, (r+1)<<TaskIDBlockBits).
// Because every acquisition raises range_id, ids only grow across owners.
const TaskIDBlockBits = 20

// Shard is the row that fences all writes of one shard.
type Shard struct {
	ID        int32
	RangeID   int64
	Owner     string
	AckLevels AckLevels
	UpdatedAt time.Time
}

// TaskIDBlock returns the task ids the shard's current owner may allocate:
// [first, limit). When they run out the owner raises range_id again.
func (s Shard) TaskIDBlock() (first, limit int64) {
	return s.RangeID << TaskIDBlockBits, (s.RangeID + 1) << TaskIDBlockBits
}

// AckLevels records how far each task queue of a shard has been processed.
type AckLevels struct {
	Transfer    int64   `json:"transfer,omitempty"`
	Timer       TaskKey `json:"timer,omitzero"`
	Replication int64   `json:"replication,omitempty"`
	// Retention is the ack level of a timer queue the engine keeps apart in
	// a partition of its own: the retention timers of closed runs, read and
	// purged in batches.
	Retention TaskKey `json:"retention,omitzero"`
}

// RunState is the engine's lifecycle state of a run.
type RunState int8

// Run states.
const (
	StateCreated RunState = iota + 1
	StateRunning
	StateClosed
)

func (s RunState) String() string {
	switch s {
	case StateCreated:
		return "created"
	case StateRunning:
		return "running"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("state(%d)", int8(s))
}

// RunStatus is what a user sees of a run: running, or how it closed.
type RunStatus int8

// Run statuses.
const (
	StatusRunning RunStatus = iota + 1
	StatusCompleted
	StatusFailed
	StatusCanceled
	StatusTerminated
	StatusContinuedAsNew
	StatusTimedOut
)

var statusNames = map[RunStatus]string{
	StatusRunning:        "running",
	StatusCompleted:      "completed",
	StatusFailed:         "failed",
	StatusCanceled:       "canceled",
	StatusTerminated:     "terminated",
	StatusContinuedAsNew: "continued_as_new",
	StatusTimedOut:       "timed_out",
}

func (s RunStatus) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status(%d)", int8(s))
}

// Valid reports whether s is one of the defined statuses.
func (s RunStatus) Valid() bool { _, ok := statusNames[s]; return ok }

// MarshalJSON writes a status by name ("completed").
func (s RunStatus) MarshalJSON() ([]byte, error) {
	if !s.Valid() {
		return []byte(strconv.Itoa(int(s))), nil
	}
	return []byte(`"` + s.String() + `"`), nil
}

// UnmarshalJSON reads a status by name, or by number (older state blobs).
func (s *RunStatus) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v, err := ParseRunStatus(strings.Trim(string(b), `"`))
		if err != nil {
			return err
		}
		*s = v
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return invalid("status", "want a status name, got %s", b)
	}
	*s = RunStatus(n)
	return nil
}

// RunStatusNames lists the statuses by name.
func RunStatusNames() []string {
	out := make([]string, 0, len(statusNames))
	for s := StatusRunning; s <= StatusTimedOut; s++ {
		out = append(out, s.String())
	}
	return out
}

// ParseRunStatus maps a status name back to its value.
func ParseRunStatus(name string) (RunStatus, error) {
	for s, n := range statusNames {
		if n == name {
			return s, nil
		}
	}
	return 0, invalid("status", "unknown status %q", name)
}

// CurrentExecution maps a workflow id to its latest run.
type CurrentExecution struct {
	Namespace        string
	WorkflowID       string
	RunID            string
	CreateRequestID  string
	State            RunState
	Status           RunStatus
	LastWriteVersion int64
	StartTime        time.Time
}

// Payload is a value that is either inline or, above the document threshold,
// a reference to a document stored once apart from the state that holds it.
type Payload struct {
	Data []byte       `json:"d,omitempty"`
	Doc  *DocumentRef `json:"doc,omitempty"`
}

// Size is the payload's size in bytes, wherever its bytes are.
func (p Payload) Size() int64 {
	if p.Doc != nil {
		return p.Doc.Size
	}
	return int64(len(p.Data))
}

// DocumentRef points at a document of the same run.
type DocumentRef struct {
	ID   string `json:"id"`
	Size int64  `json:"size"`
}

// Document is a large payload stored apart: its metadata in one row, its
// (compressed) bytes in another, written once. ID is the hex SHA-256 of Data,
// so writing the same bytes twice for a run stores them once.
type Document struct {
	Run  RunKey
	ID   string
	Data []byte
}

// DocumentInfo is a document's metadata row.
type DocumentInfo struct {
	Run        RunKey
	ID         string
	Size       int64
	StoredSize int64
	CreatedAt  time.Time
}

// RetryPolicy says how a failed step is retried; the API (api.RetryPolicy)
// and the run's state share it.
type RetryPolicy struct {
	InitialInterval    time.Duration `json:"initial_interval,omitempty"`
	BackoffCoefficient float64       `json:"backoff_coefficient,omitempty"`
	MaximumInterval    time.Duration `json:"maximum_interval,omitempty"`
	// MaximumAttempts bounds the attempts; 0 means unlimited, 1 no retry.
	MaximumAttempts int32 `json:"maximum_attempts,omitempty" minimum:"0"`
	// NonRetryableTypes are failure types (api.Failure.Type) never retried.
	NonRetryableTypes []string `json:"non_retryable_types,omitempty" max:"64" maxvalue:"1000"`
	// RetryableTypes, when set, are the only failure types retried: a
	// step whose errors are final unless marked (a saga's).
	RetryableTypes []string `json:"retryable_types,omitempty" max:"64" maxvalue:"1000"`
}

// StepInfo is a pending step (activity) of a run, keyed by the event id that
// scheduled it.
type StepInfo struct {
	ScheduledEventID int64         `json:"scheduled_id"`
	StartedEventID   int64         `json:"started_id,omitempty"`
	Name             string        `json:"name"`
	Queue            string        `json:"queue,omitempty"`
	Priority         int8          `json:"priority,omitempty"`
	Attempt          int32         `json:"attempt"`
	IdempotencyKey   string        `json:"key"`
	ScheduledTime    time.Time     `json:"scheduled,omitzero"`
	StartedTime      time.Time     `json:"started,omitzero"`
	LastHeartbeat    time.Time     `json:"heartbeat,omitzero"`
	HeartbeatDetails Payload       `json:"details,omitzero"`
	ScheduleToStart  time.Duration `json:"s2s,omitempty"`
	StartToClose     time.Duration `json:"s2c,omitempty"`
	ScheduleToClose  time.Duration `json:"sc2c,omitempty"`
	Heartbeat        time.Duration `json:"hb,omitempty"`
	Retry            *RetryPolicy  `json:"retry,omitempty"`
	LastFailure      string        `json:"last_failure,omitempty"`
	Worker           string        `json:"worker,omitempty"`
	TimerTasks       int32         `json:"timer_bits,omitempty"`
	// RetryAt is when the next attempt is dispatched, while it backs off.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// AutoHeartbeat: the worker heartbeats for the step (its options).
	AutoHeartbeat bool `json:"auto_hb,omitempty"`
}

// TimerInfo is a pending user timer.
type TimerInfo struct {
	TimerID        string    `json:"id"`
	StartedEventID int64     `json:"started_id"`
	FireTime       time.Time `json:"fire"`
	TaskID         int64     `json:"task_id,omitempty"`
}

// ChildInfo is a pending child workflow, keyed by the event that initiated it.
type ChildInfo struct {
	InitiatedEventID  int64  `json:"initiated_id"`
	StartedEventID    int64  `json:"started_id,omitempty"`
	Namespace         string `json:"ns"`
	WorkflowID        string `json:"wf"`
	RunID             string `json:"run,omitempty"`
	Type              string `json:"type"`
	ParentClosePolicy int8   `json:"close_policy,omitempty"`
	CreateRequestID   string `json:"request_id"`
}

// RequestCancelInfo is a pending request to cancel another run.
type RequestCancelInfo struct {
	InitiatedEventID int64  `json:"initiated_id"`
	Target           RunKey `json:"target"`
	RequestID        string `json:"request_id"`
}

// SignalInfo is a pending signal this run sends to another run.
type SignalInfo struct {
	InitiatedEventID int64   `json:"initiated_id"`
	Target           RunKey  `json:"target"`
	Name             string  `json:"name"`
	Input            Payload `json:"input,omitzero"`
	RequestID        string  `json:"request_id"`
}

// RunInfo is the descriptive part of a run's state: what started it and
// where it sits in a hierarchy (nFlow's parent/root, BPEL's conversation).
type RunInfo struct {
	Type             string            `json:"type"`
	Queue            string            `json:"queue,omitempty"`
	Priority         int8              `json:"priority,omitempty"`
	BusinessKey      string            `json:"business_key,omitempty"`
	ExternalID       string            `json:"external_id,omitempty"`
	Group            string            `json:"group,omitempty"`
	Parent           *RunKey           `json:"parent,omitempty"`
	ParentInitiated  int64             `json:"parent_initiated,omitempty"`
	Root             *RunKey           `json:"root,omitempty"`
	CreateRequestID  string            `json:"request_id,omitempty"`
	StartTime        time.Time         `json:"start,omitzero"`
	CloseTime        time.Time         `json:"close,omitzero"`
	RunTimeout       time.Duration     `json:"run_timeout,omitempty"`
	Attempt          int32             `json:"attempt,omitempty"`
	ContinuedFrom    string            `json:"continued_from,omitempty"`
	Memo             map[string][]byte `json:"memo,omitempty"`
	SearchAttributes map[string]string `json:"attrs,omitempty"`
}

// Execution is the mutable state of one run (Cadence's concrete execution).
// Pending steps, timers, children, cancel requests, signals, requested signal
// ids, buffered events and variables live inside the run's state, not as rows:
// they are read and written with the run, always as a whole.
type Execution struct {
	RunKey
	State            RunState  `json:"state"`
	Status           RunStatus `json:"status"`
	NextEventID      int64     `json:"next_event_id"`
	DBVersion        int64     `json:"db_version"`
	LastWriteVersion int64     `json:"last_write_version,omitempty"`
	Info             RunInfo   `json:"info"`

	Steps              map[int64]StepInfo          `json:"steps,omitempty"`
	Timers             map[string]TimerInfo        `json:"timers,omitempty"`
	Children           map[int64]ChildInfo         `json:"children,omitempty"`
	CancelRequests     map[int64]RequestCancelInfo `json:"cancels,omitempty"`
	Signals            map[int64]SignalInfo        `json:"signals,omitempty"`
	SignalRequestedIDs []string                    `json:"signal_requested,omitempty"`
	BufferedEvents     [][]byte                    `json:"buffered,omitempty"`
	Variables          map[string]Payload          `json:"vars,omitempty"`
	VersionHistories   []byte                      `json:"version_histories,omitempty"`
	// Task is the run's workflow task: where the workflow code stands in
	// history and whether it has inputs to process.
	Task WorkflowTaskInfo `json:"task,omitzero"`
	// Outcome is how a closed run ended.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Paused is set while an operator holds the run paused.
	Paused *PauseInfo `json:"paused,omitempty"`
}

// PauseInfo says who paused a run, when and why.
type PauseInfo struct {
	Identity string    `json:"identity,omitempty"`
	Time     time.Time `json:"time"`
	Reason   string    `json:"reason,omitempty"`
}

// WorkflowTaskInfo is the state of a run's workflow task (Cadence's
// decision fields).
type WorkflowTaskInfo struct {
	// LastEventID is the last event the workflow code has processed: the
	// last command event of its last completed task.
	LastEventID int64 `json:"last_event_id,omitempty"`
	// Pending says inputs after LastEventID wait for the workflow code.
	Pending bool `json:"pending,omitempty"`
	// Attempt counts failed attempts of the pending task; FailedCause is
	// the last failure (a non-determinism error, a panic), encoded.
	Attempt     int32  `json:"attempt,omitempty"`
	FailedCause []byte `json:"failed_cause,omitempty"`
	// NotBefore delays the first task (a start delay).
	NotBefore time.Time `json:"not_before,omitzero"`
}

// Outcome is the result of a closed run: its output or failure (encoded by
// the engine) and, after continue-as-new, the next run.
type Outcome struct {
	Output    Payload `json:"output,omitzero"`
	Failure   []byte  `json:"failure,omitempty"`
	NextRunID string  `json:"next_run_id,omitempty"`
}

// HistoryBlock is the events of one committed transition, encoded by the
// engine; the store compresses it. Event ids are contiguous across blocks.
type HistoryBlock struct {
	FirstEventID int64
	LastEventID  int64
	// TxnID identifies the write that produced the block (a task id of the
	// writer's range); the store keeps it with the block. Which block of a
	// first event id is the committed one the store decides itself.
	TxnID  int64
	Events []byte
}

// TaskCategory is the queue a task belongs to.
type TaskCategory int8

// Task categories. The values are stable: they are stored.
const (
	CategoryTransfer       TaskCategory = 1
	CategoryTimer          TaskCategory = 2
	CategoryReplication    TaskCategory = 3
	CategoryReplicationDLQ TaskCategory = 4
	CategoryCrossCluster   TaskCategory = 5
)

func (c TaskCategory) String() string {
	switch c {
	case CategoryTransfer:
		return "transfer"
	case CategoryTimer:
		return "timer"
	case CategoryReplication:
		return "replication"
	case CategoryReplicationDLQ:
		return "replication_dlq"
	case CategoryCrossCluster:
		return "cross_cluster"
	}
	return fmt.Sprintf("category(%d)", int8(c))
}

// Valid reports whether c is a defined category.
func (c TaskCategory) Valid() bool { return c >= CategoryTransfer && c <= CategoryCrossCluster }

// TaskKey orders the tasks of one queue: by fire time (timer tasks only; zero
// for the others), then task id.
type TaskKey struct {
	FireTime time.Time `json:"fire,omitzero"`
	TaskID   int64     `json:"id"`
}

// Less orders keys.
func (k TaskKey) Less(o TaskKey) bool {
	if !k.FireTime.Equal(o.FireTime) {
		return k.FireTime.Before(o.FireTime)
	}
	return k.TaskID < o.TaskID
}

// Task is a row of a shard's task queue: an effect leaving a run (transfer),
// a timer, or a replication task. Partition is the source cluster for the
// replication DLQ and the target cluster for cross-cluster tasks, empty
// otherwise.
type Task struct {
	Category  TaskCategory
	Partition string
	Key       TaskKey
	Type      int16
	Run       RunKey
	Data      []byte
}

// TaskRange selects the tasks of one queue with Min <= key < Max; a zero Max
// has no upper bound.
type TaskRange struct {
	Category  TaskCategory
	Partition string
	Min, Max  TaskKey
}

// RequestKind is the kind of a deduplicated request (seed 000 types 7–10;
// terminate is Strand's own).
type RequestKind int8

// Request kinds.
const (
	RequestStart     RequestKind = 1
	RequestSignal    RequestKind = 2
	RequestCancel    RequestKind = 3
	RequestReset     RequestKind = 4
	RequestTerminate RequestKind = 5
)

func (k RequestKind) String() string {
	switch k {
	case RequestStart:
		return "start"
	case RequestSignal:
		return "signal"
	case RequestCancel:
		return "cancel"
	case RequestReset:
		return "reset"
	case RequestTerminate:
		return "terminate"
	}
	return fmt.Sprintf("request(%d)", int8(k))
}

// Request records that a request id was applied to a workflow, so a retried
// request is recognized until ExpiresAt.
type Request struct {
	Kind       RequestKind
	Namespace  string
	WorkflowID string
	RequestID  string
	RunID      string
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// RequestKey names a dedup row.
type RequestKey struct {
	Kind       RequestKind
	Namespace  string
	WorkflowID string
	RequestID  string
}

// Key returns the request's key.
func (r Request) Key() RequestKey {
	return RequestKey{Kind: r.Kind, Namespace: r.Namespace, WorkflowID: r.WorkflowID, RequestID: r.RequestID}
}
