package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// run is a run's cached state and what the engine holds of it in memory
// only: its workflow task in flight, its started steps and the callers
// waiting for it to close. Every field is guarded by the run's lock, a
// one-slot semaphore so that waiting for it honours a context.
type run struct {
	s    *shard
	key  store.RunKey
	sem  chan struct{}
	refs int // guarded by s.mu

	loaded bool
	exec   *store.Execution // committed state; nil when the run does not exist
	// inputs are the committed events after exec.Task.LastEventID, while a
	// workflow task is pending; inputsLoaded says they were read.
	inputs       []api.Event
	inputsLoaded bool
	// wtTask is the transfer task of the pending workflow task.
	wtTask store.TaskKey
	flight *flight
	retry  *time.Timer
	// sticky is the api.PollRequest.Sticky of the worker that took the
	// run's last workflow task: the next goes to it first.
	sticky string
	// steps are the started attempts; stepTasks the transfer task of each
	// pending step's current attempt.
	steps     map[int64]*stepRun
	stepTasks map[int64]store.TaskKey
	// held are the attempts that may still run on a worker from before
	// the shard changed hands, waiting for their worker's liveness to be
	// gone (recoveredDue) to be offered again.
	held map[int64]*stepItem
	// paused are the step attempts held while the run is paused (pause.go).
	paused map[int64]*stepItem

	// The cache's bookkeeping (cache.go): size is the run's footprint as
	// its last holder measured it; charged, the LRU links and inLRU are
	// guarded by s.mu.
	size             atomic.Int64
	charged          int64
	lruPrev, lruNext *run
	inLRU            bool
}

func newRun(s *shard, k store.RunKey) *run {
	// The step maps are made when first written: most cached runs are
	// idle, and an empty map costs hundreds of bytes.
	return &run{s: s, key: k, sem: make(chan struct{}, 1)}
}

