package bench_test

import (
	"context"
	"testing"

	"github.com/strandhq/strand/internal/bench"
	"github.com/strandhq/strand/internal/testdb"
)

// TestRunDAG runs the DAG benchmark small, with no-op steps and with shell
// tasks: every gap is measured, none negative.
func TestRunDAG(t *testing.T) {
	for _, shell := range []bool{false, true} {
		rep, err := bench.RunDAG(context.Background(), bench.DAGConfig{Store: testdb.SQLite(t), Chain: 5, Instances: 2, Shell: shell})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("shell %v: tasks %+v, steps %+v", shell, rep.Task, rep.Step)
		if rep.Task.N != 8 || rep.Step.N != 8 || rep.Task.P50 <= 0 || rep.Step.P50 <= 0 || rep.TasksPerSecond <= 0 {
			t.Fatalf("shell %v: %+v", shell, rep)
		}
	}
}

// TestRunStateMachine runs the state machine benchmark small.
func TestRunStateMachine(t *testing.T) {
	rep, err := bench.RunStateMachine(context.Background(), bench.StateMachineConfig{Store: testdb.SQLite(t), N: 20, Concurrency: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if rep.Transitions != 80 || rep.TransitionsPerSec <= 0 || rep.StepsPerSec <= 0 {
		t.Fatalf("%+v", rep)
	}
}

// TestRunSaga runs the saga benchmark small.
func TestRunSaga(t *testing.T) {
	rep, err := bench.RunSaga(context.Background(), bench.SagaConfig{Store: testdb.SQLite(t), N: 20, Concurrency: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Compensated != 2 || rep.Steps != 20*4+2*3 || rep.SagasPerSec <= 0 || rep.StepsPerSec <= 0 {
		t.Fatalf("report: %+v", rep)
	}
}
