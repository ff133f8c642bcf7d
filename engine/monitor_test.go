package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/worker"
)

// TestOverviewAndQueues: the overview counts the runs started and closed in
// the current minute by how they closed and by type; the queues list the
// worker polling them.
func TestOverviewAndQueues(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t), func(w *worker.Worker) {
		worker.RegisterWorkflow(w, Sum3)
		worker.RegisterStep(w, Add)
		worker.RegisterWorkflow(w, Outcome)
	})
	for i := range 3 {
		run, err := client.Start(e.ctx, e.c, Sum3, i, client.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Get(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	failed, err := client.Start(e.ctx, e.c, Outcome, "no", client.StartOptions{ID: "failing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failed.Get(e.ctx); err == nil {
		t.Fatal("Outcome(no) completed")
	}
	if _, err := client.Start(e.ctx, e.c, Outcome, "block", client.StartOptions{ID: "blocked"}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Terminate(e.ctx, "blocked", "", "enough"); err != nil {
		t.Fatal(err)
	}

	o, err := e.eng.Overview(e.ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Minutes) != 60 || time.Since(o.Minutes[59].Time) > 2*time.Minute {
		t.Fatalf("minutes: %d, the last at %v", len(o.Minutes), o.Minutes[len(o.Minutes)-1].Time)
	}
	var sum api.MinuteStats
	for _, m := range o.Minutes {
		sum.Started += m.Started
		sum.Completed += m.Completed
		sum.Failed += m.Failed
		sum.Terminated += m.Terminated
	}
	if sum.Started != 5 || sum.Completed != 3 || sum.Failed != 1 || sum.Terminated != 1 {
		t.Fatalf("minutes sum to %+v; want 5 started, 3 completed, 1 failed, 1 terminated", sum)
	}
	types := map[string]api.TypeStats{}
	for _, ts := range o.Types {
		types[ts.WorkflowType[strings.LastIndex(ts.WorkflowType, ".")+1:]] = ts
	}
	if s := types["Sum3"]; s.Started != 3 || s.Closed != 3 || s.Failed != 0 || s.MeanDuration <= 0 || s.MaxDuration < s.MeanDuration {
		t.Fatalf("Sum3: %+v", s)
	}
	if s := types["Outcome"]; s.Started != 2 || s.Closed != 2 || s.Failed != 1 {
		t.Fatalf("Outcome: %+v", s)
	}
	if other, err := e.eng.Overview(e.ctx, "strand-system"); err == nil && len(other.Types) != 0 {
		t.Fatalf("another namespace's overview has types: %+v", other.Types)
	}

	e.eventually("the worker to poll both queues", func() bool {
		list, err := e.eng.ListQueues(e.ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		queues := list.Queues
		polling := 0
		for _, q := range queues {
			if len(q.Pollers) == 1 && q.Pollers[0].Identity == "test-worker" && q.Pollers[0].Polling && q.SyncMatched+q.Backlogged > 0 {
				polling++
			}
		}
		return len(queues) == 2 && polling == 2
	})
	if _, err := e.eng.ListQueues(e.ctx, "nope"); err == nil {
		t.Fatal("queues of a namespace that does not exist")
	}
}
