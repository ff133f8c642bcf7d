// Package message correlates messages with the runs that wait for them,
// as Oracle BPEL's delivery layer does (its dlv_message, dlv_subscription
// and invoke_message tables): a message has a name and a correlation key,
// and a run waits for a name and a key (workflow.Receive) without either
// side knowing the other's ids.
//
// Each name and key has a mailbox: a run of the system workflow
// api.MailboxWorkflowType whose workflow id is derived from the pair
// (api.MailboxWorkflowID), so a send and a wait each reach it with one
// signal-with-start addressed by id. The mailbox holds the kept messages
// and the waiting runs in its state and delivers each message into the
// history of the run it picks with a signal, exactly once (the engine
// deduplicates a signal by its request id). It lives on the shard of its
// workflow id like any run, so it needs no index of its own on any store,
// moves with its shard in a cluster, and closes when it holds nothing.
package message

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Register registers the mailbox workflow and its step on a worker of
// api.SystemQueue (package system does); svc is what the step asks.
func Register(w *worker.Worker, svc api.Service) {
	worker.RegisterWorkflowNamed(w, api.MailboxWorkflowType, Run)
	worker.RegisterStepNamed(w, stepGone, func(ctx context.Context, runs []api.RunRef) ([]api.RunRef, error) { return gone(ctx, svc, runs) })
}

// stepGone is the step that finds which waiting runs closed without
// withdrawing their waits (terminated, timed out: no code of theirs ran).
const stepGone = "strand.message.gone"

// checkEvery is how often a mailbox with runs waiting checks that they are
// still open, so that the waits of runs closed from outside go too.
var checkEvery = time.Hour

// gone returns the runs of runs that are closed or gone.
func gone(ctx context.Context, svc api.Service, runs []api.RunRef) ([]api.RunRef, error) {
	var out []api.RunRef
	for _, r := range runs {
		d, err := svc.DescribeWorkflow(ctx, r)
		switch {
		case errors.Is(err, api.ErrNotFound):
			out = append(out, r)
		case err != nil:
			return nil, err
		case d.Status != store.StatusRunning:
			out = append(out, r)
		}
	}
	return out, nil
}

// Attributes of a mailbox's run, for lists.
const (
	attrName    = "strand.message.name"
	attrKey     = "strand.message.key"
	attrKept    = "strand.message.kept"
	attrWaiting = "strand.message.waiting"
)

// queryName is the query DescribeMailbox asks.
const queryName = "strand.message.describe"

// Bounds of one mailbox.
const (
	// maxKept is the most messages a mailbox keeps: past it the oldest
	// goes, so that one key flooded with messages stays bounded.
	maxKept = 10000
	// seenIDs is how many message ids a mailbox remembers, so that a
	// message sent again is not taken twice.
	seenIDs = 1000
	// recentDeliveries is how many deliveries describe lists.
	recentDeliveries = 20
	// commandsPerRun is how many commands one run of the mailbox takes
	// before it continues as new, which bounds its history.
	commandsPerRun = 500
)

// state is a mailbox's input: all it carries from one run to the next.
type state struct {
	Name    string               `json:"name"`
	Key     string               `json:"key"`
	Kept    []kept               `json:"kept,omitempty"`
	Waiting []api.MessageWaiter  `json:"waiting,omitempty"`
	Recent  []api.DeliveredEntry `json:"recent,omitempty"`
	Seen    []string             `json:"seen,omitempty"`
	// Withdrawn are the ids of waits withdrawn before they arrived (the
	// two signals may come in either order): such a wait is not taken.
	Withdrawn []string `json:"withdrawn,omitempty"`
}

// kept is a kept message with the rule its sender found for it.
type kept struct {
	api.KeptMessage
	Rule *api.MessageRule `json:"rule,omitempty"`
}

// mailbox is one run of the mailbox workflow.
type mailbox struct {
	st       state
	commands workflow.ReceiveChannel[api.MailboxCommand]
	// inFlight are the deliveries and starts not yet answered.
	inFlight []*flight
	taken    int
	// timer wakes the mailbox when its first kept message expires.
	timer       workflow.Future[struct{}]
	timerAt     time.Time
	cancelTimer workflow.CancelFunc
	// shown is what the run's attributes say.
	shown [2]int
	// check wakes the mailbox to check its waiting runs; checking is the
	// step doing it.
	check       workflow.Future[struct{}]
	cancelCheck workflow.CancelFunc
	checking    workflow.Future[[]api.RunRef]
}

