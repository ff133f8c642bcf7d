package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/internal/bench"
)

func newBenchDAGCommand() *cobra.Command {
	var cfg bench.DAGConfig
	var target benchTarget
	cmd := &cobra.Command{
		Use:   "dag",
		Short: "Measure the DAG front end's scheduling overhead per task, next to the kernel's gap between steps",
		Long: "Runs --instances instances at once of a DAG that is a chain of --chain no-op tasks (Go steps; with --shell,\n" +
			"shell tasks that run `true`) on an embedded engine with the interpreter's worker and workers of the tasks, and prints the\n" +
			"scheduling overhead per task: from the upstream task's end to the task's start, by the worker's clock\n" +
			"(p50, p99, max). Then, on the same engine, it runs as many plain workflows of as many no-op steps one\n" +
			"after the other and prints the same gap between steps: the kernel's floor, and the ratio of the two.\n\n" +
			"Without --store it uses a new SQLite file in a temporary directory; use a database of its own.\n" + benchServerHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Chain < 2 || cfg.Instances < 1 {
				return &usageError{fmt.Errorf("--chain %d, --instances %d: want a chain of 2 tasks or more and an instance or more", cfg.Chain, cfg.Instances)}
			}
			t, err := target.open(cmd)
			if err != nil {
				return err
			}
			defer t.close()
			cfg.Store, cfg.Services, cfg.Progress, cfg.Logger = t.store, t.services, t.progress, t.log
			rep, err := bench.RunDAG(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			bench.PrintDAG(cmd.OutOrStdout(), t.backend, rep)
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.Chain, "chain", 50, "tasks in each instance, one after the other")
	cmd.Flags().IntVar(&cfg.Instances, "instances", 1, "instances at once")
	cmd.Flags().BoolVar(&cfg.Shell, "shell", false, "shell tasks that run `true` (a bash process each) instead of no-op Go steps")
	target.flags(cmd)
	target.serverFlags(cmd)
	return cmd
}
