package engine

import (
	"container/list"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/strandhq/strand/api"
)

// The matcher holds the task queues: per namespace, queue name and kind,
// the workers polling it and the tasks waiting for a worker, by priority.
// A task offered while a worker polls goes straight to it (sync match);
// otherwise it waits in the backlog, and its durable copy is the transfer
// task that produced it, which stays unacknowledged until the task is done.
type matcher struct {
	mu     sync.Mutex
	queues map[queueKey]*taskQueue
	// started is when the matcher began to watch polls: a queue not polled
	// since counts as last polled then.
	started time.Time
	// hold is how long a task stays for this node's workers, out of other
	// nodes' legs' reach, when a worker of its queue polled within hold
	// before it came (DefaultLegHold).
	hold time.Duration
}

// DefaultLegHold is how long a task is kept from other nodes' legs while
// this node's own workers are taking its queue's tasks: a worker that
// polled within it will most likely poll again within it (a busy worker
// sends its next exchange as soon as it answered the last; on a loaded
// machine that round trip takes some ms, tens at times), and a task it
// takes costs no hop, while one a leg takes costs a hop to the leg's node,
// another back for its completion, and there a worker that has no cached
// copy of the run. It is also the longest a task waits for a leg because
// of the hold, once this node's workers stop taking tasks.
const DefaultLegHold = 20 * time.Millisecond

// StickyHold is how long a workflow task waits for the worker that holds
// its run (api.PollRequest.Sticky) when that worker has no poll waiting:
// a busy worker polls again within it most of the time, and a task that
// goes to another worker costs that worker a replay of the run's history.
// After it, any worker may take the task.
const StickyHold = 50 * time.Millisecond

type queueKind int8

const (
	workflowQueue queueKind = 1
	stepQueue     queueKind = 2
)

// String names the kind as peering calls do.
func (k queueKind) String() string {
	if k == stepQueue {
		return api.QueueKindStep
	}
	return api.QueueKindWorkflow
}

type queueKey struct {
	ns, name string
	kind     queueKind
}

type taskQueue struct {
	pollers *list.List // of *poller, oldest first
	// backlog holds the waiting items (as *queued): queries in
	// backlog[queryLane], the others by priority (1, the highest, to 5).
	backlog [6]*list.List
	size    int
	// queryServed: the last item taken from the backlog was a query.
	queryServed bool
	// workers counts the pollers that are workers (the others are other
	// nodes' forwarded polls).
	workers int
	// lastPoll is when a poll (a worker's or another node's leg) last
	// began or ended here.
	lastPoll time.Time
	// workerPoll is when a worker's poll last began or ended here: a task
	// that comes within the matcher's hold of it is held for the workers.
	workerPoll time.Time
	// legTimer, while set, hands the held tasks that come due at legDue to
	// the legs that wait then.
	legTimer *time.Timer
	legDue   time.Time
	// seen are the workers that polled here lately, by identity.
	seen map[string]*pollerSeen
	// stickies are the backlog's workflow tasks for each sticky worker
	// (api.PollRequest.Sticky), oldest first: its polls take them first.
	stickies map[string]*list.List
	// syncMatched and backlogged count the tasks handed to a waiting
	// poller and those queued.
	syncMatched, backlogged int64
}

// queued is an item in a backlog. One that came while this node's
// workers were taking the queue's tasks is held for them until due: no
// other node's leg takes it before. A workflow task for the worker that
// holds its run is held for that worker until stickyDue: no other poll
// takes it before.
type queued struct {
	item      any
	due       time.Time // zero: not held
	sticky    string
	stickyDue time.Time
	// lane and elem place it in its backlog list; stickyElem in the list
	// of its sticky worker's items (taskQueue.stickies), when it has one.
	lane       *list.List
	elem       *list.Element
	stickyElem *list.Element
}

// poller is one waiting poll; it takes exactly one item.
type poller struct {
	ch     chan any
	elem   *list.Element
	worker bool // a worker here, not another node's forwarded poll
	// sticky is the worker's api.PollRequest.Sticky: the workflow tasks of
	// the runs it advanced last come to it first.
	sticky string
	// serves are the step names the poller runs (api.PollRequest.Steps);
	// nil: every task of the queue.
	serves map[string]bool
}

