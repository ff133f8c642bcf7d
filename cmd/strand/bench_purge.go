package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/internal/bench"
)

func newBenchPurgeCommand() *cobra.Command {
	var cfg bench.PurgeConfig
	var target benchTarget
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Measure the retention purge: alone, and beside shape (a)",
		Long: "Writes N closed runs whose retention has passed (copies of a single-step workflow the engine ran first:\n" +
			"state, history, current row, visibility record and retention timer, written through the store's Commit API\n" +
			"and visibility store, which is faster than running N workflows) and times an engine purging them alone.\n" +
			"Then it writes N more whose timers come due after shape (a) (\"sequential\", 64 at a time) has run alone for\n" +
			"--baseline, and reports the purge's time beside shape (a)'s workflows/s before and during the purge (their\n" +
			"ratio), all in this one run.\n\n" +
			"Without --store it uses a new SQLite file in a temporary directory. The store keeps what the purge does\n" +
			"not delete (shape (a)'s runs); use a database of its own.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.N <= 0 {
				return &usageError{fmt.Errorf("--n %d: want a positive number", cfg.N)}
			}
			if cfg.Share < 0 || cfg.Share > 1 {
				return &usageError{fmt.Errorf("--share %v: want a number in (0, 1]", cfg.Share)}
			}
			t, err := target.open(cmd)
			if err != nil {
				return err
			}
			defer t.close()
			cfg.Store, cfg.Progress, cfg.Logger = t.store, t.progress, t.log
			rep, err := bench.RunPurge(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			bench.PrintPurge(cmd.OutOrStdout(), t.backend, rep)
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.N, "n", 100000, "expired runs purged in each phase")
	cmd.Flags().IntVar(&cfg.Shards, "shards", 0, "shard count of a new store (default: the engine's)")
	cmd.Flags().IntVar(&cfg.Batch, "batch", 0, "runs per purge batch (default: the engine's, 1000)")
	cmd.Flags().Float64Var(&cfg.Share, "share", 0, "the most of the time the purge takes while the node has live work (default: the engine's, 0.2)")
	cmd.Flags().DurationVar(&cfg.Baseline, "baseline", 20*time.Second, "how long shape (a) runs alone before the second phase's runs expire")
	cmd.Flags().BoolVar(&cfg.AloneOnly, "alone-only", false, "measure the purge alone only (skip the phase under shape (a))")
	target.flags(cmd)
	return cmd
}
