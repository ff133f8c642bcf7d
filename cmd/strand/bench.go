package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // --pprof
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/bench"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
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
		calls    taskCallFlags
		pprof    string
		profile  string
		// the engine's and the worker's cache budgets
		cacheMemory, workerCache int64
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure workflows/s, steps/s and latency of the embedded engine",
		Long: "Runs workflows of these shapes on an embedded engine and prints workflows/s, steps/s and p50/p99\n" +
			"start-to-completion latency, next to the store's raw commit rate measured in the same run:\n\n" + bench.ShapeHelp +
			"\n\nEach shape runs on a new engine, after an unmeasured warm-up of a fifth as many workflows. Its measured\n" +
			"phase ends once the engine has also written its runs' visibility records (which it otherwise gathers for a\n" +
			"second), so that a short run and a long one hold the same work per workflow." +
			"\n\nWithout --store it uses a new SQLite file in a temporary directory; with --server it measures a running\n" +
			"server, its workers and client in this process over HTTP.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n <= 0 {
				return &usageError{fmt.Errorf("--n %d: want a positive number", n)}
			}
			if cacheMemory < 0 || workerCache < 0 {
				return &usageError{fmt.Errorf("--cache-memory and --worker-cache-memory must not be negative")}
			}
			cfg := bench.Config{Shapes: shapes, N: n, RawFor: rawFor, Shards: shards, CacheMemory: cacheMemory, WorkerCacheMemory: workerCache, ProfileDir: profile}
			if profile != "" {
				if err := os.MkdirAll(profile, 0o755); err != nil {
					return &usageError{fmt.Errorf("--profile %q: %v", profile, err)}
				}
			}
			setMemoryLimit(cmp.Or(cacheMemory, engine.DefaultCacheMemory) + cmp.Or(workerCache, worker.DefaultCacheMemory) + worker.DefaultJournalMemory)
			backend := storeURL
			if len(servers) > 0 {
				var err error
				if cfg.Services, backend, err = benchServices(servers, calls); err != nil {
					return err
				}
			}
			if len(servers) == 0 || storeURL != "" {
				st, name, closeStore, err := openBenchStore(cmd.Context(), storeURL)
				if err != nil {
					return err
				}
				defer closeStore()
				cfg.Store = st
				if len(servers) > 0 {
					backend += " (raw rate: " + storeURL + ")"
				} else {
					backend = name
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
	cmd.Flags().StringSliceVar(&servers, "server", nil, "measure running servers instead: one URL, or a cluster's nodes comma-separated (a worker and a client per node in this process, over HTTP, each given every node, its own first; --store then only gives the raw commit rate)")
	calls.flags(cmd)
	cmd.Flags().IntVar(&n, "n", 500, "workflows per shape (root workflows for tree)")
	cmd.Flags().StringSliceVar(&shapes, "shapes", bench.Shapes, "shapes to run")
	cmd.Flags().DurationVar(&rawFor, "raw-for", 2*time.Second, "how long to measure the raw commit rate (negative: skip)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	cmd.Flags().Int64Var(&cacheMemory, "cache-memory", 0, "the engine's run cache budget in bytes (default: the engine's, 256 MiB)")
	cmd.Flags().Int64Var(&workerCache, "worker-cache-memory", 0, "the worker's instance cache budget in bytes (default: the worker's, 64 MiB)")
	cmd.PersistentFlags().StringVar(&pprof, "pprof", "", "serve Go's profiles (net/http/pprof) at this address while the benchmark runs")
	// --pprof serves the profiles of whichever benchmark runs, until it ends.
	stopProfiles := func() {}
	cmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) (err error) {
		stopProfiles, err = serveProfiles(cmd, pprof)
		return err
	}
	cmd.PersistentPostRun = func(*cobra.Command, []string) { stopProfiles() }
	cmd.Flags().IntVar(&shards, "shards", 0, "shard count of a new store (default: the engine's)")
	cmd.Flags().StringVar(&profile, "profile", "", "write a CPU profile and allocation profiles of each shape's measured phase into this directory (SHAPE.cpu.pprof; SHAPE.allocs-after.pprof with -diff_base SHAPE.allocs-before.pprof)")
	cmd.AddCommand(newBenchVisibilityCommand(), newBenchPurgeCommand(), newBenchSchedulesCommand(), newBenchMessagesCommand(), newBenchDAGCommand(), newBenchStateMachineCommand(), newBenchSagaCommand())
	return cmd
}