// takes reports whether the poller runs item: a step task only if it
// serves the step's name; anything else always.
func (p *poller) takes(item any) bool { return servesItem(p.serves, item) }

// servesItem reports whether a poller serving serves (nil: all) runs item.
func servesItem(serves map[string]bool, item any) bool {
	if serves == nil {
		return true
	}
	switch it := item.(type) {
	case *stepItem:
		return serves[it.name]
	case *api.StepTask:
		return serves[it.Name]
	}
	return true
}

// stickyOf is the sticky id of the worker that item should go to first
// ("" for any).
func stickyOf(item any) string {
	if o, ok := item.(*wtOffer); ok {
		return o.sticky
	}
	return ""
}

// servesOf is the set of a poll's step names, nil when it names none.
func servesOf(steps []string) map[string]bool {
	if len(steps) == 0 {
		return nil
	}
	out := make(map[string]bool, len(steps))
	for _, s := range steps {
		out[s] = true
	}
	return out
}

func newMatcher() *matcher {
	return &matcher{queues: map[queueKey]*taskQueue{}, started: time.Now(), hold: DefaultLegHold}
}

func (m *matcher) queue(k queueKey) *taskQueue {
	q := m.queues[k]
	if q == nil {
		q = &taskQueue{pollers: list.New()}
		for i := range q.backlog {
			q.backlog[i] = list.New()
		}
		m.queues[k] = q
	}
	return q
}

// queryLane is the backlog list of query tasks, apart from the priorities.
const queryLane = 0

func priorityIndex(p int8) int {
	if p <= 0 || p > api.PriorityLowest {
		return int(api.PriorityNormal)
	}
	return int(p)
}

// offer hands item to a waiting poller, or queues it by priority.
func (m *matcher) offer(k queueKey, priority int8, item any) {
	m.put(k, priorityIndex(priority), item)
}

// offerQuery hands a query task to a waiting poller, or queues it in the
// query lane.
func (m *matcher) offerQuery(k queueKey, item any) { m.put(k, queryLane, item) }

// unpolledFor returns how long queue k has gone without a poller: zero
// while one waits, else the time since the last poll began or ended (or
// since the matcher started, for a queue never polled).
func (m *matcher) unpolledFor(k queueKey) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := m.started
	if q := m.queues[k]; q != nil {
		if q.pollers.Len() > 0 {
			return 0
		}
		if q.lastPoll.After(last) {
			last = q.lastPoll
		}
	}
	return time.Since(last)
}

// matched sums the queues' counts of tasks handed to a waiting poller and
// of tasks queued (the queues are never dropped, so this is every task).
func (m *matcher) matched() (syncMatched, backlogged int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.queues {
		syncMatched += q.syncMatched
		backlogged += q.backlogged
	}
	return syncMatched, backlogged
}

// queries counts the query tasks waiting in the queues.
func (m *matcher) queries() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, q := range m.queues {
		n += q.backlog[queryLane].Len()
	}
	return n
}

func (m *matcher) put(k queueKey, lane int, item any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(k)
	now := time.Now()
	held := m.holding(q, now)
	if p := q.takePoller(item, stickyOf(item), !held); p != nil {
		q.syncMatched++
		p.ch <- item
		return
	}
	q.backlogged++
	q.link(lane, m.enqueue(k, q, item, held, now), false)
}

// holding reports whether an item that comes to q at now is held for this
// node's workers: one of them polled within the hold. The caller holds
// m.mu.
func (m *matcher) holding(q *taskQueue, now time.Time) bool {
	return !q.workerPoll.IsZero() && now.Sub(q.workerPoll) < m.hold
}

// enqueue wraps item for q's backlog, held from other nodes' legs until
// now plus the hold when held, and from other workers for StickyHold when
// it is a sticky worker's, and makes sure a poll waiting now gets it once
// it may. The caller holds m.mu.
func (m *matcher) enqueue(k queueKey, q *taskQueue, item any, held bool, now time.Time) *queued {
	it := &queued{item: item}
	if sticky := stickyOf(item); sticky != "" {
		// Its worker had no poll waiting (it would have taken it).
		it.sticky, it.stickyDue = sticky, now.Add(StickyHold)
	}
	if held {
		it.due = now.Add(m.hold)
	}
	// The polls waiting now that it is held from get it once they may
	// (the timer keeps the earliest; due sets it again for the others).
	for e := q.pollers.Front(); e != nil; e = e.Next() {
		if p := e.Value.(*poller); p.takes(item) {
			if until := it.heldFrom(p.worker, p.sticky, now); !until.IsZero() {
				m.wake(k, q, until)
			}
		}
	}
	return it
}

