package engine_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
)

// backends runs f on each real backend: SQLite, PostgreSQL and Cassandra.
func backends(t *testing.T, f func(t *testing.T, st store.Store)) { testdb.Backends(t, f) }

// env is an engine with a worker and a client over one store.
type env struct {
	t      *testing.T
	st     store.Store
	eng    *engine.Engine
	w      *worker.Worker
	c      *client.Client
	ctx    context.Context
	setup  func(w *worker.Worker)
	engOpt engine.Options
}

func logger() *slog.Logger {
	if os.Getenv("STRAND_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// newEnv opens an engine over st and starts a worker with what setup registers.
func newEnv(t *testing.T, st store.Store, setup func(w *worker.Worker)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, st: st, ctx: ctx, setup: setup, engOpt: engine.Options{Logger: logger(), WorkflowTaskTimeout: 2 * time.Second}}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *env) start() {
	e.t.Helper()
	eng, err := engine.Open(e.ctx, e.st, e.engOpt)
	if err != nil {
		e.t.Fatal(err)
	}
	e.eng = eng
	e.c = client.New(eng, client.Options{Identity: "test"})
	e.startWorker(e.setup)
}

func (e *env) startWorker(setup func(w *worker.Worker)) {
	e.t.Helper()
	e.w = worker.New(e.eng, worker.Options{Logger: logger(), Identity: "test-worker"})
	setup(e.w)
	if err := e.w.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) stopWorker() {
	if e.w != nil {
		e.w.Stop(context.Background())
		e.w = nil
	}
}

func (e *env) stop() {
	e.stopWorker()
	if e.eng != nil {
		e.eng.Close()
		e.eng = nil
	}
}

// restart stops the engine and the worker and opens them again over the
// same store: everything in memory is gone.
func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

// history returns a run's events and checks that their ids have no gap.
func (e *env) history(wfID, runID string) []api.Event {
	e.t.Helper()
	evs, err := e.c.AllHistory(e.ctx, wfID, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.ID != int64(i+1) {
			e.t.Fatalf("history of %s: event %d has id %d", wfID, i+1, ev.ID)
		}
	}
	return evs
}

func count(evs []api.Event, typ api.EventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// eventually polls cond until it holds or the test's time runs out.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	waitUntil(e.t, time.Minute, what, cond)
}

// waitUntil polls cond every 20ms until it holds; after within it fails
// the test, naming what it waited for. Bounds are for a hung test, not a
// slow machine: make them many times what the wait takes on a busy one.
func waitUntil(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dump(t *testing.T, evs []api.Event) {
	for _, ev := range evs {
		t.Log(ev.Summary())
	}
}
