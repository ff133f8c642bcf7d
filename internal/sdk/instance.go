package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// WorkflowFunc is a registered workflow with its input and output encoded.
type WorkflowFunc func(ctx Context, input []byte) ([]byte, error)

// Info describes the run a workflow is executing.
type Info struct {
	Namespace    string
	WorkflowID   string
	RunID        string
	WorkflowType string
	Queue        string
	// ContinuedFrom is the run this one continued, if any.
	ContinuedFrom string
	Parent        *store.RunKey
	// ScheduledTime is the fire time of a run a schedule started (its memo's
	// api.MemoScheduledTime); zero for other runs.
	ScheduledTime time.Time
	// Memo is the memo the run started with (its UpsertMemo calls do not
	// change it); read it, do not change it.
	Memo map[string]api.Value
}

// pending is a command whose outcome the workflow waits for.
type pending struct {
	kind    api.CommandType
	result  *settable
	started *settable // children: the child's run id
	cancel  func()    // unregisters the cancel hook
	name    string
}

// Instance is one run's workflow code as a worker executes it: its
// coroutines, its pending commands and its signal channels. A worker keeps
// instances cached between tasks and builds them anew by replay on a miss.
type Instance struct {
	info      Info
	fn        WorkflowFunc
	sched     scheduler
	root      *ctxState
	logger    *slog.Logger
	rand      *rand.Rand
	seq       int64
	now       time.Time
	replaying bool

	commands []api.Command
	pending  map[int64]*pending
	signals  map[string]*channel
	queries  map[string]func([]byte) ([]byte, error)
	// recorded holds side-effect values from history, by seq.
	recorded map[int64][]byte
	// details are the audit details of the task running (not replayed).
	details AuditDetails

	// journal, open, journalBytes and journalOff: see journal.go.
	journal      []journalTask
	open         []api.Event
	journalBytes int
	journalOff   bool

	started bool
	closed  bool // the workflow function returned
	// closing says the closing command is in: commands after it are dropped.
	closing bool
	// atClose are called, in order, when the workflow function returns,
	// before the closing command: a pending wait's last word.
	atClose []*func()
	// LastEventID is the last history event this instance has processed.
	LastEventID int64
}

// NewInstance returns an instance for a run of fn.
func NewInstance(info Info, fn WorkflowFunc, logger *slog.Logger) *Instance {
	h := fnv.New64a()
	h.Write([]byte(info.RunID))
	seed := h.Sum64()
	inst := &Instance{
		info:     info,
		fn:       fn,
		rand:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		pending:  map[int64]*pending{},
		signals:  map[string]*channel{},
		queries:  map[string]func([]byte) ([]byte, error){},
		recorded: map[int64][]byte{},
	}
	if logger == nil {
		logger = slog.Default()
	}
	inst.logger = logger.With("workflow_id", info.WorkflowID, "run_id", info.RunID, "workflow_type", info.WorkflowType)
	inst.root = newCtx(inst, nil)
	return inst
}

// Close stops the instance's goroutines.
func (inst *Instance) Close() { inst.sched.close() }

// Info returns the run's description.
func (inst *Instance) Info() Info { return inst.info }

func (inst *Instance) logf(format string, args ...any) {
	if !inst.replaying {
		inst.logger.Warn(fmt.Sprintf(format, args...))
	}
}

func (inst *Instance) nextSeq() int64 { inst.seq++; return inst.seq }

func (inst *Instance) command(c api.Command) {
	if inst.closing {
		// The run closes with this task: what its other goroutines ask
		// for after the workflow function returned is not carried out.
		return
	}
	inst.commands = append(inst.commands, c)
}

// Execute delivers events (inputs), runs the workflow until it blocks at
// time now and returns the commands it issued.
func (inst *Instance) Execute(events []api.Event, now time.Time) ([]api.Command, error) {
	for _, e := range events {
		if err := inst.deliver(e); err != nil {
			return nil, err
		}
	}
	return inst.run(now)
}