// wake sets q's timer to hand the items held until due to the legs then
// waiting, unless it goes off by then already. The caller holds m.mu.
func (m *matcher) wake(k queueKey, q *taskQueue, due time.Time) {
	if q.legTimer != nil && !q.legDue.After(due) {
		return
	}
	if q.legTimer != nil {
		q.legTimer.Stop()
	}
	q.legDue = due
	q.legTimer = time.AfterFunc(time.Until(due), func() { m.due(k) })
}

// due hands the held items of queue k that are due now to the polls that
// wait there (each the first item it takes, in the order a poll takes
// them), and sets the timer again for the next item a remaining poll would
// take.
func (m *matcher) due(k queueKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[k]
	q.legTimer = nil
	now := time.Now()
	var next time.Time
	for e := q.pollers.Front(); e != nil; {
		p := e.Value.(*poller)
		e = e.Next()
		item, held := q.take(p.serves, p.worker, p.sticky, now)
		if item == nil {
			if !held.IsZero() && (next.IsZero() || held.Before(next)) {
				next = held
			}
			continue
		}
		q.pollers.Remove(p.elem)
		p.elem = nil
		q.syncMatched++
		p.ch <- item
	}
	if !next.IsZero() {
		m.wake(k, q, next)
	}
}

// take removes and returns the next backlog item a poller serving serves
// (nil: all) runs, nil when there is none: the highest priority first,
// except that queries and the other tasks take turns while both wait, so a
// stream of queries cannot hold up the workflow tasks that move runs on,
// nor those the queries. Items the poller does not run stay, in order, for
// one that does. A poll that is not a worker's (another node's leg) passes
// over the items held for this node's workers until they are due, and any
// poll but the worker's with their sticky id (sticky) passes over the items
// held for that worker; when it gets none, held is when the first of those
// it passed over comes due (zero: none).
func (q *taskQueue) take(serves map[string]bool, worker bool, sticky string, now time.Time) (item any, held time.Time) {
	lanes := q.backlog[:]
	queries := q.backlog[queryLane]
	if queries.Len() > 0 && q.queryServed && queries.Len() < q.size {
		lanes = q.backlog[queryLane+1:]
	}
	// A worker's own workflow tasks (those of the runs it holds) first,
	// unless it is the queries' turn.
	if own := q.stickies[sticky]; worker && own != nil && (queries.Len() == 0 || q.queryServed) {
		for e := own.Front(); e != nil; e = e.Next() {
			if it := e.Value.(*queued); servesItem(serves, it.item) {
				q.unlink(it)
				q.queryServed = false
				return it.item, time.Time{}
			}
		}
	}
	for _, l := range lanes {
		for e := l.Front(); e != nil; e = e.Next() {
			it := e.Value.(*queued)
			if !servesItem(serves, it.item) {
				continue
			}
			if until := it.heldFrom(worker, sticky, now); !until.IsZero() {
				if held.IsZero() || until.Before(held) {
					held = until
				}
				continue
			}
			q.unlink(it)
			q.queryServed = l == q.backlog[queryLane]
			return it.item, time.Time{}
		}
	}
	return nil, held
}

// link puts it into the backlog list of lane, at the front or the back,
// and into its sticky worker's list.
func (q *taskQueue) link(lane int, it *queued, front bool) {
	l := q.backlog[lane]
	if front {
		it.elem = l.PushFront(it)
	} else {
		it.elem = l.PushBack(it)
	}
	it.lane = l
	q.size++
	if it.sticky == "" {
		return
	}
	if q.stickies == nil {
		q.stickies = map[string]*list.List{}
	}
	own := q.stickies[it.sticky]
	if own == nil {
		own = list.New()
		q.stickies[it.sticky] = own
	}
	if front {
		it.stickyElem = own.PushFront(it)
	} else {
		it.stickyElem = own.PushBack(it)
	}
}

