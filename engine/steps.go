package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// stepItem is a step attempt waiting in its queue.
type stepItem struct {
	run     store.RunKey
	seq     int64
	attempt int32
	// name is the step's, for the pollers that run only some steps.
	name  string
	input store.Payload
	// redelivered: the attempt may have run before (it was in flight when
	// its shard changed hands); the worker tells step code.
	redelivered bool
	// started is when a recovered attempt started on the node that lost
	// it, as that node's last checkpoint of it recorded (zero: unknown).
	started time.Time
}

// stepRun is a started attempt. Starts are kept in memory only: if the
// shard changes hands, the attempt's transfer task (still unacknowledged)
// offers it again, and a worker still running it may report under the
// same attempt number. An attempt that runs long has that task written
// anew now and then (checkpointStep), so it does not hold the transfer
// queue's ack level back.
type stepRun struct {
	item          *stepItem // what was offered, to offer again if released
	attempt       int32
	nonce         int64
	started       time.Time
	worker        string
	beat          time.Time
	details       []byte
	s2c, hb, ckpt *time.Timer
}

func (sr *stepRun) stop() {
	for _, t := range []*time.Timer{sr.s2c, sr.hb, sr.ckpt} {
		if t != nil {
			t.Stop()
		}
	}
}

type stepToken struct {
	Run     store.RunKey `json:"run"`
	Seq     int64        `json:"seq"`
	Attempt int32        `json:"attempt"`
	Nonce   int64        `json:"n"`
}

func (t *stepToken) run() store.RunKey { return t.Run }

// currentAttempt returns step seq of x when attempt is the one it waits
// on now: the run is open, the step pending at that attempt and not
// backing off before it. Anything older or newer is stale.
func currentAttempt(x *store.Execution, seq int64, attempt int32) (store.StepInfo, bool) {
	info, ok := x.Steps[seq]
	return info, ok && x.State != store.StateClosed && info.Attempt == attempt && info.RetryAt.IsZero()
}

// dispatchStep writes the transfer task that offers the step's current
// attempt, with its schedule-to-start timer.
func (t *txn) dispatchStep(seq int64, info store.StepInfo, input store.Payload) {
	t.transfer(transferStep, t.r.key, &taskData{Seq: seq, Attempt: info.Attempt, Name: info.Name, Queue: info.Queue, Priority: info.Priority, Input: input})
	if info.ScheduleToStart > 0 {
		t.timer(timerStepTimeout, t.now.Add(info.ScheduleToStart), &taskData{Seq: seq, Attempt: info.Attempt, Kind: api.TimeoutScheduleToStart})
	}
}

