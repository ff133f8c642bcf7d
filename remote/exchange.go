package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/server"
)

// A worker's polls and reports go in task exchanges (server.Exchange):
// the reports made while the last exchange was on its way share the next
// one, which also takes tasks for the polls waiting then; a poll with
// nothing reported waits in an exchange that holds open until a task
// comes, one or a few per queue, covering every poll waiting on it. The
// worker above sees the plain calls (PollStepTask, CompleteStep, …), and
// a server without task exchanges gets those.

// Limits of the exchanges.
const (
	// maxReportsPerExchange bounds the reports one exchange carries.
	maxReportsPerExchange = 500
	// reportExchanges is how many exchanges with reports may be on their
	// way at once before new reports wait to share the next one, for
	// reportLinger at most: a report may wait on the server for another's
	// commit (a step's result handed to a workflow task before it commits
	// waits for that task's completion), which must not wait behind it.
	reportExchanges = 2
	reportLinger    = time.Millisecond
	// waitExchanges is how many exchanges may wait for a queue's tasks at
	// once, per node: a task the engine hands out before its inputs commit
	// (to share their commit) goes only to a poll that waits.
	waitExchanges = 4
	// minWait is the least time between two exchanges that wait for a
	// queue's tasks and got none.
	minWait = 100 * time.Millisecond
	// reportTimeout bounds an exchange with reports (each is retried as
	// the Service's policy says within it).
	reportTimeout = time.Minute
)

// SharesPolls implements api.PollSharer: the polls waiting at once share
// task exchanges, unless Options.PlainTaskCalls.
func (s *Service) SharesPolls() bool { return s.exch != nil }

// errNoExchange says the server has no task exchange: the plain calls serve.
var errNoExchange = errors.New("remote: the server has no task exchange")

// exchanger carries the task polls and reports of a Service. An exchange
// is a namespace's (its caller works there): each namespace has its own.
type exchanger struct {
	s  *Service
	mu sync.Mutex
	// off: the server answered that it has no task exchange.
	off    bool
	spaces map[string]*space
	// tokens are the namespaces of the tasks handed out and not reported
	// yet, by token: a report goes in its namespace's exchanges.
	tokens taskTokens
}

// tokenAge is how long a task handed out by an exchange is remembered
// (between one and two of it): a task its worker never reports (the worker
// stopped) is forgotten, and a report after that goes as a plain call,
// which serves as well.
const tokenAge = 10 * time.Minute

// taskTokens are the tasks handed out, by token, in two generations: the
// current one, and the one before it, dropped when the current one is
// tokenAge old.
type taskTokens struct {
	now      func() time.Time
	cur, old map[string]handedOut
	since    time.Time // when cur began
}

// handedOut is where a task was handed out: its namespace, and the node
// that handed it out (its run's node then: its report goes there first,
// not forwarded there by another).
type handedOut struct {
	namespace string
	node      *node
}

func (t *taskTokens) add(token []byte, h handedOut) {
	if now := t.now(); t.cur == nil || now.Sub(t.since) >= tokenAge {
		t.old, t.cur, t.since = t.cur, map[string]handedOut{}, now
	}
	t.cur[string(token)] = h
}

func (t *taskTokens) lookup(token []byte) (handedOut, bool) {
	if h, ok := t.cur[string(token)]; ok {
		return h, true
	}
	h, ok := t.old[string(token)]
	return h, ok
}

func (t *taskTokens) forget(token []byte) {
	delete(t.cur, string(token))
	delete(t.old, string(token))
}

// space is the polls and reports of one namespace.
type space struct {
	name    string
	lanes   map[laneKey]*lane
	reports []*pendingReport // not sent yet
	// reporting counts the exchanges with reports on their way.
	reporting int
	// linger, when set, sends the reports waiting when it fires, however
	// many exchanges are on their way.
	linger *time.Timer
}

// laneKey names the polls that share exchanges: their kind and request.
type laneKey struct {
	kind string
	poll string // the poll request, as JSON
}

// lane is the polls of one kind and request.
type lane struct {
	take    server.Take
	waiters []*waiter
	ready   []any // tasks taken that no poll waited for when they came
	// covered counts the waiters that exchanges on their way take tasks
	// for; waiting counts those of them that wait for a task.
	covered, waiting int
	// ctx ends the exchanges that wait for this lane's tasks, once no
	// poll waits.
	ctx    context.Context
	cancel context.CancelFunc
}

// claim returns the take that covers the lane's waiters no exchange on
// its way covers, and counts them covered; ok is false when there are
// none. e.mu is held.
func (l *lane) claim() (t server.Take, ok bool) {
	free := len(l.waiters) - l.covered
	if free <= 0 {
		return server.Take{}, false
	}
	t = l.take
	t.Max = int32(free)
	l.covered += free
	return t, true
}

// waiter is one poll waiting for a task.
type waiter struct{ ch chan taskOrErr }