// flight is a delivery (a signal to a waiting run) or a start (a run that
// a rule starts for the message) not yet answered.
type flight struct {
	msg     kept
	waiter  *api.MessageWaiter // nil: a start
	signal  workflow.Future[struct{}]
	started workflow.Future[string]
}

// Run is the mailbox workflow: it takes the commands that sends and waits
// signal to it, matches messages with waiting runs, and returns once it
// holds nothing.
func Run(ctx workflow.Context, st state) (struct{}, error) {
	// A mailbox holds what senders were told was taken: a cancel request
	// (anyone may send one through the API) does not end it, and its
	// timers and waits go on. Terminate ends it.
	ctx = workflow.NewDisconnectedContext(ctx)
	m := &mailbox{st: st, commands: workflow.GetSignalChannel[api.MailboxCommand](ctx, api.MailboxSignal), shown: [2]int{-1, -1}}
	workflow.SetQueryHandler(ctx, queryName, func(struct{}) (api.MailboxDescription, error) { return m.describe(ctx), nil })
	for {
		for {
			c, ok := m.commands.ReceiveAsync()
			if !ok {
				break
			}
			m.apply(ctx, c)
		}
		m.expire(ctx)
		m.match(ctx)
		m.show(ctx)
		if len(m.inFlight) == 0 && m.checking == nil {
			if len(m.st.Kept) == 0 && len(m.st.Waiting) == 0 {
				// Nothing held: a command that arrived meanwhile makes the
				// engine refuse the close and run this again.
				return struct{}{}, nil
			}
			if m.taken >= commandsPerRun {
				return struct{}{}, workflow.NewContinueAsNewError(ctx, Run, m.st)
			}
		}
		sel := workflow.NewSelector(ctx)
		workflow.AddReceive(sel, m.commands, func(ch workflow.ReceiveChannel[api.MailboxCommand]) {
			c, _ := ch.ReceiveAsync()
			m.apply(ctx, c)
		})
		m.arm(ctx)
		if m.timer != nil {
			sel.AddFuture(m.timer, func() { m.timer, m.timerAt = nil, time.Time{} })
		}
		m.armCheck(ctx)
		if m.check != nil {
			sel.AddFuture(m.check, func() {
				m.check, m.cancelCheck = nil, nil
				runs := make([]api.RunRef, len(m.st.Waiting))
				for i, w := range m.st.Waiting {
					runs[i] = w.Run
				}
				m.checking = workflow.ExecuteStepByName[[]api.RunRef](ctx, workflow.StepOptions{StartToClose: time.Minute}, stepGone, runs)
			})
		}
		if m.checking != nil {
			sel.AddFuture(m.checking, func() { m.dropGone(ctx) })
		}
		for _, f := range m.inFlight {
			if f.signal != nil {
				sel.AddFuture(f.signal, func() { m.delivered(ctx, f) })
			} else {
				sel.AddFuture(f.started, func() { m.startAnswered(ctx, f) })
			}
		}
		sel.Select(ctx)
	}
}

// apply takes one command.
func (m *mailbox) apply(ctx workflow.Context, c api.MailboxCommand) {
	m.taken++
	if m.st.Name == "" && m.st.Key == "" {
		m.st.Name, m.st.Key = c.Name, c.CorrelationKey
	}
	switch c.Kind {
	case api.MailboxSend:
		if c.Message == nil || slices.Contains(m.st.Seen, c.Message.MessageID) || m.isKept(c.Message.MessageID) {
			return
		}
		m.st.Kept = append(m.st.Kept, kept{KeptMessage: *c.Message, Rule: c.Rule})
		if len(m.st.Kept) > maxKept {
			workflow.Logger(ctx).Warn("mailbox full: dropping its oldest message", "name", m.st.Name, "key", m.st.Key,
				"message_id", m.st.Kept[0].MessageID)
			m.st.Kept = m.st.Kept[1:]
		}
	case api.MailboxWait:
		if c.Waiter == nil || slices.Contains(m.st.Withdrawn, c.Waiter.ID) {
			return
		}
		if !slices.ContainsFunc(m.st.Waiting, func(w api.MessageWaiter) bool { return w.ID == c.Waiter.ID }) {
			m.st.Waiting = append(m.st.Waiting, *c.Waiter)
		}
	case api.MailboxUnwait:
		if c.Waiter == nil {
			return
		}
		n := len(m.st.Waiting)
		m.st.Waiting = slices.DeleteFunc(m.st.Waiting, func(w api.MessageWaiter) bool { return w.ID == c.Waiter.ID })
		if len(m.st.Waiting) == n {
			m.st.Withdrawn = bounded(append(m.st.Withdrawn, c.Waiter.ID), seenIDs)
		}
	}
}