// offerStep puts a step attempt into its queue, unless a worker runs it
// already (key is then the attempt's dispatch written anew). An attempt
// that may have been running when memory of it was lost (redelivered) is
// held back until its worker's liveness is gone (recoveredDue): the worker
// that runs it may still report its outcome, or claim it back with a
// heartbeat, and then no second worker runs it.
func (r *run) offerStep(key store.TaskKey, d *taskData, redelivered bool) {
	if old, ok := r.stepTasks[d.Seq]; ok && old != key {
		r.s.ackTransfer(old)
	}
	put(&r.stepTasks, d.Seq, key)
	if sr := r.steps[d.Seq]; sr != nil && sr.attempt == d.Attempt {
		return
	}
	if it := r.held[d.Seq]; it != nil && it.attempt == d.Attempt {
		if redelivered || !d.Started.IsZero() {
			return // held already (or its hold's checkpoint), until its worker's liveness is gone
		}
		// The attempt's first dispatch, seen after a reload held the
		// attempt (a write whose outcome was unknown): it was never
		// offered, so no worker runs it.
		delete(r.held, d.Seq)
	}
	it := &stepItem{run: r.key, seq: d.Seq, attempt: d.Attempt, name: d.Name, input: d.Input, redelivered: redelivered, started: d.Started}
	if r.isPaused() {
		r.hold(it)
		return
	}
	q := queueKey{ns: r.key.Namespace, name: queueOrDefault(d.Queue), kind: stepQueue}
	now := time.Now()
	delay := r.s.e.opts.RedeliveryDelay
	if redelivered && delay >= 0 && r.s.e.waitsForWorkers(q.name) {
		delay = max(delay, recoveredDue(r.exec.Steps[d.Seq], d.Started, now, r.s.e.opts.DefaultStartToClose).Sub(now))
	}
	if !redelivered || delay <= 0 {
		r.s.e.match.offer(q, d.Priority, it)
		return
	}
	if it.started.IsZero() || it.started.After(now) {
		it.started = now // the latest it can have started
	}
	put(&r.held, d.Seq, it)
	r.s.afterFunc(r.s.e.opts.stepCheckpoint, func(ctx context.Context) { r.checkpointHeld(ctx, it) })
	r.s.afterFunc(delay, func(ctx context.Context) {
		r.s.onRun(ctx, it.run, func(r *run) {
			if r.held[it.seq] != it {
				return // claimed back, ended, or held anew
			}
			delete(r.held, it.seq)
			if _, ok := currentAttempt(r.exec, it.seq, it.attempt); !ok {
				return
			}
			if _, ok := r.stepTasks[it.seq]; !ok {
				return
			}
			if sr := r.steps[it.seq]; sr != nil && sr.attempt == it.attempt {
				return
			}
			r.s.e.match.offer(q, d.Priority, it)
		})
	})
}

// waitsForWorkers reports whether a recovered attempt on queue is held
// until its worker's liveness is gone, rather than offered again after
// RedeliveryDelay: in a cluster, on a queue of the users' workers. Strand's
// own steps (SystemQueue) run in the nodes' own workers, which died with
// the node that gave them out; a single node cannot tell the workers that
// died with it (a program's in-process ones) from remote ones, and keeps
// the fixed delay.
func (e *Engine) waitsForWorkers(queue string) bool {
	return e.clustered() && queue != api.SystemQueue
}

// recovering reports whether attempt of step seq is held while its worker
// may still run it, or is about to be: its dispatch, recovered from the
// store, is not processed yet.
func (r *run) recovering(seq int64, attempt int32) bool {
	if sr := r.steps[seq]; sr != nil {
		return false
	}
	if it := r.held[seq]; it != nil {
		return it.attempt == attempt
	}
	_, seen := r.stepTasks[seq]
	return !seen
}

// checkpointHeld writes anew the dispatch of an attempt held back while its
// worker may still run it, as checkpointStep does a running attempt's, so
// that a hold as long as a start-to-close does not keep the transfer
// queue's ack level back; offerStep acknowledges the old dispatch and
// keeps the attempt held. The new dispatch records the attempt's start (or
// the latest it can have been), for the node that may recover it next.
func (r *run) checkpointHeld(ctx context.Context, it *stepItem) {
	r.s.onRun(ctx, it.run, func(r *run) {
		if r.held[it.seq] != it {
			return // offered, claimed back or ended
		}
		r.s.afterFunc(r.s.e.opts.stepCheckpoint, func(ctx context.Context) { r.checkpointHeld(ctx, it) })
		t, err := r.tx(ctx)
		if err != nil {
			return
		}
		info, ok := currentAttempt(t.exec, it.seq, it.attempt)
		if !ok {
			return
		}
		t.transfer(transferStep, r.key, &taskData{Seq: it.seq, Attempt: info.Attempt, Name: info.Name, Queue: info.Queue, Priority: info.Priority, Input: it.input,
			Started: store.Time(it.started)})
		if err := r.commit(ctx, t); err != nil && ctx.Err() == nil {
			r.s.log.Warn("checkpoint a held step", "run", r.key.String(), "seq", it.seq, "err", err)
		}
	})
}