type taskOrErr struct {
	task any
	err  error
}

// pendingReport is a report waiting for its exchange's outcome.
type pendingReport struct {
	token      []byte
	completeWT *api.CompleteWorkflowTaskRequest
	failWT     *api.FailWorkflowTaskRequest
	completeSt *api.CompleteStepRequest
	failSt     *api.FailStepRequest
	// node handed the task out: the report goes there first.
	node *node
	done chan reportResult
}

type reportResult struct {
	out server.Outcome
	err error
}

func newExchanger(s *Service) *exchanger {
	return &exchanger{s: s, spaces: map[string]*space{}, tokens: taskTokens{now: time.Now}}
}

// space returns namespace n's polls and reports; e.mu is held.
func (e *exchanger) space(n string) *space {
	if n == "" {
		n = api.DefaultNamespace
	}
	sp := e.spaces[n]
	if sp == nil {
		sp = &space{name: n, lanes: map[laneKey]*lane{}}
		e.spaces[n] = sp
	}
	return sp
}

// usable reports whether a call may go in an exchange: not one a node
// forwards for another (sent once, by the plain route the node may call).
func (e *exchanger) usable(ctx context.Context) bool {
	return e != nil && !api.Forwarded(ctx)
}

// poll waits for a task of kind polled as req.
func (e *exchanger) poll(ctx context.Context, kind string, req api.PollRequest) (any, error) {
	key, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("remote: encode poll: %w", err)
	}
	e.mu.Lock()
	if e.off {
		e.mu.Unlock()
		return nil, errNoExchange
	}
	sp := e.space(req.Namespace)
	k := laneKey{kind, string(key)}
	l := sp.lanes[k]
	if l == nil {
		l = &lane{take: server.Take{Kind: kind, Poll: req}}
		sp.lanes[k] = l
	}
	if len(l.ready) > 0 {
		t := l.ready[0]
		l.ready = l.ready[1:]
		e.mu.Unlock()
		return t, nil
	}
	w := &waiter{ch: make(chan taskOrErr, 1)}
	l.waiters = append(l.waiters, w)
	e.kick(sp)
	e.mu.Unlock()

	select {
	case r := <-w.ch:
		return r.task, r.err
	case <-ctx.Done():
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, o := range l.waiters {
		if o == w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			if len(l.waiters) == 0 && l.cancel != nil {
				l.cancel() // no poll waits: the exchanges waiting for tasks end
				l.ctx, l.cancel = nil, nil
			}
			return nil, nil
		}
	}
	// A task came as the poll ended: it waits for the next poll.
	if r := <-w.ch; r.task != nil {
		l.ready = append([]any{r.task}, l.ready...)
	}
	return nil, nil
}

// report sends r in an exchange and waits for its outcome. A report of a
// task the exchanges did not hand out goes plain (errNoExchange).
func (e *exchanger) report(ctx context.Context, r *pendingReport) (server.Outcome, error) {
	r.done = make(chan reportResult, 1)
	e.mu.Lock()
	h, ok := e.tokens.lookup(r.token)
	if e.off || !ok {
		e.mu.Unlock()
		return server.Outcome{}, errNoExchange
	}
	r.node = h.node
	sp := e.space(h.namespace)
	sp.reports = append(sp.reports, r)
	e.kick(sp)
	e.mu.Unlock()
	select {
	case res := <-r.done:
		return res.out, res.err
	case <-ctx.Done():
		// The exchange goes on without the caller, who may send it again
		// (a second delivery of a report changes nothing).
		return server.Outcome{}, ctx.Err()
	}
}

// kick sends the exchanges of sp that are due; e.mu is held.
func (e *exchanger) kick(sp *space) {
	if e.off {
		return
	}
	e.sendReports(sp, false)
	// The polls still waiting: an exchange that waits for their tasks
	// (waitExchanges per lane and node at most).
	for _, l := range sp.lanes {
		if l.waiting >= waitExchanges*e.s.nodes.count() {
			continue
		}
		t, ok := l.claim()
		if !ok {
			continue
		}
		if l.ctx == nil {
			l.ctx, l.cancel = context.WithCancel(context.Background())
		}
		l.waiting++
		ctx := l.ctx
		go e.exchange(ctx, sp, nil, []*lane{l}, []server.Take{t}, true, nil)
	}
}

