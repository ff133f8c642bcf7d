package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// A shard is the unit of ownership: its owner holds its runs in memory,
// allocates its task ids, commits its transitions (grouped) and processes
// its transfer and timer queues.
type shard struct {
	e   *Engine
	id  int32
	log *slog.Logger

	mu          sync.Mutex
	rangeID     int64
	nextTaskID  int64
	taskIDLimit int64
	lost        bool
	// takenFrom is the node that held the shard before and did not hand it
	// over (it died, or was cut off): its runs with work in flight get a
	// recovery event.
	takenFrom string
	// restarted: takenFrom is this node itself, an earlier life of it
	// (same identity, or the same host and address), so what it recovers
	// is counted and logged but written into no run's history.
	restarted bool
	// firstTaskID is the first task id of this ownership: a task below it
	// was written by an earlier owner (or an earlier life of this node).
	firstTaskID int64
	// runs is the run cache (cache.go): lru its unpinned runs, parked the
	// queued tasks' keys of runs it let go of, cacheBytes what it holds
	// (cacheGone: no longer counted in the engine's total, the shard has
	// stopped), current which cached runs are their workflows' current
	// runs, and waiters the callers waiting for runs.
	runs        map[store.RunKey]*run
	lru         runList
	parked      map[store.RunKey]parkedTasks
	current     map[workflowKey]*run
	cacheBytes  int64
	cacheGone   bool
	waiters     map[store.RunKey][]chan struct{}
	transferAck *ackTracker
	timerAck    *ackTracker
	// queuedTimers counts, by fire time (Unix ms), the durable timers of
	// parts sent to the committer that have no task id (and so no key in
	// timerAck) yet: the timer ack level stays below them. A timer's fire
	// time is set when its transition is built, and a loaded committer
	// may take longer than the timer's delay to reach it; the level, kept
	// only below the keys in timerAck and below now, then passed it, and a
	// new owner reading from the level never saw it.
	queuedTimers map[int64]int
	// persisted ack levels
	ackLevels store.AckLevels
	// timers are the durable timers before timerHorizon; the later ones
	// wait in the store until extendTimers reads them.
	timers       timerHeap
	timerHorizon store.TaskKey
	purge        purgeState
	// recovered are the transfer tasks recover read, until run dispatches them.
	recovered      []store.Task
	commits        int64
	partsCommitted int64

	commitCh chan *part
	// committerDone closes when the commit loop has returned: a part sent
	// after its last drain of commitCh is answered by no one.
	committerDone chan struct{}
	timerWake     chan struct{}
	// extend asks the committer to move the timer horizon on.
	extend chan struct{}
	work   workQueue
	vis    visibilityQueue
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// stopped is closed when the shard's goroutines have ended: nothing of
	// it commits any more.
	stopped chan struct{}
}

func newShard(e *Engine, id int32) *shard {
	s := &shard{
		e: e, id: id, log: e.log.With("shard", id),
		runs:          map[store.RunKey]*run{},
		parked:        map[store.RunKey]parkedTasks{},
		current:       map[workflowKey]*run{},
		waiters:       map[store.RunKey][]chan struct{}{},
		queuedTimers:  map[int64]int{},
		commitCh:      make(chan *part, 4096),
		committerDone: make(chan struct{}),
		timerWake:     make(chan struct{}, 1),
		extend:        make(chan struct{}, 1),
		stopped:       make(chan struct{}),
	}
	s.work.signal = make(chan struct{}, 1)
	s.vis.init()
	return s
}

// acquire takes the shard by raising its range_id and loads its ack levels.
// With prevRange set it succeeds only while the shard is still at that
// range_id.
func (s *shard) acquire(ctx context.Context, prevRange int64) error {
	sh, err := s.e.store.AcquireShard(ctx, store.AcquireShardRequest{ShardID: s.id, Owner: s.e.opts.Identity, PrevRangeID: prevRange})
	if err != nil {
		return fmt.Errorf("engine: acquire shard %d: %w", s.id, err)
	}
	s.mu.Lock()
	s.rangeID = sh.RangeID
	s.nextTaskID, s.taskIDLimit = sh.TaskIDBlock()
	s.firstTaskID = s.nextTaskID
	s.ackLevels = sh.AckLevels
	s.transferAck = newAckTracker(store.TaskKey{TaskID: sh.AckLevels.Transfer - 1})
	s.timerAck = newAckTracker(sh.AckLevels.Timer)
	s.mu.Unlock()
	s.log.Debug("shard acquired", "range_id", sh.RangeID, "ack_levels", sh.AckLevels)
	return s.recover(ctx, sh.AckLevels)
}

