package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// A flight is a workflow task handed to a worker. When the task was handed
// eagerly (a worker was already waiting), its inputs are not committed yet:
// tx holds them and they are written with the task's commands in one batch,
// or alone once EagerCommitDelay passes; the callers that caused them wait
// in waiters.
type flight struct {
	nonce   int64
	task    *api.WorkflowTask
	tx      *txn
	waiters []chan error
	timeout *time.Timer
	eager   *time.Timer
}

// wtToken identifies a workflow task (or a query) for its completion.
type wtToken struct {
	Run   store.RunKey `json:"run"`
	Nonce int64        `json:"n,omitempty"`
	Query string       `json:"q,omitempty"`
}

func (t *wtToken) run() store.RunKey { return t.Run }

// wtOffer is a pending workflow task waiting in a queue; the worker that
// takes it claims it from the run. It goes first to a worker polling with
// sticky (api.PollRequest.Sticky), the one that took the run's last task.
type wtOffer struct {
	run    store.RunKey
	sticky string
}

func (r *run) workflowQueue(x *store.Execution) queueKey {
	return queueKey{ns: r.key.Namespace, name: queueOrDefault(x.Info.Queue), kind: workflowQueue}
}

// tx starts a transition, first committing the inputs of an eager flight
// so that every transition builds on committed state.
func (r *run) tx(ctx context.Context) (*txn, error) {
	if f := r.flight; f != nil && f.tx != nil {
		if err := r.flushFlight(ctx); err != nil {
			return nil, err
		}
	}
	return r.begin(), nil
}

// requestTask is called when t adds inputs. It hands them to a worker that
// is waiting now (eager: t stays uncommitted and becomes the flight's) or
// makes the run's workflow task pending. It reports whether t went eager.
func (r *run) requestTask(t *txn, eager bool) bool {
	x := t.exec
	if x.State == store.StateClosed || t.buffer || x.Task.Pending || r.retry != nil {
		return false
	}
	if eager && x.Paused == nil {
		if p := r.s.e.match.takeWaitingPoller(r.workflowQueue(x), r.sticky); p != nil {
			r.sticky = p.sticky
			var inputs []api.Event
			for _, e := range t.events {
				if e.Type.IsInput() {
					inputs = append(inputs, e)
				}
			}
			p.ch <- r.newFlight(x, inputs, t)
			return true
		}
	}
	x.Task.Pending = true
	t.transfer(transferWorkflowTask, r.key, &taskData{})
	return false
}

// deliver commits t, which added inputs, or hands it to a waiting worker;
// then the returned channel reports the commit.
func (r *run) deliver(ctx context.Context, t *txn) (<-chan error, error) {
	if t.inputs > 0 && r.requestTask(t, len(t.part.requests) == 0) {
		ch := make(chan error, 1)
		r.flight.waiters = append(r.flight.waiters, ch)
		return ch, nil
	}
	return nil, r.commit(ctx, t)
}

// await waits for a channel deliver returned. When the shard stops first
// (it moves to another node) with the inputs still in a worker's hands,
// nothing was written: once the shard's committer has ended (so no commit
// of them can come later), the caller gets errNotOwner and may try again
// at the new owner.
func (s *shard) await(ctx context.Context, ch <-chan error) error {
	if ch == nil {
		return nil
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctxDone():
	}
	// A commit the stop caught in progress still reports.
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopped:
	}
	select {
	case err := <-ch:
		return err
	default:
		return fmt.Errorf("%w: shard %d stopped before the inputs were committed", errNotOwner, s.id)
	}
}