// Commands issued while inputs were delivered (the cancel hooks of pending
// calls) are part of this run's output.
func (inst *Instance) run(now time.Time) ([]api.Command, error) {
	inst.journalRan(now)
	inst.now = now
	if p := inst.sched.runUntilBlocked(); p != nil {
		return nil, &api.PanicError{Message: fmt.Sprint(p.Value), Stack: p.Stack}
	}
	cmds := inst.commands
	inst.commands = nil
	return cmds, nil
}

// Replay rebuilds the instance from a run's history: it delivers inputs,
// runs the workflow wherever history says a task completed, and checks that
// the commands it issues are the ones history recorded. A mismatch is a
// *api.NonDeterminismError naming it.
func (inst *Instance) Replay(history []api.Event) error {
	for _, e := range history {
		if e.Type == api.EventSideEffect {
			inst.recorded[e.Seq] = e.Payload.Data
		}
	}
	inst.replaying = true
	defer func() { inst.replaying = false }()
	var issued []api.Command
	check := func(next *api.Event) error {
		if len(issued) == 0 {
			return nil
		}
		c := issued[0]
		if next == nil || !next.Type.IsCommand() {
			return &api.NonDeterminismError{Message: fmt.Sprintf("workflow issued %s #%d %q that history does not hold (history has %s)",
				c.Type, c.Seq, c.Name, describe(next))}
		}
		return nil
	}
	for i := range history {
		e := &history[i]
		switch {
		case e.Type == api.EventWorkflowTaskCompleted:
			if err := check(e); err != nil {
				return err
			}
			cmds, err := inst.run(e.Time)
			if err != nil {
				return err
			}
			issued = cmds
		case e.Type.IsCommand():
			if len(issued) == 0 {
				return &api.NonDeterminismError{Message: fmt.Sprintf("history holds %s (event %d) that the workflow did not issue", describe(e), e.ID)}
			}
			c := issued[0]
			issued = issued[1:]
			if c.Type.EventType() != e.Type || c.Seq != e.Seq || c.Name != e.Name {
				return &api.NonDeterminismError{Message: fmt.Sprintf("history holds %s (event %d), the workflow issued %s #%d %q",
					describe(e), e.ID, c.Type, c.Seq, c.Name)}
			}
		case e.Type.IsInput():
			if err := check(e); err != nil {
				return err
			}
			if err := inst.deliver(*e); err != nil {
				return err
			}
		}
		inst.LastEventID = e.ID
	}
	return check(nil)
}

func describe(e *api.Event) string {
	if e == nil {
		return "nothing more"
	}
	return fmt.Sprintf("%s #%d %q", e.Type, e.Seq, e.Name)
}

// deliver applies one input event.
func (inst *Instance) deliver(e api.Event) error {
	inst.journalDelivered(e)
	inst.LastEventID = e.ID
	switch e.Type {
	case api.EventWorkflowStarted:
		if inst.started {
			return nil
		}
		inst.started = true
		input := e.Payload.Data
		if e.Start != nil {
			inst.info.Queue = e.Start.Queue
			inst.info.ContinuedFrom = e.Start.ContinuedFrom
			inst.info.Parent = e.Start.Parent
			inst.info.Memo = e.Start.Memo
			if v, ok := e.Start.Memo[api.MemoScheduledTime]; ok {
				var at time.Time
				if json.Unmarshal(v, &at) == nil {
					inst.info.ScheduledTime = at
				}
			}
		}
		inst.sched.spawn("main", func() { inst.main(input) })
	case api.EventStepCompleted, api.EventTimerFired:
		if p := inst.take(e.Seq); p != nil {
			p.result.setPayload(e.Payload.Data, nil)
		}
	case api.EventStepFailed, api.EventStepTimedOut, api.EventStepCanceled:
		if p := inst.take(e.Seq); p != nil {
			p.result.setPayload(nil, e.Failure.Err())
		}
	case api.EventSignalReceived:
		inst.signalChannel(e.Name).buf = append(inst.signalChannel(e.Name).buf, signalValue(e.Payload.Data))
	case api.EventCancelRequested:
		inst.root.cancel(&api.CanceledError{Reason: e.Reason})
	case api.EventChildStarted:
		if p := inst.pending[e.Seq]; p != nil && p.started != nil && e.Child != nil {
			p.started.setValue(e.Child.RunID, nil)
		}
	case api.EventChildStartFailed:
		if p := inst.take(e.Seq); p != nil {
			err := e.Failure.Err()
			p.started.setValue("", err)
			p.result.setPayload(nil, err)
		}
	case api.EventChildClosed:
		if p := inst.take(e.Seq); p != nil {
			if e.Failure != nil {
				p.result.setPayload(nil, e.Failure.Err())
			} else {
				p.result.setPayload(e.Payload.Data, nil)
			}
		}
	case api.EventExternalSignaled, api.EventExternalCancelRequested:
		if p := inst.take(e.Seq); p != nil {
			p.result.setPayload(nil, e.Failure.Err())
		}
	}
	return nil
}