func (r *run) lock(ctx context.Context) error {
	select {
	case r.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unlock releases the run's lock, measuring first what it holds for the
// cache's budget.
func (r *run) unlock() {
	r.size.Store(r.footprint())
	<-r.sem
}

// load reads the run's state unless it is cached.
func (r *run) load(ctx context.Context) error {
	if !r.loaded {
		exec, err := r.s.e.store.GetExecution(ctx, r.s.id, r.key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r.exec = nil
		case err != nil:
			return fmt.Errorf("engine: load run %s: %w", r.key, err)
		default:
			r.exec = exec
			if exec.State != store.StateClosed {
				r.s.setCurrent(r)
			}
		}
		r.loaded = true
		r.inputs, r.inputsLoaded = nil, false
	}
	if r.exec == nil && (r.flight == nil || r.flight.tx == nil) {
		return fmt.Errorf("%w: run %s", api.ErrNotFound, r.key)
	}
	return nil
}

// invalidate forgets the cached state after a write whose outcome is not
// known: the next use reads it again.
func (r *run) invalidate() {
	r.loaded = false
	r.exec = nil
	r.inputs, r.inputsLoaded = nil, false
	r.dropFlight(fmt.Errorf("%w: run state reloaded", api.ErrTaskNotFound))
	// Started attempts are forgotten with their timers: reoffer hands the
	// attempts the reloaded state still holds to workers again.
	for seq, sr := range r.steps {
		sr.stop()
		delete(r.steps, seq)
	}
	r.wake() // callers waiting for the close look again
}

// reoffer, after invalidate, offers again what the reloaded state says is
// waiting: the workflow task, and every step attempt not backing off.
func (r *run) reoffer(ctx context.Context) {
	x := r.exec
	// Tasks memory held for things the store no longer has are done.
	if (x.State == store.StateClosed || !x.Task.Pending) && r.wtTask.TaskID != 0 {
		r.s.ackTransfer(r.wtTask)
		r.wtTask = store.TaskKey{}
	}
	for seq, k := range r.stepTasks {
		if _, ok := x.Steps[seq]; !ok || x.State == store.StateClosed {
			r.s.ackTransfer(k)
			delete(r.stepTasks, seq)
		}
	}
	r.dispatchWT()
	for seq, info := range r.exec.Steps {
		if !info.RetryAt.IsZero() || r.steps[seq] != nil {
			continue
		}
		input, err := r.stepInput(ctx, info)
		if err != nil {
			r.s.log.Warn("offer step again", "run", r.key.String(), "seq", seq, "err", err)
			continue
		}
		// The attempt may be running on a worker that started it before the
		// state was reloaded.
		r.offerStep(r.stepTasks[seq], &taskData{Seq: seq, Attempt: info.Attempt, Name: info.Name, Queue: info.Queue, Priority: info.Priority, Input: input}, true)
	}
}

// loadInputs reads the committed events after the last processed one.
func (r *run) loadInputs(ctx context.Context) error {
	if r.inputsLoaded {
		return nil
	}
	from := r.exec.Task.LastEventID + 1
	var events []api.Event
	var token []byte
	for from < r.exec.NextEventID {
		page, err := r.s.e.store.ReadHistory(ctx, store.ReadHistoryRequest{ShardID: r.s.id, Run: r.key, FromEventID: from, PageToken: token})
		if err != nil {
			return fmt.Errorf("engine: read history of %s: %w", r.key, err)
		}
		for _, b := range page.Blocks {
			evs, err := api.DecodeEvents(b.Events, b.FirstEventID, b.LastEventID)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if ev.ID >= from {
					events = append(events, ev)
				}
			}
		}
		if token = page.NextPageToken; len(token) == 0 {
			break
		}
	}
	r.inputs, r.inputsLoaded = events, true
	return nil
}

// ---- transactions ----

// txn builds one transition of a run: new events, the new state, and the
// tasks and requests written with them.
type txn struct {
	r        *run
	exec     *store.Execution
	expected int64
	now      time.Time
	events   []api.Event
	// buffer sends input events to exec.BufferedEvents instead of history
	// (a workflow task is in flight).
	buffer    bool
	part      part
	current   store.CurrentMode
	prevRunID string
	// extra are other runs written in the same batch (continue-as-new).
	extra []store.RunWrite
	after []func()
	// inputs counts the input events added.
	inputs int
}

// begin starts a transition of r from its committed state.
func (r *run) begin() *txn {
	t := &txn{r: r, now: store.Now(), current: store.CurrentNone}
	if r.exec != nil {
		t.exec = cloneExecution(r.exec)
		t.expected = r.exec.DBVersion
	}
	t.buffer = r.flight != nil
	return t
}

// event appends an event and returns it with its id. Inputs that arrive
// while a workflow task is in flight are buffered in the state, to be
// written after the task's commands.
func (t *txn) event(e api.Event) {
	e.Time = t.now
	if e.Type.IsInput() {
		t.inputs++
		if t.buffer {
			b, _ := api.MarshalStored(e)
			t.exec.BufferedEvents = append(t.exec.BufferedEvents, b)
			return
		}
	}
	e.ID = t.exec.NextEventID
	t.exec.NextEventID++
	t.events = append(t.events, e)
}

// eventAt adds an event that is not an input, at a time other than the
// transition's.
func (t *txn) eventAt(e api.Event, at time.Time) {
	t.event(e)
	t.events[len(t.events)-1].Time = at
}

// lastEventID is the id of the last event added to history.
func (t *txn) lastEventID() int64 { return t.exec.NextEventID - 1 }

func (t *txn) transfer(typ int16, run store.RunKey, d *taskData) *store.Task {
	task := &store.Task{Category: store.CategoryTransfer, Type: typ, Run: run, Data: encodeTaskData(d)}
	t.part.tasks = append(t.part.tasks, task)
	if typ == transferStep {
		t.part.stepData = append(t.part.stepData, stepTaskData{task, d})
	}
	return task
}

func (t *txn) timer(typ int16, fire time.Time, d *taskData) *store.Task {
	task := &store.Task{Category: store.CategoryTimer, Type: typ, Run: t.r.key, Key: store.TaskKey{FireTime: store.Time(fire)}, Data: encodeTaskData(d)}
	t.part.tasks = append(t.part.tasks, task)
	return task
}

// payload stores data inline or, when large, as a document of run.
func (t *txn) payload(run store.RunKey, data []byte) (store.Payload, error) {
	var b store.Batch
	b.Documents = t.part.docs
	p, err := b.AddPayload(run, data, t.r.s.e.limits)
	t.part.docs = b.Documents
	return p, err
}

// details stores the audit details a worker reported for run's event that
// keeps them: each value inline or, when large, as a document. A name
// given again replaces the earlier value, in its place.
func (t *txn) details(run store.RunKey, in []api.AuditDetail) ([]api.EventDetail, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]api.EventDetail, 0, len(in))
	at := make(map[string]int, len(in))
	for _, d := range in {
		p, err := t.payload(run, d.Value)
		if err != nil {
			return nil, fmt.Errorf("audit detail %q: %w", d.Name, err)
		}
		if i, ok := at[d.Name]; ok {
			out[i].Value = api.Payload(p)
			continue
		}
		at[d.Name] = len(out)
		out = append(out, api.EventDetail{Name: d.Name, Value: api.Payload(p)})
	}
	return out, nil
}

