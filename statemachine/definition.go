// Package statemachine runs long processes as nFlow's users model them: a
// state machine of named states, the transitions each permits, a Go method
// per state that does the work and picks the next state and when to run
// it, state variables kept per action, manual states that wait for a
// person, retries per state and an error state when they run out.
//
// It is a front end above the kernel: an instance is a run of the workflow
// WorkflowType, whose interpreter reads the instance's definition version
// and moves it from state to state; each state execution is a step of that
// run (a committed transition), and each change from outside is a signal.
// So instances survive crashes, move with their shards and show in the
// console like any run; the engine knows nothing of state machines.
package statemachine

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
)

// Kind is what a state is.
type Kind string

// State kinds, nFlow's.
const (
	// KindStart states begin an instance; a new instance starts in the
	// first one unless it names another.
	KindStart Kind = "start"
	// KindNormal states run their method and move on.
	KindNormal Kind = "normal"
	// KindWait states run their method when the instance is woken: by a
	// signal, a wake-up, a child finishing, or its next activation.
	KindWait Kind = "wait"
	// KindManual states have no method: the instance waits for an update
	// from outside.
	KindManual Kind = "manual"
	// KindEnd states finish the instance.
	KindEnd Kind = "end"
	// KindError is the error state that failures lead to. As in nFlow it
	// is a manual state: the instance waits there (status manual) until an
	// operator moves it on with an update. A definition whose failures
	// should finish the instance names an end state instead (ErrorEnd).
	KindError Kind = "error"
)

// Method is the work of a state: it reads and writes the instance's
// variables through ctx and returns the next state and when to run it. An
// error (or a panic) is retried with back-off in the same state; past the
// state's retries the instance moves to its failure state or the
// definition's error state.
type Method func(ctx Context) (Next, error)

// Next is what a state method decided.
type Next struct {
	// State is the next state; "" stays in the current one (and, with no
	// time set, waits to be woken).
	State string `json:"state,omitempty"`
	// At (or After) is when the next state runs; zero: at once.
	At    time.Time     `json:"at,omitzero"`
	After time.Duration `json:"after,omitempty"`
	// Reason is the state text: why.
	Reason string `json:"reason,omitempty"`
}

// MoveTo moves to state at once.
func MoveTo(state, reason string) Next { return Next{State: state, Reason: reason} }

// MoveToAt moves to state, to run at t.
func MoveToAt(state string, t time.Time, reason string) Next {
	return Next{State: state, At: t, Reason: reason}
}

// RetryAfter stays in the current state and runs it again after d.
func RetryAfter(d time.Duration, reason string) Next { return Next{After: d, Reason: reason} }

// StopInState stays in the current state until woken from outside.
func StopInState(reason string) Next { return Next{Reason: reason} }

// State is one state of a definition.
type State struct {
	Name        string `json:"name"`
	Kind        Kind   `json:"kind"`
	Description string `json:"description,omitempty"`
	// Retries is how many times the method runs again after a failure
	// (default the definition's); Backoff the first wait (doubling, at
	// most MaxBackoff).
	Retries    *int          `json:"retries,omitempty"`
	Backoff    time.Duration `json:"backoff,omitempty"`
	MaxBackoff time.Duration `json:"max_backoff,omitempty"`
	// Timeout bounds one run of the method.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Failure is where the instance goes when the method's retries run
	// out (default the definition's error state).
	Failure string `json:"failure,omitempty"`
}

// Definition is a state machine: its states and the transitions between
// them, and the method of each state that has one.
type Definition struct {
	Type        string  `json:"type"`
	Description string  `json:"description,omitempty"`
	States      []State `json:"states"`
	// Transitions are the permitted moves, from a state to the states it
	// may move to.
	Transitions map[string][]string `json:"transitions"`
	// ErrorState is where failures go when their state names none.
	ErrorState string `json:"error_state,omitempty"`
	// Retries is the default of the states' retries (default 3).
	Retries int `json:"retries"`

	methods map[string]Method
	err     error
}

// Define starts a definition of a type.
func Define(typ, description string) *Definition {
	return &Definition{Type: typ, Description: description, Transitions: map[string][]string{}, Retries: 3, methods: map[string]Method{}}
}