func (inst *Instance) take(seq int64) *pending {
	p := inst.pending[seq]
	if p == nil {
		return nil
	}
	delete(inst.pending, seq)
	if p.cancel != nil {
		p.cancel()
	}
	return p
}

func (inst *Instance) signalChannel(name string) *channel {
	c := inst.signals[name]
	if c == nil {
		c = newChannel(inst, 0)
		inst.signals[name] = c
	}
	return c
}

// main runs the workflow function and turns its outcome into the closing command.
func (inst *Instance) main(input []byte) {
	out, err := inst.fn(inst.root, input)
	inst.closed = true
	for _, f := range inst.atClose {
		if *f != nil {
			(*f)()
		}
	}
	inst.atClose = nil
	var can *ContinueAsNewError
	switch {
	case errors.As(err, &can):
		inst.command(api.Command{Type: api.CommandContinueAsNew, Name: can.WorkflowType, Payload: can.Input, ContinueAsNew: &can.Options})
	case err != nil && inst.root.err != nil && errors.Is(err, api.ErrCanceled):
		inst.command(api.Command{Type: api.CommandCancel, Failure: api.FailureOf(err)})
	case err != nil:
		inst.command(api.Command{Type: api.CommandFail, Failure: api.FailureOf(err)})
	default:
		inst.command(api.Command{Type: api.CommandComplete, Payload: out})
	}
	inst.closing = true
}

// whenClosing calls f when the workflow function returns, before its
// closing command, unless the returned function was called first.
func (inst *Instance) whenClosing(f func()) (forget func()) {
	p := &f
	inst.atClose = append(inst.atClose, p)
	return func() { *p = nil }
}

// Closed reports whether the workflow function returned.
func (inst *Instance) Closed() bool { return inst.closed }

// Query runs a query handler against the instance's current state.
func (inst *Instance) Query(name string, input []byte) ([]byte, error) {
	h := inst.queries[name]
	if h == nil {
		known := make([]string, 0, len(inst.queries))
		for n := range inst.queries {
			known = append(known, n)
		}
		return nil, fmt.Errorf("no handler for query %q (handlers: %v)", name, known)
	}
	return h(input)
}

// ContinueAsNewError, returned by a workflow, closes its run and starts a
// new run of the same workflow id with fresh history.
type ContinueAsNewError struct {
	WorkflowType string
	Input        []byte
	Options      api.ChildOptions
}

func (e *ContinueAsNewError) Error() string { return "continue as new: " + e.WorkflowType }

// coroutineStack is what a blocked coroutine's goroutine is taken to hold
// (its stack, grown past the minimum by the workflow code's frames).
const coroutineStack = 8 << 10

// Footprint estimates the bytes the instance holds in memory: its live
// coroutines' goroutines, its pending calls, its recorded values, the
// values waiting in its channels and its journal. It is an estimate for a
// cache's budget, not an exact count.
func (inst *Instance) Footprint() int64 {
	n := int64(4<<10) + int64(inst.journalBytes)
	for _, c := range inst.sched.coroutines {
		if !c.finished {
			n += coroutineStack
		}
	}
	n += int64(len(inst.pending)) * 256
	for _, v := range inst.recorded {
		n += int64(64 + len(v))
	}
	for name, ch := range inst.signals {
		n += int64(128 + len(name) + 64*len(ch.buf))
	}
	return n
}
