package api

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/strandhq/strand/store"
)

// EventType names what happened in a run.
type EventType string

// Event types. Inputs are delivered to the workflow; command events record
// what the workflow decided and are matched against its commands on replay;
// audit events are kept for people and ignored by replay.
const (
	// Inputs.
	EventWorkflowStarted         EventType = "WorkflowStarted"
	EventStepCompleted           EventType = "StepCompleted"
	EventStepFailed              EventType = "StepFailed"
	EventStepTimedOut            EventType = "StepTimedOut"
	EventStepCanceled            EventType = "StepCanceled"
	EventTimerFired              EventType = "TimerFired"
	EventSignalReceived          EventType = "SignalReceived"
	EventCancelRequested         EventType = "CancelRequested"
	EventChildStarted            EventType = "ChildStarted"
	EventChildStartFailed        EventType = "ChildStartFailed"
	EventChildClosed             EventType = "ChildClosed"
	EventExternalSignaled        EventType = "ExternalSignaled"
	EventExternalCancelRequested EventType = "ExternalCancelRequested"

	// Marks the point where the workflow code ran; its command events follow.
	EventWorkflowTaskCompleted EventType = "WorkflowTaskCompleted"

	// Command events.
	EventStepScheduled          EventType = "StepScheduled"
	EventStepCancelScheduled    EventType = "StepCancelScheduled"
	EventTimerStarted           EventType = "TimerStarted"
	EventTimerCanceled          EventType = "TimerCanceled"
	EventChildInitiated         EventType = "ChildInitiated"
	EventSignalExternal         EventType = "SignalExternalInitiated"
	EventCancelExternal         EventType = "CancelExternalInitiated"
	EventSideEffect             EventType = "SideEffectRecorded"
	EventAttributesUpserted     EventType = "AttributesUpserted"
	EventMemoUpserted           EventType = "MemoUpserted"
	EventWorkflowCompleted      EventType = "WorkflowCompleted"
	EventWorkflowFailed         EventType = "WorkflowFailed"
	EventWorkflowCanceled       EventType = "WorkflowCanceled"
	EventWorkflowContinuedAsNew EventType = "WorkflowContinuedAsNew"

	// Closes the run without the workflow deciding it.
	EventWorkflowTerminated EventType = "WorkflowTerminated"
	EventWorkflowTimedOut   EventType = "WorkflowTimedOut"

	// Audit only.
	EventWorkflowTaskFailed EventType = "WorkflowTaskFailed"
	EventStepAttemptFailed  EventType = "StepAttemptFailed"
	// EventRunRecovered: the node that ran the run's shard stopped without
	// handing it over, and another node took the run's work on (nFlow's
	// recovery action). Recovery names both nodes and what was offered
	// again; it is written once per run and takeover, only for a run that
	// had a workflow task or a step attempt in flight, and not when a node
	// restarted and took its own shards back.
	EventRunRecovered EventType = "RunRecovered"
	// EventWorkflowPaused and EventWorkflowResumed record an operator's
	// pause and resume (Identity, Reason); replay skips them.
	EventWorkflowPaused  EventType = "WorkflowPaused"
	EventWorkflowResumed EventType = "WorkflowResumed"
	// EventWorkflowReset opens what a reset run adds to the history it
	// copied (Target names the run it was reset from; Identity, Reason).
	EventWorkflowReset EventType = "WorkflowReset"
)

