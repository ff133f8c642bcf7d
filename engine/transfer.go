package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// processNew starts processing a transfer task r's commit just wrote, with
// r still locked: workflow and step tasks go to their queues at once; the
// others run on the shard's pool. d is the task's data when the caller has
// it decoded (nil: decoded from task.Data).
func (s *shard) processNew(r *run, task store.Task, d *taskData) {
	if task.Run != r.key {
		s.dispatchTransfer(task)
		return
	}
	switch task.Type {
	case transferWorkflowTask:
		r.wtTask = task.Key
		r.dispatchWT()
	case transferVisibility:
		s.vis.add(task.Run, task.Key, visibilityRecord(r.key, r.exec))
	case transferStep:
		if d == nil {
			var err error
			if d, err = decodeTaskData(task.Data); err != nil {
				s.ackTransfer(task.Key)
				return
			}
		}
		if _, ok := currentAttempt(r.exec, d.Seq, d.Attempt); !ok {
			// The transition that wrote it also closed the run (or the
			// step): its close let go of the run's tasks before this one
			// was known, so it is done here.
			s.ackTransfer(task.Key)
			return
		}
		r.offerStep(task.Key, d, false)
	default:
		s.dispatchTransfer(task)
	}
}

// dispatchTransfer processes a transfer task asynchronously, one whose
// run is not locked by the caller.
func (s *shard) dispatchTransfer(task store.Task) { s.dispatch(task, false) }

// dispatch processes a transfer task asynchronously; recovered says it was
// read back from the store when the shard was acquired: the work it offers
// may have been in flight on the shard's previous owner.
func (s *shard) dispatch(task store.Task, recovered bool) {
	d, err := decodeTaskData(task.Data)
	if err != nil {
		s.log.Error("drop undecodable transfer task", "key", task.Key, "err", err)
		s.ackTransfer(task.Key)
		return
	}
	if task.Type == transferVisibility {
		s.vis.add(task.Run, task.Key, nil)
		return
	}
	s.work.push(func(ctx context.Context) {
		if err := s.processTransfer(ctx, task, d, recovered); err != nil {
			if errors.Is(err, errKeepTask) || ctx.Err() != nil {
				return
			}
			s.log.Warn("transfer task failed; retrying", "type", task.Type, "run", task.Run.String(), "err", err)
			s.afterFunc(time.Second, func(context.Context) { s.dispatch(task, recovered) })
			return
		}
		s.ackTransfer(task.Key)
	})
}

