package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/internal/bench"
)

func newBenchStateMachineCommand() *cobra.Command {
	var cfg bench.StateMachineConfig
	var target benchTarget
	cmd := &cobra.Command{
		Use:   "statemachine",
		Short: "Measure state machines: transitions/s of N instances of a 5-state machine, next to the engine's step rate",
		Long: "Creates --n instances of a state machine of four states that move on at once and an end state (at most\n" +
			"--concurrency at a time), on an embedded engine with a worker, and prints the state transitions per second\n" +
			"until the last finished. Then it runs as many plain workflows of four no-op steps on the same engine and\n" +
			"prints steps per second, and the ratio of the two.\n\n" +
			"Without --store it uses a new SQLite file in a temporary directory; use a database of its own.\n" + benchServerHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.N <= 0 || cfg.Concurrency <= 0 {
				return &usageError{fmt.Errorf("--n %d, --concurrency %d: want positive numbers", cfg.N, cfg.Concurrency)}
			}
			t, err := target.open(cmd)
			if err != nil {
				return err
			}
			defer t.close()
			cfg.Store, cfg.Services, cfg.Progress, cfg.Logger = t.store, t.services, t.progress, t.log
			rep, err := bench.RunStateMachine(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			bench.PrintStateMachine(cmd.OutOrStdout(), t.backend, rep)
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.N, "n", 10000, "instances")
	cmd.Flags().IntVar(&cfg.Concurrency, "concurrency", 200, "instances created at once")
	target.flags(cmd)
	target.serverFlags(cmd)
	return cmd
}
