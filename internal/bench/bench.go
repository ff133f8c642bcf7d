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
	"os"
	"runtime"
	"slices"
	"strings"
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

// Shapes are the benchmark's workflow shapes, those it runs by default.
var Shapes = []string{"sequential", "tree", "single", "sleep", "waiting"}

// AllShapes are Shapes and the shapes run only when named.
var AllShapes = append(slices.Clone(Shapes), "alone")

// ShapeHelp describes the shapes.
const ShapeHelp = `sequential: N workflows of 3 sequential steps (a)
tree:       go-workflows' tree: a root with 2 children, depth 2, 2 leaf workflows under each, 2 steps in each leaf (b)
single:     N workflows of 1 step (c)
sleep:      N workflows that sleep 1s (d)
waiting:    N workflows that run a step and wait for a signal, all open at once (start rate, memory and
            goroutines with N open); then each is signaled and runs a second step (completion rate)
alone:      N workflows of 1 step, one at a time, each started and awaited by the caller: the latency a user
            who starts one workflow and waits for it sees (p50/p99 from the start call to the result; run
            only when named)`

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
	// CacheMemory and WorkerCacheMemory are the engine's and the workers'
	// cache budgets (0: their defaults).
	CacheMemory, WorkerCacheMemory int64
	// ProfileDir, when set, receives a CPU profile and allocation profiles
	// of each shape's measured phase (SHAPE.cpu.pprof,
	// SHAPE.allocs-before.pprof, SHAPE.allocs-after.pprof).
	ProfileDir string
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
	// Open is what the waiting shape measured with all its runs open;
	// Elapsed, P50 and P99 are then those of the completions after the
	// signals.
	Open *Open
	// Runtime is what the Go runtime did in the measured phase (this
	// process: the engine, workers and clients when embedded).
	Runtime Runtime
}

