package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Record is a saga as its run's history tells it: its state, its steps
// with the state of their forward step and compensation, every attempt
// (tryout) of each, and what operators did. It is read from the kernel's
// records alone, so it needs no worker, for a saga running or ended.
type Record struct {
	Namespace string          `json:"namespace"`
	ID        string          `json:"id"`
	RunID     string          `json:"run_id"`
	Name      string          `json:"name"`
	State     State           `json:"state"`
	Status    store.RunStatus `json:"status"`
	// TransactionID is what every step got with its idempotency key.
	TransactionID string           `json:"transaction_id"`
	Started       time.Time        `json:"started"`
	Closed        time.Time        `json:"closed,omitzero"`
	Paused        *api.PauseInfo   `json:"paused,omitempty"`
	Steps         []StepRecord     `json:"steps"`
	Tryouts       []Tryout         `json:"tryouts"`
	Operators     []OperatorRecord `json:"operators"`
	// Failure is how the run ended, when it did not complete.
	Failure *api.Failure `json:"failure,omitempty"`
}

// StepRecord is a saga step: its forward step and its compensation.
type StepRecord struct {
	Name string `json:"name"`
	// Group numbers the parallel group the step ran in (0: alone).
	Group        int         `json:"group,omitempty"`
	Forward      PhaseRecord `json:"forward"`
	Compensation PhaseRecord `json:"compensation"`
}

// Phase states.
const (
	PhaseNone      = "none"      // never run (a compensation not needed)
	PhaseScheduled = "scheduled" // waits for a worker
	PhaseRunning   = "running"
	PhaseRetrying  = "retrying" // an attempt failed; the next waits its back-off
	PhaseCompleted = "completed"
	PhaseFailed    = "failed"
	PhaseDone      = "done"    // a compensation an operator marked done by hand
	PhaseSkipped   = "skipped" // a compensation an operator skipped
)