// newFlight hands a workflow task with events to a worker.
func (r *run) newFlight(x *store.Execution, events []api.Event, tx *txn) *api.WorkflowTask {
	e := r.s.e
	f := &flight{nonce: e.nonce.Add(1), tx: tx}
	var docs []store.Document
	if tx != nil {
		docs = tx.part.docs
	}
	f.task = &api.WorkflowTask{
		Token: encodeToken(&wtToken{Run: r.key, Nonce: f.nonce}), Run: r.key, WorkflowType: x.Info.Type,
		PrevEventID: x.Task.LastEventID, Events: forWorker(events, docs), Time: time.Now().UTC(), Timeout: e.opts.WorkflowTaskTimeout,
	}
	r.flight = f
	f.timeout = r.s.afterFunc(e.opts.WorkflowTaskTimeout, func(ctx context.Context) {
		r.s.onRun(ctx, r.key, func(r *run) {
			if r.flight == f {
				r.expireFlight(ctx)
			}
		})
	})
	if tx != nil {
		f.eager = r.s.afterFunc(e.opts.EagerCommitDelay, func(ctx context.Context) {
			r.s.onRun(ctx, r.key, func(r *run) {
				if r.flight == f && f.tx != nil {
					if err := r.flushFlight(ctx); err != nil && ctx.Err() == nil {
						r.s.log.Warn("commit eager inputs", "run", r.key.String(), "err", err)
					}
				}
			})
		})
	}
	return f.task
}

// forWorker returns events as a workflow task hands them to a worker:
// references to documents not written yet replaced by their bytes
// (references to stored documents are resolved by the worker's history
// reads and by resolveEvents), and without audit details, which replay
// does not read. events is not changed.
func forWorker(events []api.Event, docs []store.Document) []api.Event {
	if len(docs) == 0 && !slices.ContainsFunc(events, func(ev api.Event) bool { return len(ev.Details) > 0 }) {
		return events
	}
	out := make([]api.Event, len(events))
	for i, ev := range events {
		if ev.Payload.Doc != nil {
			for _, d := range docs {
				if d.ID == ev.Payload.Doc.ID {
					ev.Payload = api.Payload{Data: d.Data}
				}
			}
		}
		ev.Details = nil
		out[i] = ev
	}
	return out
}

// resolveEvents replaces the document references of the events' payloads
// (payloads) and of their audit details (details) by the documents' bytes.
func (e *Engine) resolveEvents(ctx context.Context, shardID int32, run store.RunKey, events []api.Event, payloads, details bool) ([]api.Event, error) {
	var out []api.Event
	load := func(i int) error {
		if out == nil {
			out = append([]api.Event(nil), events...)
		}
		ev := &out[i]
		if payloads && ev.Payload.Doc != nil {
			data, err := e.resolve(ctx, shardID, run, store.Payload(ev.Payload))
			if err != nil {
				return err
			}
			ev.Payload = api.Payload{Data: data}
		}
		if details {
			ev.Details = slices.Clone(ev.Details)
			for j, d := range ev.Details {
				if d.Value.Doc == nil {
					continue
				}
				data, err := e.resolve(ctx, shardID, run, store.Payload(d.Value))
				if err != nil {
					return fmt.Errorf("audit detail %q of event %d: %w", d.Name, ev.ID, err)
				}
				ev.Details[j].Value = api.Payload{Data: data}
			}
		}
		return nil
	}
	for i, ev := range events {
		if (payloads && ev.Payload.Doc != nil) || (details && hasDetailDocs(ev)) {
			if err := load(i); err != nil {
				return nil, err
			}
		}
	}
	if out == nil {
		return events, nil
	}
	return out, nil
}

// hasDetailDocs reports whether an audit detail of ev is a document.
func hasDetailDocs(ev api.Event) bool {
	return slices.ContainsFunc(ev.Details, func(d api.EventDetail) bool { return d.Value.Doc != nil })
}

// flushFlight commits an eager flight's inputs alone: the worker is taking
// longer than EagerCommitDelay, or another transition needs the run.
func (r *run) flushFlight(ctx context.Context) error {
	f := r.flight
	t := f.tx
	f.tx = nil
	if f.eager != nil {
		f.eager.Stop()
	}
	t.exec.Task.Pending = true
	t.transfer(transferWorkflowTask, r.key, &taskData{})
	waiters := f.waiters
	f.waiters = nil
	err := r.commit(ctx, t)
	for _, w := range waiters {
		w <- err
	}
	if err != nil {
		r.dropFlight(fmt.Errorf("%w: inputs not committed: %v", api.ErrTaskNotFound, err))
	}
	return err
}

// dropFlight forgets the flight; its uncommitted inputs (if any) are lost
// and their callers get err.
func (r *run) dropFlight(err error) {
	f := r.flight
	if f == nil {
		return
	}
	r.flight = nil
	f.timeout.Stop()
	if f.eager != nil {
		f.eager.Stop()
	}
	for _, w := range f.waiters {
		w <- err
	}
}

