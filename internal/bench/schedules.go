package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/schedule"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// SchedulesConfig is one run of the schedules benchmark.
type SchedulesConfig struct {
	Store store.Store
	// N is how many schedules fire every minute (default 10,000).
	N int
	// Window is how long fires are measured, after every schedule has
	// fired once (default 2m).
	Window time.Duration
	// Together makes every schedule fire at second 0 of the minute; by
	// default schedule i fires at second i mod 60, as schedules with
	// jitter or their own minutes would.
	Together bool
	// Idle is how long the engine's CPU is measured before the schedules
	// are created, with its workers polling (default 10s).
	Idle     time.Duration
	Progress io.Writer
	Logger   *slog.Logger
}

// SchedulesReport is what the schedules benchmark measured.
type SchedulesReport struct {
	N, Expected, Fired int
	// Late counts fires later than a second.
	Late int
	// P50, P99 and Max are the fires' lateness: the scheduled run's start
	// (its creation in the store) after its fire time.
	P50, P99, Max time.Duration
	// Create is how long creating the schedules took.
	Create time.Duration
	// IdleCPU and CPU are the process's CPU use (cores) before the
	// schedules were created and during the window: the engine, the
	// scheduler worker and the worker running the scheduled workflow.
	IdleCPU, CPU float64
	Window       time.Duration
}

// Tick is the workflow the benchmark's schedules start: it does nothing.
func Tick(workflow.Context, struct{}) (struct{}, error) { return struct{}{}, nil }

// withSystem opens an engine over st with a worker of what register
// registers and the system worker (schedules, batches, mailboxes), all in
// this process; stop stops them and closes the engine.
func withSystem(ctx context.Context, st store.Store, log *slog.Logger, register func(*worker.Worker)) (eng *engine.Engine, stop func(), err error) {
	n, err := openNodes(ctx, st, nil, engine.Options{Logger: log}, func(svc api.Service) ([]runnable, error) {
		w := worker.New(svc, worker.Options{Logger: log})
		register(w)
		return withSystemRunner(w, svc, false, log), nil
	})
	if err != nil {
		return nil, nil, err
	}
	return n.eng, func() { n.close(ctx) }, nil
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RunSchedules creates N schedules firing every minute and measures how
// late their fires are and what they cost in CPU.
func RunSchedules(ctx context.Context, cfg SchedulesConfig) (SchedulesReport, error) {
	if cfg.N <= 0 {
		cfg.N = 10000
	}
	if cfg.Window <= 0 {
		cfg.Window = 2 * time.Minute
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	rep := SchedulesReport{N: cfg.N, Window: cfg.Window}
	eng, stop, err := withSystem(ctx, cfg.Store, log, func(w *worker.Worker) { worker.RegisterWorkflow(w, Tick) })
	if err != nil {
		return rep, err
	}
	defer stop()

	say("measuring the idle engine's CPU for %s...", cfg.Idle)
	c0, t0 := cpuTime(), time.Now()
	if !sleepCtx(ctx, cfg.Idle) {
		return rep, ctx.Err()
	}
	rep.IdleCPU = float64(cpuTime()-c0) / float64(time.Since(t0))

	say("creating %d schedules...", cfg.N)
	svc := schedule.NewService(eng)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range cfg.N {
		g.Go(func() error {
			second := i % 60
			if cfg.Together {
				second = 0
			}
			return svc.CreateSchedule(gctx, api.CreateScheduleRequest{
				ScheduleRef: api.ScheduleRef{ScheduleID: fmt.Sprintf("bench-%06d", i)},
				Schedule: api.Schedule{Spec: api.ScheduleSpec{Cron: []string{fmt.Sprintf("%d * * * * *", second)}},
					Action: api.ScheduleAction{WorkflowType: "Tick"}, Policies: api.SchedulePolicies{Overlap: api.OverlapAllowAll}},
			})
		})
	}
	if err := g.Wait(); err != nil {
		return rep, fmt.Errorf("create schedules: %w", err)
	}
	rep.Create = time.Since(start)
	say("created in %s; warming up for a minute, then measuring for %s...", rep.Create.Round(time.Millisecond), cfg.Window)

	// The window starts at a whole minute, a minute after the last create,
	// so that every schedule has fired once.
	from := time.Now().Add(time.Minute).Truncate(time.Minute).Add(time.Minute)
	to := from.Add(cfg.Window)
	if !sleepCtx(ctx, time.Until(from)) {
		return rep, ctx.Err()
	}
	c0 = cpuTime()
	if !sleepCtx(ctx, time.Until(to)) {
		return rep, ctx.Err()
	}
	rep.CPU = float64(cpuTime()-c0) / float64(cfg.Window)
	say("window done; waiting 10s for late fires and reading the runs...")
	if !sleepCtx(ctx, 10*time.Second) {
		return rep, ctx.Err()
	}

	var late []time.Duration
	req := api.ListRequest{WorkflowType: "Tick", StartedAfter: from.Add(-time.Minute), PageSize: 1000}
	for {
		page, err := eng.ListWorkflows(ctx, req)
		if err != nil {
			return rep, err
		}
		for _, r := range page.Runs {
			at, err := time.Parse(time.RFC3339, r.WorkflowID[max(0, len(r.WorkflowID)-len("2006-01-02T15:04:05Z")):])
			if err != nil || at.Before(from) || !at.Before(to) {
				continue
			}
			late = append(late, r.StartTime.Sub(at))
		}
		if len(page.NextPageToken) == 0 {
			break
		}
		req.PageToken = page.NextPageToken
	}
	slices.Sort(late)
	rep.Expected = cfg.N * int(cfg.Window/time.Minute)
	rep.Fired = len(late)
	if n := len(late); n > 0 {
		rep.P50, rep.P99, rep.Max = late[n/2], late[min(n-1, n*99/100)], late[n-1]
		for _, d := range late {
			if d > time.Second {
				rep.Late++
			}
		}
	}
	return rep, nil
}

// PrintSchedules writes the report.
func PrintSchedules(w io.Writer, backend string, rep SchedulesReport) {
	fmt.Fprintf(w, "schedules on %s: %d schedules firing every minute, measured over %s\n", backend, rep.N, rep.Window)
	fmt.Fprintf(w, "  created in %s (%.0f/s)\n", rep.Create.Round(time.Millisecond), float64(rep.N)/rep.Create.Seconds())
	fmt.Fprintf(w, "  fires: %d of %d expected; %d later than 1s\n", rep.Fired, rep.Expected, rep.Late)
	fmt.Fprintf(w, "  lateness (run started after its fire time): p50 %s, p99 %s, max %s\n",
		rep.P50.Round(time.Millisecond), rep.P99.Round(time.Millisecond), rep.Max.Round(time.Millisecond))
	fmt.Fprintf(w, "  CPU: %.2f cores idle, %.2f cores firing (%.2f added)\n", rep.IdleCPU, rep.CPU, rep.CPU-rep.IdleCPU)
}
