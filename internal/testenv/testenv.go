// Package testenv is an engine for tests of what runs on it: an engine over
// a real store, a worker with the test's workflows and steps, and the
// system worker (schedules, batches), which a restart brings back over the
// same store with nothing kept in memory.
package testenv

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
)

// Logger logs errors only, or everything when STRAND_TEST_LOG is set.
func Logger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("STRAND_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Env is a running engine with its workers.
type Env struct {
	T   *testing.T
	Ctx context.Context
	// Engine and Client are replaced by Restart.
	Engine *engine.Engine
	Client *client.Client

	st       store.Store
	register func(*worker.Worker)
	w        *worker.Worker
	runner   *system.Runner
}

// New starts an engine over st, a worker with what register registers
// and the system worker; they stop when the test ends, which has timeout
// to run.
func New(t *testing.T, st store.Store, timeout time.Duration, register func(*worker.Worker)) *Env {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	e := &Env{T: t, Ctx: ctx, st: st, register: register}
	e.Start()
	t.Cleanup(e.Stop)
	return e
}

// Start opens the engine and starts the workers.
func (e *Env) Start() {
	e.T.Helper()
	eng, err := engine.Open(e.Ctx, e.st, engine.Options{Logger: Logger(), WorkflowTaskTimeout: 2 * time.Second})
	if err != nil {
		e.T.Fatal(err)
	}
	e.Engine, e.Client = eng, client.New(eng, client.Options{Identity: "test"})
	e.w = worker.New(eng, worker.Options{Logger: Logger(), Identity: "test-worker"})
	e.register(e.w)
	if err := e.w.Start(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	e.runner = system.NewRunner(eng, system.RunnerOptions{Logger: Logger(), Worker: worker.Options{Logger: Logger()}})
	if err := e.runner.Start(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
}

// Stop stops the workers and closes the engine.
func (e *Env) Stop() {
	if e.Engine == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.runner.Stop(ctx)
	_ = e.w.Stop(ctx)
	e.Engine.Close()
	e.Engine = nil
}

// Restart stops everything and starts it again over the same store.
func (e *Env) Restart() {
	e.T.Helper()
	e.Stop()
	e.Start()
}

// Eventually polls cond until it holds, failing the test after d.
func (e *Env) Eventually(what string, d time.Duration, cond func() bool) {
	e.T.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			e.T.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