// expireFlight gives up on a worker that held a task too long.
func (r *run) expireFlight(ctx context.Context) {
	r.s.log.Warn("workflow task timed out", "run", r.key.String())
	r.takeBack(ctx)
}

// takeBack offers the flight's task again (its inputs, when not committed
// yet, are committed first); the worker that held it gets task_not_found.
func (r *run) takeBack(ctx context.Context) {
	if r.flight.tx != nil {
		if err := r.flushFlight(ctx); err != nil {
			return
		}
	}
	r.dropFlight(api.ErrTaskNotFound)
	r.dispatchWT()
}

// dispatchWT hands the pending workflow task to a waiting worker, or puts
// it into its queue.
func (r *run) dispatchWT() {
	x := r.exec
	if x == nil || x.State == store.StateClosed || !x.Task.Pending || r.flight != nil || r.retry != nil || x.Paused != nil {
		return
	}
	if !x.Task.NotBefore.IsZero() && time.Now().Before(x.Task.NotBefore) {
		return
	}
	if r.inputsLoaded && len(x.BufferedEvents) == 0 {
		if p := r.s.e.match.takeWaitingPoller(r.workflowQueue(x), r.sticky); p != nil {
			if !hasDocs(r.inputs) {
				r.sticky = p.sticky
				p.ch <- r.newFlight(x, r.inputs, nil)
				return
			}
			p.ch <- &wtOffer{run: r.key}
			return
		}
	}
	r.s.e.match.offer(r.workflowQueue(x), x.Info.Priority, &wtOffer{run: r.key, sticky: r.sticky})
}

func hasDocs(events []api.Event) bool {
	for _, e := range events {
		if e.Payload.Doc != nil {
			return true
		}
	}
	return false
}

// claim turns a queued workflow task into a flight, or returns nil when it
// is stale (taken already, or the run closed).
func (r *run) claim(ctx context.Context) (*api.WorkflowTask, error) {
	x := r.exec
	if x.State == store.StateClosed || !x.Task.Pending || r.flight != nil || r.retry != nil || x.Paused != nil {
		return nil, nil
	}
	if !x.Task.NotBefore.IsZero() && time.Now().Before(x.Task.NotBefore) {
		return nil, nil
	}
	if len(x.BufferedEvents) > 0 {
		t := r.begin()
		if err := t.flushBuffered(); err != nil {
			return nil, err
		}
		if err := r.commit(ctx, t); err != nil {
			return nil, err
		}
	}
	if err := r.loadInputs(ctx); err != nil {
		return nil, err
	}
	events, err := r.s.e.resolveEvents(ctx, r.s.id, r.key, r.inputs, true, false)
	if err != nil {
		return nil, err
	}
	return r.newFlight(r.exec, events, nil), nil
}

// flushBuffered moves the inputs buffered during a flight into history.
func (t *txn) flushBuffered() error {
	buffered := t.exec.BufferedEvents
	t.exec.BufferedEvents = nil
	t.buffer = false
	for _, b := range buffered {
		var e api.Event
		if err := api.UnmarshalStored(b, &e); err != nil {
			return fmt.Errorf("engine: decode buffered event of %s: %w", t.r.key, err)
		}
		t.event(e)
	}
	return nil
}

// PollWorkflowTask implements api.Service.
func (e *Engine) PollWorkflowTask(ctx context.Context, req api.PollRequest) (*api.WorkflowTask, error) {
	if err := store.CheckLimits(&req); err != nil {
		return nil, err
	}
	return e.pollWorkflowTask(ctx, req, true)
}

