package dag_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/worker"
)

// Noop is the Go step the scale test's tasks run.
func Noop(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil }

// TestScale: a DAG of 200 tasks completes, and so do 250 instances at
// once of a DAG of 10 tasks.
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	e := newEnv(t, testdb.SQLite(t))
	w := worker.New(e.eng, worker.Options{Queue: "noop", Logger: testenv.Logger(), MaxConcurrentSteps: 100})
	worker.RegisterStep(w, Noop)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	const step = "Noop" // the name a worker registers a step function under

	// 200 tasks: a root, 198 in ten layers below it, and a sink.
	var b strings.Builder
	b.WriteString("name: wide\ntasks:\n  - {name: root, type: shell, script: 'true'}\n")
	var last []string
	for i := range 198 {
		up := "root"
		if i >= 20 {
			up = fmt.Sprintf("t%d", i-20)
		}
		fmt.Fprintf(&b, "  - {name: t%d, type: step, step: %s, queue: noop, upstream: [%s]}\n", i, step, up)
		if i >= 178 {
			last = append(last, fmt.Sprintf("t%d", i))
		}
	}
	fmt.Fprintf(&b, "  - {name: sink, type: shell, script: 'true', upstream: [%s]}\n", strings.Join(last, ", "))
	e.apply(b.String())
	inst := e.wait(e.start(dag.RunInput{DAG: "wide"}))
	if inst.State != dag.StateSuccess || len(inst.Tasks) != 200 {
		t.Fatalf("wide: %s, %d tasks: %s %s", inst.State, len(inst.Tasks), inst.Error, task(inst, "t0").Error)
	}

	b.Reset()
	b.WriteString("name: ten\ntasks:\n")
	for i := range 10 {
		up := ""
		if i > 0 {
			up = fmt.Sprintf(", upstream: [s%d]", (i-1)/3*3)
		}
		fmt.Fprintf(&b, "  - {name: s%d, type: step, step: %s, queue: noop%s}\n", i, step, up)
	}
	e.apply(b.String())
	// More instances than the strand worker takes workflow tasks at once
	// (200 by default) and than the step worker has slots (100), so that
	// both back up as they would at any larger number; 500 took twice as
	// long (some 45s of a loaded 2-core machine) and found nothing more.
	const n = 250
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			s, err := e.client.Start(e.ctx, dag.RunInput{DAG: "ten"}, dag.StartOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = s.WorkflowID
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, id := range ids {
		if inst := e.wait(id); inst.State != dag.StateSuccess {
			t.Fatalf("%s: %s", id, states0(inst))
		}
	}
}
