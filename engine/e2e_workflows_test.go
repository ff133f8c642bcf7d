package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

func Sleeper(ctx workflow.Context, d time.Duration) (string, error) {
	if err := workflow.Sleep(ctx, d); err != nil {
		return "", err
	}
	return "woke", nil
}

func TestDurableSleepAcrossRestart(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Sleeper) })
		r, err := client.Start(e.ctx, e.c, Sleeper, 1500*time.Millisecond, client.StartOptions{ID: "sleeper"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the timer to start", func() bool {
			d, err := e.c.Describe(e.ctx, "sleeper", "")
			return err == nil && len(d.Timers) == 1
		})
		e.restart() // nothing of the run is in memory now
		got, err := client.GetRun[string](e.c, r.WorkflowID, r.RunID).Get(e.ctx)
		if err != nil || got != "woke" {
			t.Fatalf("got %q, %v", got, err)
		}
		evs := e.history("sleeper", "")
		if count(evs, api.EventTimerFired) != 1 || count(evs, api.EventWorkflowCompleted) != 1 {
			dump(t, evs)
			t.Fatal("want one timer fired and one completion")
		}
	})
}

// Timers due past the timer window stay in the store, not in memory, and
// fire when the window reaches them, across a restart too.
func TestTimersPastTheWindowWaitInTheStore(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Sleeper) })
		e.stop()
		e.engOpt.TimerWindow = time.Second
		e.start()
		// Timers 6s ahead of a 1s window: the checks below that none is in
		// memory hold until 5s after the first start (on a busy machine a
		// restart takes seconds; past that, only the outcome is checked).
		const n = 5
		const sleep = 6 * time.Second
		first := time.Now()
		var runs []client.Run[string]
		for i := range n {
			r, err := client.Start(e.ctx, e.c, Sleeper, sleep, client.StartOptions{ID: fmt.Sprintf("long-sleeper-%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		for _, r := range runs {
			e.eventually("the timer of "+r.WorkflowID+" to start", func() bool {
				d, err := e.c.Describe(e.ctx, r.WorkflowID, "")
				return err == nil && len(d.Timers) == 1
			})
		}
		inTime := func() bool { return time.Since(first) < sleep-time.Second }
		if got := e.eng.Stats().TimersInMemory; got != 0 && inTime() {
			t.Fatalf("%d timers in memory %s ahead of a 1s window", got, sleep-time.Since(first))
		}
		e.restart() // the new shards read the store up to their own horizon
		if got := e.eng.Stats().TimersInMemory; got != 0 && inTime() {
			t.Fatalf("%d timers in memory after a restart, %s ahead of a 1s window", got, sleep-time.Since(first))
		}
		e.eventually("the window to reach the timers", func() bool { return e.eng.Stats().TimersInMemory > 0 })
		for _, r := range runs {
			got, err := client.GetRun[string](e.c, r.WorkflowID, r.RunID).Get(e.ctx)
			if err != nil || got != "woke" {
				t.Fatalf("%s: %q, %v", r.WorkflowID, got, err)
			}
			if evs := e.history(r.WorkflowID, ""); count(evs, api.EventTimerFired) != 1 {
				dump(t, evs)
				t.Fatalf("%s: want one timer fired", r.WorkflowID)
			}
		}
	})
}

// Collector receives n "item" signals, or stops at a "done" signal.
func Collector(ctx workflow.Context, n int) ([]string, error) {
	items := workflow.GetSignalChannel[string](ctx, "item")
	var got []string
	workflow.SetQueryHandler(ctx, "count", func(struct{}) (int, error) { return len(got), nil })
	for len(got) < n {
		v, _ := items.Receive(ctx)
		got = append(got, v)
	}
	return got, nil
}