// unlink takes it out of the backlog.
func (q *taskQueue) unlink(it *queued) {
	it.lane.Remove(it.elem)
	q.size--
	if it.stickyElem != nil {
		own := q.stickies[it.sticky]
		own.Remove(it.stickyElem)
		if own.Len() == 0 {
			delete(q.stickies, it.sticky)
		}
		it.stickyElem = nil
	}
}

// heldFrom returns until when the item is held from a poll (a worker's or
// a leg's, with sticky id sticky), zero when that poll may take it now.
func (it *queued) heldFrom(worker bool, sticky string, now time.Time) time.Time {
	var until time.Time
	if !worker && it.due.After(now) {
		until = it.due
	}
	if it.sticky != "" && (!worker || it.sticky != sticky) && it.stickyDue.After(now) {
		until = later(until, it.stickyDue)
	}
	return until
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// takeWaitingPoller removes and returns a poller that is waiting now (with
// sticky set, the worker's that polls with it), or nil: the engine hands it
// a workflow task directly.
func (m *matcher) takeWaitingPoller(k queueKey, sticky string) *poller {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[k]; q != nil {
		if p := q.takePoller(nil, sticky, !m.holding(q, time.Now())); p != nil {
			q.syncMatched++
			return p
		}
	}
	return nil
}

// takePoller removes and returns a waiting poller that runs item (any
// poller for nil), or nil; another node's leg only with legs set. With
// sticky set, only a worker polling with that sticky id (it holds the
// run) is taken.
func (q *taskQueue) takePoller(item any, sticky string, legs bool) *poller {
	// A worker of this node first: a task handed to another node's
	// forwarded poll costs a hop there and another back for its completion.
	var e *list.Element
	for w := q.pollers.Front(); w != nil; w = w.Next() {
		p := w.Value.(*poller)
		if item != nil && !p.takes(item) || !p.worker && !legs {
			continue
		}
		if sticky != "" {
			if p.worker && p.sticky == sticky {
				e = w
				break
			}
			continue
		}
		if e == nil {
			e = w
		}
		if p.worker || q.workers == 0 {
			e = w
			break
		}
	}
	if e != nil {
		q.pollers.Remove(e)
		p := e.Value.(*poller)
		p.elem = nil
		return p
	}
	return nil
}

// poll returns the next item of the queue, waiting until one comes or ctx
// ends (nil). An item that arrives as ctx ends is handed to giveBack. A
// worker's poll (worker set, by the worker identity) calls waiting once
// it waits.
func (m *matcher) poll(ctx context.Context, k queueKey, worker bool, identity string, waiting func(), giveBack func(any)) any {
	return m.pollFor(ctx, k, worker, identity, "", nil, true, waiting, giveBack)
}

// pollFor is poll by a poller that runs only the step tasks named in
// serves (nil: every task); the others wait for a poller that runs them.
// sticky is a worker's api.PollRequest.Sticky. Without wait it returns nil
// at once when no item is ready.
func (m *matcher) pollFor(ctx context.Context, k queueKey, worker bool, identity, sticky string, serves map[string]bool, wait bool, waiting func(), giveBack func(any)) any {
	m.mu.Lock()
	q := m.queue(k)
	q.lastPoll = time.Now()
	if worker {
		q.workerPoll = q.lastPoll
		q.see(identity, q.lastPoll, 0)
	}
	item, held := q.take(serves, worker, sticky, q.lastPoll)
	if item != nil || !wait {
		m.mu.Unlock()
		return item
	}
	p := &poller{ch: make(chan any, 1), worker: worker, serves: serves, sticky: sticky}
	p.elem = q.pollers.PushBack(p)
	if worker {
		q.workers++
		q.see(identity, q.lastPoll, 1)
	}
	if !held.IsZero() {
		m.wake(k, q, held) // the items held from it come due
	}
	defer func() {
		m.mu.Lock()
		q.lastPoll = time.Now()
		if worker {
			q.workerPoll = q.lastPoll
			q.workers--
			q.see(identity, q.lastPoll, -1)
		}
		m.mu.Unlock()
	}()
	m.mu.Unlock()
	if worker && waiting != nil {
		waiting()
	}
	select {
	case item := <-p.ch:
		return item
	case <-ctx.Done():
	}
	m.mu.Lock()
	stillWaiting := p.elem != nil
	if stillWaiting {
		q.pollers.Remove(p.elem)
	}
	m.mu.Unlock()
	if !stillWaiting {
		// Someone took this poller and handed it an item (or is about to).
		giveBack(<-p.ch)
	}
	return nil
}

// pollQueue is the queue a poll names, in a namespace that exists.
func (e *Engine) pollQueue(ctx context.Context, req api.PollRequest, kind queueKind) (queueKey, error) {
	ns := nsOrDefault(req.Namespace)
	if _, err := e.namespace(ctx, ns); err != nil {
		return queueKey{}, err
	}
	return queueKey{ns: ns, name: queueOrDefault(req.Queue), kind: kind}, nil
}

// next waits for the next item of queue k (nil when ctx ends) that a
// poller serving serves (nil: all) runs; an item handed over as ctx ended
// goes back to the front of the queue. While a worker waits, legs bring it
// other nodes' tasks.
func (e *Engine) next(ctx context.Context, k queueKey, worker bool, identity, sticky string, serves map[string]bool, wait bool) any {
	ctx, cancel := context.WithCancel(ctx) // polls end when the engine closes
	defer cancel()
	defer context.AfterFunc(e.ctx, cancel)()
	return e.match.pollFor(ctx, k, worker, identity, sticky, serves, wait, func() { e.wantLegs(k) }, func(item any) { e.match.requeue(k, api.PriorityHighest, item) })
}

// served returns the step names the workers waiting on queue k run, for
// the legs that poll other nodes for them: nil when one of them runs every
// step (or none waits).
func (m *matcher) served(k queueKey) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[k]
	if q == nil {
		return nil
	}
	names := map[string]bool{}
	for e := q.pollers.Front(); e != nil; e = e.Next() {
		p := e.Value.(*poller)
		if !p.worker {
			continue
		}
		if p.serves == nil {
			return nil
		}
		for n := range p.serves {
			names[n] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(names))
}

// runsItem reports whether a worker waiting on queue k runs item.
func (m *matcher) runsItem(k queueKey, item any) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[k]; q != nil {
		for e := q.pollers.Front(); e != nil; e = e.Next() {
			if p := e.Value.(*poller); p.worker && p.takes(item) {
				return true
			}
		}
	}
	return false
}