// recoveredDue is when a recovered attempt of a step (info) is deemed to
// have lost its worker, so that it may be offered again. A node keeps an
// attempt's start and heartbeats in memory, so the node that recovers it
// knows the start only from the attempt's last checkpoint (started; zero
// when it ran too briefly to have one) and none of its heartbeats. It
// measures from now (the takeover or reload) what it cannot know, which is
// never sooner than the worker's own deadline:
//   - with a heartbeat timeout, the worker has that long from now to
//     heartbeat (or report) through any node, which claims the attempt back;
//   - otherwise it waits for the attempt's deadline (start-to-close from
//     its start, or schedule-to-close), past which the worker gives it up.
//
// The earlier of the two is due, as a running attempt would time out.
func recoveredDue(info store.StepInfo, started, now time.Time, defaultStartToClose time.Duration) time.Time {
	if started.IsZero() || started.After(now) {
		started = now
	}
	due := attemptDeadline(info, started)
	if due.IsZero() {
		due = started.Add(defaultStartToClose)
	}
	if info.Heartbeat > 0 {
		if hb := now.Add(info.Heartbeat); hb.Before(due) {
			due = hb
		}
	}
	return due
}

// forgetStep drops what memory holds of a step that closed or was canceled.
func (r *run) forgetStep(seq int64) {
	delete(r.held, seq)
	delete(r.paused, seq)
	if sr := r.steps[seq]; sr != nil {
		sr.stop()
		delete(r.steps, seq)
	}
	if k, ok := r.stepTasks[seq]; ok {
		r.s.ackTransfer(k)
		delete(r.stepTasks, seq)
	}
	// Emptied maps are let go of: a map does not shrink.
	if len(r.held) == 0 {
		r.held = nil
	}
	if len(r.steps) == 0 {
		r.steps = nil
	}
	if len(r.stepTasks) == 0 {
		r.stepTasks = nil
	}
}

// PollStepTask implements api.Service.
func (e *Engine) PollStepTask(ctx context.Context, req api.PollRequest) (*api.StepTask, error) {
	if err := store.CheckLimits(&req); err != nil {
		return nil, err
	}
	return e.pollStepTask(ctx, req, true)
}

// pollStepTask polls for a worker, or for another node's leg.
func (e *Engine) pollStepTask(ctx context.Context, req api.PollRequest, worker bool) (*api.StepTask, error) {
	k, err := e.pollQueue(ctx, req, stepQueue)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil // the poll's time ran out while it looked: it found nothing
		}
		return nil, err
	}
	serves := servesOf(req.Steps)
	for {
		var it *stepItem
		switch item := e.next(ctx, k, worker, req.Identity, "", serves, !req.NoWait).(type) {
		case nil:
			return nil, nil
		case *api.StepTask:
			return item, nil // started on another node; a leg brought it
		case *stepItem:
			it = item
		}
		st, err := e.startStep(ctx, it, req.Identity)
		if err != nil {
			if ctx.Err() != nil {
				e.match.requeue(k, api.PriorityHighest, it)
				return nil, nil
			}
			if !errors.Is(err, api.ErrNotFound) {
				e.log.Warn("start step", "run", it.run.String(), "seq", it.seq, "err", err)
			}
			continue
		}
		if st != nil {
			return st, nil
		}
	}
}