// Event is one entry of a run's history: the audit trail a person reads and
// what a worker replays. One flat shape serves every type; each type uses the
// fields its doc names.
type Event struct {
	ID   int64     `json:"id"`
	Type EventType `json:"type"`
	Time time.Time `json:"time"`
	// Seq is the workflow's sequence number of the command the event belongs
	// to (a step, timer, child, side effect, external signal or cancel).
	Seq int64 `json:"seq,omitempty"`
	// Name is the step name, the child's or the run's workflow type, the
	// signal name or the timer's name.
	Name    string `json:"name,omitempty"`
	Attempt int32  `json:"attempt,omitempty"`
	// AttemptStarted is when the step attempt that a StepCompleted,
	// StepAttemptFailed, StepFailed or StepTimedOut event ends began (zero
	// when it never started: a schedule-to-start timeout).
	AttemptStarted time.Time `json:"attempt_started,omitzero"`
	// Payload is the input, result, signal value or side-effect value.
	Payload Payload  `json:"payload,omitzero"`
	Failure *Failure `json:"failure,omitempty"`
	// Reason says why (terminate, cancel, timeout kind, task failure cause).
	Reason string `json:"reason,omitempty"`
	// Identity is the worker or caller that caused the event.
	Identity string `json:"identity,omitempty"`

	Step   *StepOptions `json:"step,omitempty"`
	Timer  *TimerAttrs  `json:"timer,omitempty"`
	Child  *ChildAttrs  `json:"child,omitempty"`
	Start  *StartAttrs  `json:"start,omitempty"`
	Target *Target      `json:"target,omitempty"`
	// Recovery describes a RunRecovered event.
	Recovery *RecoveryAttrs `json:"recovery,omitempty"`
	// Attributes are an AttributesUpserted event's changes (an empty value
	// removed its key).
	Attributes map[string]string `json:"attributes,omitempty"`
	// Memo are a MemoUpserted event's changes (an empty value removed its
	// key).
	Memo map[string]Value `json:"memo,omitempty"`
	// Details are the audit details a workflow task (WorkflowTaskCompleted)
	// or a step attempt (StepCompleted, StepAttemptFailed, StepFailed)
	// attached. Replay ignores them.
	Details []EventDetail `json:"details,omitempty"`
}

// AuditDetail is a named value that workflow or step code attaches to the
// event its work ends in, for the people who read the run's history
// (Oracle BPEL's audit details): a JSON value, or text as a JSON string.
type AuditDetail struct {
	Name  string `json:"name" max:"256" text:"true" required:"true"`
	Value Value  `json:"value" max:"16777216"`
}

// EventDetail is an audit detail as a run's history keeps it: its value
// inline when small, and otherwise a reference to a document of the run
// ({"$document": {"id": ..., "size": ...}}) loaded on demand
// (HistoryRequest.ResolveDetails, Service.GetDocument).
type EventDetail struct {
	Name  string  `json:"name"`
	Value Payload `json:"value"`
}

// CheckAuditDetails checks the audit details a worker reports (in the
// request field named field) past their limits: each has a name. A name
// given twice is not an error: the last value is kept, as the SDKs keep
// it.
func CheckAuditDetails(field string, details []AuditDetail) error {
	for i, d := range details {
		if d.Name == "" {
			return InvalidArgument(fmt.Sprintf("%s[%d].name", field, i), "missing")
		}
	}
	return nil
}

// RecoveryAttrs say what a node that took a run's shard over offered again.
type RecoveryAttrs struct {
	// FromNode stopped serving the shard without handing it over; ToNode
	// took it.
	FromNode string `json:"from_node"`
	ToNode   string `json:"to_node"`
	// Reoffered counts what was in flight and offered again: the workflow
	// task (WorkflowTask) and the step attempts (Steps, by seq).
	Reoffered    int     `json:"reoffered"`
	WorkflowTask bool    `json:"workflow_task,omitempty"`
	Steps        []int64 `json:"steps,omitempty"`
}

// TimerAttrs describe a user timer.
type TimerAttrs struct {
	Duration time.Duration `json:"duration"`
	FireTime time.Time     `json:"fire_time"`
}

// Target names another workflow a command acts on.
type Target struct {
	Namespace  string `json:"namespace,omitempty" max:"63"`
	WorkflowID string `json:"workflow_id" max:"250"`
	RunID      string `json:"run_id,omitempty" max:"250"`
}

// ChildAttrs describe a child workflow.
type ChildAttrs struct {
	Options ChildOptions `json:"options"`
	RunID   string       `json:"run_id,omitempty"`
	Status  string       `json:"status,omitempty"`
}

// StartAttrs describe how a run started.
type StartAttrs struct {
	Queue         string            `json:"queue,omitempty"`
	Priority      int8              `json:"priority,omitempty"`
	RunTimeout    time.Duration     `json:"run_timeout,omitempty"`
	Parent        *store.RunKey     `json:"parent,omitempty"`
	ParentSeq     int64             `json:"parent_seq,omitempty"`
	ContinuedFrom string            `json:"continued_from,omitempty"`
	BusinessKey   string            `json:"business_key,omitempty"`
	Memo          map[string]Value  `json:"memo,omitempty"`
	Attributes    map[string]string `json:"attributes,omitempty"`
	RequestID     string            `json:"request_id,omitempty"`
	Attempt       int32             `json:"attempt,omitempty"`
}