// run starts the shard's goroutines, recovers its queues and blocks until
// ctx ends.
func (s *shard) run() {
	ctx := s.ctx
	s.wg.Go(func() { s.commitLoop(ctx) })
	for range transferWorkers {
		s.wg.Go(func() { s.work.serve(ctx) })
	}
	s.wg.Go(func() { s.visibilityLoop(ctx) })
	if s.takenFrom != "" {
		recovered := s.recovered
		s.wg.Go(func() { s.recordRecovery(ctx, recovered) })
	}
	for _, t := range s.recovered {
		s.dispatch(t, true)
	}
	s.recovered = nil
	s.wakeTimers()
	s.wg.Go(func() { s.timerLoop(ctx) })
	s.wg.Go(func() { s.ackLoop(ctx) })
	s.wg.Go(func() { s.purgeLoop(ctx) })
	<-ctx.Done()
	s.wg.Wait()
	s.dropCache()
	close(s.stopped)
}

func (s *shard) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

func (s *shard) markLost() {
	s.mu.Lock()
	s.lost = true
	s.mu.Unlock()
	s.e.wakeController()
}

// fenced records that another node took the shard (err says so) and
// returns the error its callers get: nothing was written, try the owner.
func (s *shard) fenced(err error) error {
	s.markLost()
	return fmt.Errorf("%w: %v", errNotOwner, err)
}

func (s *shard) isLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// recover re-reads the transfer queue and the timer queue from their ack
// levels: what was written but not processed before the shard changed
// hands. It registers every task with the ack trackers before anything new
// is written, so the levels never pass a recovered task; run dispatches
// the transfer tasks.
func (s *shard) recover(ctx context.Context, levels store.AckLevels) error {
	var token []byte
	for {
		page, err := s.e.store.ReadTasks(ctx, store.ReadTasksRequest{ShardID: s.id, PageSize: 1000, PageToken: token,
			Range: store.TaskRange{Category: store.CategoryTransfer, Min: store.TaskKey{TaskID: levels.Transfer}}})
		if err != nil {
			return fmt.Errorf("read transfer tasks: %w", err)
		}
		s.mu.Lock()
		for _, t := range page.Tasks {
			s.transferAck.add(t.Key)
		}
		s.mu.Unlock()
		s.recovered = append(s.recovered, page.Tasks...)
		if token = page.NextPageToken; len(token) == 0 {
			break
		}
	}
	horizon := s.windowEnd()
	token = nil
	for {
		page, err := s.e.store.ReadTasks(ctx, store.ReadTasksRequest{ShardID: s.id, PageSize: 1000, PageToken: token,
			Range: store.TaskRange{Category: store.CategoryTimer, Min: levels.Timer, Max: horizon}})
		if err != nil {
			return fmt.Errorf("read timer tasks: %w", err)
		}
		s.loadTimers(page.Tasks)
		if token = page.NextPageToken; len(token) == 0 {
			break
		}
	}
	s.mu.Lock()
	s.timerHorizon = horizon
	s.mu.Unlock()
	return nil
}

// windowEnd is the timer horizon the window asks for now.
func (s *shard) windowEnd() store.TaskKey {
	return store.TaskKey{FireTime: store.FromUnixMilli(store.UnixMilli(time.Now().Add(s.e.opts.TimerWindow)))}
}

// loadTimers puts timer tasks read from the store into the heap.
func (s *shard) loadTimers(tasks []store.Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tasks {
		d, err := decodeTaskData(t.Data)
		if err != nil {
			s.log.Error("drop undecodable timer task", "key", t.Key, "err", err)
			continue
		}
		s.timerAck.add(t.Key)
		heap.Push(&s.timers, &timerEntry{key: t.Key, typ: t.Type, run: t.Run, data: d})
	}
}