// processTransfer carries out one transfer task; nil means it is done (or
// was stale) and may be acknowledged.
func (s *shard) processTransfer(ctx context.Context, task store.Task, d *taskData, recovered bool) error {
	e := s.e
	switch task.Type {
	case transferWorkflowTask:
		return s.handOver(ctx, task, func(r *run) bool {
			if r.exec.State == store.StateClosed || !r.exec.Task.Pending {
				return false
			}
			if r.wtTask.TaskID != 0 && r.wtTask != task.Key {
				s.ackTransfer(r.wtTask)
			}
			r.wtTask = task.Key
			r.dispatchWT()
			return true
		})
	case transferStep:
		return s.handOver(ctx, task, func(r *run) bool {
			if _, ok := currentAttempt(r.exec, d.Seq, d.Attempt); !ok {
				return false
			}
			r.offerStep(task.Key, d, recovered)
			return true
		})
	case transferStartChild:
		return e.startChild(ctx, s, task.Run, d)
	}
	// The remaining effects leave the run: check first that the run's state
	// still calls for them (a task of a write whose outcome was unknown may
	// be processed though the write never landed).
	if ok, err := s.runIs(ctx, task.Run, func(x *store.Execution) bool {
		switch task.Type {
		case transferCloseParent, transferParentClose:
			return x.State == store.StateClosed
		case transferSignal:
			_, ok := x.Signals[d.Seq]
			return ok
		case transferCancel:
			_, ok := x.CancelRequests[d.Seq]
			return ok
		}
		return true
	}); err != nil || !ok {
		return err
	}
	switch task.Type {
	case transferCloseParent:
		return e.notifyParent(ctx, task.Run, d)
	case transferSignal:
		input, err := e.resolve(ctx, s.id, task.Run, d.Input)
		if err != nil {
			return err
		}
		if st := d.SignalStart; st != nil {
			_, err = e.SignalWithStart(ctx, api.SignalWithStartRequest{SignalName: d.Name, SignalInput: input,
				Start: api.StartRequest{Namespace: d.Target.Namespace, WorkflowID: d.Target.WorkflowID, WorkflowType: st.WorkflowType,
					Queue: st.Queue, Priority: st.Priority, RequestID: d.RequestID, Identity: task.Run.String()}})
		} else {
			err = e.SignalWorkflow(ctx, api.SignalRequest{RunRef: api.RunRef{Namespace: d.Target.Namespace, WorkflowID: d.Target.WorkflowID, RunID: d.Target.RunID},
				Name: d.Name, Input: input, RequestID: d.RequestID, Identity: task.Run.String()})
		}
		return e.reportExternal(ctx, s, task.Run, d.Seq, api.EventExternalSignaled, err)
	case transferCancel:
		err := e.CancelWorkflow(ctx, api.CancelRequest{RunRef: api.RunRef{Namespace: d.Target.Namespace, WorkflowID: d.Target.WorkflowID, RunID: d.Target.RunID},
			Reason: "requested by " + task.Run.String(), RequestID: d.RequestID, Identity: task.Run.String()})
		return e.reportExternal(ctx, s, task.Run, d.Seq, api.EventExternalCancelRequested, err)
	case transferParentClose:
		target := api.RunRef{Namespace: d.Target.Namespace, WorkflowID: d.Target.WorkflowID, RunID: d.Target.RunID}
		var err error
		reason := "parent " + task.Run.String() + " closed"
		if d.Kind == strconv.Itoa(int(api.ParentCloseRequestCancel)) {
			err = e.CancelWorkflow(ctx, api.CancelRequest{RunRef: target, Reason: reason})
		} else {
			err = e.TerminateWorkflow(ctx, api.TerminateRequest{RunRef: target, Reason: reason})
		}
		if err != nil && !errors.Is(err, api.ErrNotFound) && !errors.Is(err, api.ErrRunClosed) {
			return err
		}
		return nil
	}
	return nil
}

// runIs reports whether run k exists and its state satisfies cond.
func (s *shard) runIs(ctx context.Context, k store.RunKey, cond func(x *store.Execution) bool) (bool, error) {
	var ok bool
	err := s.withRun(ctx, k, func(r *run) error {
		ok = r.exec != nil && cond(r.exec)
		return nil
	})
	if errors.Is(err, api.ErrNotFound) {
		return false, nil
	}
	return ok, err
}

// errKeepTask says a task was handed on and is acknowledged later.
var errKeepTask = errors.New("engine: task kept")

// handOver gives a recovered workflow-task or step task to its run: take
// reports whether the run took it (it is acknowledged when the task is
// done); a task the run does not take, or of a run that is gone, is stale
// and acknowledged now.
func (s *shard) handOver(ctx context.Context, task store.Task, take func(r *run) bool) error {
	var taken bool
	err := s.withRun(ctx, task.Run, func(r *run) error { taken = take(r); return nil })
	switch {
	case errors.Is(err, api.ErrNotFound) || (err == nil && !taken):
		s.ackTransfer(task.Key)
		return nil
	case err != nil:
		return err
	}
	return errKeepTask
}

