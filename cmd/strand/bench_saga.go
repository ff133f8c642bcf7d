package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/internal/bench"
)

func newBenchSagaCommand() *cobra.Command {
	var cfg bench.SagaConfig
	var target benchTarget
	cmd := &cobra.Command{
		Use:   "saga",
		Short: "Measure sagas: sagas/s of N four-step sagas with a tenth compensating, next to the engine's step rate",
		Long: "Runs --n sagas of four steps, each with a compensation (at most --concurrency at a time), on an embedded\n" +
			"engine with a worker; every --compensate-every-th saga's last step fails for good, so its first three are\n" +
			"compensated. It prints sagas/s and saga steps/s (forward steps and compensations). Then it runs workflows\n" +
			"of as many no-op steps on the same engine and prints steps/s, and the ratio of the two step rates.\n\n" +
			"Without --store it uses a new SQLite file in a temporary directory; use a database of its own.\n" + benchServerHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.N <= 0 || cfg.Concurrency <= 0 || cfg.CompensateEvery <= 0 {
				return &usageError{fmt.Errorf("--n %d, --concurrency %d, --compensate-every %d: want positive numbers", cfg.N, cfg.Concurrency, cfg.CompensateEvery)}
			}
			t, err := target.open(cmd)
			if err != nil {
				return err
			}
			defer t.close()
			cfg.Store, cfg.Services, cfg.Progress, cfg.Logger = t.store, t.services, t.progress, t.log
			rep, err := bench.RunSaga(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			bench.PrintSaga(cmd.OutOrStdout(), t.backend, rep)
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.N, "n", 1000, "sagas")
	cmd.Flags().IntVar(&cfg.Concurrency, "concurrency", 200, "sagas started at once")
	cmd.Flags().IntVar(&cfg.CompensateEvery, "compensate-every", 10, "every this many-th saga compensates")
	target.flags(cmd)
	target.serverFlags(cmd)
	return cmd
}
