package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/strandhq/strand/store"
)

// The run cache: each shard keeps the runs it has used lately in memory, so
// that a busy run is not read from the store for every transition. It is
// bounded by bytes (Options.CacheMemory, one budget for every shard the
// node owns, which gives way to the rest of the heap near the memory
// limit: budget.go) and lets go of the least recently used runs that hold nothing
// only memory knows. A run it let go of costs one store read when it is
// used again.
//
// A run in use is pinned (refs > 0) and sits outside the LRU list; a run
// nobody uses sits in the list, most recently used at the front. A run
// whose workflow task or step waits in a queue (its only memory-only state
// is the keys of those transfer tasks, which the queue items name by run)
// may go too: the keys are parked in the shard and given back to the run
// when it is loaded again. A run with a workflow task in flight, a started
// step, a held attempt or a retry timer stays.

// The current index: the shard knows which cached run is its workflow's
// current run, so that a call naming a workflow id alone (a signal, a
// caller waiting for the result) reads nothing from the store when that
// run is cached. The shard's owner is the only writer of its current rows,
// so the index is kept exact from what the owner does:
//   - a run loaded open is current (a workflow id has one open run at most,
//     and it is the current one);
//   - a committed write that creates, replaces or updates the current row
//     makes its run current, or, for a run written beside (continue-as-new's
//     next run), clears the entry: the store answers for it;
//   - a write that failed clears the entries it touched, and a run that
//     leaves the cache takes its entry along.

// workflowKey names a workflow id of a namespace.
type workflowKey struct{ ns, id string }

func workflowOf(k store.RunKey) workflowKey { return workflowKey{k.Namespace, k.WorkflowID} }

// cachedCurrent returns the workflow's current run id if that run is
// cached, else "".
func (s *shard) cachedCurrent(w workflowKey) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.current[w]; r != nil {
		return r.key.RunID
	}
	return ""
}

// setCurrent records r as its workflow's current run while r is cached.
func (s *shard) setCurrent(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[r.key] == r {
		s.current[workflowOf(r.key)] = r
	}
}

// currentWritten updates the index after a commit of writes (err nil) or
// its failure.
func (s *shard) currentWritten(r *run, writes []store.RunWrite, err error) {
	if !slices.ContainsFunc(writes, func(w store.RunWrite) bool { return w.Current != store.CurrentNone }) {
		return // most commits (a step's, a signal's) leave the current row alone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range writes {
		if w.Current == store.CurrentNone {
			continue
		}
		wk := workflowOf(w.Execution.RunKey)
		if err == nil && w.Execution.RunKey == r.key && s.runs[r.key] == r {
			s.current[wk] = r
		} else {
			delete(s.current, wk)
		}
	}
}

// uncacheLocked drops r's current entry as r leaves the cache. s.mu is held.
func (s *shard) uncacheLocked(r *run) {
	if w := workflowOf(r.key); s.current[w] == r {
		delete(s.current, w)
	}
}

// runOverhead is what a cached run costs before its state: the run, its
// maps, its semaphore and its entry in the shard's map.
const runOverhead = 1024

// parkedTasks are the transfer task keys of an evicted run's queued work.
type parkedTasks struct {
	wt    store.TaskKey
	steps map[int64]store.TaskKey
}

// getRun returns the cached run of k (loaded or not) and pins it.
func (s *shard) getRun(k store.RunKey) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[k]
	if r == nil {
		r = newRun(s, k)
		if p, ok := s.parked[k]; ok {
			delete(s.parked, k)
			r.wtTask = p.wt
			if p.steps != nil {
				r.stepTasks = p.steps
			}
		}
		s.runs[k] = r
		r.charged = runOverhead
		r.size.Store(runOverhead)
		s.charge(runOverhead)
	} else if r.inLRU {
		s.lru.remove(r)
	}
	// Pinned before anything is evicted: a run evicted here, new and idle,
	// would go on serving its caller detached from the cache, and a
	// workflow task it handed out could then be neither completed nor
	// expired (the run's next caller gets another object).
	r.refs++
	s.evictLocked()
	return r
}

