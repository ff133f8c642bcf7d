package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/bench"
	"github.com/strandhq/strand/internal/testdb"
)

// TestRunPurge runs the purge benchmark on a small scale: both phases
// purge every run they wrote, and shape (a) completes workflows before and
// during the second.
func TestRunPurge(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) bench.PurgeConfig{
		"sqlite":   func(t *testing.T) bench.PurgeConfig { return bench.PurgeConfig{Store: testdb.SQLite(t), Batch: 100} },
		"postgres": func(t *testing.T) bench.PurgeConfig { return bench.PurgeConfig{Store: testdb.Postgres(t), Batch: 100} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := open(t)
			// Shape (a) is load: it runs flat out for the whole second
			// phase (its warm-up, the baseline, the purge and the baseline
			// again), on both stores at once, and so takes CPU from the
			// rest of the suite for as long as the machine makes that
			// phase last. One workflow at a time is load (the purge has to
			// share the engine with it, and dozens complete while it
			// runs); half a second warms up an engine whose code the
			// template run and the first phase ran; a baseline of a second
			// measures a rate as well as two. strand bench purge runs 64
			// at a time, after 5 s. Batches of 100 of the 500 runs: the
			// engine's default batch (1,000) would purge them in one
			// transaction, which on SQLite holds the one writer, and
			// shape (a) could complete nothing while it ran.
			cfg.N, cfg.Baseline, cfg.WarmUp, cfg.Concurrency = 500, time.Second, 500*time.Millisecond, 1
			rep, err := bench.RunPurge(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("alone %s, under load %s, shape (a) %.0f → %.0f workflows/s", rep.Alone, rep.UnderLoad, rep.BaseRate, rep.LoadRate)
			if rep.Left != [2]int64{} {
				t.Errorf("visibility records of purged runs left: %v", rep.Left)
			}
			if rep.BaseRate <= 0 || rep.LoadRate <= 0 || rep.Alone <= 0 || rep.UnderLoad <= 0 {
				t.Errorf("nothing measured: %+v", rep)
			}
		})
	}
}