// pollWorkflowTask polls for a worker, or for another node's leg.
func (e *Engine) pollWorkflowTask(ctx context.Context, req api.PollRequest, worker bool) (*api.WorkflowTask, error) {
	k, err := e.pollQueue(ctx, req, workflowQueue)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil // the poll's time ran out while it looked: it found nothing
		}
		return nil, err
	}
	for {
		switch it := e.next(ctx, k, worker, req.Identity, req.Sticky, nil, !req.NoWait).(type) {
		case nil:
			return nil, nil
		case *api.WorkflowTask:
			return it, nil
		case *pendingQuery:
			if e.queryLive(it) {
				it.taken.Store(true)
				return it.task, nil
			}
			// withdrawn as it was taken
		case *wtOffer:
			var wt *api.WorkflowTask
			s := e.local(e.shardID(it.run.Namespace, it.run.WorkflowID))
			if s == nil {
				continue // the shard moved; its new owner offers the task
			}
			err := s.withRun(ctx, it.run, func(r *run) error {
				var err error
				wt, err = r.claim(ctx)
				if wt != nil {
					r.sticky = req.Sticky // "" for another node's leg: its worker is not known
				}
				return err
			})
			if err != nil {
				if ctx.Err() != nil {
					e.match.requeue(k, api.PriorityHighest, it)
					return nil, nil
				}
				if !errors.Is(err, api.ErrNotFound) {
					e.log.Warn("claim workflow task", "run", it.run.String(), "err", err)
				}
				continue
			}
			if wt != nil {
				return wt, nil
			}
		}
	}
}

// CompleteWorkflowTask implements api.Service: it records the task's
// commands, with the inputs the task was handed if they are not committed
// yet, in one batch.
func (e *Engine) CompleteWorkflowTask(ctx context.Context, req api.CompleteWorkflowTaskRequest) (api.CompleteWorkflowTaskResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.CompleteWorkflowTaskResponse{}, err
	}
	if err := api.CheckAuditDetails("details", req.Details); err != nil {
		return api.CompleteWorkflowTaskResponse{}, err
	}
	var tok wtToken
	if err := decodeToken(req.Token, &tok); err != nil {
		return api.CompleteWorkflowTaskResponse{}, err
	}
	if err := validateCommands(req.Commands); err != nil {
		return api.CompleteWorkflowTaskResponse{}, err
	}
	return routeCall(ctx, e, tok.Run.Namespace, tok.Run.WorkflowID, req,
		func(s *shard) (api.CompleteWorkflowTaskResponse, error) { return e.completeWTOn(ctx, s, tok, req) }, api.Peer.CompleteWorkflowTask)
}

func (e *Engine) completeWTOn(ctx context.Context, s *shard, tok wtToken, req api.CompleteWorkflowTaskRequest) (api.CompleteWorkflowTaskResponse, error) {
	var resp api.CompleteWorkflowTaskResponse
	err := s.withRun(ctx, tok.Run, func(r *run) error {
		f := r.flight
		if f == nil || f.nonce != tok.Nonce || tok.Nonce == 0 {
			return fmt.Errorf("%w: workflow task of %s", api.ErrTaskNotFound, r.key)
		}
		if f.tx == nil && len(r.exec.BufferedEvents) > 0 && closes(req.Commands) {
			return r.rejectClose(ctx)
		}
		first := r.exec == nil || r.exec.Task.LastEventID == 0 // nil: the task starts the run
		t := f.tx
		if t == nil {
			t = r.begin()
		}
		t.buffer = false
		// The event carries the task's time, the workflow's "now" while it
		// ran, so that a replay runs the code at that same time.
		details, err := t.details(r.key, req.Details)
		if err != nil {
			return err
		}
		t.eventAt(api.Event{Type: api.EventWorkflowTaskCompleted, Identity: req.Identity, Details: details}, f.task.Time)
		if err := r.applyCommands(ctx, t, req.Commands); err != nil {
			return err
		}
		if t.exec.State != store.StateClosed && !strings.HasPrefix(t.exec.Info.Type, ownPrefix) {
			if reason := e.historyOverQuota(ctx, r.key.Namespace, t.lastEventID()); reason != "" {
				if err := t.closeFromOutside(api.Event{Type: api.EventWorkflowTerminated, Reason: reason, Identity: "strand: quota"},
					store.StatusTerminated, &api.Failure{Kind: api.KindTerminated, Message: reason}); err != nil {
					return err
				}
			}
		}
		x := t.exec
		resp.LastEventID = t.lastEventID()
		x.Task = store.WorkflowTaskInfo{LastEventID: resp.LastEventID}
		if x.State != store.StateClosed {
			before := t.inputs
			if err := t.flushBuffered(); err != nil {
				return err
			}
			if t.inputs > before {
				x.Task.Pending = true
				t.transfer(transferWorkflowTask, r.key, &taskData{})
			}
		}
		old := r.wtTask
		r.wtTask = store.TaskKey{}
		waiters := f.waiters
		f.waiters = nil
		r.dropFlight(nil)
		creating := t.expected == 0
		err = r.commit(ctx, t)
		if err == nil {
			r.s.ackTransfer(old)
			if first {
				r.wake() // queries waiting for the workflow's handlers
			}
		} else if r.wtTask.TaskID == 0 {
			r.wtTask = old
		}
		for _, w := range waiters {
			w <- err
		}
		if err != nil && creating {
			// The start this task was handed with failed (its caller has
			// the reason): for the worker the task is gone.
			return fmt.Errorf("%w: the run's start was refused: %v", api.ErrTaskNotFound, err)
		}
		return err
	})
	return resp, err
}

