// Package worker runs workflow and step code: it polls a queue of a Strand
// service (the embedded engine, or a server), executes the tasks it gets and
// reports their outcomes.
package worker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/sdk"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/workflow"
)

// DefaultCacheMemory is Options.CacheMemory's default: some 5,000
// instances of a small workflow. The journal tier behind it
// (DefaultJournalMemory) keeps about 100,000 more a replay of a few
// hundred bytes away, so a larger live tier holds little that is not
// quick to rebuild, and a smaller one lowers the process's memory (with
// 100,000 runs open, 128 MiB held the bench near 1 GB resident).
const DefaultCacheMemory = 64 << 20

// DefaultJournalMemory is Options.JournalMemory's default.
const DefaultJournalMemory = 64 << 20

// Options configure a worker.
type Options struct {
	// Namespace and Queue are where the worker polls; defaults "default".
	Namespace string
	Queue     string
	// Identity names the worker in history; default host:pid.
	Identity string
	// WorkflowPollers and StepPollers are the concurrent polls (default 2
	// and 4; on a service whose waiting polls share requests, such as a
	// remote server's, one per slot). A poller hands each task it gets to a goroutine of its own
	// and polls again: MaxConcurrentWorkflowTasks bounds the workflow
	// tasks in hand at once (default 200), MaxConcurrentSteps the running
	// steps (default 200).
	WorkflowPollers            int
	StepPollers                int
	MaxConcurrentWorkflowTasks int
	MaxConcurrentSteps         int
	// CacheMemory is how many bytes of workflow instances the worker keeps
	// in memory between tasks (default 64 MiB; each instance's goroutines
	// and state, estimated); the least recently used go beyond it, and a
	// run not cached is rebuilt by replaying its history.
	CacheMemory int64
	// CacheSize, when positive, also bounds how many runs the worker keeps
	// cached.
	CacheSize int
	// JournalMemory is how many bytes of journals the worker keeps for
	// runs whose instances CacheMemory evicted (default 64 MiB, about
	// 100,000 runs of a small workflow; negative: none). A journal is what
	// the instance consumed, a few hundred bytes without pointers: the run
	// comes back with one replay of it and no history read.
	JournalMemory int64
	Logger        *slog.Logger
}

// Worker executes the workflows and steps registered on it.
type Worker struct {
	svc       api.Service
	opts      Options
	log       *slog.Logger
	workflows map[string]sdk.WorkflowFunc
	steps     map[string]stepFunc
	cache     *cache
	arrivals  arrivals
	// sticky names this worker's cache in its workflow task polls
	// (api.PollRequest.Sticky): random, so that two workers of one
	// process, or of one host and pid after a restart, differ.
	sticky string

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// stepsCtx is the parent of the running steps' contexts; Stop cancels
	// it, with errWorkerStopped, when its caller will wait no longer.
	stepsCtx    context.Context
	cancelSteps context.CancelCauseFunc
	stepsWG     sync.WaitGroup
}

// errWorkerStopped is the cause a step's context carries when the worker
// stopped before the step finished.
var errWorkerStopped = errors.New("worker: stopped before the step finished")

type stepFunc func(ctx context.Context, input []byte) ([]byte, error)

// Identity is the name the worker polls by and reports outcomes under.
func (w *Worker) Identity() string { return w.opts.Identity }

