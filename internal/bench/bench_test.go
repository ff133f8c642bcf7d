package bench_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/bench"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/system"
)

// TestRun runs every shape on a small scale: each workflow must complete.
// STRAND_BENCH_N raises the scale (for profiling).
func TestRun(t *testing.T) {
	n := 20
	if v, err := strconv.Atoi(os.Getenv("STRAND_BENCH_N")); err == nil {
		n = v
	}
	st := testdb.SQLite(t)
	if os.Getenv("STRAND_BENCH_STORE") == "postgres" {
		st = testdb.Postgres(t)
	}
	profiles := t.TempDir()
	rep, err := bench.Run(context.Background(), bench.Config{Store: st, N: n, RawFor: -1, Shapes: shapes(), ProfileDir: profiles})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		t.Logf("%s: %d workflows, %.0f workflows/s, p50 %s, p99 %s, %d commits, runtime %+v", r.Shape, r.Workflows, r.WorkflowsPerSec(), r.P50, r.P99, r.Commits, r.Runtime)
		if r.Shape == "waiting" && (r.Open == nil || r.Open.Started <= 0 || r.Open.HeapInuse == 0 || r.Open.Goroutines == 0) {
			t.Errorf("waiting: nothing measured with the runs open: %+v", r.Open)
		}
		if rt := r.Runtime; rt.AllocBytes == 0 || rt.Allocs == 0 || rt.CPU <= 0 || !rt.Profiling {
			t.Errorf("%s: the runtime's figures of the measured phase are missing: %+v", r.Shape, rt)
		}
		for _, f := range []string{".cpu.pprof", ".allocs-before.pprof", ".allocs-after.pprof"} {
			if fi, err := os.Stat(filepath.Join(profiles, r.Shape+f)); err != nil || fi.Size() == 0 {
				t.Errorf("%s: profile %s: %v", r.Shape, f, err)
			}
		}
	}
}

func shapes() []string {
	if s := os.Getenv("STRAND_BENCH_SHAPE"); s != "" {
		return []string{s}
	}
	return nil
}

// TestRunThroughServer runs the shapes against a server, the workers and
// the client talking HTTP.
func TestRunThroughServer(t *testing.T) {
	rep, err := bench.Run(context.Background(), bench.Config{Services: serve(t)[:1], N: 10, Shapes: []string{"sequential", "tree"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[1].Workflows != 70 {
		t.Fatalf("results %+v", rep.Results)
	}
}

// served is what strand server serves, of what the benchmarks use: the
// engine and the messages over it.
type served struct {
	*engine.Engine
	*message.Service
}

// serve runs an engine over a new store as strand server does (the system
// workflows' runner beside it, the API over HTTP) and returns two services
// that reach it, as if they were two nodes of a cluster: the benchmarks
// spread their calls over both. Each benchmark gets a server of its own:
// right after one run's workers stop, a task of the next run's on the same
// server now and then waits out its task timeout (10s), handed to a poll
// that was leaving.
func serve(t *testing.T) []api.Service {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.Open(ctx, testdb.SQLite(t), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	runner := system.NewRunner(eng, system.RunnerOptions{})
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Stop(ctx) })
	srv := httptest.NewServer(server.New(served{eng, message.NewService(eng)}, server.Options{PollWait: time.Second}))
	t.Cleanup(srv.Close)
	return []api.Service{remote.New(srv.URL, nil), remote.New(srv.URL, nil)}
}

// TestFrontEndsThroughServer runs the saga, state machine, DAG and
// messages benchmarks small against a server, their workers and clients
// talking HTTP: each counts what it ran.
func TestFrontEndsThroughServer(t *testing.T) {
	ctx := context.Background()
	t.Run("saga", func(t *testing.T) {
		rep, err := bench.RunSaga(ctx, bench.SagaConfig{Services: serve(t), N: 20, Concurrency: 5})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Compensated != 2 || rep.Steps != 20*4+2*3 || rep.KernelSteps != rep.Steps || rep.SagasPerSec <= 0 || rep.StepsPerSec <= 0 {
			t.Fatalf("report: %+v", rep)
		}
	})
	t.Run("statemachine", func(t *testing.T) {
		rep, err := bench.RunStateMachine(ctx, bench.StateMachineConfig{Services: serve(t), N: 20, Concurrency: 5})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Transitions != 80 || rep.Steps != 80 || rep.TransitionsPerSec <= 0 || rep.StepsPerSec <= 0 {
			t.Fatalf("report: %+v", rep)
		}
	})
	t.Run("dag", func(t *testing.T) {
		rep, err := bench.RunDAG(ctx, bench.DAGConfig{Services: serve(t), Chain: 5, Instances: 2})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Task.N != 8 || rep.Step.N != 8 || rep.Task.P50 <= 0 || rep.Step.P50 <= 0 || rep.TasksPerSecond <= 0 || rep.StepsPerSecond <= 0 {
			t.Fatalf("report: %+v", rep)
		}
	})
	t.Run("messages", func(t *testing.T) {
		rep, err := bench.RunMessages(ctx, bench.MessagesConfig{Services: serve(t), N: 20, Senders: 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []bench.DeliveryFigures{rep.Messages, rep.Signals} {
			if f.PerSecond <= 0 || f.Elapsed <= 0 || f.SendP50 <= 0 || f.DeliveryMax < f.DeliveryP50 {
				t.Fatalf("report: %+v", rep)
			}
		}
	})
}