// startStep records that a worker took a step attempt (in memory) and
// starts its start-to-close and heartbeat timers. Stale items return nil.
func (e *Engine) startStep(ctx context.Context, it *stepItem, identity string) (*api.StepTask, error) {
	s := e.local(e.shardID(it.run.Namespace, it.run.WorkflowID))
	if s == nil {
		return nil, nil // the shard moved; its new owner offers the step
	}
	var st *api.StepTask
	err := s.withRun(ctx, it.run, func(r *run) error {
		x := r.exec
		info, ok := currentAttempt(x, it.seq, it.attempt)
		if !ok {
			return nil
		}
		if r.isPaused() {
			r.hold(it) // offered before the pause: offered again on resume
			return nil
		}
		if sr := r.steps[it.seq]; sr != nil {
			if sr.attempt == it.attempt {
				return nil // started already
			}
			sr.stop() // an earlier attempt whose end memory missed
		}
		input, err := e.resolve(ctx, s.id, r.key, it.input)
		if err != nil {
			return err
		}
		details, err := e.resolve(ctx, s.id, r.key, info.HeartbeatDetails)
		if err != nil {
			return err
		}
		now := time.Now()
		sr := r.startAttempt(it, info, e.nonce.Add(1), identity, now)
		deadline := attemptDeadline(info, now)
		st = &api.StepTask{
			Token: encodeToken(&stepToken{Run: r.key, Seq: it.seq, Attempt: it.attempt, Nonce: sr.nonce}),
			Run:   r.key, WorkflowType: x.Info.Type, Seq: it.seq, Name: info.Name, Input: input, Attempt: it.attempt,
			IdempotencyKey: info.IdempotencyKey, ScheduledTime: info.ScheduledTime, StartedTime: store.Time(now),
			Deadline: deadline, HeartbeatTimeout: info.Heartbeat, HeartbeatDetails: details, AutoHeartbeat: info.AutoHeartbeat,
			Redelivered: it.redelivered,
		}
		return nil
	})
	return st, err
}

// startAttempt records in memory that a worker runs attempt it of a step
// and starts the attempt's start-to-close, heartbeat and checkpoint timers.
func (r *run) startAttempt(it *stepItem, info store.StepInfo, nonce int64, identity string, now time.Time) *stepRun {
	s := r.s
	sr := &stepRun{item: it, attempt: it.attempt, nonce: nonce, started: now, worker: identity}
	seq := it.seq
	if info.StartToClose > 0 {
		// now is the attempt's start: earlier than the present for an
		// attempt claimed back after its shard moved.
		left := max(info.StartToClose-time.Since(now), 0)
		sr.s2c = s.afterFunc(left, func(ctx context.Context) { r.stepTimedOut(ctx, seq, nonce, api.TimeoutStartToClose) })
	}
	if info.Heartbeat > 0 {
		sr.hb = s.afterFunc(info.Heartbeat, func(ctx context.Context) { r.stepTimedOut(ctx, seq, nonce, api.TimeoutHeartbeat) })
	}
	sr.ckpt = s.afterFunc(s.e.opts.stepCheckpoint, func(ctx context.Context) { r.checkpointStep(ctx, seq, nonce) })
	delete(r.held, seq)
	put(&r.steps, seq, sr)
	return sr
}