func (t *txn) onCommit(f func()) { t.after = append(t.after, f) }

// write builds the run's RunWrite of t.
func (t *txn) write() (store.RunWrite, error) {
	t.exec.DBVersion = t.expected + 1
	w := store.RunWrite{Execution: t.exec, ExpectedDBVersion: t.expected, Current: t.current, PrevRunID: t.prevRunID}
	if len(t.events) > 0 {
		data, err := api.EncodeEvents(t.events)
		if err != nil {
			return w, err
		}
		w.History = []store.HistoryBlock{{FirstEventID: t.events[0].ID, LastEventID: t.events[len(t.events)-1].ID, Events: data}}
	}
	return w, nil
}

// commit writes t and, once it is durable, makes it the run's state and
// runs its effects. On failure the cached state is dropped when the
// outcome is unknown or the state was stale.
func (r *run) commit(ctx context.Context, t *txn) error {
	w, err := t.write()
	if err != nil {
		return err
	}
	t.part.runs = append([]store.RunWrite{w}, t.extra...)
	err = r.s.commit(ctx, &t.part)
	r.s.currentWritten(r, t.part.runs, err)
	if err != nil {
		if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrOutcomeUnknown) || errors.Is(err, api.ErrUnavailable) {
			r.invalidate()
			// Whatever the store holds now is offered again.
			k, s := r.key, r.s
			s.work.push(func(ctx context.Context) { s.onRun(ctx, k, func(r *run) { r.reoffer(ctx) }) })
		}
		return err
	}
	r.exec = t.exec
	r.loaded = true
	if r.inputsLoaded || t.expected == 0 {
		r.inputs = append(r.inputs, t.events...)
		r.inputsLoaded = true
	}
	i := 0
	for i < len(r.inputs) && r.inputs[i].ID <= r.exec.Task.LastEventID {
		i++
	}
	if i == len(r.inputs) {
		r.inputs = nil // not the emptied array: an idle run holds no events
	} else {
		r.inputs = r.inputs[i:]
	}
	for _, f := range t.after {
		f()
	}
	r.afterTasks(&t.part)
	return nil
}

// afterTasks starts processing the transfer tasks of a commit's part.
func (r *run) afterTasks(p *part) {
	for _, task := range p.tasks {
		if task.Category != store.CategoryTransfer {
			continue
		}
		var d *taskData
		for _, sd := range p.stepData {
			if sd.task == task {
				d = sd.data
			}
		}
		r.s.processNew(r, *task, d)
	}
}

// put sets m[k] = v, making m first when it is nil: maps that most runs
// leave empty are made only when written.
func put[M ~map[K]V, K comparable, V any](m *M, k K, v V) {
	if *m == nil {
		*m = M{}
	}
	(*m)[k] = v
}

