package engine_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// restartable is a server whose engine can be closed and opened again
// over the same store while a remote worker stays connected: between the
// two, every request is answered 503, as a server that is down (or
// restarting behind a proxy) would.
type restartable struct {
	t    *testing.T
	st   store.Store
	opts engine.Options
	ts   *httptest.Server
	h    atomic.Pointer[http.Handler]
	eng  *engine.Engine
	// drain ends the serving engine's long polls and task streams, as a
	// server that goes down does.
	drain context.CancelFunc
	// refuse, while it returns true for a request, has it answered 503.
	refuse atomic.Pointer[func(*http.Request) bool]
	// downHits counts the requests answered 503 while down, by path.
	downHits sync.Map // string → *atomic.Int64
}

// hitsWhileDown returns how many requests for path (under /api/v1) were
// answered 503 while the server was down.
func (r *restartable) hitsWhileDown(path string) int64 {
	if n, ok := r.downHits.Load("/api/v1" + path); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

func newRestartable(t *testing.T, st store.Store, opts engine.Options) *restartable {
	r := &restartable{t: t, st: st, opts: opts}
	r.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if f := r.refuse.Load(); f != nil && (*f)(req) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"code":"unavailable","message":"refused"}`))
			return
		}
		if h := r.h.Load(); h != nil {
			(*h).ServeHTTP(w, req)
			return
		}
		n, _ := r.downHits.LoadOrStore(req.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"code":"unavailable","message":"down"}`))
	}))
	r.up()
	t.Cleanup(func() {
		r.ts.Close()
		r.eng.Close()
	})
	return r
}

// up opens an engine over the store and serves it.
func (r *restartable) up() {
	eng, err := engine.Open(context.Background(), r.st, r.opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng = eng
	draining, drain := context.WithCancel(context.Background())
	r.drain = drain
	h := server.New(eng, server.Options{PollWait: time.Second, Draining: draining})
	r.h.Store(&h)
}

// down stops serving and closes the engine: what it held in memory (the
// started step attempts) is gone.
func (r *restartable) down() {
	r.h.Store(nil)
	r.drain()
	r.eng.Close()
}

// attemptLog records the runs of a step.
type attemptLog struct {
	mu   sync.Mutex
	runs []step.Info
}

func (l *attemptLog) add(info step.Info) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, info)
	return len(l.runs)
}

func (l *attemptLog) get() []step.Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]step.Info(nil), l.runs...)
}