// attemptDeadline is when an attempt started at now must end: its
// start-to-close or its schedule-to-close, whichever comes first.
func attemptDeadline(info store.StepInfo, now time.Time) time.Time {
	var deadline time.Time
	if info.StartToClose > 0 {
		deadline = now.Add(info.StartToClose)
	}
	if info.ScheduleToClose > 0 {
		if d := info.ScheduledTime.Add(info.ScheduleToClose); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	return deadline
}

// withStep runs f on a step named by a token, inside a transition of its
// run, on the node that serves the run (remote when that is another);
// ErrTaskNotFound when the attempt is no longer open.
func (e *Engine) withStep(ctx context.Context, token []byte, f func(r *run, t *txn, tok stepToken, info store.StepInfo) (<-chan error, error), remote func(context.Context, api.Peer) error) error {
	var tok stepToken
	if err := decodeToken(token, &tok); err != nil {
		return err
	}
	return e.route(ctx, tok.Run.Namespace, tok.Run.WorkflowID, func(s *shard) error {
		return e.withStepOn(ctx, s, tok, f)
	}, remote)
}

func (e *Engine) withStepOn(ctx context.Context, s *shard, tok stepToken, f func(r *run, t *txn, tok stepToken, info store.StepInfo) (<-chan error, error)) error {
	var wait <-chan error
	err := s.withRun(ctx, tok.Run, func(r *run) error {
		t, err := r.tx(ctx)
		if err != nil {
			return err
		}
		info, ok := currentAttempt(t.exec, tok.Seq, tok.Attempt)
		sr := r.steps[tok.Seq]
		if !ok || (sr != nil && sr.attempt == tok.Attempt && sr.nonce != tok.Nonce) {
			return fmt.Errorf("%w: step #%d attempt %d of %s", api.ErrTaskNotFound, tok.Seq, tok.Attempt, r.key)
		}
		wait, err = f(r, t, tok, info)
		return err
	})
	if err != nil {
		if errors.Is(err, api.ErrNotFound) {
			return fmt.Errorf("%w: %v", api.ErrTaskNotFound, err)
		}
		return err
	}
	return s.await(ctx, wait)
}

// CompleteStep implements api.Service.
func (e *Engine) CompleteStep(ctx context.Context, req api.CompleteStepRequest) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if err := api.CheckAuditDetails("details", req.Details); err != nil {
		return err
	}
	return e.withStep(ctx, req.Token, func(r *run, t *txn, tok stepToken, info store.StepInfo) (<-chan error, error) {
		pl, err := t.payload(r.key, req.Result)
		if err != nil {
			return nil, err
		}
		details, err := t.details(r.key, req.Details)
		if err != nil {
			return nil, err
		}
		t.event(api.Event{Type: api.EventStepCompleted, Seq: tok.Seq, Name: info.Name, Attempt: info.Attempt, Payload: api.Payload(pl), Identity: req.Identity,
			AttemptStarted: r.attemptStarted(tok.Seq), Details: details})
		delete(t.exec.Steps, tok.Seq)
		t.onCommit(func() { r.forgetStep(tok.Seq) })
		return r.deliver(ctx, t)
	}, func(ctx context.Context, p api.Peer) error { return p.CompleteStep(ctx, req) })
}

// FailStep implements api.Service: the attempt is retried by the step's
// policy, or the step fails.
func (e *Engine) FailStep(ctx context.Context, req api.FailStepRequest) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if req.Failure == nil {
		return api.InvalidArgument("failure", "missing")
	}
	if err := api.CheckAuditDetails("details", req.Details); err != nil {
		return err
	}
	return e.withStep(ctx, req.Token, func(r *run, t *txn, tok stepToken, info store.StepInfo) (<-chan error, error) {
		details, err := t.details(r.key, req.Details)
		if err != nil {
			return nil, err
		}
		return r.failAttempt(ctx, t, tok.Seq, req.Failure, req.Identity, details)
	}, func(ctx context.Context, p api.Peer) error { return p.FailStep(ctx, req) })
}

// HeartbeatStep implements api.Service.
func (e *Engine) HeartbeatStep(ctx context.Context, req api.HeartbeatRequest) (api.HeartbeatResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.HeartbeatResponse{}, err
	}
	var tok stepToken
	if err := decodeToken(req.Token, &tok); err != nil {
		return api.HeartbeatResponse{}, err
	}
	return routeCall(ctx, e, tok.Run.Namespace, tok.Run.WorkflowID, req,
		func(s *shard) (api.HeartbeatResponse, error) {
			return api.HeartbeatResponse{}, e.heartbeatOn(ctx, s, tok, req)
		}, api.Peer.HeartbeatStep)
}

