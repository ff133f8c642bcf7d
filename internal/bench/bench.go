// Package bench measures the embedded engine end to end: it runs workflows
// of a few shapes over a store and reports workflows/s, steps/s and
// start-to-completion latency, next to the store's raw commit rate measured
// in the same run (the limit every durable transition pays).
package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Shapes are the benchmark's workflow shapes.
var Shapes = []string{"sequential", "tree", "single", "sleep"}

// ShapeHelp describes the shapes.
const ShapeHelp = `sequential: N workflows of 3 sequential steps (a)
tree:       go-workflows' tree: a root with 2 children, depth 2, 2 leaf workflows under each, 2 steps in each leaf (b)
single:     N workflows of 1 step (c)
sleep:      N workflows that sleep 1s (d)`

// Config is one benchmark run.
type Config struct {
	// Store runs an embedded engine; Services (the nodes of a running
	// cluster, or one server) are measured instead when set: a worker and a
	// client per node, starts spread over them in turn. With both, Store is
	// used only for the raw commit rate.
	Store    store.Store
	Services []api.Service
	// Shapes to run, in order; N workflows (roots, for tree) each.
	Shapes []string
	N      int
	// Progress receives a progress bar; nil for none.
	Progress io.Writer
	// RawFor is how long the raw commit rate is measured (default 2s; 0
	// skips it when negative).
	RawFor time.Duration
	Logger *slog.Logger
	// Shards is the engine's shard count (0: the engine's default).
	Shards int
}

// Result is what one shape measured.
type Result struct {
	Shape       string
	Workflows   int // including children
	Steps       int
	Elapsed     time.Duration
	P50, P99    time.Duration
	Commits     int64
	CommitParts int64
}

// WorkflowsPerSec is the rate of completed workflows.
func (r Result) WorkflowsPerSec() float64 { return float64(r.Workflows) / r.Elapsed.Seconds() }

// StepsPerSec is the rate of completed steps.
func (r Result) StepsPerSec() float64 { return float64(r.Steps) / r.Elapsed.Seconds() }

// Report is a whole run.
type Report struct {
	Results []Result
	// RawCommits is the store's raw commit rate (single-row transactions
	// per second, one writer; 8 writers) measured in the same run; zero
	// when the backend has no raw path.
	RawCommits, RawCommitsParallel float64
}

// noop is the benchmark's step.
func noop(ctx context.Context, in int) (int, error) { return in + 1, nil }

func sequential(ctx workflow.Context, n int) (int, error) {
	for range 3 {
		v, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "noop", n).Get(ctx)
		if err != nil {
			return 0, err
		}
		n = v
	}
	return n, nil
}

func single(ctx workflow.Context, n int) (int, error) {
	return workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "noop", n).Get(ctx)
}

func sleep(ctx workflow.Context, n int) (int, error) {
	return n, workflow.Sleep(ctx, time.Second)
}