// release unpins a run. A run nobody uses any more goes to the front of
// the LRU list, charged with its size as its last holder measured it.
func (s *shard) release(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.refs--
	if r.refs > 0 || s.runs[r.key] != r {
		return
	}
	size := r.size.Load()
	s.charge(size - r.charged)
	r.charged = size
	s.lru.pushFront(r)
	s.evictLocked()
}

// charge adds delta bytes to the shard's cache and to the engine's.
func (s *shard) charge(delta int64) {
	s.cacheBytes += delta
	if !s.cacheGone {
		s.e.cacheBytes.Add(delta)
	}
}

// overBudget reports whether the caches hold more than they may.
func (s *shard) overBudget() bool {
	o := &s.e.opts
	return s.e.cacheBytes.Load() > s.e.cacheBudget.Load() || o.RunCacheSize > 0 && len(s.runs) > o.RunCacheSize
}

// evictLocked lets go of the shard's least recently used runs until the
// caches are within their budget or no run of the shard may go.
func (s *shard) evictLocked() {
	for s.overBudget() {
		r := s.lru.back()
		if r == nil {
			return
		}
		s.lru.remove(r)
		if !s.evictable(r) {
			// Busy: it comes back into the list when its holder lets go.
			continue
		}
		delete(s.runs, r.key)
		s.uncacheLocked(r)
		s.charge(-r.charged)
		r.charged = 0
		s.e.metrics.evicted.Inc()
	}
}

// forgetLocked drops the run of k from the cache whether or not it is in
// use (the run is gone from the store: purged). A holder finishes with the
// copy it has; release then finds another run, or none, under the key and
// leaves the cache alone. s.mu is held.
func (s *shard) forgetLocked(k store.RunKey) {
	delete(s.parked, k)
	r := s.runs[k]
	if r == nil {
		return
	}
	if r.inLRU {
		s.lru.remove(r)
	}
	delete(s.runs, k)
	s.uncacheLocked(r)
	s.charge(-r.charged)
	r.charged = 0
}

// evictable reports whether r, unpinned, may leave the cache, and parks
// its queued tasks' keys if it may. It takes the run's lock without
// waiting: a run locked by anyone stays.
func (s *shard) evictable(r *run) bool {
	if r.refs > 0 {
		return false
	}
	select {
	case r.sem <- struct{}{}:
	default:
		return false
	}
	defer r.unlock()
	if r.flight != nil || len(r.steps) > 0 || len(r.held) > 0 || len(r.paused) > 0 || r.retry != nil {
		return false
	}
	if r.wtTask.TaskID != 0 || len(r.stepTasks) > 0 {
		p := parkedTasks{wt: r.wtTask}
		if len(r.stepTasks) > 0 {
			p.steps = r.stepTasks
		}
		s.parked[r.key] = p
	}
	return true
}

// dropCache lets go of the whole cache's charge when the shard stops: its
// runs are gone with it.
func (s *shard) dropCache() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cacheGone {
		s.e.cacheBytes.Add(-s.cacheBytes)
		s.cacheGone = true
	}
}

// footprint estimates the bytes the run holds in memory: the run itself,
// its state and the inputs read for its pending workflow task. It is an
// estimate for the cache's budget, not an exact count.
func (r *run) footprint() int64 {
	n := int64(runOverhead)
	if x := r.exec; x != nil {
		n += executionSize(x)
	}
	for _, ev := range r.inputs {
		n += 256 + int64(len(ev.Payload.Data))
	}
	n += int64(len(r.stepTasks)+len(r.steps)) * 128
	return n
}