func (m *mailbox) isKept(id string) bool {
	return slices.ContainsFunc(m.st.Kept, func(k kept) bool { return k.MessageID == id }) ||
		slices.ContainsFunc(m.inFlight, func(f *flight) bool { return f.msg.MessageID == id && !f.msg.Broadcast })
}

// expire drops the kept messages whose time to live ended.
func (m *mailbox) expire(ctx workflow.Context) {
	now := workflow.Now(ctx)
	m.st.Kept = slices.DeleteFunc(m.st.Kept, func(k kept) bool {
		if now.Before(k.Expires) {
			return false
		}
		m.remember(k.MessageID)
		return true
	})
}

// match hands kept messages to waiting runs, first come first served, and
// starts a run for a message no run waits for when its name has a rule.
func (m *mailbox) match(ctx workflow.Context) {
	for i := 0; i < len(m.st.Kept); {
		k := m.st.Kept[i]
		if k.Broadcast {
			// Every run waiting now gets it once; it stays for later ones.
			for _, w := range m.st.Waiting {
				if !slices.ContainsFunc(k.DeliveredTo, func(r api.RunRef) bool { return r == w.Run }) {
					m.deliver(ctx, k, w)
					m.st.Kept[i].DeliveredTo = append(m.st.Kept[i].DeliveredTo, w.Run)
				}
			}
			m.st.Waiting = slices.DeleteFunc(m.st.Waiting, func(w api.MessageWaiter) bool {
				return slices.Contains(m.st.Kept[i].DeliveredTo, w.Run)
			})
			i++
			continue
		}
		if len(m.st.Waiting) > 0 {
			w := m.st.Waiting[0]
			m.st.Waiting = m.st.Waiting[1:]
			m.st.Kept = slices.Delete(m.st.Kept, i, i+1)
			m.deliver(ctx, k, w)
			continue
		}
		if k.Rule != nil && !m.starting() {
			m.st.Kept = slices.Delete(m.st.Kept, i, i+1)
			m.start(ctx, k)
			continue
		}
		i++
	}
}

// starting reports whether a start is in flight: a second would find the
// first's run, so messages wait for its answer.
func (m *mailbox) starting() bool {
	return slices.ContainsFunc(m.inFlight, func(f *flight) bool { return f.waiter == nil })
}

// deliver signals message k into the history of w's run.
func (m *mailbox) deliver(ctx workflow.Context, k kept, w api.MessageWaiter) {
	d := api.MessageDelivery{MessageID: k.MessageID, Name: m.st.Name, CorrelationKey: m.st.Key, Payload: k.Payload, Sent: k.Sent, Sender: k.Sender}
	target := workflow.Target{Namespace: w.Run.Namespace, WorkflowID: w.Run.WorkflowID, RunID: w.Run.RunID}
	f := &flight{msg: k, waiter: &w, signal: workflow.SignalExternal(ctx, target, api.MessageDeliverySignal(m.st.Name, m.st.Key), d)}
	m.inFlight = append(m.inFlight, f)
}

// delivered settles a delivery: a run that is gone gives the message back
// (a broadcast's is simply not counted).
func (m *mailbox) delivered(ctx workflow.Context, f *flight) {
	m.land(f)
	if _, err := f.signal.Get(ctx); err != nil {
		if !f.msg.Broadcast {
			m.st.Kept = slices.Insert(m.st.Kept, 0, f.msg)
		}
		return
	}
	m.record(ctx, f.msg.MessageID, f.waiter.Run, false)
	if !f.msg.Broadcast {
		m.remember(f.msg.MessageID)
	}
}

// start starts a run for message k under its rule: its workflow id is the
// correlation key, its input the payload, its priority the message's.
func (m *mailbox) start(ctx workflow.Context, k kept) {
	r := k.Rule
	opts := workflow.ChildOptions{Namespace: r.Namespace, WorkflowID: m.st.Key, Queue: r.Queue, Priority: k.Priority,
		ParentClose: api.ParentCloseAbandon}
	if opts.Queue == "" {
		opts.Queue = api.DefaultQueue
	}
	child := workflow.ExecuteChildByName[json.RawMessage](ctx, opts, r.WorkflowType, json.RawMessage(k.Payload))
	m.inFlight = append(m.inFlight, &flight{msg: k, started: child.Started()})
}