// extendTimers reads the next page of durable timers past the horizon
// into the heap and moves the horizon past them. It runs on the committer
// between batches, so no commit is under way: a timer committed before it
// is in the store for the read, and one committed after it meets the new
// horizon in addTimers. Nothing is read twice or missed.
func (s *shard) extendTimers(ctx context.Context) {
	s.mu.Lock()
	from := s.timerHorizon
	s.mu.Unlock()
	to := s.windowEnd()
	if !from.Less(to) {
		return
	}
	page, err := s.e.store.ReadTasks(ctx, store.ReadTasksRequest{ShardID: s.id, PageSize: 1000,
		Range: store.TaskRange{Category: store.CategoryTimer, Min: from, Max: to}})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("read the next timers; trying again", "err", err)
		}
		return // the timer loop asks again
	}
	if len(page.NextPageToken) > 0 && len(page.Tasks) > 0 {
		last := page.Tasks[len(page.Tasks)-1].Key
		to = store.TaskKey{FireTime: last.FireTime, TaskID: last.TaskID + 1}
		s.askExtend() // more to read
	}
	s.loadTimers(page.Tasks)
	s.mu.Lock()
	s.timerHorizon = to
	s.mu.Unlock()
	s.wakeTimers()
}

func (s *shard) askExtend() {
	select {
	case s.extend <- struct{}{}:
	default:
	}
}

// ---- group commit ----

// part is one transition's share of a batch.
type part struct {
	runs  []store.RunWrite
	tasks []*store.Task // ids are assigned by the committer
	// stepData is the data of the step tasks among tasks as it was before
	// encoding, so that offering them after the commit decodes nothing.
	stepData   []stepTaskData
	requests   []store.Request
	docs       []store.Document
	deleteRuns []store.RunKey
	done       chan error
}

// stepTaskData is a step task's data, kept beside its encoding.
type stepTaskData struct {
	task *store.Task
	data *taskData
}

// commit submits p and waits for its outcome.
func (s *shard) commit(ctx context.Context, p *part) error {
	p.done = make(chan error, 1)
	s.queueTimers(p, 1)
	select {
	case s.commitCh <- p:
	case <-s.ctxDone():
		s.queueTimers(p, -1)
		return fmt.Errorf("%w: shard %d is stopping", errNotOwner, s.id)
	case <-ctx.Done():
		s.queueTimers(p, -1)
		return ctx.Err()
	}
	// Once submitted, the outcome is awaited regardless of ctx: the caller
	// holds the run and must know what was written. A part that went into
	// the channel as the shard stopped (the select took the send though
	// the shard's context was done) after the committer's last drain is
	// answered by no one: it was not written.
	select {
	case err := <-p.done:
		return err
	case <-s.committerDone:
		select {
		case err := <-p.done:
			return err
		default:
			return fmt.Errorf("%w: shard %d is stopping", errNotOwner, s.id)
		}
	}
}

// queueTimers counts p's durable timers into queuedTimers (by +1) or out
// of it (by -1).
func (s *shard) queueTimers(p *part, by int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queueTimersLocked(p, by)
}

func (s *shard) queueTimersLocked(p *part, by int) {
	for _, t := range p.tasks {
		if t.Category != store.CategoryTimer || t.Partition != "" { // retention timers: purge.go
			continue
		}
		ms := store.UnixMilli(t.Key.FireTime)
		if s.queuedTimers[ms] += by; s.queuedTimers[ms] <= 0 {
			delete(s.queuedTimers, ms)
		}
	}
}

func (s *shard) ctxDone() <-chan struct{} {
	if s.ctx == nil {
		return nil
	}
	return s.ctx.Done()
}

func (s *shard) commitLoop(ctx context.Context) {
	defer close(s.committerDone)
	for {
		var first *part
		select {
		case first = <-s.commitCh:
		case <-s.extend:
			s.extendTimers(ctx)
			continue
		case <-ctx.Done():
			s.failQueued(ctx)
			return
		}
		parts := []*part{first}
		n := len(first.runs)
	drain:
		for n < s.e.opts.MaxBatchRuns {
			select {
			case p := <-s.commitCh:
				parts = append(parts, p)
				n += len(p.runs)
			default:
				break drain
			}
		}
		// A commit begun is finished even if the shard stops meanwhile, so
		// that its callers learn what was written.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		s.commitParts(cctx, parts)
		cancel()
	}
}

func (s *shard) failQueued(ctx context.Context) {
	for {
		select {
		case p := <-s.commitCh:
			p.done <- fmt.Errorf("%w: shard %d is stopping", errNotOwner, s.id)
		default:
			return
		}
	}
}