func (d *Definition) add(s State, m Method) *Definition {
	if d.state(s.Name) != nil {
		d.fail("state %q is defined twice", s.Name)
		return d
	}
	if s.Name == "" {
		d.fail("a state needs a name")
		return d
	}
	d.States = append(d.States, s)
	if m != nil {
		d.methods[s.Name] = m
	}
	return d
}

func (d *Definition) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

// Start adds a start state.
func (d *Definition) Start(name, description string, m Method) *Definition {
	return d.add(State{Name: name, Kind: KindStart, Description: description}, m)
}

// Normal adds a normal state.
func (d *Definition) Normal(name, description string, m Method) *Definition {
	return d.add(State{Name: name, Kind: KindNormal, Description: description}, m)
}

// Wait adds a wait state: its method runs each time the instance is woken.
func (d *Definition) Wait(name, description string, m Method) *Definition {
	return d.add(State{Name: name, Kind: KindWait, Description: description}, m)
}

// Manual adds a manual state: no method; an update from outside moves
// the instance on.
func (d *Definition) Manual(name, description string) *Definition {
	return d.add(State{Name: name, Kind: KindManual, Description: description}, nil)
}

// End adds an end state.
func (d *Definition) End(name, description string) *Definition {
	return d.add(State{Name: name, Kind: KindEnd, Description: description}, nil)
}

// Error adds the error state: failures without a failure state of their
// own go there, and the instance waits in it, as in a manual state, until
// an update from outside moves it on (nFlow's usual error state).
func (d *Definition) Error(name, description string) *Definition {
	d.ErrorState = name
	return d.add(State{Name: name, Kind: KindError, Description: description}, nil)
}

// ErrorEnd adds the error state as an end state: failures without a
// failure state of their own go there and finish the instance, which no
// update moves on.
func (d *Definition) ErrorEnd(name, description string) *Definition {
	d.ErrorState = name
	return d.add(State{Name: name, Kind: KindEnd, Description: description}, nil)
}

// Permit allows a move from one state to another; a failure state, when
// given, is where from's failures go.
func (d *Definition) Permit(from, to string, failure ...string) *Definition {
	if !slices.Contains(d.Transitions[from], to) {
		d.Transitions[from] = append(d.Transitions[from], to)
	}
	if len(failure) > 0 {
		if s := d.state(from); s != nil {
			s.Failure = failure[0]
		} else {
			d.fail("Permit(%q, ...): define the state before its failure state", from)
		}
	}
	return d
}

// Retry sets a state's retries and back-off.
func (d *Definition) Retry(state string, retries int, backoff, maxBackoff time.Duration) *Definition {
	s := d.state(state)
	if s == nil {
		d.fail("Retry(%q): no such state", state)
		return d
	}
	s.Retries, s.Backoff, s.MaxBackoff = &retries, backoff, maxBackoff
	return d
}

// Timeout bounds one run of a state's method.
func (d *Definition) Timeout(state string, timeout time.Duration) *Definition {
	if s := d.state(state); s != nil {
		s.Timeout = timeout
	} else {
		d.fail("Timeout(%q): no such state", state)
	}
	return d
}

func (d *Definition) state(name string) *State {
	for i := range d.States {
		if d.States[i].Name == name {
			return &d.States[i]
		}
	}
	return nil
}

// DefinitionError is what is wrong with a definition; it is an invalid
// argument (errors.Is(err, api.ErrInvalidArgument)).
type DefinitionError struct {
	Type    string
	Problem string
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("state machine %q: %s", e.Type, e.Problem)
}

// Unwrap returns api.ErrInvalidArgument.
func (e *DefinitionError) Unwrap() error { return api.ErrInvalidArgument }