// Open is the waiting shape's state with all N runs open and idle.
type Open struct {
	// Started is how long it took to start the N runs and see each run
	// its first step.
	Started time.Duration
	// HeapInuse and Goroutines are this process's (engine, worker and
	// client) after a GC; RSS its resident memory, and PeakRSS the most
	// it has held so far (Linux; 0 elsewhere).
	HeapInuse, RSS, PeakRSS uint64
	Goroutines              int
	// EndPeakRSS is PeakRSS once every run has completed: the most resident
	// memory held over the whole shape, the signals' burst included.
	EndPeakRSS uint64
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

// waiting runs a step ("arrive", which the bench counts), waits for the
// "go" signal, then runs another.
func waiting(ctx workflow.Context, n int) (int, error) {
	if _, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "arrive", n).Get(ctx); err != nil {
		return 0, err
	}
	workflow.GetSignalChannel[int](ctx, "go").Receive(ctx)
	return workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "noop", n).Get(ctx)
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
		if !slices.Contains(AllShapes, s) {
			return Report{}, fmt.Errorf("%w: unknown shape %q (shapes: %v)", store.ErrInvalidArgument, s, AllShapes)
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
	var arrived atomic.Int64 // the waiting shape's runs that ran their first step
	nodes, err := openNodes(ctx, cfg.Store, cfg.Services, engine.Options{Logger: cfg.Logger, NumShards: cfg.Shards, CacheMemory: cfg.CacheMemory},
		func(svc api.Service) ([]runnable, error) {
			w := worker.New(svc, worker.Options{Logger: cfg.Logger, Queue: "bench", CacheMemory: cfg.WorkerCacheMemory,
				WorkflowPollers: 8, StepPollers: max(16/max(len(cfg.Services), 1), 4)})
			worker.RegisterWorkflowNamed(w, "sequential", sequential)
			worker.RegisterWorkflowNamed(w, "single", single)
			worker.RegisterWorkflowNamed(w, "sleep", sleep)
			worker.RegisterWorkflowNamed(w, "tree", tree)
			worker.RegisterWorkflowNamed(w, "waiting", waiting)
			worker.RegisterStepNamed(w, "noop", noop)
			worker.RegisterStepNamed(w, "arrive", func(ctx context.Context, in int) (int, error) {
				arrived.Add(1)
				return in, nil
			})
			return []runnable{w}, nil
		})
	if err != nil {
		return Result{}, err
	}
	defer nodes.close(ctx)
	e, clients := nodes.embedded(), nodes.clients("bench")
	c := clients[0]
	switch shape {
	case "waiting":
		return runWaiting(ctx, cfg, clients, &arrived, e)
	case "alone":
		return runAlone(ctx, cfg, c, e)
	}

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
	before := e.stats()
	run := fmt.Sprintf("%s-%d", shape, time.Now().UnixNano())
	id := func(i int) string { return fmt.Sprintf("%s-%d", run, i) }
	// Every run is started (64 starts at a time) while 64 callers wait for
	// the results of those started, in turn: neither holds a goroutine per
	// run, so N may be millions. A run's latency is from its start to its close, by
	// the engine's clock.
	lat := make([]time.Duration, cfg.N)
	ph, err := beginPhase(cfg.ProfileDir, shape)
	if err != nil {
		return res, err
	}
	start := time.Now()
	started := make(chan int, cfg.N) // the runs started, to wait for
	var startErr, waitErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(started)
		startErr = each(cfg.N, func(i int) error {
			_, err := client.StartByName[int](ctx, clients[i%len(clients)], shape, input, client.StartOptions{ID: id(i), Queue: "bench"})
			if err == nil {
				started <- i
			}
			return err
		})
	})
	var once sync.Once
	for range 64 {
		wg.Go(func() {
			for i := range started {
				res, err := clients[i%len(clients)].Result(ctx, id(i), "")
				if err == nil && res.Failure != nil {
					err = fmt.Errorf("%s: %s: %s", id(i), res.Status, res.Failure.Message)
				}
				if err != nil {
					once.Do(func() { waitErr = err })
					continue
				}
				lat[i] = res.CloseTime.Sub(res.StartTime)
				if bar != nil {
					bar.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err := e.syncVisibility(ctx); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	if res.Runtime, err = ph.end(); err != nil {
		return res, err
	}
	if bar != nil {
		bar.Finish()
	}
	if startErr != nil {
		return res, fmt.Errorf("start: %w", startErr)
	}
	if waitErr != nil {
		return res, fmt.Errorf("result: %w", waitErr)
	}
	after := e.stats()
	res.Commits, res.CommitParts = after.Commits-before.Commits, after.CommitParts-before.CommitParts
	slices.Sort(lat)
	res.P50, res.P99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	return res, nil
}

// runAlone runs the alone shape: N single-step workflows one after
// another, each started and awaited by the caller, as a user who starts
// one workflow and waits for it does. Its latencies are the caller's,
// from the start call to the result.
func runAlone(ctx context.Context, cfg Config, c *client.Client, e embedded) (Result, error) {
	res := Result{Shape: "alone", Workflows: cfg.N, Steps: cfg.N}
	if err := warmUp(ctx, c, "single", 0, max(cfg.N/5, 1)); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	before := e.stats()
	ph, err := beginPhase(cfg.ProfileDir, "alone")
	if err != nil {
		return res, err
	}
	run := fmt.Sprintf("alone-%d", time.Now().UnixNano())
	lat := make([]time.Duration, cfg.N)
	start := time.Now()
	for i := range cfg.N {
		begun := time.Now()
		r, err := client.StartByName[int](ctx, c, "single", 0, client.StartOptions{ID: fmt.Sprintf("%s-%d", run, i), Queue: "bench"})
		if err == nil {
			_, err = r.Get(ctx)
		}
		if err != nil {
			return res, fmt.Errorf("alone: %w", err)
		}
		lat[i] = time.Since(begun)
	}
	if err := e.syncVisibility(ctx); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	if res.Runtime, err = ph.end(); err != nil {
		return res, err
	}
	after := e.stats()
	res.Commits, res.CommitParts = after.Commits-before.Commits, after.CommitParts-before.CommitParts
	slices.Sort(lat)
	res.P50, res.P99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	return res, nil
}

// embedded is what the benchmark reads of an engine in this process
// (nothing, when it measures servers).
type embedded struct {
	stats func() engine.Stats
	// syncVisibility writes the engine's queued visibility updates now. A
	// shape calls it at the end of its measured phase, so that the phase
	// holds the writing of its runs' records: a short one would otherwise
	// end before the engine's batching delay and leave that work out,
	// which a long one cannot.
	syncVisibility func(context.Context) error
}

// runWaiting runs the waiting shape: it starts N runs (64 starts at a
// time, no caller waiting on any), waits until each ran its first step,
// measures the process with all N open, then signals each and waits for
// all to complete, 64 at a time, so that neither phase holds a goroutine
// per run.
func runWaiting(ctx context.Context, cfg Config, clients []*client.Client, arrived *atomic.Int64, e embedded) (Result, error) {
	res := Result{Shape: "waiting", Workflows: cfg.N, Steps: 2 * cfg.N}
	run := fmt.Sprintf("waiting-%d", time.Now().UnixNano())
	id := func(i int) string { return fmt.Sprintf("%s-%d", run, i) }
	forEach := func(f func(i int, c *client.Client) error) error {
		return each(cfg.N, func(i int) error { return f(i, clients[i%len(clients)]) })
	}

	start := time.Now()
	if err := forEach(func(i int, c *client.Client) error {
		_, err := client.StartByName[int](ctx, c, "waiting", i, client.StartOptions{ID: id(i), Queue: "bench"})
		return err
	}); err != nil {
		return res, fmt.Errorf("start: %w", err)
	}
	for last, since := int64(-1), time.Now(); arrived.Load() < int64(cfg.N); time.Sleep(20 * time.Millisecond) {
		if n := arrived.Load(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > time.Minute {
			return res, fmt.Errorf("%d of %d runs ran their first step, and none more for a minute", n, cfg.N)
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
	open := &Open{Started: time.Since(start)}
	time.Sleep(time.Second) // the workflow tasks after the first steps
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	open.HeapInuse, open.Goroutines = ms.HeapInuse, runtime.NumGoroutine()
	open.RSS, open.PeakRSS = rss()
	res.Open = open

	// The starts' records are written before the completions are measured.
	if err := e.syncVisibility(ctx); err != nil {
		return res, err
	}
	before := e.stats()
	signaled := make([]time.Time, cfg.N)
	lat := make([]time.Duration, cfg.N)
	ph, err := beginPhase(cfg.ProfileDir, "waiting")
	if err != nil {
		return res, err
	}
	start = time.Now()
	if err := forEach(func(i int, c *client.Client) error {
		signaled[i] = time.Now()
		return c.Signal(ctx, id(i), "", "go", 1, client.WithRequestID(id(i)))
	}); err != nil {
		return res, fmt.Errorf("signal: %w", err)
	}
	if err := forEach(func(i int, c *client.Client) error {
		_, err := client.GetRun[int](c, id(i), "").Get(ctx)
		lat[i] = time.Since(signaled[i])
		return err
	}); err != nil {
		return res, fmt.Errorf("complete: %w", err)
	}
	if err := e.syncVisibility(ctx); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	if res.Runtime, err = ph.end(); err != nil {
		return res, err
	}
	_, open.EndPeakRSS = rss()
	after := e.stats()
	res.Commits, res.CommitParts = after.Commits-before.Commits, after.CommitParts-before.CommitParts
	// A run's latency is from its signal to when its result was seen, 64
	// waits at a time: an upper bound.
	slices.Sort(lat)
	res.P50, res.P99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	return res, nil
}

// each calls f for 0 to n-1 in order, 64 at a time, and returns the first
// error; it stops starting calls after one fails.
func each(n int, f func(i int) error) error {
	var firstErr error
	var failed atomic.Bool
	var once sync.Once
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		if failed.Load() {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				once.Do(func() { firstErr = err })
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	return firstErr
}

// rss returns this process's resident memory and its peak (VmRSS and
// VmHWM of /proc/self/status), 0 where that cannot be read.
func rss() (now, peak uint64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb uint64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			fmt.Sscan(strings.TrimPrefix(line, "VmRSS:"), &kb)
			now = kb << 10
		case strings.HasPrefix(line, "VmHWM:"):
			fmt.Sscan(strings.TrimPrefix(line, "VmHWM:"), &kb)
			peak = kb << 10
		}
	}
	return now, peak
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
			r.WorkflowsPerSec(), r.StepsPerSec(), latency(r.P50), latency(r.P99), perCommit)
	}
	fmt.Fprintf(w, "%-11s %12s %10s %9s %5s %9s\n", "shape", "alloc/wf", "allocs/wf", "CPU/wf", "GCs", "GC share")
	for _, r := range rep.Results {
		rt, n := r.Runtime, float64(r.Workflows)
		fmt.Fprintf(w, "%-11s %10.1fKB %10.0f %9s %5d %8.0f%%\n", r.Shape, float64(rt.AllocBytes)/n/1000, float64(rt.Allocs)/n,
			(rt.CPU / time.Duration(r.Workflows)).Round(time.Microsecond), rt.GCs, 100*rt.GCShare)
	}
	for _, r := range rep.Results {
		if o := r.Open; o != nil {
			fmt.Fprintf(w, "%s: %d runs open after %s (%.0f started/s): heap %.0f MiB, RSS %.0f MiB (peak %.0f MiB), %d goroutines; the row above is their completions after a signal each (peak RSS by their end %.0f MiB)\n",
				r.Shape, r.Workflows, o.Started.Round(time.Millisecond), float64(r.Workflows)/o.Started.Seconds(),
				float64(o.HeapInuse)/(1<<20), float64(o.RSS)/(1<<20), float64(o.PeakRSS)/(1<<20), o.Goroutines, float64(o.EndPeakRSS)/(1<<20))
		}
	}
}

// latency rounds a latency for the report: to 10µs under 10ms, where a
// workflow alone lies, else to the millisecond.
func latency(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