// startChild starts a parent's child run and reports the start to the
// parent. A parent that closed before its child started still starts an
// abandoned child (the policy says the child lives on without it, as in
// Temporal); a child under any other policy would be closed at once, so it
// is not started.
func (e *Engine) startChild(ctx context.Context, s *shard, parent store.RunKey, d *taskData) error {
	var spec startSpec
	var input []byte
	err := s.withRun(ctx, parent, func(r *run) error {
		c, ok := r.exec.Children[d.Seq]
		closed := r.exec.State == store.StateClosed
		if !ok || c.RunID != "" || closed && api.ParentClosePolicy(c.ParentClosePolicy) != api.ParentCloseAbandon {
			return errStale
		}
		o := d.Child
		var err error
		if input, err = e.resolve(ctx, s.id, parent, d.Input); err != nil {
			return err
		}
		root := r.exec.Info.Root
		if root == nil {
			root = &parent
		}
		spec = startSpec{
			Req: api.StartRequest{Namespace: o.Namespace, WorkflowID: o.WorkflowID, WorkflowType: d.Name, Input: input, Queue: o.Queue,
				Priority: o.Priority, RequestID: d.RequestID, IDReuse: o.IDReuse, RunTimeout: o.RunTimeout, Memo: o.Memo,
				BusinessKey: o.BusinessKey, Attributes: o.Attributes, Identity: parent.String()},
			Parent: &parent, ParentSeq: d.Seq, Root: root,
		}
		return nil
	})
	if errors.Is(err, errStale) || errors.Is(err, api.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	resp, startErr := e.start(ctx, &spec)
	if startErr != nil && !errors.Is(startErr, api.ErrAlreadyStarted) && !errors.Is(startErr, api.ErrInvalidArgument) && !errors.Is(startErr, api.ErrNamespaceNotFound) {
		return startErr
	}
	err = s.update(ctx, parent, func(r *run, t *txn) (bool, error) {
		c, ok := t.exec.Children[d.Seq]
		if !ok || c.RunID != "" || t.exec.State == store.StateClosed {
			return false, nil
		}
		if startErr != nil {
			t.event(api.Event{Type: api.EventChildStartFailed, Seq: d.Seq, Name: d.Name,
				Failure: &api.Failure{Kind: api.KindChild, Message: startErr.Error(), WorkflowID: c.WorkflowID, Cause: api.FailureOf(startErr)}})
			delete(t.exec.Children, d.Seq)
		} else {
			c.RunID = resp.RunID
			c.StartedEventID = t.exec.NextEventID
			t.exec.Children[d.Seq] = c
			t.event(api.Event{Type: api.EventChildStarted, Seq: d.Seq, Name: d.Name, Child: &api.ChildAttrs{Options: *d.Child, RunID: resp.RunID}})
		}
		return true, nil
	})
	return ignoreNotFound(err)
}

var errStale = errors.New("engine: stale task")

// notifyParent delivers a child's close to its parent, on the node that
// serves the parent.
func (e *Engine) notifyParent(ctx context.Context, child store.RunKey, d *taskData) error {
	return e.route(ctx, d.Target.Namespace, d.Target.WorkflowID, func(s *shard) error {
		return e.notifyParentOn(ctx, s, child, d)
	}, func(ctx context.Context, p api.Peer) error {
		return peerCall(ctx, p, opNotifyParent, parentNotice{Child: child, Data: d}, nil)
	})
}

func (e *Engine) notifyParentOn(ctx context.Context, s *shard, child store.RunKey, d *taskData) error {
	p := *d.Target
	err := s.update(ctx, p, func(r *run, t *txn) (bool, error) {
		c, ok := t.exec.Children[d.Seq]
		if !ok || t.exec.State == store.StateClosed || c.WorkflowID != child.WorkflowID {
			return false, nil
		}
		if c.RunID == "" {
			t.event(api.Event{Type: api.EventChildStarted, Seq: d.Seq, Name: c.Type,
				Child: &api.ChildAttrs{Options: api.ChildOptions{Namespace: c.Namespace, WorkflowID: c.WorkflowID}, RunID: child.RunID}})
		}
		ev := api.Event{Type: api.EventChildClosed, Seq: d.Seq, Name: c.Type,
			Child: &api.ChildAttrs{Options: api.ChildOptions{Namespace: c.Namespace, WorkflowID: c.WorkflowID}, RunID: child.RunID, Status: d.Status.String()}}
		if d.Status == store.StatusCompleted {
			data, err := e.resolve(ctx, e.shardID(child.Namespace, child.WorkflowID), child, d.Input)
			if err != nil {
				return false, err
			}
			pl, err := t.payload(r.key, data)
			if err != nil {
				return false, err
			}
			ev.Payload = api.Payload(pl)
		} else {
			cause := d.Failure
			if cause == nil {
				cause = &api.Failure{Kind: api.KindApplication, Message: d.Status.String()}
			}
			ev.Failure = &api.Failure{Kind: api.KindChild, Message: cause.Message, WorkflowID: child.WorkflowID, RunID: child.RunID, Cause: cause}
		}
		t.event(ev)
		delete(t.exec.Children, d.Seq)
		return true, nil
	})
	return ignoreNotFound(err)
}

// reportExternal tells a run how its signal or cancel of another run went.
func (e *Engine) reportExternal(ctx context.Context, s *shard, source store.RunKey, seq int64, typ api.EventType, outcome error) error {
	if outcome != nil && !errors.Is(outcome, api.ErrNotFound) && !errors.Is(outcome, api.ErrRunClosed) && !errors.Is(outcome, api.ErrInvalidArgument) {
		return outcome
	}
	err := s.update(ctx, source, func(r *run, t *txn) (bool, error) {
		x := t.exec
		if x.State == store.StateClosed {
			return false, nil
		}
		if typ == api.EventExternalSignaled {
			if _, ok := x.Signals[seq]; !ok {
				return false, nil
			}
			delete(x.Signals, seq)
		} else {
			if _, ok := x.CancelRequests[seq]; !ok {
				return false, nil
			}
			delete(x.CancelRequests, seq)
		}
		ev := api.Event{Type: typ, Seq: seq}
		if outcome != nil {
			ev.Failure = api.FailureOf(outcome)
		}
		t.event(ev)
		return true, nil
	})
	return ignoreNotFound(err)
}

// update runs add in a transition of run k and commits it, or hands its
// inputs to a waiting worker and waits for the commit that follows; add
// returns false to write nothing.
func (s *shard) update(ctx context.Context, k store.RunKey, add func(r *run, t *txn) (bool, error)) error {
	var wait <-chan error
	err := s.withRun(ctx, k, func(r *run) error {
		t, err := r.tx(ctx)
		if err != nil {
			return err
		}
		if ok, err := add(r, t); err != nil || !ok {
			return err
		}
		wait, err = r.deliver(ctx, t)
		return err
	})
	if err != nil {
		return err
	}
	return s.await(ctx, wait)
}

// ignoreNotFound: a task for a run that is gone (past retention) is done.
func ignoreNotFound(err error) error {
	if errors.Is(err, api.ErrNotFound) {
		return nil
	}
	return err
}

// ---- timers ----

// fireTimer processes a durable timer task that came due.
func (s *shard) fireTimer(ctx context.Context, te *timerEntry) {
	err := s.processTimer(ctx, te)
	if errors.Is(err, api.ErrNotFound) {
		err = nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("timer task failed; retrying", "type", te.typ, "run", te.run.String(), "err", err)
		s.afterFunc(time.Second, func(ctx context.Context) { s.fireTimer(ctx, te) })
		return
	}
	s.ackTimer(te.key)
}

func (s *shard) processTimer(ctx context.Context, te *timerEntry) error {
	d := te.data
	if te.typ == timerRetention {
		if ok, err := s.runIs(ctx, te.run, func(x *store.Execution) bool { return x.State == store.StateClosed }); err != nil || !ok {
			return err
		}
		return s.deleteRun(ctx, te.run)
	}
	var wait <-chan error
	err := s.withRun(ctx, te.run, func(r *run) error {
		if r.exec.State == store.StateClosed {
			return nil
		}
		t, err := r.tx(ctx)
		if err != nil {
			return err
		}
		x := t.exec
		switch te.typ {
		case timerUser:
			id := strconv.FormatInt(d.Seq, 10)
			if _, ok := x.Timers[id]; !ok {
				return nil
			}
			delete(x.Timers, id)
			t.event(api.Event{Type: api.EventTimerFired, Seq: d.Seq})
			wait, err = r.deliver(ctx, t)
			return err
		case timerStepTimeout:
			info, ok := x.Steps[d.Seq]
			if !ok {
				return nil
			}
			if d.Kind == api.TimeoutScheduleToStart && (info.Attempt != d.Attempt || !info.RetryAt.IsZero() || (r.steps[d.Seq] != nil && r.steps[d.Seq].attempt == d.Attempt)) {
				return nil
			}
			if d.Kind == api.TimeoutScheduleToStart && te.key.TaskID < s.firstTaskID && r.recovering(d.Seq, d.Attempt) {
				// An earlier owner of the shard offered the attempt and may
				// have started it (starts are in memory): it is held while
				// its worker may still run it (offerStep), and does not
				// time out for not having started.
				return nil
			}
			var details []byte
			if sr := r.steps[d.Seq]; sr != nil {
				details = sr.details
			}
			r.finishStep(t, d.Seq, info, &api.Failure{Kind: api.KindTimeout, Type: d.Kind, Message: d.Kind + " timeout", Details: details}, "", nil)
			wait, err = r.deliver(ctx, t)
			return err
		case timerStepRetry:
			info, ok := x.Steps[d.Seq]
			if !ok || info.Attempt != d.Attempt || info.RetryAt.IsZero() {
				return nil
			}
			input, err := r.stepInput(ctx, info)
			if err != nil {
				return err
			}
			info.RetryAt = time.Time{}
			x.Steps[d.Seq] = info
			t.dispatchStep(d.Seq, info, input)
			return r.commit(ctx, t)
		case timerRunTimeout:
			if err := t.closeFromOutside(api.Event{Type: api.EventWorkflowTimedOut, Reason: api.TimeoutRun},
				store.StatusTimedOut, &api.Failure{Kind: api.KindTimeout, Type: api.TimeoutRun, Message: "run timeout"}); err != nil {
				return err
			}
			return r.commit(ctx, t)
		case timerStartDelay:
			if x.Task.NotBefore.IsZero() {
				return nil
			}
			x.Task.NotBefore = time.Time{}
			t.transfer(transferWorkflowTask, r.key, &taskData{})
			return r.commit(ctx, t)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.await(ctx, wait)
}

// deleteRun removes a closed run past its retention.
func (s *shard) deleteRun(ctx context.Context, k store.RunKey) error {
	r := s.getRun(k)
	defer s.release(r)
	if err := r.lock(ctx); err != nil {
		return err
	}
	defer r.unlock()
	if err := s.commit(ctx, &part{deleteRuns: []store.RunKey{k}}); err != nil {
		return err
	}
	r.loaded, r.exec = true, nil
	if err := s.e.store.DeleteVisibility(ctx, k.Namespace, k.RunID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("engine: delete visibility of %s: %w", k, err)
	}
	return nil
}

// ---- visibility ----

// visibilityQueue coalesces a run's visibility updates: a worker writes the
// run's latest record once for every update queued meanwhile.
type visibilityQueue struct {
	mu      sync.Mutex
	pending map[store.RunKey]*visibilityUpdate
	order   []store.RunKey // by first update, oldest first
	signal  chan struct{}
}

// visibilityUpdate is a run's queued update: the tasks it acknowledges
// and, when the commit that queued it was at hand, the run's record as of
// that commit, so that writing it needs no read of the run (which may have
// left the cache by then).
type visibilityUpdate struct {
	keys   []store.TaskKey
	record *store.VisibilityRecord // nil: read the run when writing
	queued time.Time               // when the first of them was queued
}

func (q *visibilityQueue) init() {
	q.pending = map[store.RunKey]*visibilityUpdate{}
	q.signal = make(chan struct{}, 1)
}

// add queues task key for run k with the run's record, or nil when the
// record is to be read from the run when written.
func (q *visibilityQueue) add(k store.RunKey, key store.TaskKey, record *store.VisibilityRecord) {
	q.mu.Lock()
	u := q.pending[k]
	if u == nil {
		u = &visibilityUpdate{queued: time.Now()}
		q.pending[k] = u
		q.order = append(q.order, k)
		u.record = record
	} else if record == nil || u.record != nil && record.Version >= u.record.Version {
		// A later commit's record, or none: what is written is never
		// older than what was queued.
		u.record = record
	}
	u.keys = append(u.keys, key)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// take removes up to n runs with their updates, of those first queued
// before queuedBefore (any, when it is zero). Past maxQueued runs, the
// oldest are taken whatever their age. When none is old enough, it
// returns nil and when the oldest will be.
func (q *visibilityQueue) take(n int, queuedBefore time.Time) (map[store.RunKey]*visibilityUpdate, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		return nil, time.Time{}
	}
	n = min(n, len(q.order))
	if !queuedBefore.IsZero() && len(q.order) <= visibilityMaxQueued {
		ready, _ := slices.BinarySearchFunc(q.order[:n], queuedBefore, func(k store.RunKey, t time.Time) int {
			return q.pending[k].queued.Compare(t)
		})
		if ready == 0 {
			return nil, q.pending[q.order[0]].queued
		}
		n = ready
	}
	out := make(map[store.RunKey]*visibilityUpdate, n)
	for _, k := range q.order[:n] {
		out[k] = q.pending[k]
		delete(q.pending, k)
	}
	q.order = q.order[n:]
	return out, time.Time{}
}

// visibilityBatch bounds the records written in one call.
const visibilityBatch = 500

// visibilityDelay is how long a run's updates gather before they are
// written: a run that starts and closes within it is written once. Listing
// lags by as much.
const visibilityDelay = time.Second

// visibilityPause is how long the writer waits after a write of less than
// a full batch, so that a trickle of updates goes in a few transactions a
// second rather than one per update.
const visibilityPause = visibilityDelay / 4

// visibilityMaxQueued bounds the runs whose updates gather: past it, the
// oldest are written at once, however recent.
const visibilityMaxQueued = 20 * visibilityBatch

// visibilityLoop writes visibility records in batches, each run's once its
// first update is visibilityDelay old, so that updates close together (a
// short run's start and close) share a write, and a busy shard's go in
// full batches. Listing lags by visibilityDelay to visibilityDelay plus
// visibilityPause.
func (s *shard) visibilityLoop(ctx context.Context) {
	for {
		batch, next := s.vis.take(visibilityBatch, time.Now().Add(-visibilityDelay))
		if batch == nil {
			if next.IsZero() {
				select {
				case <-s.vis.signal:
				case <-ctx.Done():
					return
				}
				continue
			}
			if !sleep(ctx, time.Until(next.Add(visibilityDelay))) {
				return
			}
			continue
		}
		if err := s.writeVisibilityBatch(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("write visibility; retrying", "runs", len(batch), "err", err)
			if !sleep(ctx, time.Second) {
				return
			}
			continue
		}
		if len(batch) < visibilityBatch && !sleep(ctx, visibilityPause) {
			return
		}
	}
}

// writeVisibilityBatch writes a batch taken from the queue and acknowledges
// its transfer tasks, or puts it back in the queue when the write fails.
// The loop and SyncVisibility may each write a batch at once: they take
// different runs, and the store keeps a record's latest version.
func (s *shard) writeVisibilityBatch(ctx context.Context, batch map[store.RunKey]*visibilityUpdate) error {
	if err := s.writeVisibility(ctx, batch); err != nil {
		for k, u := range batch {
			for _, key := range u.keys {
				s.vis.add(k, key, u.record)
			}
		}
		return err
	}
	for _, u := range batch {
		for _, key := range u.keys {
			s.ackTransfer(key)
		}
	}
	return nil
}

// SyncVisibility writes the visibility updates this node's shards hold
// queued (visibilityDelay gathers them into batches) now, and returns
// once they are written: lists then show every run as of the commits
// made before the call. Benchmarks call it so that a short one does its
// share of the writing; tests, to list what they just did.
func (e *Engine) SyncVisibility(ctx context.Context) error {
	for _, s := range e.owned() {
		for {
			batch, _ := s.vis.take(visibilityBatch, time.Time{})
			if batch == nil {
				break
			}
			if err := s.writeVisibilityBatch(ctx, batch); err != nil {
				return fmt.Errorf("engine: write visibility of shard %d: %w", s.id, err)
			}
		}
	}
	return nil
}

func (s *shard) writeVisibility(ctx context.Context, batch map[store.RunKey]*visibilityUpdate) error {
	recs := make([]store.VisibilityRecord, 0, len(batch))
	for k, u := range batch {
		// A record queued with its commit is written as it is, unless its
		// run closed so long ago that retention may have purged the run
		// meanwhile (the write lagged, a failing store): then the run is
		// read, so that a purged run's record does not come back.
		if r := u.record; r != nil && (r.CloseTime.IsZero() || time.Since(r.CloseTime) < store.MinRetention/2) {
			recs = append(recs, *r)
			continue
		}
		err := s.withRun(ctx, k, func(r *run) error {
			recs = append(recs, *visibilityRecord(k, r.exec))
			return nil
		})
		if err != nil && !errors.Is(err, api.ErrNotFound) {
			return err
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return s.e.store.UpsertVisibility(ctx, recs...)
}

// visibilityRecord is run k's visibility record in state x.
func visibilityRecord(k store.RunKey, x *store.Execution) *store.VisibilityRecord {
	return &store.VisibilityRecord{Namespace: k.Namespace, WorkflowID: k.WorkflowID, RunID: k.RunID, Type: x.Info.Type,
		Status: x.Status, StartTime: x.Info.StartTime, CloseTime: x.Info.CloseTime, BusinessKey: x.Info.BusinessKey,
		Attributes: x.Info.SearchAttributes, Version: x.DBVersion}
}
