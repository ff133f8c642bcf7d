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

	// The engine goes with the attempt running (its worker never reports),
	// and a new one over the store offers the same attempt again, after a
	// redelivery delay shortened from its 5s default: the attempt is held
	// back as one that may still be running, only not for long.
	e.Close()
	opts.RedeliveryDelay = 100 * time.Millisecond
	e2, err := Open(ctx, st, opts)
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
