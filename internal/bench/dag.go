package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// DAGConfig configures RunDAG.
type DAGConfig struct {
	// Store runs an embedded engine; Services (the nodes of a running
	// cluster, or one server) are measured instead when set: the
	// interpreter's and the tasks' workers and a client per node, starts
	// spread over them in turn.
	Store    store.Store
	Services []api.Service
	// Chain is how many tasks each instance runs one after the other
	// (default 50); Instances how many instances run at once (default 1).
	Chain     int
	Instances int
	// Shell makes the tasks shell tasks that run `true` (a bash process
	// each) instead of no-op Go steps.
	Shell    bool
	Progress io.Writer
	Logger   *slog.Logger
}

// Gaps are the times between one task (or step) ending and the next
// starting, by the worker's clock.
type Gaps struct {
	N             int
	P50, P99, Max time.Duration
}

func gapsOf(d []time.Duration) Gaps {
	if len(d) == 0 {
		return Gaps{}
	}
	slices.Sort(d)
	n := len(d)
	return Gaps{N: n, P50: d[n/2], P99: d[min(n-1, n*99/100)], Max: d[n-1]}
}

// DAGReport is what RunDAG measured.
type DAGReport struct {
	Chain, Instances int
	// Task is the scheduling overhead per task: from the last upstream
	// task's end to the task's start.
	Task  Gaps
	Shell bool
	// Step is the same gap between the steps of a plain workflow that
	// runs as many no-op steps one after the other, on the same engine:
	// the kernel's floor.
	Step Gaps
	// TasksPerSecond is the tasks the instances ran, over the time they
	// took; StepsPerSecond the same of the plain workflows.
	TasksPerSecond, StepsPerSecond float64
}

// stepTimes is what a benchmark step returns: when it ran.
type stepTimes struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// NoopStep does nothing and says when.
func NoopStep(context.Context, int) (stepTimes, error) {
	now := time.Now()
	return stepTimes{now, now}, nil
}

