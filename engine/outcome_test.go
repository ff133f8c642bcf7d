package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// unsure is a real store whose commits sometimes report ErrOutcomeUnknown:
// every third commit of runs is applied and then reported unknown, every
// fifth is not applied and reported unknown, as a timeout would leave them.
type unsure struct {
	store.Store
	mu sync.Mutex
	n  int
}

func (u *unsure) Commit(ctx context.Context, b *store.Batch) error {
	if len(b.Runs) == 0 {
		return u.Store.Commit(ctx, b)
	}
	u.mu.Lock()
	u.n++
	n := u.n
	u.mu.Unlock()
	switch {
	case n%3 == 0:
		if err := u.Store.Commit(ctx, b); err != nil {
			return err
		}
		return fmt.Errorf("%w: injected after the write", store.ErrOutcomeUnknown)
	case n%5 == 0:
		return fmt.Errorf("%w: injected, not written", store.ErrOutcomeUnknown)
	}
	return u.Store.Commit(ctx, b)
}

func Steady(ctx workflow.Context, n int) (int, error) {
	for range 3 {
		v, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{StartToClose: time.Second, Retry: fastRetry}, "inc", n).Get(ctx)
		if err != nil {
			return 0, err
		}
		n = v
	}
	return n, nil
}

// TestUnknownOutcomes: commits whose outcome is unknown (written or not)
// lose nothing acknowledged, every workflow completes, and the transfer
// queue still drains.
func TestUnknownOutcomes(t *testing.T) {
	st := &unsure{Store: testdb.SQLite(t)}
	// A step attempt in flight when its run's write came back unknown is
	// held back for the redelivery delay before it is offered again: 200ms
	// in place of the 5s default, which only made the test wait.
	e := newEnvWith(t, st, engine.Options{RedeliveryDelay: 200 * time.Millisecond}, func(w *worker.Worker) {
		worker.RegisterWorkflow(w, Steady)
		worker.RegisterStepNamed(w, "inc", func(ctx context.Context, n int) (int, error) { return n + 1, nil })
	})
	var runs []client.Run[int]
	for i := range 20 {
		var r client.Run[int]
		var err error
		// A start is retried with its request id, as a client would.
		for attempt := 0; ; attempt++ {
			r, err = client.Start(e.ctx, e.c, Steady, i, client.StartOptions{ID: fmt.Sprintf("steady-%d", i), RequestID: fmt.Sprintf("req-%d", i)})
			if err == nil || !errors.Is(err, store.ErrOutcomeUnknown) || attempt == 5 {
				break
			}
		}
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		runs = append(runs, r)
	}
	for i, r := range runs {
		gctx, cancel := context.WithTimeout(e.ctx, 15*time.Second)
		got, err := client.GetRun[int](e.c, r.WorkflowID, "").Get(gctx)
		cancel()
		if err != nil || got != i+3 {
			d, derr := e.c.Describe(e.ctx, r.WorkflowID, "")
			t.Logf("describe: %+v %v", d, derr)
			dump(t, e.history(r.WorkflowID, ""))
			t.Fatalf("run %d: %d, %v", i, got, err)
		}
		evs := e.history(r.WorkflowID, "")
		if n := count(evs, "WorkflowCompleted"); n != 1 {
			t.Fatalf("run %d: %d completions", i, n)
		}
	}
	e.eventually("the transfer queue to drain", func() bool {
		page, err := st.ReadTasks(e.ctx, store.ReadTasksRequest{ShardID: 0, Range: store.TaskRange{Category: store.CategoryTransfer}})
		return err == nil && len(page.Tasks) == 0
	})
}
