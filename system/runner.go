// Package system runs Strand's own workflows: the runs that carry
// schedules (package schedule), batch operations (package batch),
// mailboxes (package message) and human tasks (package humantask); its
// workers also deliver the DAGs' alerts (package dag). Those runs are
// workflows like any other, on the task queue api.SystemQueue of each
// namespace, so they live on every store, survive restarts and move with
// their shards; a Runner runs their worker for every namespace, and strand
// server runs one on every node.
package system

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/humantask"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/schedule"
	"github.com/strandhq/strand/worker"
)

// NewWorker returns a worker that runs Strand's own workflows in a
// namespace, polling api.SystemQueue. opts.Namespace and opts.Queue are
// set here.
func NewWorker(svc api.Service, namespace string, opts worker.Options) *worker.Worker {
	if namespace == "" {
		namespace = api.DefaultNamespace
	}
	opts.Namespace, opts.Queue = namespace, api.SystemQueue
	if opts.Identity == "" {
		host, _ := os.Hostname()
		opts.Identity = fmt.Sprintf("strand-system@%s:%d", host, os.Getpid())
	}
	if opts.MaxConcurrentSteps == 0 {
		// Watch steps wait for long runs; they hold a goroutine each, not a core.
		opts.MaxConcurrentSteps = 1000
	}
	w := worker.New(svc, opts)
	schedule.Register(w, svc, namespace, opts.Identity)
	batch.Register(w, svc, namespace, opts.Identity)
	message.Register(w, svc)
	humantask.Register(w)
	// The DAGs' alerts, webhooks only: strand server registers its own
	// alerter, with its SMTP settings, over it (RunnerOptions.Register).
	if cl, ok := svc.(api.Cluster); ok {
		dag.RegisterAlerts(w, dag.NewAlerter(cl, dag.AlertOptions{Logger: opts.Logger}))
	}
	return w
}

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	// Namespaces are the namespaces to run schedules in; empty means every
	// namespace, looked up every Interval (svc must implement
	// api.Namespaces; else the default namespace only).
	Namespaces []string
	// Interval is how often new namespaces are looked for (default 2s).
	Interval time.Duration
	// Worker configures each namespace's worker.
	Worker worker.Options
	// Register, when set, registers more steps and workflows on each
	// namespace's worker, before it starts (strand server adds the
	// delivery of DAG alerts).
	Register func(w *worker.Worker, namespace string)
	Logger   *slog.Logger
}

// Runner runs the system worker of each namespace. Every node of a
// cluster may run one: a schedule's or a batch's run is served by the node
// that owns its shard, and its tasks go to whichever worker polls.
type Runner struct {
	svc  api.Service
	opts RunnerOptions
	log  *slog.Logger

	mu      sync.Mutex
	workers map[string]*worker.Worker
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewRunner returns a runner of svc's system workflows; Start starts it.
func NewRunner(svc api.Service, opts RunnerOptions) *Runner {
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Runner{svc: svc, opts: opts, log: log, workers: map[string]*worker.Worker{}}
}

// Start starts the workers of the namespaces there are now, and a
// goroutine that starts those of new namespaces until Stop.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.sync(ctx); err != nil {
		return err
	}
	if len(r.opts.Namespaces) > 0 {
		return nil
	}
	if _, ok := r.svc.(api.Namespaces); !ok {
		return nil
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.opts.Interval)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				if err := r.sync(lctx); err != nil && lctx.Err() == nil {
					r.log.Warn("system: looking for new namespaces", "error", err)
				}
			}
		}
	}()
	return nil
}

// sync starts the workers of the namespaces that have none.
func (r *Runner) sync(ctx context.Context) error {
	names := r.opts.Namespaces
	if len(names) == 0 {
		names = []string{api.DefaultNamespace}
		if ns, ok := r.svc.(api.Namespaces); ok {
			all, err := ns.ListNamespaces(ctx)
			if err != nil {
				return fmt.Errorf("system: list namespaces: %w", err)
			}
			names = names[:0]
			for _, n := range all {
				names = append(names, n.Name)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if _, ok := r.workers[n]; ok {
			continue
		}
		w := NewWorker(r.svc, n, r.opts.Worker)
		if r.opts.Register != nil {
			r.opts.Register(w, n)
		}
		if err := w.Start(ctx); err != nil {
			return fmt.Errorf("system: start the worker of namespace %s: %w", n, err)
		}
		r.workers[n] = w
	}
	return nil
}

// Stop stops the workers; running workflow tasks and steps finish first,
// until ctx ends.
func (r *Runner) Stop(ctx context.Context) error {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for n, w := range r.workers {
		if err := w.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("system: stop the worker of namespace %s: %w", n, err))
		}
		delete(r.workers, n)
	}
	return errors.Join(errs...)
}