// startAnswered settles a start: a run of that id already open keeps the
// message for when it waits.
func (m *mailbox) startAnswered(ctx workflow.Context, f *flight) {
	m.land(f)
	runID, err := f.started.Get(ctx)
	if err != nil {
		f.msg.Rule = nil
		m.st.Kept = slices.Insert(m.st.Kept, 0, f.msg)
		return
	}
	ns := f.msg.Rule.Namespace
	m.record(ctx, f.msg.MessageID, api.RunRef{Namespace: ns, WorkflowID: m.st.Key, RunID: runID}, true)
	m.remember(f.msg.MessageID)
}

func (m *mailbox) land(f *flight) {
	m.inFlight = slices.DeleteFunc(m.inFlight, func(x *flight) bool { return x == f })
}

func (m *mailbox) record(ctx workflow.Context, id string, run api.RunRef, started bool) {
	m.st.Recent = bounded(append(m.st.Recent, api.DeliveredEntry{MessageID: id, Run: run, At: workflow.Now(ctx), Started: started}), recentDeliveries)
}

func (m *mailbox) remember(id string) { m.st.Seen = bounded(append(m.st.Seen, id), seenIDs) }

// bounded keeps the last n of s.
func bounded[T any](s []T, n int) []T {
	if len(s) > n {
		return slices.Clone(s[len(s)-n:])
	}
	return s
}

// arm sets the timer to the first expiry of a kept message.
func (m *mailbox) arm(ctx workflow.Context) {
	var at time.Time
	for _, k := range m.st.Kept {
		if at.IsZero() || k.Expires.Before(at) {
			at = k.Expires
		}
	}
	if at.Equal(m.timerAt) {
		return
	}
	if m.cancelTimer != nil {
		m.cancelTimer()
		m.timer, m.cancelTimer = nil, nil
	}
	m.timerAt = at
	if at.IsZero() {
		return
	}
	tctx, cancel := workflow.WithCancel(ctx)
	m.timer, m.cancelTimer = workflow.NewTimer(tctx, max(at.Sub(workflow.Now(ctx)), time.Millisecond)), cancel
}

// armCheck sets the timer of the next check of the waiting runs while
// runs wait, and drops it when none does.
func (m *mailbox) armCheck(ctx workflow.Context) {
	switch {
	case len(m.st.Waiting) == 0 && m.check != nil:
		m.cancelCheck()
		m.check, m.cancelCheck = nil, nil
	case len(m.st.Waiting) > 0 && m.check == nil && m.checking == nil:
		tctx, cancel := workflow.WithCancel(ctx)
		m.check, m.cancelCheck = workflow.NewTimer(tctx, checkEvery), cancel
	}
}

// dropGone drops the waits of the runs the check found closed.
func (m *mailbox) dropGone(ctx workflow.Context) {
	closed, err := m.checking.Get(ctx)
	m.checking = nil
	if err != nil {
		workflow.Logger(ctx).Warn("check the runs waiting on a mailbox", "name", m.st.Name, "key", m.st.Key, "err", err)
		return
	}
	m.st.Waiting = slices.DeleteFunc(m.st.Waiting, func(w api.MessageWaiter) bool { return slices.Contains(closed, w.Run) })
}

// show updates the run's attributes when what it holds changed.
func (m *mailbox) show(ctx workflow.Context) {
	now := [2]int{len(m.st.Kept), len(m.st.Waiting)}
	if now == m.shown {
		return
	}
	attrs := map[string]string{attrKept: strconv.Itoa(now[0]), attrWaiting: strconv.Itoa(now[1])}
	if m.shown[0] < 0 {
		attrs[attrName], attrs[attrKey] = m.st.Name, m.st.Key
	}
	workflow.UpsertAttributes(ctx, attrs)
	m.shown = now
}

func (m *mailbox) describe(ctx workflow.Context) api.MailboxDescription {
	info := workflow.GetInfo(ctx)
	d := api.MailboxDescription{Name: m.st.Name, CorrelationKey: m.st.Key, WorkflowID: info.WorkflowID, RunID: info.RunID,
		Kept: make([]api.KeptMessage, 0, len(m.st.Kept)), Waiting: slices.Clone(m.st.Waiting), Delivered: slices.Clone(m.st.Recent)}
	for _, k := range m.st.Kept {
		d.Kept = append(d.Kept, k.KeptMessage)
	}
	if d.Waiting == nil {
		d.Waiting = []api.MessageWaiter{}
	}
	return d
}