func newBenchVisibilityCommand() *cobra.Command {
	var (
		storeURL  string
		cfg       bench.VisibilityConfig
		quiet     bool
		pageSizes []int
	)
	cmd := &cobra.Command{
		Use:   "visibility",
		Short: "Measure listing and counting runs in a store of many runs",
		Long: "Loads --rows visibility records into a namespace of the store (unless it holds them already: a later run\n" +
			"on the same store measures them again without loading), then measures, through the store's visibility\n" +
			"API in this process, first pages, the page after a token and counts under each filter the CLI and the\n" +
			"API offer: none, status, type, status and type, time range, business key, attribute, workflow id,\n" + "workflow id and business key prefixes.\n\n" +
			"The records: start times spread over 30 days (--span), 20 workflow types (Zipf), mostly closed (90% of closed\n" +
			"runs completed), a business key on 80%, attributes region (5 values) and tenant (1,000 values).\n" +
			"Each query runs once unmeasured, then --repeat times; the table gives the median and the slowest.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if storeURL == "" {
				return &usageError{fmt.Errorf("--store is required: the records are loaded once and kept there")}
			}
			if cfg.Rows <= 0 {
				return &usageError{fmt.Errorf("--rows %d: want a positive number", cfg.Rows)}
			}
			if cfg.Span < time.Minute {
				return &usageError{fmt.Errorf("--span %s: want at least a minute", cfg.Span)}
			}
			for _, n := range pageSizes {
				if n <= 0 || n > store.MaxPageSize {
					return &usageError{fmt.Errorf("--page-sizes: %d: want 1 to %d", n, store.MaxPageSize)}
				}
			}
			st, _, closeStore, err := openBenchStore(cmd.Context(), storeURL)
			if err != nil {
				return err
			}
			defer closeStore()
			cfg.Store, cfg.PageSizes = st, pageSizes
			if !quiet {
				cfg.Progress = cmd.ErrOrStderr()
			}
			rep, err := bench.RunVisibility(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			bench.PrintVisibility(cmd.OutOrStdout(), storeURL, rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "", "store URL (required): sqlite://PATH, postgres://... or cassandra://HOSTS/KEYSPACE")
	cmd.Flags().IntVar(&cfg.Rows, "rows", 1000000, "records of the data set")
	cmd.Flags().StringVar(&cfg.Namespace, "namespace", "", "namespace of the data set (default: visbench-ROWS)")
	cmd.Flags().IntSliceVar(&pageSizes, "page-sizes", []int{100, 1000}, "first-page sizes to measure; the page after a token is measured at the first")
	cmd.Flags().IntVar(&cfg.Repeat, "repeat", 5, "measured calls of each query (after one unmeasured)")
	cmd.Flags().IntVar(&cfg.Batch, "batch", 1000, "records per UpsertVisibility call while loading")
	cmd.Flags().IntVar(&cfg.Loaders, "loaders", 4, "UpsertVisibility calls in flight while loading")
	cmd.Flags().DurationVar(&cfg.Span, "span", bench.VisibilitySpan, "how far start times spread (a short span is a burst)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	return cmd
}

// benchServices are the services of the servers a benchmark measures, one
// per URL (a cluster's nodes: a worker and a client of each, each given
// every node, its own first, as a cluster's users give them), and how its
// report names them.
func benchServices(servers []string, calls taskCallFlags) (svcs []api.Service, backend string, err error) {
	var urls []string
	for _, entry := range servers {
		urls = append(urls, strings.Split(entry, ",")...)
	}
	for i := range urls {
		own := append(slices.Clone(urls[i:]), urls[:i]...)
		o := &cliOptions{servers: own, output: "table", plainTaskCalls: calls.plain, postedExchanges: calls.posted}
		svc, err := o.service()
		if err != nil {
			return nil, "", err
		}
		svcs = append(svcs, svc)
	}
	return svcs, strings.Join(urls, ","), nil
}

// benchServerHelp is what the help of a subcommand that takes --server
// says of it.
const benchServerHelp = "With --server it measures a running server instead (one URL, or a cluster's nodes comma-separated): its\n" +
	"workers and a client per node run in this process and reach the server over HTTP, for the baseline too,\n" +
	"so the ratio compares the server with itself. The report names the server."

// benchTarget is what the measuring subcommands of strand bench share:
// the store (or, for those that take --server, the servers), and whether
// to show progress and the engine's (or the workers') log.
type benchTarget struct {
	storeURL       string
	quiet, verbose bool
	// --server, --plain-task-calls and --posted-exchanges, of the
	// subcommands that take them (serverFlags).
	servers []string
	calls   taskCallFlags
}

// taskCallFlags say how a benchmark's remote workers send their task
// calls: by default in task exchanges on task streams.
type taskCallFlags struct {
	plain  bool // each poll and report a request of its own
	posted bool // each exchange a request of its own
}

func (c *taskCallFlags) flags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&c.plain, "plain-task-calls", false, "with --server: each task poll and report a request of its own, as a worker on the plain JSON API sends them, rather than task exchanges")
	cmd.Flags().BoolVar(&c.posted, "posted-exchanges", false, "with --server: each task exchange a request of its own (POST task-exchange) rather than sent on a task stream (a WebSocket per node)")
}