func TestSignalsAndQueries(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Collector) })
		// Signal-with-start: the signal is there before the workflow waits.
		r, err := client.SignalWithStart[[]string](e.ctx, e.c, "Collector", 3, client.StartOptions{ID: "collector"}, "item", "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.c.Signal(e.ctx, "collector", "", "item", "b"); err != nil {
			t.Fatal(err)
		}
		e.eventually("the workflow to see two items", func() bool {
			n, err := client.Query[int](e.ctx, e.c, "collector", "", "count", struct{}{})
			return err == nil && n == 2
		})
		// A signal while it waits.
		if err := e.c.Signal(e.ctx, "collector", "", "item", "c"); err != nil {
			t.Fatal(err)
		}
		got, err := r.Get(e.ctx)
		if err != nil || strings.Join(got, ",") != "a,b,c" {
			t.Fatalf("got %v, %v", got, err)
		}
		if _, err := client.Query[int](e.ctx, e.c, "collector", "", "nope", struct{}{}); !errors.Is(err, api.ErrQueryFailed) {
			t.Fatalf("unknown query: got %v", err)
		}
		// A closed run answers queries by replay.
		if n, err := client.Query[int](e.ctx, e.c, "collector", "", "count", struct{}{}); err != nil || n != 3 {
			t.Fatalf("query of closed run: %d, %v", n, err)
		}
		if err := e.c.Signal(e.ctx, "collector", "", "item", "late"); !errors.Is(err, api.ErrRunClosed) {
			t.Fatalf("signal to closed run: %v", err)
		}
		if err := e.c.Signal(e.ctx, "no-such-workflow", "", "item", "x"); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("signal to missing workflow: %v", err)
		}
		// A query sent before any workflow code ran (no worker yet) waits
		// for the first workflow task, which sets the handler.
		e.stopWorker()
		if _, err := client.Start(e.ctx, e.c, Collector, 1, client.StartOptions{ID: "unstarted"}); err != nil {
			t.Fatal(err)
		}
		answered := make(chan error, 1)
		go func() {
			n, err := client.Query[int](e.ctx, e.c, "unstarted", "", "count", struct{}{})
			if err == nil && n != 0 {
				err = fmt.Errorf("count %d, want 0", n)
			}
			answered <- err
		}()
		// It waits in the engine for the run's first workflow task,
		// unanswered.
		e.eventually("the query waiting for the run's first workflow task", func() bool { return e.eng.Stats().Waiters == 1 })
		select {
		case err := <-answered:
			t.Fatalf("a query with no worker running answered: %v", err)
		default:
		}
		e.startWorker(func(w *worker.Worker) { worker.RegisterWorkflow(w, Collector) })
		if err := <-answered; err != nil {
			t.Fatalf("query before the first workflow task: %v", err)
		}
		// A signal sent before the workflow started running (start delay).
		r2, err := client.Start(e.ctx, e.c, Collector, 1, client.StartOptions{ID: "delayed", StartDelay: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.c.Signal(e.ctx, "delayed", "", "item", "early"); err != nil {
			t.Fatal(err)
		}
		if got, err := r2.Get(e.ctx); err != nil || len(got) != 1 || got[0] != "early" {
			t.Fatalf("delayed: got %v, %v", got, err)
		}
	})
}

// PairCollector receives two "item" signals; it takes no input, as a run
// that SignalExternalWithStart starts gets none.
func PairCollector(ctx workflow.Context, _ struct{}) ([]string, error) { return Collector(ctx, 2) }

// StartingSender signals the workflow "collector-started" twice with
// SignalExternalWithStart: the first signal starts it (a PairCollector),
// the second finds it running.
func StartingSender(ctx workflow.Context, _ struct{}) (struct{}, error) {
	start := workflow.SignalStart{WorkflowType: "PairCollector"}
	for _, item := range []string{"a", "b"} {
		if _, err := workflow.SignalExternalWithStart(ctx, workflow.Target{WorkflowID: "collector-started"}, "item", item, start).Get(ctx); err != nil {
			return struct{}{}, err
		}
	}
	return struct{}{}, nil
}

// LastWord signals the workflow "last-word-target" and returns at once,
// without waiting for the signal's delivery.
func LastWord(ctx workflow.Context, _ struct{}) (struct{}, error) {
	workflow.SignalExternal(ctx, workflow.Target{WorkflowID: "last-word-target"}, "item", "bye")
	return struct{}{}, nil
}

// TestSignalSentWithTheClose: a signal a run sends in the workflow task
// that closes it is still delivered.
func TestSignalSentWithTheClose(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Collector)
			worker.RegisterWorkflow(w, LastWord)
		})
		target, err := client.StartByName[[]string](e.ctx, e.c, "Collector", 1, client.StartOptions{ID: "last-word-target"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := client.StartByName[struct{}](e.ctx, e.c, "LastWord", struct{}{}, client.StartOptions{ID: "last-word"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Get(e.ctx); err != nil {
			t.Fatal(err)
		}
		got, err := target.Get(e.ctx)
		if err != nil || strings.Join(got, ",") != "bye" {
			t.Fatalf("the target got %v, %v", got, err)
		}
	})
}

func TestSignalExternalWithStart(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, PairCollector)
			worker.RegisterWorkflow(w, StartingSender)
		})
		r, err := client.StartByName[struct{}](e.ctx, e.c, "StartingSender", struct{}{}, client.StartOptions{ID: "starting-sender"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Get(e.ctx); err != nil {
			t.Fatal(err)
		}
		// One run got both: the second signal found the first's run.
		got, err := client.GetRun[[]string](e.c, "collector-started", "").Get(e.ctx)
		if err != nil || strings.Join(got, ",") != "a,b" {
			t.Fatalf("the started collector got %v, %v", got, err)
		}
	})
}