// New returns a worker of svc; register code on it, then Start it.
func New(svc api.Service, opts Options) *Worker {
	if opts.Namespace == "" {
		opts.Namespace = api.DefaultNamespace
	}
	if opts.Queue == "" {
		opts.Queue = api.DefaultQueue
	}
	if opts.Identity == "" {
		host, _ := os.Hostname()
		opts.Identity = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if opts.WorkflowPollers <= 0 {
		opts.WorkflowPollers = 2
	}
	if opts.StepPollers <= 0 {
		opts.StepPollers = 4
	}
	if opts.MaxConcurrentWorkflowTasks <= 0 {
		opts.MaxConcurrentWorkflowTasks = 200
	}
	if opts.MaxConcurrentSteps <= 0 {
		opts.MaxConcurrentSteps = 200
	}
	if opts.CacheMemory <= 0 {
		opts.CacheMemory = DefaultCacheMemory
	}
	if opts.JournalMemory == 0 {
		opts.JournalMemory = DefaultJournalMemory
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Worker{
		svc: svc, opts: opts, log: opts.Logger.With("queue", opts.Queue, "worker", opts.Identity),
		workflows: map[string]sdk.WorkflowFunc{}, steps: map[string]stepFunc{},
		cache:    newCache(opts.CacheMemory, opts.CacheSize, opts.JournalMemory),
		arrivals: arrivals{latest: map[store.RunKey]uint64{}},
		sticky:   rand.Text(),
	}
}

// RegisterWorkflow registers wf under its function name.
func RegisterWorkflow[I, O any](w *Worker, wf func(workflow.Context, I) (O, error)) {
	RegisterWorkflowNamed(w, sdk.FuncName(wf), wf)
}

// RegisterWorkflowNamed registers wf under name.
func RegisterWorkflowNamed[I, O any](w *Worker, name string, wf func(workflow.Context, I) (O, error)) {
	w.workflows[name] = func(ctx sdk.Context, input []byte) ([]byte, error) {
		var in I
		if err := sdk.Decode(input, &in); err != nil {
			return nil, &api.ApplicationError{Type: "DecodeError", Message: err.Error(), NonRetryable: true}
		}
		out, err := wf(ctx, in)
		if err != nil {
			return nil, err
		}
		return sdk.Encode(out)
	}
}

// RegisterStep registers a step under its function name.
func RegisterStep[I, O any](w *Worker, fn func(context.Context, I) (O, error)) {
	RegisterStepNamed(w, sdk.FuncName(fn), fn)
}

// RegisterStepNamed registers a step under name.
func RegisterStepNamed[I, O any](w *Worker, name string, fn func(context.Context, I) (O, error)) {
	w.steps[name] = func(ctx context.Context, input []byte) ([]byte, error) {
		var in I
		if err := sdk.Decode(input, &in); err != nil {
			return nil, &api.ApplicationError{Type: "DecodeError", Message: err.Error(), NonRetryable: true}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return sdk.Encode(out)
	}
}

// Start starts polling. The worker runs until Stop.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return errors.New("worker: already started")
	}
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.stepsCtx, w.cancelSteps = context.WithCancelCause(context.WithoutCancel(ctx))
	if len(w.workflows) > 0 {
		hs := newHandlers(w.opts.MaxConcurrentWorkflowTasks, &w.wg, func(t *api.WorkflowTask) { w.handleWorkflowTask(ctx, t) })
		for range pollers(w.svc, w.opts.WorkflowPollers, w.opts.MaxConcurrentWorkflowTasks) {
			w.wg.Go(func() { w.pollWorkflows(ctx, hs) })
		}
	}
	if len(w.steps) > 0 {
		hs := newHandlers(w.opts.MaxConcurrentSteps, &w.stepsWG, w.runStep)
		for range pollers(w.svc, w.opts.StepPollers, w.opts.MaxConcurrentSteps) {
			w.wg.Go(func() { w.pollSteps(ctx, hs) })
		}
	}
	return nil
}

// pollers is how many polls of a kind a worker on svc keeps waiting: n, or
// one per slot when svc shares the polls waiting (api.PollSharer), as a
// remote worker's share task exchanges: a few pollers would take a few
// tasks per round trip to the server.
func pollers(svc api.Service, n, slots int) int {
	if ps, ok := svc.(api.PollSharer); ok && ps.SharesPolls() {
		return max(n, slots)
	}
	return n
}

// Stop stops polling and drops the cached runs. A workflow task in hand
// is given up (it times out and runs again); running steps are waited for
// until ctx ends. Then their contexts are canceled, each step that returns
// is reported failed (WorkerStopped, retried by its policy), and Stop
// returns ctx's error without waiting for steps that ignore their context.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	w.wg.Wait()
	defer w.cache.clear()
	steps := make(chan struct{})
	go func() {
		w.stepsWG.Wait()
		close(steps)
	}()
	select {
	case <-steps:
		return nil
	case <-ctx.Done():
		select {
		case <-steps:
			return nil // none was running
		default:
		}
		w.cancelSteps(errWorkerStopped)
		return fmt.Errorf("worker: stop: steps still running: %w", ctx.Err())
	}
}