// IsInput reports whether replay delivers the event to the workflow.
func (t EventType) IsInput() bool {
	switch t {
	case EventWorkflowStarted, EventStepCompleted, EventStepFailed, EventStepTimedOut, EventStepCanceled,
		EventTimerFired, EventSignalReceived, EventCancelRequested, EventChildStarted, EventChildStartFailed,
		EventChildClosed, EventExternalSignaled, EventExternalCancelRequested:
		return true
	}
	return false
}

// IsCommand reports whether the event records a workflow command.
func (t EventType) IsCommand() bool {
	switch t {
	case EventStepScheduled, EventStepCancelScheduled, EventTimerStarted, EventTimerCanceled, EventChildInitiated,
		EventSignalExternal, EventCancelExternal, EventSideEffect, EventAttributesUpserted, EventMemoUpserted, EventWorkflowCompleted, EventWorkflowFailed,
		EventWorkflowCanceled, EventWorkflowContinuedAsNew:
		return true
	}
	return false
}

// Summary is one line of the audit trail: time, type, what and how it went.
func (e Event) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%5d  %s  %-24s", e.ID, e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Type)
	if e.Seq != 0 {
		fmt.Fprintf(&b, " #%d", e.Seq)
	}
	if e.Name != "" {
		fmt.Fprintf(&b, " %s", e.Name)
	}
	if e.Attempt != 0 {
		fmt.Fprintf(&b, " attempt=%d", e.Attempt)
	}
	if e.Timer != nil {
		fmt.Fprintf(&b, " fires=%s", e.Timer.FireTime.UTC().Format(time.RFC3339Nano))
	}
	if e.Child != nil {
		fmt.Fprintf(&b, " child=%s", e.Child.Options.WorkflowID)
		if e.Child.RunID != "" {
			fmt.Fprintf(&b, "/%s", e.Child.RunID)
		}
		if e.Child.Status != "" {
			fmt.Fprintf(&b, " status=%s", e.Child.Status)
		}
	}
	if e.Target != nil {
		fmt.Fprintf(&b, " target=%s", e.Target.WorkflowID)
	}
	if e.Payload.Doc != nil {
		fmt.Fprintf(&b, " payload=document(%d bytes)", e.Payload.Doc.Size)
	} else if len(e.Payload.Data) > 0 {
		fmt.Fprintf(&b, " payload=%s", abbreviate(e.Payload.Data, 60))
	}
	if e.Failure != nil {
		fmt.Fprintf(&b, " failure=%q", abbreviate([]byte(e.Failure.Error()), 120))
	}
	if len(e.Attributes) > 0 {
		keys := slices.Sorted(maps.Keys(e.Attributes))
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%q", k, e.Attributes[k])
		}
	}
	if len(e.Memo) > 0 {
		fmt.Fprintf(&b, " memo=%s", strings.Join(slices.Sorted(maps.Keys(e.Memo)), ","))
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " reason=%q", e.Reason)
	}
	if len(e.Details) > 0 {
		names := make([]string, len(e.Details))
		for i, d := range e.Details {
			names[i] = d.Name
		}
		fmt.Fprintf(&b, " details=%s", strings.Join(names, ","))
	}
	return b.String()
}

func abbreviate(p []byte, n int) string {
	if len(p) <= n {
		return string(p)
	}
	return string(p[:n]) + fmt.Sprintf("…(%d bytes)", len(p))
}

// EncodeEvents is the stored form of one history block.
func EncodeEvents(events []Event) ([]byte, error) {
	b, err := MarshalStored(events)
	if err != nil {
		return nil, fmt.Errorf("api: encode events: %w", err)
	}
	return b, nil
}

// DecodeEvents decodes a history block and checks that its event ids are
// first..last without a gap.
func DecodeEvents(data []byte, first, last int64) ([]Event, error) {
	var events []Event
	if err := UnmarshalStored(data, &events); err != nil {
		return nil, fmt.Errorf("%w: history block %d-%d: %v", ErrCorruptHistory, first, last, err)
	}
	if int64(len(events)) != last-first+1 {
		return nil, fmt.Errorf("%w: history block %d-%d holds %d events", ErrCorruptHistory, first, last, len(events))
	}
	for i, e := range events {
		if e.ID != first+int64(i) {
			return nil, fmt.Errorf("%w: history block %d-%d: event %d has id %d", ErrCorruptHistory, first, last, i, e.ID)
		}
		if e.Type == "" {
			return nil, fmt.Errorf("%w: history block %d-%d: event %d has no type", ErrCorruptHistory, first, last, e.ID)
		}
	}
	return events, nil
}