// sendReports sends the reports of sp in exchanges, with takes for the
// polls no exchange covers: while fewer than reportExchanges are on their
// way, or all of them when late (the linger fired). Reports left waiting
// go within reportLinger. e.mu is held.
func (e *exchanger) sendReports(sp *space, late bool) {
	for len(sp.reports) > 0 && (sp.reporting < reportExchanges || late) {
		// The oldest report and those for the same node, in order.
		to := sp.reports[0].node
		var batch, rest []*pendingReport
		for _, r := range sp.reports {
			if r.node == to && len(batch) < maxReportsPerExchange {
				batch = append(batch, r)
			} else {
				rest = append(rest, r)
			}
		}
		sp.reports = rest
		sp.reporting++
		for _, r := range batch {
			e.tokens.forget(r.token)
		}
		var lanes []*lane
		var takes []server.Take
		for _, l := range sp.lanes {
			if t, ok := l.claim(); ok {
				lanes = append(lanes, l)
				takes = append(takes, t)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		go func() {
			defer cancel()
			e.exchange(ctx, sp, batch, lanes, takes, false, to)
		}()
	}
	if len(sp.reports) > 0 && sp.linger == nil {
		sp.linger = time.AfterFunc(reportLinger, func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			sp.linger = nil
			if !e.off {
				e.sendReports(sp, true)
			}
		})
	}
}

// exchange sends one exchange, to node to first when set, and hands out
// what it brought.
func (e *exchanger) exchange(ctx context.Context, sp *space, reports []*pendingReport, lanes []*lane, takes []server.Take, wait bool, to *node) {
	req := server.Exchange{Takes: takes, Wait: wait}
	for _, r := range reports {
		switch {
		case r.completeWT != nil:
			req.CompleteWorkflowTasks = append(req.CompleteWorkflowTasks, *r.completeWT)
		case r.failWT != nil:
			req.FailWorkflowTasks = append(req.FailWorkflowTasks, *r.failWT)
		case r.completeSt != nil:
			req.CompleteSteps = append(req.CompleteSteps, *r.completeSt)
		case r.failSt != nil:
			req.FailSteps = append(req.FailSteps, *r.failSt)
		}
	}
	var out server.ExchangeAnswer
	begun := time.Now()
	from, err := e.s.sendExchange(ctx, wait, sp.name, req, &out, to)
	if err != nil && ctx.Err() != nil && wait {
		err = nil // its polls left
	}
	if wait && err == nil && (len(out.Taken) == 0 || len(out.Taken[0].WorkflowTasks)+len(out.Taken[0].StepTasks) == 0) && time.Since(begun) < minWait {
		// A server that answered at once with nothing (it waits for tasks
		// only as long as its poll wait): the next wait is not sent at once.
		select {
		case <-ctx.Done():
		case <-time.After(minWait - time.Since(begun)):
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if errors.Is(err, api.ErrNotFound) && strings.Contains(err.Error(), "no route for") {
		// A server from before task exchanges: every call goes plain.
		e.off = true
		err = errNoExchange
	}
	if wait {
		lanes[0].waiting--
	} else {
		sp.reporting--
	}
	// The reports' outcomes, in the order they were sent.
	seen := map[string]int{}
	for _, r := range reports {
		var list []server.Outcome
		var kind string
		switch {
		case r.completeWT != nil:
			list, kind = out.CompleteWorkflowTasks, "cwt"
		case r.failWT != nil:
			list, kind = out.FailWorkflowTasks, "fwt"
		case r.completeSt != nil:
			list, kind = out.CompleteSteps, "cst"
		default:
			list, kind = out.FailSteps, "fst"
		}
		i := seen[kind]
		seen[kind]++
		switch {
		case err != nil:
			r.done <- reportResult{err: err}
		case i < len(list):
			r.done <- reportResult{out: list[i]}
		default:
			r.done <- reportResult{err: fmt.Errorf("remote: task exchange: no outcome for report %d", i)}
		}
	}
	// The tasks, to the polls waiting (first come, first served), or kept
	// for the next.
	for j, l := range lanes {
		l.covered = max(0, l.covered-int(takes[j].Max))
		var tasks []any
		if j < len(out.Taken) {
			for _, t := range out.Taken[j].WorkflowTasks {
				if t.Query == nil { // answered by AnswerQuery, plain
					e.tokens.add(t.Token, handedOut{sp.name, from})
				}
				tasks = append(tasks, t)
			}
			for _, t := range out.Taken[j].StepTasks {
				e.tokens.add(t.Token, handedOut{sp.name, from})
				tasks = append(tasks, t)
			}
		}
		for _, t := range tasks {
			if len(l.waiters) > 0 {
				l.waiters[0].ch <- taskOrErr{task: t}
				l.waiters = l.waiters[1:]
			} else {
				l.ready = append(l.ready, t)
			}
		}
		if err != nil && ctx.Err() == nil {
			// The polls learn of it (a worker backs off), and fall back
			// when the server has no exchanges.
			for _, w := range l.waiters {
				w.ch <- taskOrErr{err: err}
			}
			l.waiters = nil
			l.covered = 0
		}
	}
	if e.off {
		for _, sp := range e.spaces {
			for _, r := range sp.reports {
				r.done <- reportResult{err: errNoExchange}
			}
			sp.reports = nil
			for _, l := range sp.lanes {
				for _, w := range l.waiters {
					w.ch <- taskOrErr{err: errNoExchange}
				}
				l.waiters = nil
			}
		}
		return
	}
	e.kick(sp)
}