// poll is one poller: it takes a slot of sem, polls with it, and hands a
// task it got to hs, whose goroutine frees the slot when done, so that the
// tasks in hand, not the polls, bound the work at once. It returns when
// ctx ends.
func poll[T any](ctx context.Context, log *slog.Logger, kind string, hs *handlers[T], fetch func(context.Context) (*T, error)) {
	backoff := newBackoff()
	for {
		select {
		case hs.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		t, err := fetch(ctx)
		if err != nil || t == nil {
			<-hs.sem
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				log.Warn("poll "+kind, "err", err)
				backoff.wait(ctx)
			}
			continue
		}
		backoff.reset()
		hs.run(ctx, t)
	}
}

// handlers run the tasks the pollers of one kind got, on goroutines that
// live until the pollers' context ends and take one task after another:
// a task's calls go deep (an embedded engine commits on the handler's
// goroutine), and a goroutine made per task grew its stack anew each
// time, a tenth of the worker's CPU. There are at most as many as sem has
// slots, since each task in hand holds one.
type handlers[T any] struct {
	sem    chan struct{}
	work   chan *T
	wg     *sync.WaitGroup
	handle func(*T)
	n      atomic.Int64 // goroutines
}

func newHandlers[T any](slots int, wg *sync.WaitGroup, handle func(*T)) *handlers[T] {
	return &handlers[T]{sem: make(chan struct{}, slots), work: make(chan *T), wg: wg, handle: handle}
}

// run hands t, which holds a slot of sem, to an idle goroutine, or to a
// new one while there are fewer than slots.
func (hs *handlers[T]) run(ctx context.Context, t *T) {
	select {
	case hs.work <- t:
		return
	default:
	}
	if hs.n.Add(1) > int64(cap(hs.sem)) {
		// Every goroutine is made; all but this task's slot's are busy or
		// about to take the next task.
		hs.n.Add(-1)
		select {
		case hs.work <- t:
		case <-ctx.Done(): // the goroutines are leaving
			hs.handle(t)
			<-hs.sem
		}
		return
	}
	hs.wg.Go(func() {
		defer hs.n.Add(-1)
		for {
			hs.handle(t)
			<-hs.sem
			select {
			case t = <-hs.work:
			case <-ctx.Done():
				return
			}
		}
	})
}

func (w *Worker) pollWorkflows(ctx context.Context, hs *handlers[api.WorkflowTask]) {
	req := api.PollRequest{Namespace: w.opts.Namespace, Queue: w.opts.Queue, Identity: w.opts.Identity, Sticky: w.sticky}
	poll(ctx, w.log, "workflow task", hs, func(ctx context.Context) (*api.WorkflowTask, error) {
		return w.svc.PollWorkflowTask(ctx, req)
	})
}

func (w *Worker) pollSteps(ctx context.Context, hs *handlers[api.StepTask]) {
	// The steps it runs: the engine hands it no other, so a task of a step
	// registered on another worker of the queue waits for that one rather
	// than fail here.
	req := api.PollRequest{Namespace: w.opts.Namespace, Queue: w.opts.Queue, Identity: w.opts.Identity,
		Steps: slices.Sorted(maps.Keys(w.steps))}
	poll(ctx, w.log, "step task", hs, func(ctx context.Context) (*api.StepTask, error) {
		t, err := w.svc.PollStepTask(ctx, req)
		if err != nil && req.Steps != nil && olderServer(err) {
			// A server from before polls named their steps refuses the
			// field: poll as before (it hands this worker every step).
			w.log.Warn("the server does not take the steps a worker runs; polling for every step", "err", err)
			req.Steps = nil
			return w.svc.PollStepTask(ctx, req)
		}
		return t, err
	})
}