// StepChain runs n no-op steps one after the other and returns when each
// ran.
func StepChain(ctx workflow.Context, n int) ([]stepTimes, error) {
	out := make([]stepTimes, 0, n)
	for i := range n {
		t, err := workflow.ExecuteStep(ctx, workflow.StepOptions{Queue: "bench.steps"}, NoopStep, i).Get(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// dagGroup is the worker group of the benchmark's DAG: its own, so that on
// a server no other worker runs its tasks.
const dagGroup = "bench"

// RunDAG measures the DAG front end's scheduling overhead per task on an
// embedded engine, or through servers, next to the kernel's gap between
// steps.
func RunDAG(ctx context.Context, cfg DAGConfig) (DAGReport, error) {
	cfg.Chain = max(cfg.Chain, 2)
	if cfg.Instances <= 0 {
		cfg.Instances = 1
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
	rep := DAGReport{Chain: cfg.Chain, Instances: cfg.Instances, Shell: cfg.Shell}
	// The interpreter's worker (strand server runs none unless told to by
	// --worker-groups, and then beside this one), and the tasks' of the
	// benchmark's own worker group.
	nodes, err := openNodes(ctx, cfg.Store, cfg.Services, engine.Options{Logger: log}, func(svc api.Service) ([]runnable, error) {
		fe, err := frontEnd(svc)
		if err != nil {
			return nil, err
		}
		interp := worker.New(svc, worker.Options{Queue: dag.Queue, Logger: log})
		dag.Register(interp, fe)
		tasks := worker.New(svc, worker.Options{Queue: dag.GroupQueue(dagGroup), Logger: log, MaxConcurrentSteps: 64})
		dag.RegisterTasks(tasks, &dag.TaskRunner{Identity: "bench"})
		steps := worker.New(svc, worker.Options{Queue: "bench.steps", Logger: log})
		worker.RegisterWorkflow(steps, StepChain)
		worker.RegisterStep(steps, NoopStep)
		return []runnable{interp, tasks, steps}, nil
	})
	if err != nil {
		return rep, err
	}
	defer nodes.close(ctx)
	dags, err := frontEndClients(nodes, dag.NewClient)
	if err != nil {
		return rep, err
	}

	var text strings.Builder
	fmt.Fprintf(&text, "name: bench-chain\nworker_group: %s\ntasks:\n", dagGroup)
	task := "type: step, step: NoopStep, queue: bench.steps, outputs: [start, end]"
	if cfg.Shell {
		task = "type: shell, script: 'true'"
	}
	for i := range cfg.Chain {
		fmt.Fprintf(&text, "  - {name: t%d, %s", i, task)
		if i > 0 {
			fmt.Fprintf(&text, ", upstream: [t%d]", i-1)
		}
		text.WriteString("}\n")
	}
	if _, err := dags[0].Catalog.Apply(ctx, []byte(text.String()), "strand bench", false); err != nil {
		return rep, err
	}

	say("running %d instances of a chain of %d tasks...", cfg.Instances, cfg.Chain)
	var taskGaps []time.Duration
	began := time.Now()
	ids := make([]string, cfg.Instances)
	g, gctx := errgroup.WithContext(ctx)
	for i := range ids {
		g.Go(func() error {
			s, err := dags[i%len(dags)].Start(gctx, dag.RunInput{DAG: "bench-chain"}, dag.StartOptions{})
			if err != nil {
				return err
			}
			ids[i] = s.WorkflowID
			res, err := nodes.svc(i).WaitResult(gctx, api.ResultRequest{RunRef: api.RunRef{WorkflowID: s.WorkflowID}})
			if err == nil && res.Failure != nil {
				err = res.Failure
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	rep.TasksPerSecond = float64(cfg.Instances*cfg.Chain) / time.Since(began).Seconds()
	for _, id := range ids {
		inst, _, err := dags[0].Instance(ctx, id)
		if err != nil {
			return rep, err
		}
		times := make([]stepTimes, len(inst.Tasks))
		for i, t := range inst.Tasks {
			times[i] = stepTimes{t.StartTime, t.EndTime}
			if !cfg.Shell {
				// A Go step's times are its result's, which the task's outputs carry.
				times[i].Start, _ = time.Parse(time.RFC3339Nano, t.Outputs["start"])
				times[i].End, _ = time.Parse(time.RFC3339Nano, t.Outputs["end"])
			}
		}
		for i := 1; i < len(times); i++ {
			taskGaps = append(taskGaps, times[i].Start.Sub(times[i-1].End))
		}
	}
	rep.Task = gapsOf(taskGaps)

	say("running %d workflows of %d no-op steps each...", cfg.Instances, cfg.Chain)
	var stepGaps []time.Duration
	began = time.Now()
	results := make([][]stepTimes, cfg.Instances)
	clients := nodes.clients("strand bench")
	g, gctx = errgroup.WithContext(ctx)
	for i := range results {
		g.Go(func() error {
			run, err := client.Start(gctx, clients[i%len(clients)], StepChain, cfg.Chain, client.StartOptions{Queue: "bench.steps"})
			if err != nil {
				return err
			}
			results[i], err = run.Get(gctx)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	rep.StepsPerSecond = float64(cfg.Instances*cfg.Chain) / time.Since(began).Seconds()
	for _, r := range results {
		for i := 1; i < len(r); i++ {
			stepGaps = append(stepGaps, r[i].Start.Sub(r[i-1].End))
		}
	}
	rep.Step = gapsOf(stepGaps)
	return rep, nil
}

// PrintDAG writes a DAG report.
func PrintDAG(w io.Writer, backend string, rep DAGReport) {
	kind := "no-op Go step"
	if rep.Shell {
		kind = "shell (`true`)"
	}
	fmt.Fprintf(w, "%s: %d instances at once of a chain of %d %s tasks\n", backend, rep.Instances, rep.Chain, kind)
	fmt.Fprintf(w, "  DAG task overhead (upstream end to task start): p50 %s, p99 %s, max %s over %d tasks; %.0f tasks/s\n",
		rep.Task.P50.Round(10*time.Microsecond), rep.Task.P99.Round(10*time.Microsecond), rep.Task.Max.Round(10*time.Microsecond), rep.Task.N, rep.TasksPerSecond)
	fmt.Fprintf(w, "  kernel step gap (step end to next step start):  p50 %s, p99 %s, max %s over %d steps; %.0f steps/s\n",
		rep.Step.P50.Round(10*time.Microsecond), rep.Step.P99.Round(10*time.Microsecond), rep.Step.Max.Round(10*time.Microsecond), rep.Step.N, rep.StepsPerSecond)
	if rep.Step.P50 > 0 {
		fmt.Fprintf(w, "  ratio of p50s (task overhead / step gap): %.2f\n", float64(rep.Task.P50)/float64(rep.Step.P50))
	}
}
