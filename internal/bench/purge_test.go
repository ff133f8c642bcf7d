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
		"sqlite":   func(t *testing.T) bench.PurgeConfig { return bench.PurgeConfig{Store: testdb.SQLite(t)} },
		"postgres": func(t *testing.T) bench.PurgeConfig { return bench.PurgeConfig{Store: testdb.Postgres(t), Batch: 100} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := open(t)
			cfg.N, cfg.Baseline, cfg.Concurrency = 500, 2*time.Second, 8
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