func (e *Engine) heartbeatOn(ctx context.Context, s *shard, tok stepToken, req api.HeartbeatRequest) error {
	err := s.withCommittedRun(ctx, tok.Run, func(r *run) error {
		info, ok := r.exec.Steps[tok.Seq]
		sr := r.steps[tok.Seq]
		if f := r.flight; f != nil && f.tx != nil {
			info, ok = f.tx.exec.Steps[tok.Seq]
		}
		if !ok || r.exec.State == store.StateClosed || info.Attempt != tok.Attempt || (sr != nil && sr.attempt == tok.Attempt && sr.nonce != tok.Nonce) {
			return fmt.Errorf("%w: step #%d attempt %d of %s", api.ErrTaskNotFound, tok.Seq, tok.Attempt, r.key)
		}
		if it := r.held[tok.Seq]; sr == nil && it != nil && it.attempt == tok.Attempt {
			// The attempt's worker outlived the shard's move: it keeps it,
			// until its start-to-close from when it started (when known).
			started := time.Now()
			if !it.started.IsZero() && it.started.Before(started) {
				started = it.started
			}
			sr = r.startAttempt(it, info, tok.Nonce, "", started)
		}
		if sr == nil || sr.attempt != tok.Attempt {
			return nil
		}
		sr.beat = time.Now()
		sr.details = req.Details
		if sr.hb != nil {
			sr.hb.Reset(info.Heartbeat)
		}
		return nil
	})
	if errors.Is(err, api.ErrNotFound) {
		err = fmt.Errorf("%w: %v", api.ErrTaskNotFound, err)
	}
	return err
}

// stepTimedOut fails a started attempt whose start-to-close or heartbeat
// timeout fired.
func (r *run) stepTimedOut(ctx context.Context, seq, nonce int64, kind string) {
	r.s.onRun(ctx, r.key, func(r *run) {
		sr := r.steps[seq]
		if sr == nil || sr.nonce != nonce {
			return
		}
		t, err := r.tx(ctx)
		if err != nil {
			return
		}
		if _, ok := t.exec.Steps[seq]; !ok {
			return
		}
		f := &api.Failure{Kind: api.KindTimeout, Type: kind, Message: kind + " timeout", Details: sr.details}
		if _, err := r.failAttempt(ctx, t, seq, f, "", nil); err != nil && ctx.Err() == nil {
			r.s.log.Warn("step timeout", "run", r.key.String(), "seq", seq, "err", err)
		}
	})
}

// checkpointStep writes the dispatch of a running attempt anew as a new
// transfer task; offerStep then acknowledges the old one. The transfer ack
// level stops at the oldest unacknowledged task, so without this one step
// running for hours would keep every later task from being deleted (and
// in the ack tracker's memory) all that time. A new owner offers the
// attempt again from the new task, as it would have from the old.
func (r *run) checkpointStep(ctx context.Context, seq, nonce int64) {
	r.s.onRun(ctx, r.key, func(r *run) {
		sr := r.steps[seq]
		if sr == nil || sr.nonce != nonce {
			return // the attempt ended
		}
		sr.ckpt = r.s.afterFunc(r.s.e.opts.stepCheckpoint, func(ctx context.Context) { r.checkpointStep(ctx, seq, nonce) })
		t, err := r.tx(ctx)
		if err != nil {
			return
		}
		info, ok := currentAttempt(t.exec, seq, sr.attempt)
		if !ok {
			return
		}
		// The checkpoint records when the attempt started: a node that
		// recovers it waits for its start-to-close from then.
		t.transfer(transferStep, r.key, &taskData{Seq: seq, Attempt: info.Attempt, Name: info.Name, Queue: info.Queue, Priority: info.Priority, Input: sr.item.input,
			Started: store.Time(sr.started)})
		if err := r.commit(ctx, t); err != nil && ctx.Err() == nil {
			r.s.log.Warn("checkpoint a running step", "run", r.key.String(), "seq", seq, "err", err)
		}
	})
}