// olderServer reports whether a poll was refused for naming its steps
// (an unknown field to a server older than api.PollRequest.Steps).
func olderServer(err error) bool {
	var ia *store.InvalidArgumentError
	return errors.As(err, &ia) && ia.Field == "steps" && strings.Contains(ia.Reason, "unknown field")
}

// runStep runs one attempt of a step and reports its outcome. Stop
// cancels it only once its caller will wait no longer.
func (w *Worker) runStep(t *api.StepTask) {
	ctx, cancel := context.WithCancel(w.stepsCtx)
	defer cancel()
	if !t.Deadline.IsZero() {
		var c2 context.CancelFunc
		ctx, c2 = context.WithDeadline(ctx, t.Deadline)
		defer c2()
	}
	rt := &stepRuntime{w: w, t: t, cancel: cancel}
	ctx = step.WithRuntime(ctx, rt)
	fn := w.steps[t.Name]
	var (
		out []byte
		err error
	)
	if fn == nil {
		err = &api.ApplicationError{Type: "StepNotRegistered", Message: fmt.Sprintf("step %q is not registered on worker %s", t.Name, w.opts.Identity)}
	} else {
		stop := func() {}
		if t.AutoHeartbeat && t.HeartbeatTimeout > 0 {
			stop = rt.autoHeartbeat(ctx)
		}
		out, err = callStep(ctx, fn, t.Input)
		stop()
	}
	// The outcome is reported until it lands, the attempt is over
	// (ErrTaskNotFound), or the attempt's time is up: past its deadline
	// the engine has timed it out. A worker stopped hard tries once.
	until := time.Now().Add(reportPatience)
	if d := t.Deadline.Add(reportPatience); d.After(until) {
		until = d
	}
	var send func(context.Context) error
	if err != nil {
		switch {
		case errors.Is(context.Cause(ctx), errWorkerStopped):
			err = &api.ApplicationError{Type: "WorkerStopped", Message: fmt.Sprintf("worker %s stopped before the step finished: %v", w.opts.Identity, err)}
		case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
			err = &api.TimeoutError{What: api.TimeoutStartToClose}
		}
		req := api.FailStepRequest{Token: t.Token, Failure: api.FailureOf(err), Identity: w.opts.Identity, Details: rt.details.Take()}
		send = func(ctx context.Context) error { return w.svc.FailStep(ctx, req) }
	} else {
		req := api.CompleteStepRequest{Token: t.Token, Result: out, Identity: w.opts.Identity, Details: rt.details.Take()}
		send = func(ctx context.Context) error { return w.svc.CompleteStep(ctx, req) }
	}
	if err := w.deliver(context.WithoutCancel(w.stepsCtx), w.stepsCtx, until, "report step", send); err != nil && !errors.Is(err, api.ErrTaskNotFound) {
		w.log.Warn("report step", "step", t.Name, "run", t.Run.String(), "err", err)
	}
}

// reportPatience is how long a report is retried past the attempt's
// deadline (or at all, for an attempt without one).
const reportPatience = time.Minute

// deliver calls send until it lands, fails for a reason other than a
// transient one (the service unavailable, a call timed out), ctx ends or
// until passes (zero: no bound but ctx); once stop has ended it tries no
// more. Each call has at most deliverAttempt. Reports are idempotent (a
// task token is answered once; a repeat gets ErrTaskNotFound), so a report
// whose answer was lost may safely be sent again.
func (w *Worker) deliver(ctx, stop context.Context, until time.Time, what string, send func(context.Context) error) error {
	b := newBackoff()
	past := func() bool { return !until.IsZero() && !time.Now().Before(until) }
	for tries := 1; ; tries++ {
		deadline := time.Now().Add(deliverAttempt)
		if !until.IsZero() && until.Before(deadline) {
			deadline = until
		}
		actx, cancel := context.WithDeadline(ctx, deadline)
		err := send(actx)
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil || stop.Err() != nil || past() {
			if err == nil && tries > 1 {
				w.log.Info(what+": delivered after retries", "tries", tries)
			}
			return err
		}
		if tries == 1 {
			w.log.Warn(what+": retrying until the service answers", "err", err)
		}
		b.wait(ctx)
		if past() {
			return err
		}
	}
}