// closes reports whether a task's commands close the run.
func closes(cmds []api.Command) bool {
	if len(cmds) == 0 {
		return false
	}
	switch cmds[len(cmds)-1].Type {
	case api.CommandComplete, api.CommandFail, api.CommandCancel, api.CommandContinueAsNew:
		return true
	}
	return false
}

// rejectClose refuses a task that closes the run while inputs it has not
// seen (a signal, a step's result) wait in the buffer: nothing of the task
// is recorded, the inputs go to history and the task runs again with them,
// so an acknowledged signal is never dropped by a closing workflow. The
// worker is told the task is gone and replays.
func (r *run) rejectClose(ctx context.Context) error {
	r.dropFlight(nil)
	t := r.begin()
	if err := t.flushBuffered(); err != nil {
		return err
	}
	t.exec.Task.Pending = true
	if r.wtTask.TaskID == 0 {
		t.transfer(transferWorkflowTask, r.key, &taskData{})
	}
	if err := r.commit(ctx, t); err != nil {
		return err
	}
	r.dispatchWT()
	return fmt.Errorf("%w: new inputs arrived while the workflow closed; the task runs again with them", api.ErrTaskNotFound)
}

// FailWorkflowTask implements api.Service: the run keeps waiting and the
// task is offered again after a back-off; the first failure of a series is
// recorded in history.
func (e *Engine) FailWorkflowTask(ctx context.Context, req api.FailWorkflowTaskRequest) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if req.Failure == nil {
		return api.InvalidArgument("failure", "missing")
	}
	var tok wtToken
	if err := decodeToken(req.Token, &tok); err != nil {
		return err
	}
	return e.route(ctx, tok.Run.Namespace, tok.Run.WorkflowID, func(s *shard) error {
		return e.failWTOn(ctx, s, tok, req)
	}, func(ctx context.Context, p api.Peer) error { return p.FailWorkflowTask(ctx, req) })
}

func (e *Engine) failWTOn(ctx context.Context, s *shard, tok wtToken, req api.FailWorkflowTaskRequest) error {
	return s.withRun(ctx, tok.Run, func(r *run) error {
		f := r.flight
		if f == nil || f.nonce != tok.Nonce || tok.Nonce == 0 {
			return fmt.Errorf("%w: workflow task of %s", api.ErrTaskNotFound, r.key)
		}
		if f.tx != nil {
			if err := r.flushFlight(ctx); err != nil {
				return err
			}
		}
		r.dropFlight(nil)
		t := r.begin()
		if err := t.flushBuffered(); err != nil {
			return err
		}
		if t.exec.Task.Attempt == 0 {
			t.event(api.Event{Type: api.EventWorkflowTaskFailed, Failure: req.Failure, Identity: req.Identity, Reason: req.Failure.Kind})
		}
		t.exec.Task.Attempt++
		t.exec.Task.FailedCause, _ = api.MarshalStored(req.Failure)
		attempt := t.exec.Task.Attempt
		if err := r.commit(ctx, t); err != nil {
			return err
		}
		d := min(100*time.Millisecond<<min(attempt-1, 10), 10*time.Second)
		r.s.log.Warn("workflow task failed; retrying", "run", r.key.String(), "attempt", attempt, "in", d, "failure", req.Failure.Message)
		var tm *time.Timer
		tm = r.s.afterFunc(d, func(ctx context.Context) {
			r.s.onRun(ctx, r.key, func(r *run) {
				if r.retry == tm {
					r.retry = nil
					r.dispatchWT()
				}
			})
		})
		r.retry = tm
		return nil
	})
}