// failAttempt records a failed attempt, with the audit details its code
// attached: a retry after back-off when the policy allows one, otherwise
// the step's failure.
func (r *run) failAttempt(ctx context.Context, t *txn, seq int64, f *api.Failure, identity string, details []api.EventDetail) (<-chan error, error) {
	info := t.exec.Steps[seq]
	var heartbeat []byte
	if sr := r.steps[seq]; sr != nil {
		heartbeat = sr.details
	}
	delay := backoffDelay(info.Retry, info.Attempt+1)
	if retryable(info, f, t.now, delay) {
		t.event(api.Event{Type: api.EventStepAttemptFailed, Seq: seq, Name: info.Name, Attempt: info.Attempt, Failure: f, Identity: identity,
			AttemptStarted: r.attemptStarted(seq), Details: details})
		info.LastFailure = f.Message
		info.Attempt++
		info.RetryAt = store.Time(t.now.Add(delay))
		if heartbeat != nil {
			pl, err := t.payload(r.key, heartbeat)
			if err != nil {
				return nil, err
			}
			info.HeartbeatDetails = pl
		}
		t.exec.Steps[seq] = info
		t.timer(timerStepRetry, info.RetryAt, &taskData{Seq: seq, Attempt: info.Attempt})
		t.onCommit(func() { r.forgetStep(seq) })
		return nil, r.commit(ctx, t)
	}
	r.finishStep(t, seq, info, f, identity, details)
	return r.deliver(ctx, t)
}

// attemptStarted is when the running attempt of step seq began, as this
// node saw it start (zero when it did not: the attempt never started, or
// an earlier node started it).
func (r *run) attemptStarted(seq int64) time.Time {
	if sr := r.steps[seq]; sr != nil {
		return store.Time(sr.started)
	}
	return time.Time{}
}

// finishStep records that a step failed for good, with the audit details
// its last attempt attached.
func (r *run) finishStep(t *txn, seq int64, info store.StepInfo, f *api.Failure, identity string, details []api.EventDetail) {
	typ := api.EventStepFailed
	if f.Kind == api.KindTimeout {
		typ = api.EventStepTimedOut
	}
	t.event(api.Event{Type: typ, Seq: seq, Name: info.Name, Attempt: info.Attempt, Identity: identity, AttemptStarted: r.attemptStarted(seq),
		Failure: &api.Failure{Kind: api.KindStep, Message: f.Message, Step: info.Name, Seq: seq, Attempt: info.Attempt, Cause: f}, Details: details})
	delete(t.exec.Steps, seq)
	t.onCommit(func() { r.forgetStep(seq) })
}

// retryable says whether a failed attempt is tried again after delay.
func retryable(info store.StepInfo, f *api.Failure, now time.Time, delay time.Duration) bool {
	if f.NonRetryable || (f.Kind == api.KindTimeout && f.Type == api.TimeoutScheduleToStart) {
		return false
	}
	if p := info.Retry; p != nil {
		if slices.Contains(p.NonRetryableTypes, f.Type) || (len(p.RetryableTypes) > 0 && !slices.Contains(p.RetryableTypes, f.Type)) {
			return false
		}
		if p.MaximumAttempts > 0 && info.Attempt >= p.MaximumAttempts {
			return false
		}
	}
	if info.ScheduleToClose > 0 && !now.Add(delay).Before(info.ScheduledTime.Add(info.ScheduleToClose)) {
		return false
	}
	return true
}

// stepInput reads a step's input from its StepScheduled event.
func (r *run) stepInput(ctx context.Context, info store.StepInfo) (store.Payload, error) {
	page, err := r.s.e.store.ReadHistory(ctx, store.ReadHistoryRequest{ShardID: r.s.id, Run: r.key, FromEventID: info.ScheduledEventID, PageSize: 1})
	if err != nil {
		return store.Payload{}, fmt.Errorf("engine: read input of step %s of %s: %w", info.Name, r.key, err)
	}
	for _, b := range page.Blocks {
		evs, err := api.DecodeEvents(b.Events, b.FirstEventID, b.LastEventID)
		if err != nil {
			return store.Payload{}, err
		}
		for _, ev := range evs {
			if ev.ID == info.ScheduledEventID {
				return store.Payload(ev.Payload), nil
			}
		}
	}
	return store.Payload{}, fmt.Errorf("%w: event %d of %s", api.ErrCorruptHistory, info.ScheduledEventID, r.key)
}
