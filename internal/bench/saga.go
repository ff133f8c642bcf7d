package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// SagaConfig configures RunSaga.
type SagaConfig struct {
	// Store runs an embedded engine; Services (the nodes of a running
	// cluster, or one server) are measured instead when set: a worker and
	// a client per node, starts spread over them in turn.
	Store    store.Store
	Services []api.Service
	// N is how many sagas run (default 1,000), Concurrency how many are
	// started at once (default 200); every CompensateEvery-th one's last
	// step fails for good (default 10: 10% compensate).
	N, Concurrency, CompensateEvery int
	Progress                        io.Writer
	Logger                          *slog.Logger
}

// SagaReport is what RunSaga measured.
type SagaReport struct {
	N, Compensated int
	// Steps counts the kernel steps the sagas ran: forward steps and
	// compensations.
	Steps        int
	SagasPerSec  float64
	SagaStepsSec float64
	Elapsed      time.Duration
	KernelSteps  int
	StepsPerSec  float64
	StepsElapsed time.Duration
}

// FourSteps is the benchmark's saga: four steps, each with a
// compensation; the last fails for good when fail is set, so the first
// three are compensated.
func FourSteps(ctx workflow.Context, fail bool) (int, error) {
	s := saga.New(ctx, saga.Options{Name: "bench-four"})
	for i := range 3 {
		s.Step(fmt.Sprintf("s%d", i+1), SagaNoop, i).Compensate(SagaNoop)
	}
	err := s.Step("s4", SagaLastStep, fail).Get(nil)
	return 4, s.End(err)
}

// SagaNoop is a forward step and a compensation that do nothing.
func SagaNoop(_ context.Context, n int) (int, error) { return n, nil }

// SagaLastStep fails for good when told to.
func SagaLastStep(_ context.Context, fail bool) (int, error) {
	if fail {
		return 0, errors.New("out of stock")
	}
	return 1, nil
}

// RunSaga runs N four-step sagas (a tenth compensating) on an embedded
// engine, or through servers, and reports sagas/s; then plain workflows of
// as many no-op steps as the sagas ran, for the engine's step rate on the
// same store (or servers).
func RunSaga(ctx context.Context, cfg SagaConfig) (SagaReport, error) {
	if cfg.N <= 0 {
		cfg.N = 1000
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 200
	}
	if cfg.CompensateEvery <= 0 {
		cfg.CompensateEvery = 10
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
	rep := SagaReport{N: cfg.N}
	nodes, err := openNodes(ctx, cfg.Store, cfg.Services, engine.Options{Logger: log}, func(svc api.Service) ([]runnable, error) {
		w := worker.New(svc, worker.Options{Queue: "bench.steps", Logger: log, MaxConcurrentSteps: 400, MaxConcurrentWorkflowTasks: 400})
		worker.RegisterWorkflow(w, FourSteps)
		worker.RegisterStep(w, NoopStep)
		worker.RegisterStep(w, SagaNoop)
		worker.RegisterStep(w, SagaLastStep)
		worker.RegisterWorkflow(w, StepChain)
		return []runnable{w}, nil
	})
	if err != nil {
		return rep, err
	}
	defer nodes.close(ctx)
	clients := nodes.clients("strand bench")

	say("running %d four-step sagas, every %dth compensating...", cfg.N, cfg.CompensateEvery)
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Concurrency)
	compensated := 0
	for i := range cfg.N {
		fail := (i+1)%cfg.CompensateEvery == 0
		if fail {
			compensated++
		}
		g.Go(func() error {
			run, err := client.Start(gctx, clients[i%len(clients)], FourSteps, fail, client.StartOptions{Queue: "bench.steps"})
			if err != nil {
				return err
			}
			_, err = run.Get(gctx)
			if fail {
				if err == nil {
					return errors.New("a saga that should have compensated completed")
				}
				return nil // compensated, as planned
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	rep.Elapsed = time.Since(began)
	rep.Compensated = compensated
	rep.Steps = cfg.N*4 + compensated*3
	rep.SagasPerSec = float64(cfg.N) / rep.Elapsed.Seconds()
	rep.SagaStepsSec = float64(rep.Steps) / rep.Elapsed.Seconds()

	say("running workflows of no-op steps, %d steps in all...", rep.Steps)
	rep.StepsElapsed, err = runChains(ctx, clients, cfg.N, cfg.Concurrency, func(i int) int {
		if (i+1)%cfg.CompensateEvery == 0 {
			return 7
		}
		return 4
	})
	if err != nil {
		return rep, err
	}
	rep.KernelSteps = rep.Steps
	rep.StepsPerSec = float64(rep.KernelSteps) / rep.StepsElapsed.Seconds()
	return rep, nil
}

// PrintSaga writes a saga report.
func PrintSaga(w io.Writer, backend string, rep SagaReport) {
	fmt.Fprintf(w, "%s: %d four-step sagas, %d of them compensated (3 compensations each)\n", backend, rep.N, rep.Compensated)
	fmt.Fprintf(w, "  sagas:  %d in %s: %.0f sagas/s, %.0f saga steps/s (%d forward steps and compensations)\n",
		rep.N, rep.Elapsed.Round(time.Millisecond), rep.SagasPerSec, rep.SagaStepsSec, rep.Steps)
	fmt.Fprintf(w, "  kernel: %d steps in %s: %.0f steps/s (workflows of as many no-op steps)\n",
		rep.KernelSteps, rep.StepsElapsed.Round(time.Millisecond), rep.StepsPerSec)
	if rep.StepsPerSec > 0 {
		fmt.Fprintf(w, "  ratio (saga steps/s over steps/s): %.2f\n", rep.SagaStepsSec/rep.StepsPerSec)
	}
}
