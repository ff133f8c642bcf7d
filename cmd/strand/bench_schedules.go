package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/internal/bench"
)

func newBenchSchedulesCommand() *cobra.Command {
	var cfg bench.SchedulesConfig
	var target benchTarget
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Measure schedules: N firing every minute, how late their fires are and the CPU they take",
		Long: "Creates N schedules that fire every minute (schedule i at second i mod 60, or all at second 0 with\n" +
			"--together), each starting a workflow that does nothing, in one process with the engine, the scheduler\n" +
			"worker and a worker. After a minute of warm-up it measures --window: the lateness of each fire (the\n" +
			"scheduled run's creation after its fire time: p50, p99, max) and the process's CPU, beside its CPU when\n" +
			"idle before the schedules existed.\n\n" +
			"Without --store it uses a new SQLite file in a temporary directory; use a database of its own.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.N <= 0 {
				return &usageError{fmt.Errorf("--n %d: want a positive number", cfg.N)}
			}
			if cfg.Window < time.Minute {
				return &usageError{fmt.Errorf("--window %s: want at least 1m", cfg.Window)}
			}
			t, err := target.open(cmd)
			if err != nil {
				return err
			}
			defer t.close()
			cfg.Store, cfg.Progress, cfg.Logger = t.store, t.progress, t.log
			rep, err := bench.RunSchedules(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			bench.PrintSchedules(cmd.OutOrStdout(), t.backend, rep)
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.N, "n", 10000, "schedules")
	cmd.Flags().DurationVar(&cfg.Window, "window", 2*time.Minute, "how long fires are measured (whole minutes)")
	cmd.Flags().BoolVar(&cfg.Together, "together", false, "every schedule fires at second 0 of the minute")
	target.flags(cmd)
	return cmd
}