// onRun runs f with the run locked and loaded; errors are logged.
func (s *shard) onRun(ctx context.Context, k store.RunKey, f func(r *run)) {
	err := s.withRun(ctx, k, func(r *run) error { f(r); return nil })
	if err != nil && ctx.Err() == nil && !errors.Is(err, api.ErrNotFound) {
		s.log.Warn("run callback", "run", k.String(), "err", err)
	}
}

// QueryWorkflow implements api.Service: a worker answers from the run's
// state after its last completed workflow task. The query waits at most
// Options.QueryTimeout (or the caller's earlier deadline) and is withdrawn
// when that passes or the caller leaves; it fails with api.ErrNoWorker
// when no worker polls the run's workflow queue (Options.QueryPollerWindow).
func (e *Engine) QueryWorkflow(ctx context.Context, req api.QueryRequest) ([]byte, error) {
	if err := store.CheckLimits(&req); err != nil {
		return nil, err
	}
	if req.WorkflowID == "" {
		return nil, api.InvalidArgument("workflow_id", "empty")
	}
	if req.Name == "" {
		return nil, api.InvalidArgument("name", "empty")
	}
	ctx, cancel := context.WithTimeoutCause(ctx, e.opts.QueryTimeout,
		fmt.Errorf("engine: query %q of workflow %s got no answer within %s (the engine's query timeout): %w",
			req.Name, req.WorkflowID, e.opts.QueryTimeout, context.DeadlineExceeded))
	defer cancel()
	return routeCall(ctx, e, req.Namespace, req.WorkflowID, req,
		func(s *shard) ([]byte, error) { return e.queryOn(ctx, s, req) }, api.Peer.QueryWorkflow)
}

// pendingQuery is a query waiting for its answer on the node that serves
// its run; it is the item its query task waits as in the queue.
type pendingQuery struct {
	id     string
	q      queueKey
	task   *api.WorkflowTask
	answer chan api.QueryAnswer // buffered: AnswerQuery never blocks
	// taken: a poller (a worker, or another node's leg) has the task, so
	// the no-worker rule is moot; a leg's node may give it back (release).
	taken atomic.Bool
}

// queryLive reports whether p still waits for its answer.
func (e *Engine) queryLive(p *pendingQuery) bool {
	e.queryMu.Lock()
	defer e.queryMu.Unlock()
	return e.queries[p.id] == p
}

// queryOn offers a query task on the node that serves the run, which the
// answer comes back to. When ctx ends, or no worker polls the run's queue
// for QueryPollerWindow, the query is withdrawn: out of the queue and of
// the pending queries, so its input can go and a late answer finds
// task_not_found.
func (e *Engine) queryOn(ctx context.Context, s *shard, req api.QueryRequest) ([]byte, error) {
	k, err := s.currentRunID(ctx, req.RunRef)
	if err != nil {
		return nil, err
	}
	var q queueKey
	err = s.withRun(ctx, k, func(r *run) error {
		x := r.exec
		if x == nil && r.flight != nil && r.flight.tx != nil {
			x = r.flight.tx.exec // a new run, not committed yet
		}
		if x == nil {
			return fmt.Errorf("%w: run %s", api.ErrNotFound, k)
		}
		q = r.workflowQueue(x)
		return nil
	})
	if err != nil {
		return nil, e.queryEnded(ctx, err)
	}
	if err := e.noWorker(q, req); err != nil {
		return nil, err
	}
	p := &pendingQuery{id: fmt.Sprintf("q%d", e.nonce.Add(1)), q: q, answer: make(chan api.QueryAnswer, 1)}
	ctx, fail := context.WithCancelCause(ctx)
	var watch sync.WaitGroup
	watch.Go(func() { e.watchPollers(ctx, p, req, fail) })
	defer func() {
		fail(nil)
		watch.Wait()
	}()
	err = s.awaitRun(ctx, k, func(r *run) (bool, error) {
		x := r.exec
		if x == nil || x.Task.LastEventID == 0 && x.State != store.StateClosed {
			// No workflow code has run, so no handler is set yet: the
			// query waits for the run's first workflow task.
			return false, nil
		}
		p.task = &api.WorkflowTask{
			Token: encodeToken(&wtToken{Run: k, Query: p.id}), Run: k, WorkflowType: x.Info.Type,
			PrevEventID: x.Task.LastEventID, Query: &req, Time: time.Now().UTC(),
		}
		e.queryMu.Lock()
		e.queries[p.id] = p
		e.queryMu.Unlock()
		e.match.offerQuery(q, p)
		return true, nil
	})
	if err != nil {
		return nil, e.queryEnded(ctx, err)
	}
	select {
	case ans := <-p.answer:
		if ans.Failure != nil {
			return nil, fmt.Errorf("%w: %v", api.ErrQueryFailed, ans.Failure.Err())
		}
		return ans.Result, nil
	case <-ctx.Done():
		e.withdrawQuery(p)
		return nil, e.queryEnded(ctx, ctx.Err())
	}
}