// PhaseRecord is the state of a step's forward run or compensation.
type PhaseRecord struct {
	State    string `json:"state"`
	Step     string `json:"step,omitempty"` // the registered step that ran it
	Key      string `json:"idempotency_key,omitempty"`
	Attempts int32  `json:"attempts,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Tryout is one attempt of a forward step or a compensation (StackSaga's
// es_transaction_tryout row).
type Tryout struct {
	Step    string `json:"step"`
	Phase   string `json:"phase"`
	Attempt int32  `json:"attempt"`
	Key     string `json:"idempotency_key"`
	// Started is when a worker took the attempt (zero if unknown: the
	// node that saw it start died); Ended when it ended (zero: running).
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// Outcome is succeeded, failed, retrying (failed, to be retried),
	// timed_out, canceled or running.
	Outcome   string `json:"outcome"`
	ErrorType string `json:"error_type,omitempty"`
	Error     string `json:"error,omitempty"`
	// Answer is what the service answered: the step's result, or the
	// failure's details. A large one is a document reference, read apart.
	Answer   api.Payload `json:"answer,omitzero"`
	Executor string      `json:"executor,omitempty"`
}

// Outcomes of a tryout.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeRetrying  = "retrying"
	OutcomeFailed    = "failed"
	OutcomeTimedOut  = "timed_out"
	OutcomeCanceled  = "canceled"
	OutcomeRunning   = "running"
)

// OperatorRecord is an operator's decision as the saga received it.
type OperatorRecord struct {
	Operator
	Time time.Time `json:"time"`
}

// ReadRecord reads a saga's record (the current run of workflow id when
// runID is empty). A run that is not a saga is api.ErrNotFound.
func ReadRecord(ctx context.Context, svc api.Service, namespace, id, runID string) (*Record, error) {
	d, err := svc.DescribeWorkflow(ctx, api.RunRef{Namespace: namespace, WorkflowID: id, RunID: runID})
	if err != nil {
		return nil, err
	}
	if d.Attributes[AttrName] == "" {
		return nil, fmt.Errorf("%w: %s is a %s run, not a saga", api.ErrNotFound, id, d.WorkflowType)
	}
	rec := &Record{Namespace: d.Namespace, ID: d.WorkflowID, RunID: d.RunID, Name: d.Attributes[AttrName], Status: d.Status,
		TransactionID: d.WorkflowID, Started: d.StartTime, Closed: d.CloseTime, Paused: d.Paused,
		Steps: []StepRecord{}, Tryouts: []Tryout{}, Operators: []OperatorRecord{}}
	var events []api.Event
	for token := []byte(nil); ; {
		page, err := svc.GetHistory(ctx, api.HistoryRequest{RunRef: api.RunRef{Namespace: namespace, WorkflowID: id, RunID: d.RunID}, PageToken: token})
		if err != nil {
			return nil, err
		}
		events = append(events, page.Events...)
		if token = page.NextPageToken; len(token) == 0 {
			break
		}
	}
	var tx string
	if v, ok := d.Memo[MemoTransaction]; ok && json.Unmarshal(v, &tx) == nil && tx != "" {
		rec.TransactionID = tx
	}
	rec.build(events, d)
	rec.State = stateOf(State(d.Attributes[AttrState]), d)
	return rec, nil
}

// stateOf is a saga's state from what its run says: its attribute, unless
// an operator paused or terminated the run, or the run ended otherwise.
func stateOf(attr State, d api.Description) State {
	switch {
	case d.Status == store.StatusTerminated:
		return StateTerminated
	case d.Paused != nil:
		return StateDisabled
	case d.Status == store.StatusCompleted && (attr == StateStarted || attr == StateInProgress):
		return StateCompleted // a workflow that did not call End
	case d.Status != store.StatusRunning && d.Status != store.StatusCompleted && attr != StateCompensated:
		return StateFailed // the run failed, timed out or was canceled
	}
	return attr
}

// build reads the steps, tryouts and operator decisions from events.
func (r *Record) build(events []api.Event, d api.Description) {
	type kernelStep struct {
		step, phase string
		at          int // index of the open tryout in r.Tryouts
	}
	steps := map[int64]*kernelStep{}
	index := map[string]int{} // saga step -> r.Steps index
	phaseOf := func(ks *kernelStep) *PhaseRecord {
		s := &r.Steps[index[ks.step]]
		if ks.phase == PhaseCompensation {
			return &s.Compensation
		}
		return &s.Forward
	}
	closeTryout := func(ks *kernelStep, ev api.Event, outcome string) {
		t := &r.Tryouts[ks.at]
		t.Attempt, t.Started, t.Ended, t.Outcome, t.Executor = ev.Attempt, ev.AttemptStarted, ev.Time, outcome, ev.Identity
		if f := ev.Failure; f != nil {
			if ev.Type != api.EventStepAttemptFailed && f.Cause != nil {
				f = f.Cause // the step's own error, not the kernel's "failed after attempt n"
			}
			t.ErrorType, t.Error, t.Answer = f.Type, f.Message, api.Payload{Data: f.Details}
			if f.Kind == api.KindTimeout {
				t.ErrorType = "timeout: " + f.Type
			}
		}
		p := phaseOf(ks)
		p.Attempts = ev.Attempt
		p.Error = t.Error
	}
	for _, ev := range events {
		switch ev.Type {
		case api.EventStepScheduled:
			if ev.Step == nil || ev.Step.Labels[LabelStep] == "" {
				continue
			}
			ks := &kernelStep{step: ev.Step.Labels[LabelStep], phase: ev.Step.Labels[LabelPhase]}
			if _, ok := index[ks.step]; !ok {
				group, _ := strconv.Atoi(ev.Step.Labels[LabelGroup])
				index[ks.step] = len(r.Steps)
				r.Steps = append(r.Steps, StepRecord{Name: ks.step, Group: group, Forward: PhaseRecord{State: PhaseNone}, Compensation: PhaseRecord{State: PhaseNone}})
			}
			p := phaseOf(ks)
			p.State, p.Step, p.Key, p.Error = PhaseScheduled, ev.Name, ev.Step.IdempotencyKey, ""
			steps[ev.Seq] = ks
			ks.at = len(r.Tryouts)
			r.Tryouts = append(r.Tryouts, Tryout{Step: ks.step, Phase: ks.phase, Attempt: 1, Key: ev.Step.IdempotencyKey, Outcome: OutcomeRunning})
		case api.EventStepAttemptFailed:
			if ks := steps[ev.Seq]; ks != nil {
				closeTryout(ks, ev, OutcomeRetrying)
				phaseOf(ks).State = PhaseRetrying
				next := r.Tryouts[ks.at]
				ks.at = len(r.Tryouts)
				r.Tryouts = append(r.Tryouts, Tryout{Step: ks.step, Phase: ks.phase, Attempt: ev.Attempt + 1, Key: next.Key, Outcome: OutcomeRunning})
			}
		case api.EventStepCompleted:
			if ks := steps[ev.Seq]; ks != nil {
				closeTryout(ks, ev, OutcomeSucceeded)
				r.Tryouts[ks.at].Answer = ev.Payload
				phaseOf(ks).State = PhaseCompleted
				delete(steps, ev.Seq)
			}
		case api.EventStepFailed, api.EventStepTimedOut:
			if ks := steps[ev.Seq]; ks != nil {
				outcome := OutcomeFailed
				if ev.Type == api.EventStepTimedOut {
					outcome = OutcomeTimedOut
				}
				closeTryout(ks, ev, outcome)
				phaseOf(ks).State = PhaseFailed
				delete(steps, ev.Seq)
			}
		case api.EventStepCancelScheduled:
			if ks := steps[ev.Seq]; ks != nil {
				t := &r.Tryouts[ks.at]
				t.Ended, t.Outcome = ev.Time, OutcomeCanceled
				phaseOf(ks).State = PhaseFailed
				delete(steps, ev.Seq)
			}
		case api.EventSignalReceived:
			if ev.Name != SignalOperator {
				continue
			}
			var o Operator
			if json.Unmarshal(ev.Payload.Data, &o) != nil {
				continue
			}
			r.Operators = append(r.Operators, OperatorRecord{Operator: o, Time: ev.Time})
			for i := range r.Steps {
				c := &r.Steps[i].Compensation
				if c.State != PhaseFailed || (o.Step != "" && o.Step != r.Steps[i].Name) {
					continue
				}
				switch o.Action {
				case ActionDone:
					c.State = PhaseDone
				case ActionSkip:
					c.State = PhaseSkipped
				}
			}
		case api.EventWorkflowFailed, api.EventWorkflowTimedOut, api.EventWorkflowCanceled:
			r.Failure = ev.Failure
		}
	}
	// What is open now: running, or waiting for a worker or a retry.
	for _, p := range d.Steps {
		ks := steps[p.Seq]
		if ks == nil {
			continue
		}
		t := &r.Tryouts[ks.at]
		t.Attempt = p.Attempt
		switch p.State {
		case "started":
			t.Started = p.StartedTime
			phaseOf(ks).State = PhaseRunning
		case "backoff":
			phaseOf(ks).State = PhaseRetrying
		}
	}
	slices.SortStableFunc(r.Tryouts, func(a, b Tryout) int {
		at, bt := a.Ended, b.Ended
		switch {
		case at.IsZero() && bt.IsZero():
			return 0
		case at.IsZero():
			return 1
		case bt.IsZero():
			return -1
		}
		return at.Compare(bt)
	})
}