// commitParts commits parts as one batch; when a run's condition fails,
// the others are retried alone so that one run's conflict does not fail
// its neighbours.
func (s *shard) commitParts(ctx context.Context, parts []*part) {
	if s.isLost() {
		for _, p := range parts {
			s.queueTimers(p, -1)
			p.done <- fmt.Errorf("%w: shard %d is not owned", errNotOwner, s.id)
		}
		return
	}
	if err := s.assignIDs(ctx, parts); err != nil {
		for _, p := range parts {
			s.queueTimers(p, -1)
			p.done <- err
		}
		return
	}
	b := s.batch(parts)
	if len(b.Runs) == 0 && len(b.Tasks) == 0 && len(b.Requests) == 0 && len(b.Documents) == 0 &&
		len(b.DeleteRuns) == 0 && b.AckLevels == nil {
		for _, p := range parts {
			p.done <- nil
		}
		return
	}
	begun := time.Now()
	err := s.e.store.Commit(ctx, b)
	s.e.metrics.observeCommit(begun, len(b.Runs))
	s.mu.Lock()
	s.commits++
	s.partsCommitted += int64(len(parts))
	s.mu.Unlock()
	s.e.runsCommitted.Add(int64(len(b.Runs))) // live work the purge yields to
	if err == nil {
		if b.AckLevels != nil {
			s.mu.Lock()
			s.ackLevels = *b.AckLevels
			s.mu.Unlock()
		}
		for _, p := range parts {
			s.addTimers(p.tasks)
			p.done <- nil
		}
		return
	}
	if errors.Is(err, store.ErrShardOwnershipLost) {
		s.log.Error("shard ownership lost; the shard stops", "err", err)
		err = s.fenced(err)
		for _, p := range parts {
			p.done <- err
		}
		return
	}
	if len(parts) == 1 || errors.Is(err, store.ErrOutcomeUnknown) || ctx.Err() != nil {
		for _, p := range parts {
			s.settle(p, err)
			p.done <- err
		}
		return
	}
	for _, p := range parts {
		one := s.batch([]*part{p})
		one.AckLevels, one.CompleteTasks = nil, nil
		err := s.e.store.Commit(ctx, one)
		if errors.Is(err, store.ErrShardOwnershipLost) {
			s.abandonKeys(p)
			p.done <- s.fenced(err)
			continue
		}
		if err != nil {
			s.settle(p, err)
		} else {
			s.addTimers(p.tasks)
		}
		p.done <- err
	}
}

// settle releases the ack keys of a part that failed. When the outcome is
// unknown its tasks are processed as if recovered: if the write landed they
// are real; if not, the state of their runs (reloaded) makes them stale and
// they are acknowledged. Either way the ack levels keep moving.
func (s *shard) settle(p *part, err error) {
	if !errors.Is(err, store.ErrOutcomeUnknown) {
		s.abandonKeys(p)
		return
	}
	var timers []*store.Task
	for _, t := range p.tasks {
		if t.Category == store.CategoryTransfer {
			s.dispatchTransfer(*t)
		} else {
			timers = append(timers, t)
		}
	}
	s.addTimers(timers)
}

// abandonKeys releases the ack keys of a part that was not written.
func (s *shard) abandonKeys(p *part) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range p.tasks {
		if t.Category == store.CategoryTransfer {
			s.transferAck.finish(t.Key)
		} else {
			s.timerAck.finish(t.Key)
		}
	}
}