// Child returns its input doubled, or blocks until canceled when in < 0.
func Child(ctx workflow.Context, in int) (int, error) {
	if in < 0 {
		return 0, workflow.Await(ctx, func() bool { return false })
	}
	return 2 * in, nil
}

// ParentCase says how Parent runs its children.
type ParentCase struct {
	Policy  workflow.ParentClosePolicy
	ChildID string
}

// Parent awaits one child, then starts a blocking one and returns without
// waiting for it.
func Parent(ctx workflow.Context, c ParentCase) (int, error) {
	v, err := workflow.ExecuteChild(ctx, workflow.ChildOptions{}, Child, 21).Get(ctx)
	if err != nil {
		return 0, err
	}
	f := workflow.ExecuteChild(ctx, workflow.ChildOptions{WorkflowID: c.ChildID, ParentClose: c.Policy}, Child, -1)
	if _, err := f.Started().Get(ctx); err != nil {
		return 0, err
	}
	return v, nil
}

// FireAndForget starts an abandoned child and closes at once, in the same
// workflow task, before the child's start has been processed.
func FireAndForget(ctx workflow.Context, childID string) (string, error) {
	workflow.ExecuteChild(ctx, workflow.ChildOptions{WorkflowID: childID, ParentClose: workflow.ParentCloseAbandon}, Child, 5)
	return "sent", nil
}

func TestChildrenAndParentClosePolicies(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Parent)
			worker.RegisterWorkflow(w, Child)
			worker.RegisterWorkflow(w, WaitChild)
			worker.RegisterWorkflow(w, FireAndForget)
		})
		t.Run("an abandoned child outlives a parent that did not wait for its start", func(t *testing.T) {
			r, err := client.Start(e.ctx, e.c, FireAndForget, "forgotten", client.StartOptions{ID: "forgetful"})
			if err != nil {
				t.Fatal(err)
			}
			if v, err := r.Get(e.ctx); err != nil || v != "sent" {
				t.Fatalf("parent: %q, %v", v, err)
			}
			e.eventually("the abandoned child to complete", func() bool {
				d, err := e.c.Describe(e.ctx, "forgotten", "")
				return err == nil && d.Status == store.StatusCompleted
			})
			child, err := client.GetRun[int](e.c, "forgotten", "").Get(e.ctx)
			if err != nil || child != 10 {
				t.Fatalf("child: %d, %v", child, err)
			}
			d, _ := e.c.Describe(e.ctx, "forgotten", "")
			if d.Parent == nil || d.Parent.WorkflowID != "forgetful" {
				t.Fatalf("child's parent: %+v", d.Parent)
			}
		})
		for _, tc := range []struct {
			name   string
			policy workflow.ParentClosePolicy
			want   store.RunStatus
		}{
			{"terminate", workflow.ParentCloseTerminate, store.StatusTerminated},
			{"request-cancel", workflow.ParentCloseRequestCancel, store.StatusCanceled},
			{"abandon", workflow.ParentCloseAbandon, store.StatusRunning},
		} {
			t.Run(tc.name, func(t *testing.T) {
				childID := "child-" + tc.name
				got, err := client.Start(e.ctx, e.c, Parent, ParentCase{Policy: tc.policy, ChildID: childID}, client.StartOptions{ID: "parent-" + tc.name})
				if err != nil {
					t.Fatal(err)
				}
				if v, err := got.Get(e.ctx); err != nil || v != 42 {
					t.Fatalf("parent: %d, %v", v, err)
				}
				e.eventually("the child to reach "+tc.want.String(), func() bool {
					d, err := e.c.Describe(e.ctx, childID, "")
					return err == nil && d.Status == tc.want
				})
				d, _ := e.c.Describe(e.ctx, childID, "")
				if d.Parent == nil || d.Parent.WorkflowID != "parent-"+tc.name {
					t.Fatalf("child's parent: %+v", d.Parent)
				}
			})
		}
		if err := e.c.Terminate(e.ctx, "child-abandon", "", "test over"); err != nil {
			t.Fatal(err)
		}
		t.Run("cancel reaches the child", func(t *testing.T) {
			r, err := client.Start(e.ctx, e.c, WaitChild, "waited-child", client.StartOptions{ID: "waiting-parent"})
			if err != nil {
				t.Fatal(err)
			}
			e.eventually("the child to run", func() bool {
				d, err := e.c.Describe(e.ctx, "waited-child", "")
				return err == nil && d.Status == store.StatusRunning
			})
			if err := e.c.Cancel(e.ctx, "waiting-parent", "", "stop all"); err != nil {
				t.Fatal(err)
			}
			gctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			defer cancel()
			if _, err := r.Get(gctx); !errors.Is(err, api.ErrCanceled) {
				dump(t, e.history("waiting-parent", ""))
				dump(t, e.history("waited-child", ""))
				t.Fatalf("parent: %v, want canceled", err)
			}
			e.eventually("the child to be canceled", func() bool {
				d, err := e.c.Describe(e.ctx, "waited-child", "")
				return err == nil && d.Status == store.StatusCanceled
			})
		})
	})
}

