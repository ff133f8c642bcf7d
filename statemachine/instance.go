package statemachine

import (
	"time"
)

// WorkflowType is the type of an instance's run.
const WorkflowType = "strand.StateMachine"

// Status is an instance's status, nFlow's.
type Status string

// Statuses.
const (
	StatusCreated    Status = "created"
	StatusInProgress Status = "inProgress"
	StatusExecuting  Status = "executing"
	StatusManual     Status = "manual"
	StatusFinished   Status = "finished"
)

// Input starts an instance.
type Input struct {
	Type string `json:"type"`
	// Version pins a definition version (0: the latest at start).
	Version int32 `json:"version,omitempty"`
	// State is the state to start in (default the first start state).
	State       string            `json:"state,omitempty"`
	Vars        map[string]string `json:"vars,omitempty"`
	BusinessKey string            `json:"business_key,omitempty"`
	ExternalID  string            `json:"external_id,omitempty"`
	// Activation is when the first state runs (zero: at once).
	Activation time.Time `json:"activation,omitzero"`
	// Priority is the run's (api.PriorityHighest to api.PriorityLowest;
	// 0: normal).
	Priority int8 `json:"priority,omitempty"`
	// Parent names the instance and action that created this one.
	Parent       string `json:"parent,omitempty"`
	ParentAction int    `json:"parent_action,omitempty"`
	Root         string `json:"root,omitempty"`
	// Definition, when set, is the stored definition of Version, which the
	// creator read already: the instance need not read it again.
	Definition []byte `json:"definition,omitempty"`
}

// Instance is an instance as its query (while it runs) or its output
// (once it finished) tells it.
type Instance struct {
	ID             string    `json:"id"`
	Type           string    `json:"type"`
	Version        int32     `json:"version"`
	Status         Status    `json:"status"`
	State          string    `json:"state"`
	StateText      string    `json:"state_text,omitempty"`
	NextActivation time.Time `json:"next_activation,omitzero"`
	Retries        int       `json:"retries"`
	BusinessKey    string    `json:"business_key,omitempty"`
	ExternalID     string    `json:"external_id,omitempty"`
	Parent         string    `json:"parent,omitempty"`
	ParentAction   int       `json:"parent_action,omitempty"`
	Root           string    `json:"root,omitempty"`
	Signal         *int      `json:"signal,omitempty"`
	// ExecutorGroup is the task queue of the workers that run it; Priority
	// the priority its tasks have there (0: normal).
	ExecutorGroup string `json:"executor_group"`
	Priority      int8   `json:"priority,omitempty"`
	// Vars are the variables now; CreatedVars those it was created with.
	Vars        map[string]string `json:"vars,omitempty"`
	CreatedVars map[string]string `json:"created_vars,omitempty"`
	Created     time.Time         `json:"created"`
	Modified    time.Time         `json:"modified"`
	// Children are the instances this one created.
	Children []string `json:"children,omitempty"`
	Actions  []Action `json:"actions"`
}

// VarsAfter returns the variables as they were after action id (1 is the
// first; 0: as created).
func (i *Instance) VarsAfter(id int) map[string]string {
	vars := map[string]string{}
	for k, v := range i.CreatedVars {
		vars[k] = v
	}
	for _, a := range i.Actions {
		if a.ID > id {
			break
		}
		for k, v := range a.Updated {
			vars[k] = v
		}
	}
	return vars
}

// ActionType is what an action was, nFlow's.
type ActionType string

// Action types.
const (
	ActionStateExecution       ActionType = "stateExecution"
	ActionStateExecutionFailed ActionType = "stateExecutionFailed"
	ActionExternalChange       ActionType = "externalChange"
	ActionRecovery             ActionType = "recovery"
)

// Action is one state execution or change from outside.
type Action struct {
	ID       int        `json:"id"`
	Type     ActionType `json:"type"`
	State    string     `json:"state"`
	Text     string     `json:"text,omitempty"`
	RetryNo  int        `json:"retry_no"`
	Start    time.Time  `json:"execution_start"`
	End      time.Time  `json:"execution_end"`
	Executor string     `json:"executor,omitempty"`
	// Updated are the variables the action set, with their values after
	// it (nFlow's nflow_workflow_state rows of the action).
	Updated map[string]string `json:"updated,omitempty"`
}

// Signals and queries of an instance's run.
const (
	// SignalUpdate carries an Update: an external change.
	SignalUpdate = "strand.sm.update"
	// SignalWakeup carries a Wakeup.
	SignalWakeup = "strand.sm.wakeup"
	// SignalSignal carries a SignalValue: nFlow's signal.
	SignalSignal = "strand.sm.signal"
	// QueryInstance answers the Instance.
	QueryInstance = "strand.sm.instance"
)

// Update changes an instance from outside: move it to a state, set its
// next activation, set variables; each is optional. Reason is the
// action's text.
type Update struct {
	State      string            `json:"state,omitempty"`
	Activation *time.Time        `json:"activation,omitempty"`
	Vars       map[string]string `json:"vars,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	Identity   string            `json:"identity,omitempty"`
}

// Wakeup wakes an instance that waits in one of States (any state when
// empty).
type Wakeup struct {
	States []string `json:"states,omitempty"`
}

// SignalValue sets an instance's signal (nil clears it) and wakes it.
type SignalValue struct {
	Signal *int   `json:"signal"`
	Reason string `json:"reason,omitempty"`
	// Identity is who set it, the action's executor.
	Identity string `json:"identity,omitempty"`
}

// Attributes of an instance's run, for lists.
const (
	AttrType       = "strand.sm.type"
	AttrState      = "strand.sm.state"
	AttrStatus     = "strand.sm.status"
	AttrExternalID = "strand.sm.external_id"
	AttrParent     = "strand.sm.parent"
	// AttrActivation is the next activation of an instance that waits for
	// one (created or in progress), as ActivationFormat writes it; empty
	// otherwise. Its text sorts as its time does.
	AttrActivation = "strand.sm.activation"
)

// ActivationFormat is the layout of AttrActivation (always UTC).
const ActivationFormat = "2006-01-02T15:04:05.000Z"
