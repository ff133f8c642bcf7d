package sdk

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/strandhq/strand/api"
)

// An instance keeps a journal of what it consumed: the inputs of each task
// it ran, with the task's time, and the side-effect values it recorded.
// Fed into a new instance of the same workflow code, the journal rebuilds
// the same state without the run's history: a worker that evicted an
// instance keeps its journal (a few hundred bytes, no pointers for the
// garbage collector to follow) and brings the run back with one replay and
// no history read. The same process ran these inputs through this code
// before, so there is nothing to check against history.
//
// Journals are for runs with short histories, the ones worth keeping many
// of: an instance stops journaling once its inputs pass maxJournal bytes,
// and is then rebuilt from history like any other.

// maxJournal is the most input bytes (estimated) an instance journals.
const maxJournal = 64 << 10

// journalTask is one run of the workflow: the inputs delivered before it,
// and the task's time.
type journalTask struct {
	Inputs []api.Event `json:"i,omitempty"`
	Now    time.Time   `json:"t"`
}

// journal is an instance's encoded journal.
type journal struct {
	Tasks []journalTask `json:"k,omitempty"`
	// Open are inputs delivered after the last run (a replay of history
	// that ended with inputs).
	Open     []api.Event      `json:"o,omitempty"`
	Recorded map[int64][]byte `json:"r,omitempty"`
}

// journalDelivered records an input the instance consumed.
func (inst *Instance) journalDelivered(e api.Event) {
	if inst.journalOff {
		return
	}
	inst.journalBytes += 160 + len(e.Name) + len(e.Payload.Data) + len(e.Reason)
	if e.Failure != nil {
		inst.journalBytes += 256
	}
	if inst.journalBytes > maxJournal {
		inst.journalOff = true
		inst.journal, inst.open, inst.journalBytes = nil, nil, 0
		return
	}
	inst.open = append(inst.open, journaled(e))
}

// journaled is e with only what deliver reads of it: who caused it, its
// attempt, its time, its audit details and the start's other attributes
// (memo, search attributes, request id) change nothing in a replay.
func journaled(e api.Event) api.Event {
	e.Identity, e.Attempt, e.Time, e.Details = "", 0, time.Time{}, nil
	if s := e.Start; s != nil {
		e.Start = &api.StartAttrs{Queue: s.Queue, ContinuedFrom: s.ContinuedFrom, Parent: s.Parent}
	}
	return e
}

// journalRan records a run of the workflow at now.
func (inst *Instance) journalRan(now time.Time) {
	if inst.journalOff {
		return
	}
	inst.journal = append(inst.journal, journalTask{Inputs: inst.open, Now: now})
	inst.open = nil
}

// Journal returns the instance's journal, encoded, or false when it keeps
// none (its inputs grew past the journal's bound).
func (inst *Instance) Journal() ([]byte, bool) {
	if inst.journalOff {
		return nil, false
	}
	b, err := json.Marshal(journal{Tasks: inst.journal, Open: inst.open, Recorded: inst.recorded})
	if err != nil {
		return nil, false // unreachable for events and bytes; then it keeps none
	}
	return b, true
}

// Resume builds an instance of fn from a journal that an instance of the
// same fn returned in this process. Its LastEventID is the last input's;
// the caller knows the event the run's last task ended at.
func Resume(info Info, fn WorkflowFunc, logger *slog.Logger, data []byte) (*Instance, error) {
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("sdk: decode journal of %s: %w", info.RunID, err)
	}
	inst := NewInstance(info, fn, logger)
	maps.Copy(inst.recorded, j.Recorded)
	inst.replaying = true
	defer func() { inst.replaying = false }()
	for _, task := range j.Tasks {
		for _, e := range task.Inputs {
			if err := inst.deliver(e); err != nil {
				inst.Close()
				return nil, err
			}
		}
		if _, err := inst.run(task.Now); err != nil {
			inst.Close()
			return nil, err
		}
	}
	for _, e := range j.Open {
		if err := inst.deliver(e); err != nil {
			inst.Close()
			return nil, err
		}
	}
	return inst, nil
}