// WaitChild waits for a child that runs until canceled.
func WaitChild(ctx workflow.Context, childID string) (int, error) {
	return workflow.ExecuteChild(ctx, workflow.ChildOptions{WorkflowID: childID}, Child, -1).Get(ctx)
}

// Counter continues as new until it reaches 3.
func Counter(ctx workflow.Context, n int) (int, error) {
	if n < 3 {
		return 0, workflow.NewContinueAsNewError(ctx, Counter, n+1)
	}
	return n * 10, nil
}

func TestContinueAsNew(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) { worker.RegisterWorkflow(w, Counter) })
		r, err := client.Start(e.ctx, e.c, Counter, 0, client.StartOptions{ID: "counter"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.Get(e.ctx); err != nil || got != 30 {
			t.Fatalf("got %d, %v", got, err)
		}
		res, err := e.eng.WaitResult(e.ctx, api.ResultRequest{RunRef: api.RunRef{WorkflowID: "counter", RunID: r.RunID}})
		if err != nil || res.Status != store.StatusContinuedAsNew || res.NextRunID == "" {
			t.Fatalf("first run: %+v, %v", res, err)
		}
		n, err := e.c.Count(e.ctx, api.ListRequest{WorkflowID: "counter"})
		e.eventually("4 runs listed", func() bool {
			n, err = e.c.Count(e.ctx, api.ListRequest{WorkflowID: "counter"})
			return err == nil && n == 4
		})
	})
}

// Guarded waits for a step that never finishes; on cancel it runs a
// clean-up step on a disconnected context.
func Guarded(ctx workflow.Context, _ struct{}) (string, error) {
	_, err := workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{Heartbeat: time.Second}, "forever", "x").Get(ctx)
	if errors.Is(err, api.ErrCanceled) {
		dctx := workflow.NewDisconnectedContext(ctx)
		if _, cerr := workflow.ExecuteStepByName[string](dctx, workflow.StepOptions{}, "cleanup", "x").Get(dctx); cerr != nil {
			return "", cerr
		}
	}
	return "", err
}

