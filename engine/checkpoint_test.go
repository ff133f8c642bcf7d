package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// checkpointFlow runs the step its input names.
func checkpointFlow(ctx workflow.Context, step string) (string, error) {
	return workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{}, step, "in").Get(ctx)
}

// A step attempt that runs long has its dispatch written anew, so the
// transfer ack level moves past it while it runs; the new dispatch is as
// durable as the old: an engine opened after a crash offers the attempt
// again from it.
func TestLongStepDoesNotHoldTheTransferAckLevel(t *testing.T) {
	st := testdb.SQLite(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := Options{Logger: quiet, stepCheckpoint: 100 * time.Millisecond}
	e, err := Open(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	started, release := make(chan int32, 2), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	newWorker := func(e *Engine) *worker.Worker {
		w := worker.New(e, worker.Options{Logger: quiet})
		worker.RegisterWorkflow(w, checkpointFlow)
		worker.RegisterStepNamed(w, "long", func(ctx context.Context, in string) (string, error) {
			started <- step.GetInfo(ctx).Attempt
			<-release
			return "long done", nil
		})
		worker.RegisterStepNamed(w, "short", func(ctx context.Context, in string) (string, error) { return "short done", nil })
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(ctx) })
		return w
	}
	t.Cleanup(free) // before the workers stop, which wait for the step
	newWorker(e)
	c := client.New(e, client.Options{})

	before := time.Now()
	long, err := client.Start(ctx, c, checkpointFlow, "long", client.StartOptions{ID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	k := store.RunKey{Namespace: api.DefaultNamespace, WorkflowID: "long", RunID: long.RunID}
	s := e.local(e.shardID(k.Namespace, k.WorkflowID))
	var dispatch store.TaskKey
	if err := s.withRun(ctx, k, func(r *run) error {
		for _, key := range r.stepTasks {
			dispatch = key
		}
		return nil
	}); err != nil || dispatch.TaskID == 0 {
		t.Fatalf("the long step's dispatch task: %v, %v", dispatch, err)
	}

	for i := range 20 {
		r, err := client.Start(ctx, c, checkpointFlow, "short", client.StartOptions{ID: fmt.Sprintf("short-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.Get(ctx); err != nil || got != "short done" {
			t.Fatalf("short: %q, %v", got, err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		sh, err := st.GetShard(ctx, s.id)
		if err != nil {
			t.Fatal(err)
		}
		if sh.AckLevels.Transfer > dispatch.TaskID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the transfer ack level stays at %d, held by the long step's dispatch %d", sh.AckLevels.Transfer, dispatch.TaskID)
		}
	}

	// The engine goes with the attempt running (its worker never reports).
	// A new one over the store recovers the attempt from its checkpointed
	// dispatch, which says when it started: it holds the attempt back as
	// one that may still be running until its start-to-close (10m, the
	// default) from then has passed.
	e.Close()
	closed := time.Now()
	e2, err := Open(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	var held *stepItem
	var due time.Time
	var heldDispatch store.TaskKey
	for deadline := time.Now().Add(time.Minute); held == nil; time.Sleep(20 * time.Millisecond) {
		if s2 := e2.local(e2.shardID(k.Namespace, k.WorkflowID)); s2 != nil {
			if err := s2.withRun(ctx, k, func(r *run) error {
				for _, it := range r.held {
					held = it
					due = recoveredDue(r.exec.Steps[it.seq], it.started, time.Now(), e2.opts.DefaultStartToClose)
					heldDispatch = r.stepTasks[it.seq]
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if held == nil && time.Now().After(deadline) {
			t.Fatal("the running attempt was not held back by the engine opened anew")
		}
	}
	if held.started.Before(before.Add(-time.Millisecond)) || held.started.After(closed) || !due.Equal(held.started.Add(10*time.Minute)) {
		t.Errorf("held from a start at %s until %s; want a start between %s and %s, held 10m from it", held.started, due, before, closed)
	}
	// Held that long, its dispatch is written anew too: the ack level
	// moves past the one it was recovered from.
	newWorker(e2)
	c2 := client.New(e2, client.Options{})
	for i, deadline := 0, time.Now().Add(time.Minute); ; i++ {
		r, err := client.Start(ctx, c2, checkpointFlow, "short", client.StartOptions{ID: fmt.Sprintf("short-after-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.Get(ctx); err != nil || got != "short done" {
			t.Fatalf("short: %q, %v", got, err)
		}
		sh, err := st.GetShard(ctx, s.id)
		if err != nil {
			t.Fatal(err)
		}
		if sh.AckLevels.Transfer > heldDispatch.TaskID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the transfer ack level stays at %d, held by the held step's dispatch %d", sh.AckLevels.Transfer, heldDispatch.TaskID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e2.Close()

	// With a negative redelivery delay (the worker died with the engine),
	// the next engine offers the same attempt again at once.
	opts.RedeliveryDelay = -1
	e2, err = Open(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	newWorker(e2)
	select {
	case attempt := <-started:
		if attempt != 1 {
			t.Fatalf("offered again as attempt %d, want 1", attempt)
		}
	case <-time.After(time.Minute):
		t.Fatal("the running attempt was not offered again within a minute of the engine opened anew")
	}
	free()
	got, err := client.GetRun[string](client.New(e2, client.Options{}), "long", long.RunID).Get(ctx)
	if err != nil || got != "long done" {
		t.Fatalf("long: %q, %v", got, err)
	}
}