// deliverAttempt bounds one call of deliver.
const deliverAttempt = 30 * time.Second

// transient reports whether err may go away by itself: the service was
// unreachable or busy, or the call ran out of time.
func transient(err error) bool {
	return errors.Is(err, api.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

func callStep(ctx context.Context, fn stepFunc, input []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &api.PanicError{Message: fmt.Sprint(r), Stack: string(debug.Stack())}
		}
	}()
	return fn(ctx, input)
}

type stepRuntime struct {
	w       *Worker
	t       *api.StepTask
	cancel  context.CancelFunc
	details sdk.AuditDetails
	// last is the details of the step's last heartbeat (the previous
	// attempt's at first), which automatic heartbeats carry on.
	mu   sync.Mutex
	last api.Value
}

// autoHeartbeat heartbeats for the step (api.StepTask.AutoHeartbeat)
// five times per heartbeat timeout until stop is called, carrying on the
// details of its last heartbeat. ctx is the step's.
func (r *stepRuntime) autoHeartbeat(ctx context.Context) (stop func()) {
	r.last = r.t.HeartbeatDetails
	every := max(r.t.HeartbeatTimeout/5, 10*time.Millisecond)
	return step.HeartbeatEvery(ctx, every, func() any {
		r.mu.Lock()
		defer r.mu.Unlock()
		return carried(r.last)
	})
}

// carried are heartbeat details encoded already: those an automatic
// heartbeat carries on, sent as they are.
type carried api.Value

func (r *stepRuntime) AuditDetail(name string, value any) error { return r.details.Set(name, value) }

func (r *stepRuntime) Info() step.Info {
	return step.Info{
		Run: r.t.Run, WorkflowType: r.t.WorkflowType, Name: r.t.Name, Seq: r.t.Seq, Attempt: r.t.Attempt,
		IdempotencyKey: r.t.IdempotencyKey, ScheduledTime: r.t.ScheduledTime, StartedTime: r.t.StartedTime,
		Deadline: r.t.Deadline, HeartbeatDetails: r.t.HeartbeatDetails, Redelivered: r.t.Redelivered,
	}
}

func (r *stepRuntime) Heartbeat(ctx context.Context, details any) error {
	p, ok := details.(carried)
	if !ok {
		b, err := sdk.Encode(details)
		if err != nil {
			return err
		}
		p = b
	}
	r.mu.Lock()
	r.last = api.Value(p)
	r.mu.Unlock()
	return r.beat(ctx, api.Value(p))
}

// beat sends a heartbeat with details p.
func (r *stepRuntime) beat(ctx context.Context, p api.Value) error {
	req := api.HeartbeatRequest{Token: r.t.Token, Details: p}
	err := r.w.deliver(ctx, ctx, time.Time{}, "heartbeat", func(ctx context.Context) error {
		_, err := r.w.svc.HeartbeatStep(ctx, req)
		return err
	})
	if err != nil {
		if errors.Is(err, api.ErrTaskNotFound) {
			r.cancel() // the attempt timed out, or the step was canceled or closed: stop
		}
		return err
	}
	return nil
}