func TestCancelAndTerminate(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		stepCanceled := make(chan struct{}, 4)
		cleaned := make(chan struct{}, 4)
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Guarded)
			worker.RegisterStepNamed(w, "forever", func(ctx context.Context, in string) (string, error) {
				for {
					if err := stepHeartbeat(ctx); err != nil || ctx.Err() != nil {
						stepCanceled <- struct{}{}
						return "", context.Canceled
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
			worker.RegisterStepNamed(w, "cleanup", func(ctx context.Context, in string) (string, error) {
				cleaned <- struct{}{}
				return "clean", nil
			})
		})
		r, err := client.Start(e.ctx, e.c, Guarded, struct{}{}, client.StartOptions{ID: "guarded"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the step to start", func() bool {
			d, err := e.c.Describe(e.ctx, "guarded", "")
			return err == nil && len(d.Steps) == 1 && d.Steps[0].State == "started"
		})
		// A pending step says which worker runs it, and its key.
		if d, err := e.c.Describe(e.ctx, "guarded", ""); err != nil || len(d.Steps) != 1 || d.Steps[0].Identity == "" ||
			d.Steps[0].IdempotencyKey != fmt.Sprintf("%s/%d", d.RunID, d.Steps[0].Seq) {
			t.Errorf("the started step: %+v, %v; want its worker's identity and its key", d.Steps, err)
		}
		if err := e.c.Cancel(e.ctx, "guarded", "", "changed my mind"); err != nil {
			t.Fatal(err)
		}
		_, err = r.Get(e.ctx)
		if !errors.Is(err, api.ErrCanceled) {
			t.Fatalf("got %v, want canceled", err)
		}
		<-cleaned
		<-stepCanceled // the cancellation reached the running step
		if evs := e.history("guarded", ""); count(evs, api.EventStepCancelScheduled) != 1 {
			dump(t, evs)
			t.Fatal("the workflow did not cancel its step")
		}

		r2, err := client.Start(e.ctx, e.c, Guarded, struct{}{}, client.StartOptions{ID: "doomed"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the step to start", func() bool {
			d, err := e.c.Describe(e.ctx, "doomed", "")
			return err == nil && len(d.Steps) == 1
		})
		if err := e.c.Terminate(e.ctx, "doomed", "", "operator said so"); err != nil {
			t.Fatal(err)
		}
		var te *api.TerminatedError
		if _, err := r2.Get(e.ctx); !errors.As(err, &te) || te.Reason != "operator said so" {
			t.Fatalf("got %v, want terminated", err)
		}
		if err := e.c.Terminate(e.ctx, "doomed", "", "again"); !errors.Is(err, api.ErrRunClosed) {
			t.Fatalf("second terminate: %v", err)
		}
		evs := e.history("doomed", "")
		if last := evs[len(evs)-1]; last.Type != api.EventWorkflowTerminated || last.Reason != "operator said so" {
			dump(t, evs)
			t.Fatal("history does not end with the termination")
		}
	})
}

// closerGate holds Closer's workflow task after its step, as slow workflow
// code would: running is closed once the task runs there, and the task
// goes on once the test closes signaled.
type closerGate struct {
	once     sync.Once
	running  chan struct{}
	signaled chan struct{}
}

var closerGates sync.Map // test name → *closerGate

// Closer returns how many "late" signals it saw after its step, taking its
// time (its test's closerGate) before it looks.
func Closer(ctx workflow.Context, name string) (int, error) {
	if _, err := workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{}, "gate", "x").Get(ctx); err != nil {
		return 0, err
	}
	if g, ok := closerGates.Load(name); ok && !workflow.IsReplaying(ctx) {
		g := g.(*closerGate)
		g.once.Do(func() { close(g.running) })
		select {
		case <-g.signaled:
		case <-time.After(time.Minute): // the test failed
		}
	}
	ch := workflow.GetSignalChannel[string](ctx, "late")
	n := 0
	for {
		if _, ok := ch.ReceiveAsync(); !ok {
			return n, nil
		}
		n++
	}
}

// TestSignalDuringClosingTask: a signal that arrives while the workflow's
// closing task runs is not dropped: the close is refused and the task runs
// again with the signal.
func TestSignalDuringClosingTask(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		release := make(chan struct{})
		g := &closerGate{running: make(chan struct{}), signaled: make(chan struct{})}
		closerGates.Store(t.Name(), g)
		signaled := sync.OnceFunc(func() { close(g.signaled) })
		defer signaled()
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Closer)
			worker.RegisterStepNamed(w, "gate", func(ctx context.Context, in string) (string, error) {
				<-release
				return in, nil
			})
		})
		r, err := client.Start(e.ctx, e.c, Closer, t.Name(), client.StartOptions{ID: "closer"})
		if err != nil {
			t.Fatal(err)
		}
		e.eventually("the gate step to start", func() bool {
			d, err := e.c.Describe(e.ctx, "closer", "")
			return err == nil && len(d.Steps) == 1 && d.Steps[0].State == "started"
		})
		close(release)
		select { // the closing task is running, held until the signal is in
		case <-g.running:
		case <-time.After(time.Minute):
			t.Fatal("timed out after a minute waiting for the workflow task after the step")
		}
		if err := e.c.Signal(e.ctx, "closer", "", "late", "hello"); err != nil {
			t.Fatal(err)
		}
		signaled()
		got, err := r.Get(e.ctx)
		if err != nil || got != 1 {
			dump(t, e.history("closer", ""))
			t.Fatalf("got %d, %v: the late signal was not seen", got, err)
		}
		evs := e.history("closer", "")
		for i, ev := range evs {
			if ev.Type == api.EventSignalReceived && i > 0 && count(evs[:i], api.EventWorkflowCompleted) > 0 {
				t.Fatal("the signal is recorded after the completion")
			}
		}
	})
}