// assignIDs gives every task and history block of parts a task id of the
// shard's current block, renewing the block when it runs out, and registers
// the keys with the ack trackers before anything is written.
func (s *shard) assignIDs(ctx context.Context, parts []*part) error {
	need := int64(0)
	for _, p := range parts {
		need += int64(len(p.tasks) + len(p.runs))
	}
	s.mu.Lock()
	enough := s.nextTaskID+need <= s.taskIDLimit
	rangeID := s.rangeID
	s.mu.Unlock()
	if !enough {
		sh, err := s.e.store.AcquireShard(ctx, store.AcquireShardRequest{ShardID: s.id, Owner: s.e.opts.Identity, PrevRangeID: rangeID})
		if err != nil {
			if errors.Is(err, store.ErrShardOwnershipLost) {
				return s.fenced(err)
			}
			return fmt.Errorf("%w: renew task ids of shard %d: %v", errNotOwner, s.id, err)
		}
		s.mu.Lock()
		s.rangeID = sh.RangeID
		s.nextTaskID, s.taskIDLimit = sh.TaskIDBlock()
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		s.queueTimersLocked(p, -1) // their keys go into timerAck here
		for _, t := range p.tasks {
			t.Key.TaskID = s.nextTaskID
			s.nextTaskID++
			if t.Category == store.CategoryTransfer {
				s.transferAck.add(t.Key)
			} else if t.Partition == "" { // the retention queue's level is the purge's
				s.timerAck.add(t.Key)
			}
		}
		for i := range p.runs {
			for j := range p.runs[i].History {
				p.runs[i].History[j].TxnID = s.nextTaskID
			}
			s.nextTaskID++
		}
	}
	return nil
}

// batch assembles parts into one store batch, with the ack levels when
// they moved.
func (s *shard) batch(parts []*part) *store.Batch {
	s.mu.Lock()
	b := &store.Batch{ShardID: s.id, RangeID: s.rangeID}
	s.mu.Unlock()
	for _, p := range parts {
		b.Runs = append(b.Runs, p.runs...)
		for _, t := range p.tasks {
			b.Tasks = append(b.Tasks, *t)
		}
		b.Requests = append(b.Requests, p.requests...)
		b.Documents = append(b.Documents, p.docs...)
		b.DeleteRuns = append(b.DeleteRuns, p.deleteRuns...)
	}
	s.addAckLevels(b)
	return b
}

// addAckLevels puts the ack levels (and the deletion of what is below them)
// into b when they moved.
func (s *shard) addAckLevels(b *store.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tl := s.transferAck.level()
	ml := s.timerAck.level()
	// The timer level never passes now (tasks written later may fire
	// earlier than pending ones but never before now), nor the horizon
	// (the timers past it are in the store only), nor a timer still
	// waiting for the committer (its fire time may be past already).
	if now := store.Now(); now.Before(ml.FireTime) {
		ml = store.TaskKey{FireTime: now}
	}
	if s.timerHorizon.Less(ml) {
		ml = s.timerHorizon
	}
	for ms := range s.queuedTimers {
		if k := (store.TaskKey{FireTime: store.FromUnixMilli(ms)}); k.Less(ml) {
			ml = k
		}
	}
	levels := s.ackLevels
	moved := false
	if tl.TaskID > levels.Transfer {
		b.CompleteTasks = append(b.CompleteTasks, store.TaskRange{Category: store.CategoryTransfer,
			Min: store.TaskKey{TaskID: levels.Transfer}, Max: store.TaskKey{TaskID: tl.TaskID}})
		levels.Transfer = tl.TaskID
		moved = true
	}
	if levels.Timer.Less(ml) {
		b.CompleteTasks = append(b.CompleteTasks, store.TaskRange{Category: store.CategoryTimer, Min: levels.Timer, Max: ml})
		levels.Timer = ml
		moved = true
	}
	if s.retentionAckLocked(b, &levels) {
		moved = true
	}
	if moved {
		b.AckLevels = &levels
	}
}

// ackLoop persists ack levels while the shard is idle (busy shards carry
// them in their batches).
func (s *shard) ackLoop(ctx context.Context) {
	every(ctx, time.Second, nil, func() {
		if s.isLost() {
			return
		}
		// An empty part: the committer adds the ack levels when they moved
		// and writes nothing when they did not.
		if err := s.commit(ctx, &part{}); err != nil && ctx.Err() == nil {
			s.log.Warn("persist ack levels", "err", err)
		}
	})
}

// every calls f every d, and at once when wake fires, until ctx ends.
func every(ctx context.Context, d time.Duration, wake <-chan struct{}, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		f()
	}
}

func (s *shard) ackTransfer(k store.TaskKey) {
	if k.TaskID == 0 {
		return
	}
	s.mu.Lock()
	s.transferAck.finish(k)
	s.mu.Unlock()
}

// ---- work ----

// transferWorkers is the size of a shard's work pool. Much of its work (a
// child's start, a parent's notice, a timer's firing) waits for its group
// commit, so the pool bounds the transitions in flight: at 8, a tree of
// child workflows (bench shape b) had 4.6 runs a commit and ran 1,537
// workflows/s on SQLite; at 64, 29.6 and 2,741; at 256, 1,976.
const transferWorkers = 64