// workersWaiting returns how many workers wait on queue k now.
func (m *matcher) workersWaiting(k queueKey) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[k]; q != nil {
		return q.workers
	}
	return 0
}

// requeue puts an item back at the front of its priority level (a query
// of this node at the front of the query lane).
func (m *matcher) requeue(k queueKey, priority int8, item any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(k)
	now := time.Now()
	held := m.holding(q, now)
	if p := q.takePoller(item, stickyOf(item), !held); p != nil {
		p.ch <- item
		return
	}
	lane := priorityIndex(priority)
	if _, ok := item.(*pendingQuery); ok {
		lane = queryLane
	}
	q.link(lane, m.enqueue(k, q, item, held, now), true)
}

// remove takes item out of queue k's backlog; false when it is not there
// (a worker took it).
func (m *matcher) remove(k queueKey, item any) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[k]
	if q == nil {
		return false
	}
	for _, l := range q.backlog {
		for el := l.Front(); el != nil; el = el.Next() {
			if it := el.Value.(*queued); it.item == item {
				q.unlink(it)
				return true
			}
		}
	}
	return false
}

// takeStarted removes and returns the waiting items that were started
// already (tasks another node started for this one's workers).
func (m *matcher) takeStarted() []any {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []any
	for _, q := range m.queues {
		for _, l := range q.backlog {
			for el := l.Front(); el != nil; {
				next := el.Next()
				switch it := el.Value.(*queued); it.item.(type) {
				case *api.StepTask, *api.WorkflowTask:
					out = append(out, it.item)
					q.unlink(it)
				}
				el = next
			}
		}
	}
	return out
}

// depth returns the backlog size of a queue.
func (m *matcher) depth(k queueKey) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[k]; q != nil {
		return q.size
	}
	return 0
}
