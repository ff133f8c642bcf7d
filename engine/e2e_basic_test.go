package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

func Add(ctx context.Context, in [2]int) (int, error) { return in[0] + in[1], nil }

func Sum3(ctx workflow.Context, n int) (int, error) {
	total := n
	for i := range 3 {
		v, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Add, [2]int{total, i}).Get(ctx)
		if err != nil {
			return 0, err
		}
		total = v
	}
	return total, nil
}

func TestSequentialSteps(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, Sum3)
			worker.RegisterStep(w, Add)
		})
		// Started together, so that their starts (at least) share commits.
		runs := make([]client.Run[int], 20)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() {
				r, err := client.Start(e.ctx, e.c, Sum3, i, client.StartOptions{ID: fmt.Sprintf("sum-%d", i)})
				if err != nil {
					t.Error(err)
				}
				runs[i] = r
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		for i, r := range runs {
			got, err := r.Get(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := i + 3; got != want {
				t.Fatalf("run %d: got %d, want %d", i, got, want)
			}
			evs := e.history(r.WorkflowID, r.RunID)
			if n := count(evs, api.EventStepCompleted); n != 3 {
				dump(t, evs)
				t.Fatalf("run %d: %d steps completed, want 3", i, n)
			}
			if n := count(evs, api.EventWorkflowCompleted); n != 1 {
				t.Fatalf("run %d: %d completions", i, n)
			}
		}
		// Twenty runs started and advancing together share commits.
		if st := e.eng.Stats(); st.CommitParts <= st.Commits {
			t.Fatalf("%d transitions in %d commits: no group commit", st.CommitParts, st.Commits)
		}
		// Every transfer task is processed and acknowledged: the ack level
		// moves and the processed tasks are deleted.
		e.eventually("the transfer queues to drain", func() bool {
			for shard := range int32(4) {
				sh, err := st.GetShard(e.ctx, shard)
				if errors.Is(err, store.ErrShardNotFound) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				page, err := st.ReadTasks(e.ctx, store.ReadTasksRequest{ShardID: shard, Range: store.TaskRange{Category: store.CategoryTransfer}})
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Tasks) > 0 || sh.AckLevels.Transfer == 0 {
					return false
				}
			}
			return true
		})
		if t.Failed() {
			return
		}
		evs := e.history(runs[0].WorkflowID, runs[0].RunID)
		dump(t, evs)
	})
}
