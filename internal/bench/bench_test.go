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
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
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
	eng, err := engine.Open(context.Background(), testdb.SQLite(t), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(server.New(eng, server.Options{PollWait: time.Second}))
	defer srv.Close()
	rep, err := bench.Run(context.Background(), bench.Config{Services: []api.Service{remote.New(srv.URL, nil)}, N: 10, Shapes: []string{"sequential", "tree"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[1].Workflows != 70 {
		t.Fatalf("results %+v", rep.Results)
	}
}