func (b *benchTarget) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.storeURL, "store", "", "store URL (default: a temporary SQLite file)")
	cmd.Flags().BoolVar(&b.quiet, "quiet", false, "no progress")
	cmd.Flags().BoolVar(&b.verbose, "verbose", false, "log the engine's warnings and notices on stderr")
}

// serverFlags adds --server, --plain-task-calls and --posted-exchanges,
// as strand bench has them, to a subcommand that can measure running
// servers.
func (b *benchTarget) serverFlags(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&b.servers, "server", nil, "measure a running server instead of an embedded engine: one URL, or a cluster's nodes comma-separated (the workers and a client per node in this process, over HTTP)")
	b.calls.flags(cmd)
}

// benchOpened is a benchmark's target, opened.
type benchOpened struct {
	// store is the store an embedded engine runs on; services, with
	// --server, the servers' nodes instead.
	store    store.Store
	services []api.Service
	// backend is how the report names the target.
	backend string
	// progress and log are where the run reports (nil: nowhere).
	progress io.Writer
	log      *slog.Logger
	// close closes the store.
	close func()
}

// open opens the store, or with --server reaches the servers.
func (b *benchTarget) open(cmd *cobra.Command) (t benchOpened, err error) {
	if len(b.servers) > 0 {
		if b.storeURL != "" {
			return t, &usageError{fmt.Errorf("--store and --server: one or the other (the benchmark runs on an embedded engine over the store, or on the servers)")}
		}
		if t.services, t.backend, err = benchServices(b.servers, b.calls); err != nil {
			return t, err
		}
		t.close = func() {}
	} else {
		if b.calls.plain || b.calls.posted {
			return t, &usageError{fmt.Errorf("--plain-task-calls and --posted-exchanges go with --server")}
		}
		if t.store, t.backend, t.close, err = openBenchStore(cmd.Context(), b.storeURL); err != nil {
			return t, err
		}
	}
	if !b.quiet {
		t.progress = cmd.ErrOrStderr()
	}
	if b.verbose {
		t.log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return t, nil
}

// openBenchStore opens and migrates the store a benchmark runs on: the one
// storeURL names, or a new SQLite file in a temporary directory when it is
// empty. name is how the report names it; closeStore closes it and removes
// a temporary file.
func openBenchStore(ctx context.Context, storeURL string) (st store.Store, name string, closeStore func(), err error) {
	name = storeURL
	cleanup := func() {}
	if storeURL == "" {
		dir, err := os.MkdirTemp("", "strand-bench-")
		if err != nil {
			return nil, "", nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		storeURL, name = "sqlite://"+filepath.Join(dir, "bench.db"), "sqlite (temporary file)"
	}
	if st, err = openStore(ctx, storeURL); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	if _, _, err = st.Migrate(ctx); err != nil {
		st.Close()
		cleanup()
		return nil, "", nil, err
	}
	return st, name, func() { st.Close(); cleanup() }, nil
}

// serveProfiles serves Go's profiles (net/http/pprof) at addr until stop is
// called; an empty addr serves nothing.
func serveProfiles(cmd *cobra.Command, addr string) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return func() {}, &usageError{fmt.Errorf("--pprof %q: %v", addr, err)}
	}
	profiles := &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
	go profiles.Serve(ln)
	fmt.Fprintf(cmd.ErrOrStderr(), "profiles at http://%s/debug/pprof/\n", ln.Addr())
	return func() { profiles.Close() }, nil
}