// cloneMap clones m; an empty map clones to nil, which costs nothing in
// the many idle runs a cache holds (the writers make the map they need).
func cloneMap[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// convertMemo converts a memo between the API's values and the run
// state's bytes: the same bytes under two types.
func convertMemo[To, From ~[]byte](m map[string]From) map[string]To {
	if m == nil {
		return nil
	}
	out := make(map[string]To, len(m))
	for k, v := range m {
		out[k] = To(v)
	}
	return out
}

func cloneExecution(x *store.Execution) *store.Execution {
	c := *x
	c.Steps = cloneMap(x.Steps)
	c.Timers = cloneMap(x.Timers)
	c.Children = cloneMap(x.Children)
	c.CancelRequests = cloneMap(x.CancelRequests)
	c.Signals = cloneMap(x.Signals)
	c.SignalRequestedIDs = slices.Clone(x.SignalRequestedIDs)
	c.BufferedEvents = slices.Clone(x.BufferedEvents)
	c.Variables = cloneMap(x.Variables)
	if x.Outcome != nil {
		o := *x.Outcome
		c.Outcome = &o
	}
	return &c
}

// closeFromOutside closes the run with ev for a reason outside the
// workflow (a terminate, the run's timeout). Inputs buffered during a
// workflow task in flight were acknowledged to their callers, so they go
// into history first, before ev: the history of a closed run holds every
// input it accepted.
func (t *txn) closeFromOutside(ev api.Event, status store.RunStatus, failure *api.Failure) error {
	if err := t.flushBuffered(); err != nil {
		return err
	}
	t.event(ev)
	t.closeRun(status, store.Payload{}, failure, "")
	return nil
}

// closeRun closes the run in t: its outcome, the effects on its parent and
// children, its visibility record and its retention.
func (t *txn) closeRun(status store.RunStatus, output store.Payload, failure *api.Failure, nextRunID string) {
	x := t.exec
	x.State, x.Status = store.StateClosed, status
	x.Info.CloseTime = t.now
	t.onCommit(func() {
		t.r.s.e.stats.closed(x.Info.CloseTime, x.Namespace, x.Info.Type, status, x.Info.CloseTime.Sub(x.Info.StartTime))
	})
	x.Outcome = &store.Outcome{Output: output, NextRunID: nextRunID}
	if failure != nil {
		x.Outcome.Failure, _ = api.MarshalStored(failure)
	}
	x.Task.Pending = false
	if t.current == store.CurrentNone && nextRunID == "" {
		t.current = store.CurrentUpdate
	}
	for seq, c := range x.Children {
		if api.ParentClosePolicy(c.ParentClosePolicy) == api.ParentCloseAbandon {
			continue
		}
		target := store.RunKey{Namespace: c.Namespace, WorkflowID: c.WorkflowID, RunID: c.RunID}
		t.transfer(transferParentClose, t.r.key, &taskData{Seq: seq, Target: &target, Kind: fmt.Sprint(c.ParentClosePolicy)})
	}
	if p := x.Info.Parent; p != nil && status != store.StatusContinuedAsNew {
		t.transfer(transferCloseParent, t.r.key, &taskData{Seq: x.Info.ParentInitiated, Target: p, Status: status, Input: output, Failure: failure})
	}
	// The signals it sent are still delivered (a run's last word: a
	// message wait withdrawn as it returns); the rest ends with it.
	x.Steps, x.Timers, x.CancelRequests = nil, nil, nil
	t.transfer(transferVisibility, t.r.key, &taskData{})
	t.timer(timerRetention, t.now.Add(t.r.s.e.retention(t.r.key.Namespace)), &taskData{}).Partition = retentionPartition
	r := t.r
	t.onCommit(func() {
		r.s.e.metrics.closed.WithLabelValues(status.String()).Inc()
		r.dropFlight(fmt.Errorf("%w: run closed", api.ErrTaskNotFound))
		for seq, sr := range r.steps {
			sr.stop()
			delete(r.steps, seq)
		}
		for seq, k := range r.stepTasks {
			r.s.ackTransfer(k)
			delete(r.stepTasks, seq)
		}
		r.s.ackTransfer(r.wtTask)
		r.wtTask = store.TaskKey{}
		if r.retry != nil {
			r.retry.Stop()
			r.retry = nil
		}
		r.wake()
	})
}

// result is how a closed run ended, as api.Result.
func (e *Engine) result(ctx context.Context, shardID int32, x *store.Execution) (api.Result, error) {
	res := api.Result{RunID: x.RunID, Status: x.Status, StartTime: x.Info.StartTime, CloseTime: x.Info.CloseTime}
	if x.Outcome == nil {
		return res, nil
	}
	res.NextRunID = x.Outcome.NextRunID
	out, err := e.resolve(ctx, shardID, x.RunKey, x.Outcome.Output)
	if err != nil {
		return res, err
	}
	res.Output = out
	if len(x.Outcome.Failure) > 0 {
		res.Failure = &api.Failure{}
		if err := api.UnmarshalStored(x.Outcome.Failure, res.Failure); err != nil {
			return res, fmt.Errorf("engine: decode failure of %s: %w", x.RunKey, err)
		}
	}
	return res, nil
}

// resolve returns a payload's bytes, reading its document if it has one.
func (e *Engine) resolve(ctx context.Context, shardID int32, run store.RunKey, p store.Payload) ([]byte, error) {
	if p.Doc == nil {
		return p.Data, nil
	}
	data, _, err := e.store.GetDocument(ctx, shardID, run, p.Doc.ID)
	if err != nil {
		return nil, fmt.Errorf("engine: read document %s of %s: %w", p.Doc.ID, run, err)
	}
	return data, nil
}
