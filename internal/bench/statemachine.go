package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/statemachine"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
)

// StateMachineConfig configures RunStateMachine.
type StateMachineConfig struct {
	// Store runs an embedded engine; Services (the nodes of a running
	// cluster, or one server) are measured instead when set: workers and
	// clients per node, creates spread over them in turn.
	Store    store.Store
	Services []api.Service
	// N is how many instances run (default 10,000), Concurrency how many
	// are created at once (default 200).
	N, Concurrency int
	Progress       io.Writer
	Logger         *slog.Logger
}

// StateMachineReport is what RunStateMachine measured.
type StateMachineReport struct {
	N int
	// Transitions are the state executions (4 per instance) over the time
	// the instances took, from the first create to the last finish.
	Transitions        int
	TransitionsPerSec  float64
	Elapsed            time.Duration
	Steps              int
	StepsPerSec        float64
	StepsElapsed       time.Duration
	InstancesPerSecond float64
}

// smQueue is the task queue (executor group) of the benchmark's state
// machine: its own, so that on a server no other worker takes its tasks.
const smQueue = "bench.statemachine"

// fiveStates is the benchmark's machine: four states that move on at
// once, and an end.
func fiveStates() *statemachine.Definition {
	next := func(to string) statemachine.Method {
		return func(statemachine.Context) (statemachine.Next, error) { return statemachine.MoveTo(to, ""), nil }
	}
	return statemachine.Define("bench-five", "four transitions and an end").
		Start("s1", "", next("s2")).Normal("s2", "", next("s3")).Normal("s3", "", next("s4")).Normal("s4", "", next("end")).
		End("end", "").Error("error", "").
		Permit("s1", "s2").Permit("s2", "s3").Permit("s3", "s4").Permit("s4", "end")
}

// RunStateMachine runs N instances of a 5-state machine on an embedded
// engine, or through servers, and prints transitions/s; then as many plain
// workflows of four no-op steps, for the engine's step rate on the same
// store (or servers).
func RunStateMachine(ctx context.Context, cfg StateMachineConfig) (StateMachineReport, error) {
	if cfg.N <= 0 {
		cfg.N = 10000
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 200
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
	rep := StateMachineReport{N: cfg.N}
	nodes, err := openNodes(ctx, cfg.Store, cfg.Services, engine.Options{Logger: log}, func(svc api.Service) ([]runnable, error) {
		fe, err := frontEnd(svc)
		if err != nil {
			return nil, err
		}
		w := worker.New(svc, worker.Options{Queue: smQueue, Logger: log, MaxConcurrentSteps: 400, MaxConcurrentWorkflowTasks: 400})
		if err := statemachine.Register(ctx, w, fe, fiveStates()); err != nil {
			return nil, err
		}
		steps := worker.New(svc, worker.Options{Queue: "bench.steps", Logger: log, MaxConcurrentSteps: 400, MaxConcurrentWorkflowTasks: 400})
		worker.RegisterWorkflow(steps, StepChain)
		worker.RegisterStep(steps, NoopStep)
		return []runnable{w, steps}, nil
	})
	if err != nil {
		return rep, err
	}
	defer nodes.close(ctx)
	machines, err := frontEndClients(nodes, statemachine.NewClient)
	if err != nil {
		return rep, err
	}

	say("running %d instances of a 5-state machine...", cfg.N)
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Concurrency)
	for i := range cfg.N {
		g.Go(func() error {
			id, err := machines[i%len(machines)].Create(gctx, statemachine.CreateRequest{Type: "bench-five", ExecutorGroup: smQueue})
			if err != nil {
				return err
			}
			res, err := nodes.svc(i).WaitResult(gctx, api.ResultRequest{RunRef: api.RunRef{WorkflowID: id}})
			if err == nil && res.Failure != nil {
				err = res.Failure
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	rep.Elapsed = time.Since(began)
	rep.Transitions = cfg.N * 4
	rep.TransitionsPerSec = float64(rep.Transitions) / rep.Elapsed.Seconds()
	rep.InstancesPerSecond = float64(cfg.N) / rep.Elapsed.Seconds()

	say("running %d workflows of 4 no-op steps...", cfg.N)
	if rep.StepsElapsed, err = runChains(ctx, nodes.clients("strand bench"), cfg.N, cfg.Concurrency, func(int) int { return 4 }); err != nil {
		return rep, err
	}
	rep.Steps = cfg.N * 4
	rep.StepsPerSec = float64(rep.Steps) / rep.StepsElapsed.Seconds()
	return rep, nil
}

// PrintStateMachine writes a state machine report.
func PrintStateMachine(w io.Writer, backend string, rep StateMachineReport) {
	fmt.Fprintf(w, "%s: %d instances of a 5-state machine\n", backend, rep.N)
	fmt.Fprintf(w, "  state machine: %d transitions in %s: %.0f transitions/s (%.0f instances/s)\n",
		rep.Transitions, rep.Elapsed.Round(time.Millisecond), rep.TransitionsPerSec, rep.InstancesPerSecond)
	fmt.Fprintf(w, "  kernel:        %d steps in %s: %.0f steps/s (workflows of 4 no-op steps)\n",
		rep.Steps, rep.StepsElapsed.Round(time.Millisecond), rep.StepsPerSec)
	if rep.StepsPerSec > 0 {
		fmt.Fprintf(w, "  ratio (transitions/s over steps/s): %.2f\n", rep.TransitionsPerSec/rep.StepsPerSec)
	}
}

// runChains runs n workflows of steps(i) no-op steps each on the queue
// bench.steps, at most concurrency at a time, started on clients in turn,
// and returns how long they took: the kernel's step rate beside a front
// end's.
func runChains(ctx context.Context, clients []*client.Client, n, concurrency int, steps func(i int) int) (time.Duration, error) {
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i := range n {
		g.Go(func() error {
			run, err := client.Start(gctx, clients[i%len(clients)], StepChain, steps(i), client.StartOptions{Queue: "bench.steps"})
			if err != nil {
				return err
			}
			_, err = run.Get(gctx)
			return err
		})
	}
	err := g.Wait()
	return time.Since(began), err
}
