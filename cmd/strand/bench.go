package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/internal/bench"
)

func newBenchCommand() *cobra.Command {
	var (
		storeURL string
		n        int
		shapes   []string
		rawFor   time.Duration
		quiet    bool
		shards   int
		servers  []string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure workflows/s, steps/s and latency of the embedded engine",
		Long: "Runs workflows of these shapes on an embedded engine and prints workflows/s, steps/s and p50/p99\n" +
			"start-to-completion latency, next to the store's raw commit rate measured in the same run:\n\n" + bench.ShapeHelp +
			"\n\nEach shape runs on a new engine, after an unmeasured warm-up of a fifth as many workflows." +
			"\n\nWithout --store it uses a new SQLite file in a temporary directory; with --server it measures a running\n" +
			"server, its workers and client in this process over HTTP.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n <= 0 {
				return &usageError{fmt.Errorf("--n %d: want a positive number", n)}
			}
			cfg := bench.Config{Shapes: shapes, N: n, RawFor: rawFor, Shards: shards}
			backend := storeURL
			if len(servers) > 0 {
				for _, u := range servers {
					o := &cliOptions{server: u, output: "table"}
					svc, err := o.service()
					if err != nil {
						return err
					}
					cfg.Services = append(cfg.Services, svc)
				}
				backend = strings.Join(servers, ",")
			}
			if len(servers) == 0 || storeURL != "" {
				if storeURL == "" {
					dir, err := os.MkdirTemp("", "strand-bench-")
					if err != nil {
						return err
					}
					defer os.RemoveAll(dir)
					storeURL = "sqlite://" + filepath.Join(dir, "bench.db")
					backend = "sqlite (temporary file)"
				}
				st, err := openStore(cmd.Context(), storeURL)
				if err != nil {
					return err
				}
				defer st.Close()
				if _, _, err := st.Migrate(cmd.Context()); err != nil {
					return err
				}
				cfg.Store = st
				if len(servers) > 0 {
					backend += " (raw rate: " + storeURL + ")"
				}
			}
			if !quiet {
				cfg.Progress = cmd.ErrOrStderr()
			}
			rep, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			bench.Print(cmd.OutOrStdout(), backend, rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "", "store URL (default: a temporary SQLite file)")
	cmd.Flags().StringSliceVar(&servers, "server", nil, "measure running servers instead: one URL, or a cluster's nodes comma-separated (a worker and a client per node in this process, over HTTP; --store then only gives the raw commit rate)")
	cmd.Flags().IntVar(&n, "n", 500, "workflows per shape (root workflows for tree)")
	cmd.Flags().StringSliceVar(&shapes, "shapes", bench.Shapes, "shapes to run")
	cmd.Flags().DurationVar(&rawFor, "raw-for", 2*time.Second, "how long to measure the raw commit rate (negative: skip)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	cmd.Flags().IntVar(&shards, "shards", 0, "shard count of a new store (default: the engine's)")
	cmd.AddCommand(newBenchPurgeCommand())
	return cmd
}