// tree runs depth levels of 2 children each; leaves run 2 steps.
func tree(ctx workflow.Context, depth int) (int, error) {
	if depth == 0 {
		for i := range 2 {
			if _, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "noop", i).Get(ctx); err != nil {
				return 0, err
			}
		}
		return 1, nil
	}
	var fs []workflow.Future[int]
	for range 2 {
		fs = append(fs, workflow.ExecuteChildByName[int](ctx, workflow.ChildOptions{}, "tree", depth-1))
	}
	total := 0
	for _, f := range fs {
		v, err := f.Get(ctx)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// Run runs the configured shapes, each on a fresh engine over cfg.Store.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.N <= 0 {
		cfg.N = 500
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Shapes) == 0 {
		cfg.Shapes = Shapes
	}
	for _, s := range cfg.Shapes {
		if !slices.Contains(Shapes, s) {
			return Report{}, fmt.Errorf("%w: unknown shape %q (shapes: %v)", store.ErrInvalidArgument, s, Shapes)
		}
	}
	var rep Report
	if cfg.RawFor >= 0 && cfg.Store != nil {
		if cfg.RawFor == 0 {
			cfg.RawFor = 2 * time.Second
		}
		var err error
		if rep.RawCommits, rep.RawCommitsParallel, err = rawRate(ctx, cfg.Store, cfg.RawFor); err != nil {
			return rep, err
		}
	}
	for _, shape := range cfg.Shapes {
		res, err := runShape(ctx, cfg, shape)
		if err != nil {
			return rep, fmt.Errorf("shape %s: %w", shape, err)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

func runShape(ctx context.Context, cfg Config, shape string) (Result, error) {
	svcs := cfg.Services
	stats := func() engine.Stats { return engine.Stats{} }
	if len(svcs) == 0 {
		eng, err := engine.Open(ctx, cfg.Store, engine.Options{Logger: cfg.Logger, NumShards: cfg.Shards})
		if err != nil {
			return Result{}, err
		}
		defer eng.Close()
		svcs, stats = []api.Service{eng}, eng.Stats
	}
	var clients []*client.Client
	for _, svc := range svcs {
		w := worker.New(svc, worker.Options{Logger: cfg.Logger, Queue: "bench",
			WorkflowPollers: max(64/len(svcs), 8), StepPollers: max(16/len(svcs), 4)})
		worker.RegisterWorkflowNamed(w, "sequential", sequential)
		worker.RegisterWorkflowNamed(w, "single", single)
		worker.RegisterWorkflowNamed(w, "sleep", sleep)
		worker.RegisterWorkflowNamed(w, "tree", tree)
		worker.RegisterStepNamed(w, "noop", noop)
		if err := w.Start(ctx); err != nil {
			return Result{}, err
		}
		defer w.Stop(context.Background())
		clients = append(clients, client.New(svc, client.Options{Identity: "bench"}))
	}
	c := clients[0]

	res := Result{Shape: shape, Workflows: cfg.N}
	input := 0
	switch shape {
	case "sequential":
		res.Steps = 3 * cfg.N
	case "single":
		res.Steps = cfg.N
	case "tree":
		res.Workflows, res.Steps, input = 7*cfg.N, 8*cfg.N, 2
	}
	var bar *progressbar.ProgressBar
	if cfg.Progress != nil {
		bar = progressbar.NewOptions(cfg.N, progressbar.OptionSetWriter(cfg.Progress), progressbar.OptionSetDescription(shape),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("wf"),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	// Warm up (connections, prepared statements, caches) with a fifth of
	// the workflows, unmeasured.
	if err := warmUp(ctx, c, shape, input, max(cfg.N/5, 1)); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	before := stats()
	run := fmt.Sprintf("%s-%d", shape, time.Now().UnixNano())
	lat := make([]time.Duration, cfg.N)
	var failed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64) // concurrent starts
	for i := range cfg.N {
		sem <- struct{}{}
		wg.Go(func() {
			t0 := time.Now()
			r, err := client.StartByName[int](ctx, clients[i%len(clients)], shape, input, client.StartOptions{ID: fmt.Sprintf("%s-%d", run, i), Queue: "bench"})
			<-sem
			if err == nil {
				_, err = r.Get(ctx)
			}
			if err != nil {
				failed.Add(1)
				errOnce.Do(func() { firstErr = err })
				return
			}
			lat[i] = time.Since(t0)
			if bar != nil {
				bar.Add(1)
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if bar != nil {
		bar.Finish()
	}
	if n := failed.Load(); n > 0 {
		return res, fmt.Errorf("%d of %d workflows failed; first: %w", n, cfg.N, firstErr)
	}
	after := stats()
	res.Commits, res.CommitParts = after.Commits-before.Commits, after.CommitParts-before.CommitParts
	slices.Sort(lat)
	res.P50, res.P99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	return res, nil
}

func warmUp(ctx context.Context, c *client.Client, shape string, input, n int) error {
	prefix := fmt.Sprintf("warmup-%s-%d", shape, time.Now().UnixNano())
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			r, err := client.StartByName[int](ctx, c, shape, input, client.StartOptions{ID: fmt.Sprintf("%s-%d", prefix, i), Queue: "bench"})
			if err == nil {
				_, err = r.Get(ctx)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// rawRate measures single-row commits per second on the store's own
// connection pool (SQL backends), with one writer and with eight.
func rawRate(ctx context.Context, st store.Store, d time.Duration) (one, eight float64, err error) {
	dbs, ok := st.(interface{ DB() *sql.DB })
	if !ok {
		return 0, 0, nil
	}
	db := dbs.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_raw_commit (n BIGINT NOT NULL)`); err != nil {
		return 0, 0, fmt.Errorf("raw commit table: %w", err)
	}
	defer db.ExecContext(context.WithoutCancel(ctx), `DROP TABLE bench_raw_commit`)
	measure := func(workers int) (float64, error) {
		var n atomic.Int64
		var firstErr error
		var once sync.Once
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for time.Now().Before(deadline) && ctx.Err() == nil {
					if _, err := db.ExecContext(ctx, `INSERT INTO bench_raw_commit (n) VALUES (1)`); err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		if firstErr != nil {
			return 0, firstErr
		}
		return float64(n.Load()) / d.Seconds(), nil
	}
	if one, err = measure(1); err != nil {
		return 0, 0, err
	}
	if eight, err = measure(8); err != nil {
		return 0, 0, err
	}
	return one, eight, nil
}

// Print writes the report as a table.
func Print(w io.Writer, backend string, rep Report) {
	if rep.RawCommits > 0 {
		fmt.Fprintf(w, "%s raw commit rate: %.0f commits/s (1 writer), %.0f commits/s (8 writers)\n", backend, rep.RawCommits, rep.RawCommitsParallel)
	}
	fmt.Fprintf(w, "%-11s %9s %7s %8s %11s %9s %9s %9s %12s\n", "shape", "workflows", "steps", "elapsed", "workflows/s", "steps/s", "p50", "p99", "runs/commit")
	for _, r := range rep.Results {
		perCommit := "-" // not known through a server
		if r.Commits > 0 {
			perCommit = fmt.Sprintf("%.1f", float64(r.CommitParts)/float64(r.Commits))
		}
		fmt.Fprintf(w, "%-11s %9d %7d %8s %11.0f %9.0f %9s %9s %12s\n", r.Shape, r.Workflows, r.Steps, r.Elapsed.Round(time.Millisecond),
			r.WorkflowsPerSec(), r.StepsPerSec(), r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), perCommit)
	}
}