// workQueue runs the shard's asynchronous work (transfer and timer task
// processing) on a fixed pool of transferWorkers; push never blocks.
type workQueue struct {
	mu     sync.Mutex
	items  []func(context.Context)
	signal chan struct{}
}

func (q *workQueue) push(f func(context.Context)) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *workQueue) serve(ctx context.Context) {
	for {
		q.mu.Lock()
		var f func(context.Context)
		if len(q.items) > 0 {
			f = q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
		}
		more := len(q.items) > 0
		q.mu.Unlock()
		if more {
			select {
			case q.signal <- struct{}{}:
			default:
			}
		}
		if f != nil {
			f(ctx)
			continue
		}
		select {
		case <-q.signal:
		case <-ctx.Done():
			return
		}
	}
}

// ---- timers ----

func (s *shard) wakeTimers() {
	select {
	case s.timerWake <- struct{}{}:
	default:
	}
}

// addTimers puts committed timer tasks before the horizon into the heap;
// those past it are left to the store (their ack keys are done here; the
// timer ack level never passes the horizon) until extendTimers reads them.
// Only the committer calls it.
func (s *shard) addTimers(tasks []*store.Task) {
	added := false
	s.mu.Lock()
	for _, t := range tasks {
		if t.Category != store.CategoryTimer || t.Partition != "" { // retention timers: purge.go
			continue
		}
		if !t.Key.Less(s.timerHorizon) {
			s.timerAck.finish(t.Key)
			continue
		}
		d, err := decodeTaskData(t.Data)
		if err != nil {
			s.log.Error("drop undecodable timer task", "key", t.Key, "err", err)
			s.timerAck.finish(t.Key)
			continue
		}
		heap.Push(&s.timers, &timerEntry{key: t.Key, typ: t.Type, run: t.Run, data: d})
		added = true
	}
	s.mu.Unlock()
	if added {
		s.wakeTimers()
	}
}

func (s *shard) timerLoop(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		var due []*timerEntry
		next := time.Hour
		s.mu.Lock()
		for len(s.timers) > 0 {
			top := s.timers[0]
			if d := top.key.FireTime.Sub(now); d > 0 {
				next = min(d, next)
				break
			}
			heap.Pop(&s.timers)
			due = append(due, top)
		}
		// The horizon moves on when half the window has passed; until the
		// committer has moved it, look again every second.
		extendIn := s.timerHorizon.FireTime.Sub(now) - s.e.opts.TimerWindow/2
		s.mu.Unlock()
		if extendIn <= 0 {
			s.askExtend()
			extendIn = time.Second
		}
		next = min(next, extendIn)
		for _, te := range due {
			s.work.push(func(ctx context.Context) { s.fireTimer(ctx, te) })
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.timerWake:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
	}
}

func (s *shard) ackTimer(k store.TaskKey) {
	s.mu.Lock()
	s.timerAck.finish(k)
	s.mu.Unlock()
}

// afterFunc runs f on the work pool after d, unless the shard stops first:
// the in-memory timers (step start-to-close and heartbeat, workflow task
// timeouts) that a new owner re-creates from the durable queues.
func (s *shard) afterFunc(d time.Duration, f func(ctx context.Context)) *time.Timer {
	return time.AfterFunc(d, func() {
		if s.ctx.Err() == nil {
			s.work.push(f)
		}
	})
}

// ---- runs ----

// withRun locks the run of k (loading it) and calls f; ErrNotFound when it
// does not exist.
func (s *shard) withRun(ctx context.Context, k store.RunKey, f func(r *run) error) error {
	r := s.getRun(k)
	defer s.release(r)
	if err := r.lock(ctx); err != nil {
		return err
	}
	defer r.unlock()
	if err := r.load(ctx); err != nil {
		return err
	}
	return f(r)
}

// withCommittedRun is withRun for a read that sees committed state only: a
// run whose start is not committed yet (its inputs handed eagerly to a
// worker) is not found.
func (s *shard) withCommittedRun(ctx context.Context, k store.RunKey, f func(r *run) error) error {
	return s.withRun(ctx, k, func(r *run) error {
		if r.exec == nil {
			return fmt.Errorf("%w: run %s", api.ErrNotFound, r.key)
		}
		return f(r)
	})
}