// TestRedelivery restarts a server under a remote worker that runs a step
// attempt: the attempt is offered again only when its worker neither
// reports nor heartbeats within its heartbeat timeout (10s; the redelivery
// delay, 3s, is only the least wait), and then as the same
// attempt marked redelivered; a report sent while the server was down is
// retried until it lands. No restart writes a recovery event or fails a
// workflow task.
func TestRedelivery(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		const delay = 3 * time.Second
		opts := engine.Options{Logger: logger(), RedeliveryDelay: delay, WorkflowTaskTimeout: 2 * time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := newRestartable(t, st, opts)
		// stepCase is what the step does in one case.
		type stepCase struct {
			name    string
			log     attemptLog
			release chan struct{}
		}
		var cur atomic.Pointer[stepCase]
		started := make(chan struct{}, 10)
		Slow := func(ctx context.Context, _ string) (string, error) {
			c := cur.Load()
			nth := c.log.add(step.GetInfo(ctx))
			started <- struct{}{}
			switch c.name {
			case "heartbeat":
				for {
					if err := step.Heartbeat(ctx, nth); err != nil {
						return "", err
					}
					select {
					case <-c.release:
						return "kept", nil
					case <-time.After(100 * time.Millisecond):
					}
				}
			case "silent":
				if nth == 1 {
					<-c.release
					return "first", nil
				}
				return "second", nil
			default: // "report"
				<-c.release
				return "reported", nil
			}
		}
		Flow := func(ctx workflow.Context, _ string) (string, error) {
			opts := workflow.StepOptions{StartToClose: time.Minute, Heartbeat: 10 * time.Second}
			return workflow.ExecuteStepByName[string](ctx, opts, "slow", "").Get(ctx)
		}
		w := worker.New(remote.New(srv.ts.URL, nil), worker.Options{Logger: logger(), Identity: "remote-worker"})
		worker.RegisterWorkflowNamed(w, "flow", Flow)
		worker.RegisterStepNamed(w, "slow", Slow)
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(context.Background())

		// each runs one case: the server goes down while the step runs,
		// restart does what the case needs and brings it back up.
		each := func(name, want string, restart func(c *stepCase)) []step.Info {
			t.Helper()
			c := &stepCase{name: name, release: make(chan struct{})}
			cur.Store(c)
			id := "redelivery-" + name
			if _, err := client.StartByName[string](ctx, client.New(srv.eng, client.Options{}), "flow", "", client.StartOptions{ID: id}); err != nil {
				t.Fatal(err)
			}
			<-started
			srv.down()
			restart(c)
			cl := client.New(srv.eng, client.Options{})
			out, err := client.GetRun[string](cl, id, "").Get(ctx)
			if err != nil || out != want {
				t.Fatalf("%s: result %q, %v; want %q", name, out, err, want)
			}
			evs, err := cl.AllHistory(ctx, id, "")
			if err != nil {
				t.Fatal(err)
			}
			if n := count(evs, api.EventStepCompleted); n != 1 {
				t.Errorf("%s: %d StepCompleted events", name, n)
			}
			if count(evs, api.EventWorkflowTaskFailed)+count(evs, api.EventRunRecovered) != 0 {
				dump(t, evs)
				t.Errorf("%s: a failed workflow task or a recovery event after a restart", name)
			}
			return c.log.get()
		}

		// A step that heartbeats through the restart keeps its attempt:
		// nobody else runs it, though the delay passes.
		beats := srv.hitsWhileDown("/step-tasks/heartbeat")
		runs := each("heartbeat", "kept", func(c *stepCase) {
			waitUntil(t, time.Minute, "a heartbeat sent while the server is down", func() bool {
				return srv.hitsWhileDown("/step-tasks/heartbeat") > beats
			})
			srv.up()
			// The held attempt would be offered again delay after the
			// engine opened; a margin more shows nothing ran it again.
			time.Sleep(delay + 500*time.Millisecond)
			close(c.release)
		})
		if len(runs) != 1 {
			t.Errorf("heartbeat: the step ran %d times: %+v", len(runs), runs)
		}

		// A step that says nothing is offered again after its heartbeat
		// timeout: the same attempt, marked redelivered. The first run's late report is
		// refused (task_not_found), and the second's result stands.
		var silent *stepCase
		runs = each("silent", "second", func(c *stepCase) {
			silent = c
			srv.up()
			select {
			case <-started:
			case <-time.After(delay + 30*time.Second):
				t.Fatalf("silent: the attempt was not offered again")
			}
		})
		close(silent.release)
		if len(runs) != 2 || runs[1].Attempt != runs[0].Attempt || !runs[1].Redelivered || runs[0].Redelivered {
			t.Errorf("silent: runs %+v; want the same attempt twice, the second redelivered", runs)
		}

		// A step that ends while the server is down has its report retried
		// until the server is back, within the delay: it runs once.
		reports := srv.hitsWhileDown("/step-tasks/complete")
		runs = each("report", "reported", func(c *stepCase) {
			close(c.release)
			waitUntil(t, time.Minute, "the step's report sent while the server is down", func() bool {
				return srv.hitsWhileDown("/step-tasks/complete") > reports
			})
			srv.up()
		})
		if len(runs) != 1 {
			t.Errorf("report: the step ran %d times: %+v", len(runs), runs)
		}
	})
}

// TestReplayRidesThroughUnavailableHistory gives a workflow task to a
// remote worker that must replay the run while the server cannot serve
// history: the worker retries the read and completes the task; it never
// reports the task failed for a transport error.
func TestReplayRidesThroughUnavailableHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := newRestartable(t, testdb.SQLite(t), engine.Options{Logger: logger(), WorkflowTaskTimeout: 2 * time.Second})
	Waiter := func(ctx workflow.Context, _ string) (string, error) {
		v, _ := workflow.GetSignalChannel[string](ctx, "go").Receive(ctx)
		return v, nil
	}
	newWorker := func() *worker.Worker {
		w := worker.New(remote.New(srv.ts.URL, nil), worker.Options{Logger: logger()})
		worker.RegisterWorkflowNamed(w, "waiter", Waiter)
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return w
	}
	c := client.New(srv.eng, client.Options{})
	w := newWorker()
	r, err := client.StartByName[string](ctx, c, "waiter", "", client.StartOptions{ID: "replayer"})
	if err != nil {
		t.Fatal(err)
	}
	// The first task ran once the run shows a completed workflow task.
	waitUntil(t, time.Minute, "the first workflow task completed", func() bool {
		evs, err := c.AllHistory(ctx, r.WorkflowID, "")
		if err != nil {
			t.Fatal(err)
		}
		return count(evs, api.EventWorkflowTaskCompleted) == 1
	})
	w.Stop(context.Background()) // its cached copy of the run goes with it
	var refused atomic.Int64
	refuse := func(req *http.Request) bool {
		if strings.HasSuffix(req.URL.Path, "/history") {
			refused.Add(1)
			return true
		}
		return false
	}
	srv.refuse.Store(&refuse)
	w = newWorker()
	defer w.Stop(context.Background())
	if err := c.Signal(ctx, r.WorkflowID, "", "go", "on"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Minute, "three history reads refused", func() bool { return refused.Load() >= 3 })
	srv.refuse.Store(nil)
	out, err := r.Get(ctx)
	if err != nil || out != "on" {
		t.Fatalf("result %q, %v", out, err)
	}
	evs, err := c.AllHistory(ctx, r.WorkflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := count(evs, api.EventWorkflowTaskFailed); n != 0 {
		dump(t, evs)
		t.Errorf("%d workflow tasks failed while history could not be read", n)
	}
}