// typeName is what a type may be called: it is the first part of its
// instances' ids (TYPE/EXTERNAL_ID) and of their lists' filters.
var typeName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,199}$`)

// Check reports what is wrong with a definition (a *DefinitionError): a
// type name other than letters, digits, '_', '.' and '-' (starting with a
// letter), unknown states in transitions, states with methods they cannot
// have or lack, no start state, no error state, a move out of an end
// state, or a state no start state leads to.
func (d *Definition) Check() error {
	if d.err != nil {
		return &DefinitionError{Type: d.Type, Problem: d.err.Error()}
	}
	bad := func(format string, args ...any) error {
		return &DefinitionError{Type: d.Type, Problem: fmt.Sprintf(format, args...)}
	}
	if d.Type == "" {
		return bad("a definition needs a type")
	}
	if !typeName.MatchString(d.Type) {
		return bad("a type name is a letter, then letters, digits, '_', '.' or '-' (at most 200)")
	}
	start := false
	for _, s := range d.States {
		_, has := d.methods[s.Name]
		switch s.Kind {
		case KindStart, KindNormal, KindWait:
			if !has && d.methods != nil {
				return bad("state %q (%s) needs a method", s.Name, s.Kind)
			}
			start = start || s.Kind == KindStart
		}
		if s.Failure != "" && d.state(s.Failure) == nil {
			return bad("the failure state %q of %q is not a state", s.Failure, s.Name)
		}
	}
	if !start {
		return bad("no start state: add one with Start(name, description, method)")
	}
	for _, from := range slices.Sorted(maps.Keys(d.Transitions)) {
		s := d.state(from)
		if s == nil {
			return bad("permits a move from %q, which is not a state", from)
		}
		for _, to := range d.Transitions[from] {
			if d.state(to) == nil {
				return bad("permits a move from %q to %q, which is not a state", from, to)
			}
		}
		if s.Kind == KindEnd && len(d.Transitions[from]) > 0 {
			return bad("permits a move out of %q, an end state: an instance there is finished", from)
		}
	}
	if d.ErrorState == "" {
		return bad("no error state, where failed executions go: add one with Error(name, description) (or ErrorEnd)")
	}
	if es := d.state(d.ErrorState); es == nil {
		return bad("the error state %q is not a state", d.ErrorState)
	} else if es.Kind != KindError && es.Kind != KindEnd {
		return bad("the error state %q is a %s state; want Error or ErrorEnd", d.ErrorState, es.Kind)
	}
	if lost := d.unreachable(); len(lost) > 0 {
		return bad("no start state leads to %s: permit a move to it, or remove it", quoteAll(lost))
	}
	return nil
}

// unreachable returns the states no start state leads to by permitted
// moves and failures (the error state counts as reached).
func (d *Definition) unreachable() []string {
	seen := map[string]bool{d.ErrorState: true}
	var todo []string
	for _, s := range d.States {
		if s.Kind == KindStart {
			seen[s.Name] = true
			todo = append(todo, s.Name)
		}
	}
	for len(todo) > 0 {
		from := todo[0]
		todo = todo[1:]
		next := slices.Clone(d.Transitions[from])
		if s := d.state(from); s != nil && s.Failure != "" {
			next = append(next, s.Failure)
		}
		for _, to := range next {
			if !seen[to] {
				seen[to] = true
				todo = append(todo, to)
			}
		}
	}
	var lost []string
	for _, s := range d.States {
		if !seen[s.Name] {
			lost = append(lost, s.Name)
		}
	}
	return lost
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// startStates names the start states.
func (d *Definition) startStates() []string {
	var out []string
	for _, s := range d.States {
		if s.Kind == KindStart {
			out = append(out, s.Name)
		}
	}
	return out
}

// permits reports whether the definition allows a move from one state to
// another. Moving to the failure or error state is always allowed.
func (d *Definition) permits(from, to string) bool {
	if s := d.state(from); s != nil && (to == s.Failure || to == d.ErrorState) {
		return true
	}
	return slices.Contains(d.Transitions[from], to)
}

// failureOf is where a state's exhausted failures go.
func (d *Definition) failureOf(state string) string {
	if s := d.state(state); s != nil && s.Failure != "" {
		return s.Failure
	}
	return d.ErrorState
}

// serialized is a definition's stored form, and the text its SHA-1 is of.
func (d *Definition) serialized() []byte {
	b, _ := json.Marshal(d) // maps marshal with sorted keys: the same definition, the same bytes
	return b
}

// SHA1 is the SHA-1 of the definition's serialized form (nFlow's
// definition_sha1).
func (d *Definition) SHA1() string {
	sum := sha1.Sum(d.serialized())
	return hex.EncodeToString(sum[:])
}