// currentRunID resolves an empty run id to the workflow's current run:
// from the cache when the current run is cached, else from the store.
func (s *shard) currentRunID(ctx context.Context, ref api.RunRef) (store.RunKey, error) {
	if ref.RunID == "" {
		ref.RunID = s.cachedCurrent(workflowKey{nsOrDefault(ref.Namespace), ref.WorkflowID})
	}
	return s.e.currentRunID(ctx, s.id, ref)
}

// currentRunID resolves an empty run id from the store (any node may).
func (e *Engine) currentRunID(ctx context.Context, shardID int32, ref api.RunRef) (store.RunKey, error) {
	k := store.RunKey{Namespace: nsOrDefault(ref.Namespace), WorkflowID: ref.WorkflowID, RunID: ref.RunID}
	check := k
	if check.RunID == "" {
		check.RunID = "-"
	}
	if err := check.Validate("run"); err != nil {
		return k, err // an id too long or with a NUL names no run
	}
	if k.RunID != "" {
		return k, nil
	}
	cur, err := e.store.GetCurrentExecution(ctx, shardID, k.Namespace, k.WorkflowID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return k, fmt.Errorf("%w: workflow %s in namespace %s", api.ErrNotFound, k.WorkflowID, k.Namespace)
		}
		return k, err
	}
	k.RunID = cur.RunID
	return k, nil
}

// recordRecovery writes a recovery event (nFlow's recovery action) into
// each run that had work in flight (a workflow task or a step attempt) on
// the node the shard was taken from, saying what is offered again; the
// tasks themselves are offered again by the recovered transfer queue, and
// the timers fire here. After a restart of this node nothing is written:
// the runs are counted and logged. The events are written many at a time,
// so that they share group commits.
func (s *shard) recordRecovery(ctx context.Context, tasks []store.Task) {
	seen := map[store.RunKey]bool{}
	from := "takeover"
	if s.restarted {
		from = "restart"
	}
	var recovered atomic.Int64
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for _, t := range tasks {
		if (t.Type != transferWorkflowTask && t.Type != transferStep) || seen[t.Run] {
			continue
		}
		seen[t.Run] = true
		k := t.Run
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			err := s.update(ctx, k, func(r *run, t *txn) (bool, error) {
				rec := inFlight(t.exec)
				if rec == nil {
					return false, nil
				}
				recovered.Add(1)
				if s.restarted {
					return false, nil
				}
				rec.FromNode, rec.ToNode = s.takenFrom, s.e.opts.Identity
				reason := fmt.Sprintf("shard %d taken over from node %s, which did not hand it over", s.id, s.takenFrom)
				if len(rec.Steps) > 0 {
					// They are not offered at once (offerStep, recoveredDue).
					reason += "; its step attempts go to another worker only if their worker neither reports nor heartbeats before their timeouts"
				}
				t.event(api.Event{Type: api.EventRunRecovered, Identity: s.e.opts.Identity, Recovery: rec, Reason: reason})
				return true, nil
			})
			if err != nil && !errors.Is(err, api.ErrNotFound) && ctx.Err() == nil {
				s.log.Warn("record recovery", "run", k.String(), "err", err)
			}
		})
	}
	wg.Wait()
	if n := recovered.Load(); n > 0 {
		s.e.metrics.recovered.WithLabelValues(from).Add(float64(n))
		s.log.Info("recovered the runs of a node that did not hand its shard over", "runs", n, "from", s.takenFrom, "restart", s.restarted)
	}
}

// inFlight says what of run x a shard's new owner offers again: its
// pending workflow task (at once) and the step attempts not backing off
// (once their workers' liveness is gone: recoveredDue); nil when there is
// none (or the run closed).
func inFlight(x *store.Execution) *api.RecoveryAttrs {
	if x.State == store.StateClosed {
		return nil
	}
	rec := &api.RecoveryAttrs{WorkflowTask: x.Task.Pending}
	for seq, info := range x.Steps {
		if info.RetryAt.IsZero() {
			rec.Steps = append(rec.Steps, seq)
		}
	}
	slices.Sort(rec.Steps)
	rec.Reoffered = len(rec.Steps)
	if rec.WorkflowTask {
		rec.Reoffered++
	}
	if rec.Reoffered == 0 {
		return nil
	}
	return rec
}
