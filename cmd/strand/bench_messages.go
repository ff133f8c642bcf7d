package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/internal/bench"
)

func newBenchMessagesCommand() *cobra.Command {
	var cfg bench.MessagesConfig
	var target benchTarget
	cmd := &cobra.Command{
		Use:   "messages",
		Short: "Measure correlated messages: N runs waiting for one message each, beside N signals",
		Long: "Starts N runs that each wait for a signal, signals each by workflow id and measures the deliveries (the\n" +
			"baseline); then starts N runs that each wait for a message by name and correlation key (workflow.Receive),\n" +
			"waits until every mailbox has its waiter, sends each its message and measures: delivered/s (the first send\n" +
			"to the last run's close), the send calls' latency, and send to delivery (the workflow task that handed the\n" +
			"message to its run). One process holds the engine, the system worker (the mailboxes) and a worker; with\n" +
			"--server, the server runs the mailboxes and this process the receivers' worker.\n\n" +
			"Without --store it uses a new SQLite file in a temporary directory; use a database of its own.\n" + benchServerHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.N <= 0 {
				return &usageError{fmt.Errorf("--n %d: want a positive number", cfg.N)}
			}
			if cfg.Senders <= 0 {
				return &usageError{fmt.Errorf("--senders %d: want a positive number", cfg.Senders)}
			}
			t, err := target.open(cmd)
			if err != nil {
				return err
			}
			defer t.close()
			cfg.Store, cfg.Services, cfg.Progress, cfg.Logger = t.store, t.services, t.progress, t.log
			rep, err := bench.RunMessages(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			bench.PrintMessages(cmd.OutOrStdout(), t.backend, rep)
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.N, "n", 10000, "runs waiting, one message each")
	cmd.Flags().IntVar(&cfg.Senders, "senders", 64, "sends at once")
	target.flags(cmd)
	target.serverFlags(cmd)
	return cmd
}