// executionSize estimates the bytes a run's state holds in memory.
func executionSize(x *store.Execution) int64 {
	n := int64(1024 + len(x.Namespace) + len(x.WorkflowID) + len(x.RunID))
	info := &x.Info
	n += int64(len(info.Type) + len(info.Queue) + len(info.BusinessKey) + len(info.ExternalID) + len(info.CreateRequestID))
	for k, v := range info.Memo {
		n += int64(64 + len(k) + len(v))
	}
	for k, v := range info.SearchAttributes {
		n += int64(64 + len(k) + len(v))
	}
	for _, st := range x.Steps {
		n += int64(256 + len(st.Name) + len(st.Queue) + len(st.IdempotencyKey) + len(st.HeartbeatDetails.Data))
	}
	n += int64(len(x.Timers))*128 + int64(len(x.Children))*256 + int64(len(x.CancelRequests))*192 + int64(len(x.Signals))*192
	for _, id := range x.SignalRequestedIDs {
		n += int64(16 + len(id))
	}
	for _, b := range x.BufferedEvents {
		n += int64(24 + len(b))
	}
	for k, v := range x.Variables {
		n += int64(64 + len(k) + len(v.Data))
	}
	n += int64(len(x.VersionHistories) + len(x.Task.FailedCause))
	if o := x.Outcome; o != nil {
		n += int64(64 + len(o.Output.Data) + len(o.Failure) + len(o.NextRunID))
	}
	return n
}

// runList is the shard's LRU list of unpinned runs, most recent first,
// linked through the runs themselves.
type runList struct {
	head, tail *run
}

func (l *runList) pushFront(r *run) {
	r.lruPrev, r.lruNext = nil, l.head
	if l.head != nil {
		l.head.lruPrev = r
	} else {
		l.tail = r
	}
	l.head = r
	r.inLRU = true
}

func (l *runList) remove(r *run) {
	if r.lruPrev != nil {
		r.lruPrev.lruNext = r.lruNext
	} else {
		l.head = r.lruNext
	}
	if r.lruNext != nil {
		r.lruNext.lruPrev = r.lruPrev
	} else {
		l.tail = r.lruPrev
	}
	r.lruPrev, r.lruNext, r.inLRU = nil, nil, false
}

func (l *runList) back() *run { return l.tail }

// ---- callers waiting for a run ----

// A caller waiting for a run to close (WaitResult) or to run its first
// workflow task (a query) is a channel in the shard's waiters, by run key:
// it pins nothing, so the run it waits for may leave the cache meanwhile,
// and it holds no goroutine of the engine's.

// addWaiter registers a waiter for run k; wake closes it.
func (s *shard) addWaiter(k store.RunKey) chan struct{} {
	ch := make(chan struct{})
	s.mu.Lock()
	s.waiters[k] = append(s.waiters[k], ch)
	s.mu.Unlock()
	return ch
}

// removeWaiter removes a waiter that stopped waiting before it was woken.
func (s *shard) removeWaiter(k store.RunKey, ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.waiters[k]
	if i := slices.Index(ws, ch); i >= 0 {
		ws = slices.Delete(ws, i, i+1)
	}
	if len(ws) == 0 {
		delete(s.waiters, k)
	} else {
		s.waiters[k] = ws
	}
}

// wake releases the callers waiting on the run to look again: it closed,
// ran a workflow task, or its state was reloaded.
func (r *run) wake() {
	s := r.s
	s.mu.Lock()
	ws := s.waiters[r.key]
	delete(s.waiters, r.key)
	s.mu.Unlock()
	for _, ch := range ws {
		close(ch)
	}
}

// awaitRun calls check with run k until it reports done (or fails),
// waiting between calls until the run is woken.
func (s *shard) awaitRun(ctx context.Context, k store.RunKey, check func(r *run) (done bool, err error)) error {
	for {
		var ch chan struct{}
		err := s.withRun(ctx, k, func(r *run) error {
			done, err := check(r)
			if err == nil && !done {
				// Registered under the run's lock, so that a wake after
				// the check is not missed.
				ch = s.addWaiter(k)
			}
			return err
		})
		if err != nil || ch == nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			s.removeWaiter(k, ch)
			return ctx.Err()
		case <-s.ctxDone():
			s.removeWaiter(k, ch)
			return fmt.Errorf("%w: shard %d stopped", errNotOwner, s.id)
		}
	}
}