// handleWorkflowTask advances a run (or answers a query) with its cached
// instance, replaying history first when the cache misses.
func (w *Worker) handleWorkflowTask(ctx context.Context, t *api.WorkflowTask) {
	var n uint64
	if t.Query == nil {
		n = w.arrivals.arrive(t.Run)
		defer w.arrivals.leave(t.Run, n)
	}
	// The engine refuses an answer past the task's timeout and offers the
	// task again: a task still waiting for its run or for a core then is
	// dropped untouched, and the run's cached instance stays good for the
	// task offered again. (Working on it would only make the instance
	// that of an answer refused, to be replayed from history next time.)
	deadline := time.Now().Add(t.Timeout)
	late := func() bool {
		return t.Timeout > 0 && time.Now().After(deadline) || w.arrivals.superseded(t.Run, n)
	}
	e := w.cache.lock(t.Run)
	defer w.cache.unlock(e)
	if t.Query != nil {
		w.answerQuery(ctx, e, t)
		return
	}
	if late() {
		return
	}
	// A workflow task's answers are retried like a step's reports, for
	// about as long as the engine waits for them.
	until := time.Now().Add(reportPatience)
	fail := func(err error) {
		e.drop()
		req := api.FailWorkflowTaskRequest{Token: t.Token, Failure: api.FailureOf(err), Identity: w.opts.Identity}
		ferr := w.deliver(ctx, ctx, until, "fail workflow task", func(ctx context.Context) error { return w.svc.FailWorkflowTask(ctx, req) })
		if ferr != nil && ctx.Err() == nil && !errors.Is(ferr, api.ErrTaskNotFound) {
			w.log.Warn("fail workflow task", "run", t.Run.String(), "err", ferr)
		}
	}
	w.resume(e, t)
	if e.inst == nil || e.inst.LastEventID != t.PrevEventID {
		e.drop()
		inst, err := w.rebuild(ctx, t.Run, t.WorkflowType, t.PrevEventID)
		switch {
		case err == nil:
			e.inst = inst
			if late() {
				// The replay took longer than the task's timeout: the
				// instance it made serves the task offered again.
				return
			}
		case ctx.Err() != nil:
			return
		case errors.Is(err, errReadHistory):
			// Not the workflow's fault: the task is dropped and offered
			// again once its timeout passes.
			w.log.Warn("replay workflow: history unreadable; the task will be offered again", "run", t.Run.String(), "err", err)
			return
		default:
			w.log.Error("replay workflow", "run", t.Run.String(), "err", err)
			fail(err)
			return
		}
	}
	cmds, err := e.inst.Execute(t.Events, t.Time)
	if err != nil {
		w.log.Error("workflow task failed", "run", t.Run.String(), "err", err)
		fail(err)
		return
	}
	req := api.CompleteWorkflowTaskRequest{Token: t.Token, Commands: cmds, Identity: w.opts.Identity, Details: e.inst.TakeDetails()}
	var resp api.CompleteWorkflowTaskResponse
	err = w.deliver(ctx, ctx, until, "complete workflow task", func(ctx context.Context) error {
		var err error
		resp, err = w.svc.CompleteWorkflowTask(ctx, req)
		return err
	})
	if err != nil {
		e.drop()
		switch {
		case ctx.Err() != nil || errors.Is(err, api.ErrTaskNotFound):
		case errors.Is(err, api.ErrNotFound):
			// A task handed over before its start committed (a node that
			// had lost the shard, refused at commit), or a run deleted
			// since: there is no run to go on with, and nothing was lost.
			w.log.Info("workflow task dropped: its run does not exist (the start it came from was not committed, or the run was deleted since); nothing to do",
				"run", t.Run.String())
		default:
			w.log.Warn("complete workflow task", "run", t.Run.String(), "err", err)
		}
		return
	}
	e.inst.LastEventID = resp.LastEventID
	if e.inst.Closed() {
		e.drop()
	}
}

// arrivals numbers the workflow tasks a worker receives, by run. The
// engine hands out a run's next task only once it gave up on the last (its
// timeout passed, or it was taken back), so a task that waited for its
// run's lock, or replayed the run, while a later task of the run came is
// dead: it is dropped without work. Without this (and without the
// timeout's check), when tasks waited longer than their timeout in a
// loaded worker, every task offered again took a slot and in turn replayed
// its run's whole history for an answer that was refused: the worker fell
// further behind with each task it took (TestScale hung so in the suite).
type arrivals struct {
	mu     sync.Mutex
	n      uint64
	latest map[store.RunKey]uint64 // the number of the run's last task
}

// arrive numbers a task of run k as the latest.
func (a *arrivals) arrive(k store.RunKey) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	a.latest[k] = a.n
	return a.n
}

// superseded reports whether a later task of run k than task n came.
func (a *arrivals) superseded(k store.RunKey, n uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.latest[k] != n
}

// leave forgets task n of run k, once it is handled.
func (a *arrivals) leave(k store.RunKey, n uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.latest[k] == n {
		delete(a.latest, k)
	}
}