// withdrawQuery forgets a query that will not wait for its answer any
// more and takes its task out of the queue, if no worker took it yet.
func (e *Engine) withdrawQuery(p *pendingQuery) {
	e.queryMu.Lock()
	if e.queries[p.id] == p {
		delete(e.queries, p.id)
	}
	e.queryMu.Unlock()
	e.match.remove(p.q, p)
}

// queryEnded is the error of a query that ended without an answer: why
// its context ended (no worker, the engine's timeout, the caller's
// deadline or leaving), or err when it did not.
func (e *Engine) queryEnded(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, api.ErrNoWorker) || errors.Is(cause, context.DeadlineExceeded) && cause != context.DeadlineExceeded {
		return cause // ours, and says what happened
	}
	return fmt.Errorf("engine: query withdrawn: %w", ctx.Err())
}

// noWorker returns an api.ErrNoWorker error when no worker has polled
// queue q within QueryPollerWindow.
func (e *Engine) noWorker(q queueKey, req api.QueryRequest) error {
	idle := e.match.unpolledFor(q)
	if idle < e.opts.QueryPollerWindow {
		return nil
	}
	return fmt.Errorf("%w polls workflow queue %q of namespace %q (none for %s): query %q of workflow %s not answered",
		api.ErrNoWorker, q.name, q.ns, idle.Round(time.Millisecond), req.Name, req.WorkflowID)
}

// watchPollers ends query p (fail) once its queue has gone
// QueryPollerWindow without a poller while no poller holds p's task; it
// returns when ctx ends.
func (e *Engine) watchPollers(ctx context.Context, p *pendingQuery, req api.QueryRequest, fail context.CancelCauseFunc) {
	t := time.NewTimer(e.opts.QueryPollerWindow - e.match.unpolledFor(p.q))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !p.taken.Load() {
			if err := e.noWorker(p.q, req); err != nil {
				fail(err)
				return
			}
		}
		t.Reset(max(e.opts.QueryPollerWindow-e.match.unpolledFor(p.q), e.opts.QueryPollerWindow/10))
	}
}

// AnswerQuery implements api.Service.
func (e *Engine) AnswerQuery(ctx context.Context, ans api.QueryAnswer) error {
	if err := store.CheckLimits(&ans); err != nil {
		return err
	}
	var tok wtToken
	if err := decodeToken(ans.Token, &tok); err != nil {
		return err
	}
	if e.local(e.shardID(tok.Run.Namespace, tok.Run.WorkflowID)) == nil && !api.Forwarded(ctx) {
		if _, p := e.ownerPeer(e.shardID(tok.Run.Namespace, tok.Run.WorkflowID)); p != nil {
			return p.AnswerQuery(api.WithForwarded(ctx), ans)
		}
	}
	e.queryMu.Lock()
	p := e.queries[tok.Query]
	delete(e.queries, tok.Query)
	e.queryMu.Unlock()
	if p == nil {
		return fmt.Errorf("%w: query %s (answered, or withdrawn: its caller left or its time ran out)", api.ErrTaskNotFound, tok.Query)
	}
	p.answer <- ans
	return nil
}