func (w *Worker) answerQuery(ctx context.Context, e *entry, t *api.WorkflowTask) {
	w.resume(e, t)
	inst := e.inst
	if inst == nil || inst.LastEventID != t.PrevEventID {
		var err error
		inst, err = w.rebuild(ctx, t.Run, t.WorkflowType, t.PrevEventID)
		if err != nil {
			w.svc.AnswerQuery(ctx, api.QueryAnswer{Token: t.Token, Failure: api.FailureOf(err)})
			return
		}
		defer inst.Close()
	}
	out, err := inst.Query(t.Query.Name, t.Query.Input)
	ans := api.QueryAnswer{Token: t.Token, Result: out}
	if err != nil {
		ans.Failure = api.FailureOf(err)
	}
	if err := w.svc.AnswerQuery(ctx, ans); err != nil && ctx.Err() == nil {
		w.log.Warn("answer query", "run", t.Run.String(), "err", err)
	}
}

// runInfo describes a run of workflow type typ to its instance.
func runInfo(run store.RunKey, typ string) sdk.Info {
	return sdk.Info{Namespace: run.Namespace, WorkflowID: run.WorkflowID, RunID: run.RunID, WorkflowType: typ}
}

// resume brings back an entry the cache keeps a journal of, when the
// journal ends where task t starts; the journal is spent either way.
func (w *Worker) resume(e *entry, t *api.WorkflowTask) {
	if e.inst != nil || e.journal == nil {
		return
	}
	journal := e.journal
	e.journal = nil
	fn := w.workflows[t.WorkflowType]
	if fn == nil || e.last != t.PrevEventID {
		return
	}
	inst, err := sdk.Resume(runInfo(t.Run, t.WorkflowType), fn, w.log, journal)
	if err != nil {
		// Rebuilt from history instead.
		w.log.Warn("resume workflow from its journal", "run", t.Run.String(), "err", err)
		return
	}
	inst.LastEventID = e.last
	e.inst = inst
}

// errReadHistory marks a replay that could not read the run's history:
// the service's fault or the network's, never the workflow's.
var errReadHistory = errors.New("worker: read history")

// rebuild replays a run's history up to upTo into a new instance; the
// history is read with the retries of deliver.
func (w *Worker) rebuild(ctx context.Context, run store.RunKey, typ string, upTo int64) (*sdk.Instance, error) {
	fn := w.workflows[typ]
	if fn == nil {
		return nil, &api.ApplicationError{Type: "WorkflowNotRegistered", Message: fmt.Sprintf("workflow %q is not registered on worker %s", typ, w.opts.Identity)}
	}
	inst := sdk.NewInstance(runInfo(run, typ), fn, w.log)
	var history []api.Event
	var token []byte
	// As long as the engine waits for the task's answer.
	until := time.Now().Add(10 * time.Second)
	for upTo > 0 {
		req := api.HistoryRequest{
			RunRef:    api.RunRef{Namespace: run.Namespace, WorkflowID: run.WorkflowID, RunID: run.RunID},
			PageToken: token, Resolve: true,
		}
		var page api.HistoryPage
		err := w.deliver(ctx, ctx, until, "read history", func(ctx context.Context) error {
			var err error
			page, err = w.svc.GetHistory(ctx, req)
			return err
		})
		if err != nil {
			inst.Close()
			return nil, fmt.Errorf("%w of %s: %w", errReadHistory, run, err)
		}
		for _, ev := range page.Events {
			if ev.ID <= upTo {
				history = append(history, ev)
			}
		}
		token = page.NextPageToken
		if len(token) == 0 || (len(page.Events) > 0 && page.Events[len(page.Events)-1].ID >= upTo) {
			break
		}
	}
	if err := inst.Replay(history); err != nil {
		inst.Close()
		return nil, err
	}
	if inst.LastEventID != upTo {
		inst.Close()
		return nil, fmt.Errorf("worker: history of %s ends at event %d, task expects %d", run, inst.LastEventID, upTo)
	}
	return inst, nil
}

type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 50 * time.Millisecond} }
func (b *backoff) reset()  { b.d = 50 * time.Millisecond }
func (b *backoff) wait(ctx context.Context) {
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	b.d = min(b.d*2, 5*time.Second)
}
