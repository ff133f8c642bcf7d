package engine_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// takeoverFlow runs step "held" with a start-to-close of a minute, the
// heartbeat timeout it is given (none when zero), and a schedule-to-start
// timeout that passes while the node that takes the attempt over waits
// for its worker (it started on the node that died: it must not time out).
func takeoverFlow(ctx workflow.Context, heartbeat time.Duration) (string, error) {
	opts := workflow.StepOptions{StartToClose: time.Minute, Heartbeat: heartbeat, ScheduleToStart: 3 * time.Second}
	return workflow.ExecuteStepByName[string](ctx, opts, "held", workflow.GetInfo(ctx).WorkflowID).Get(ctx)
}

// TestTakeoverRedelivery: node a dies (without handing its shards over)
// while a worker runs two step attempts of runs on a's shards; node b takes
// the shards once a's heartbeat expires, and the worker now reaches b (a
// balancer in front of the nodes sends it there).
//   - "alive" has no heartbeat timeout: its worker still runs it, so b does
//     not offer it again; its report, with the token a gave, is accepted by
//     b, and the step ran once.
//   - "gone" has a heartbeat timeout and its worker never heartbeats nor
//     reports: b offers the same attempt again (marked redelivered) once
//     that timeout has passed since the takeover, not after b's redelivery
//     delay (1s here).
//
// (A single node restarted after its crash offers again after
// RedeliveryDelay, as before: see Engine.waitsForWorkers.)
func TestTakeoverRedelivery(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { t.Parallel(); takeoverRedelivery(t, testdb.Postgres(t), true) })

}

func takeoverRedelivery(t *testing.T, st store.Store, cluster bool) {
	const hb = 4 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tweak := func(o *engine.Options) {
		o.NodeTTL = 2 * time.Second
		o.RedeliveryDelay = time.Second
		if !cluster {
			o.Dial, o.Address = nil, ""
		}
	}
	a := openNodeWith(t, st, "a", tweak)
	waitReady(t, a)
	waitPlaced(t, time.Minute, a)

	// The balancer the worker talks to: node a, then node b.
	var target atomic.Pointer[clusterNode]
	target.Store(a)
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target.Load().srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer lb.Close()

	type run struct {
		info    step.Info
		started time.Time
	}
	runs := map[string]chan run{"alive": make(chan run, 4), "gone": make(chan run, 4)}
	release := make(chan struct{})
	var stopped atomic.Bool
	defer func() {
		if stopped.CompareAndSwap(false, true) {
			close(release)
		}
	}()
	w := worker.New(remote.New(lb.URL, nil), worker.Options{Logger: logger(), Identity: "the-worker"})
	worker.RegisterWorkflow(w, takeoverFlow)
	worker.RegisterStepNamed(w, "held", func(ctx context.Context, id string) (string, error) {
		info := step.GetInfo(ctx)
		runs[id] <- run{info: info, started: time.Now()}
		if id == "gone" && info.Redelivered {
			return "again", nil
		}
		// The first run of each: it reports only when released ("gone"
		// never is, until the test ends).
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "once", nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())

	ca := client.New(a.eng, client.Options{})
	for id, hbt := range map[string]time.Duration{"alive": 0, "gone": hb} {
		if _, err := client.Start(ctx, ca, takeoverFlow, hbt, client.StartOptions{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	first := map[string]run{}
	for id, ch := range runs {
		select {
		case r := <-ch:
			first[id] = r
		case <-ctx.Done():
			t.Fatalf("the step of %s did not start", id)
		}
	}

	// a dies with both attempts running; b takes its shards after a's
	// heartbeat expires, and the worker's calls go to b from now on.
	engine.Crash(a.eng)
	a.drain()               // its connections go with it, the worker's task stream too
	recovered := time.Now() // on SQLite: the restart; the takeover is later
	b := openNodeWith(t, st, "b", tweak)
	target.Store(b)
	cb := client.New(b.eng, client.Options{})
	waitUntil(t, time.Minute, "b's recovery event in run gone", func() bool {
		if !cluster {
			return true // a restart writes no recovery event
		}
		evs, err := cb.AllHistory(ctx, "gone", "")
		if err != nil {
			return false
		}
		for _, e := range evs {
			if e.Type == api.EventRunRecovered && e.Recovery != nil && e.Recovery.FromNode == "a" {
				recovered = e.Time
				// The event says the step waits for its worker.
				if !strings.Contains(e.Reason, "only if their worker neither reports nor heartbeats") {
					t.Errorf("the recovery event does not say the step attempt waits for its worker: %q", e.Reason)
				}
				return true
			}
		}
		return false
	})

	// "gone" is offered again after its heartbeat timeout.
	select {
	case r := <-runs["gone"]:
		if !r.info.Redelivered || r.info.Attempt != first["gone"].info.Attempt {
			t.Errorf("gone: offered again as %+v; want the same attempt, redelivered", r.info)
		}
		if waited := r.started.Sub(recovered); waited < hb-time.Second {
			t.Errorf("gone: offered again %s after the takeover; want no sooner than its heartbeat timeout (%s)", waited.Round(time.Millisecond), hb)
		}
	case r := <-runs["alive"]:
		t.Fatalf("alive: offered again though its worker still runs it: %+v", r.info)
	case <-ctx.Done():
		t.Fatal("gone: its attempt was not offered again after its heartbeat timeout")
	}
	out, err := client.GetRun[string](cb, "gone", "").Get(ctx)
	if err != nil || out != "again" {
		t.Fatalf("gone: %q, %v", out, err)
	}

	// By then b's redelivery delay has long passed; "alive" was not
	// offered again. Its worker reports now, through b.
	select {
	case r := <-runs["alive"]:
		t.Fatalf("alive: offered again though its worker still runs it: %+v", r.info)
	default:
	}
	if stopped.CompareAndSwap(false, true) {
		close(release)
	}
	out, err = client.GetRun[string](cb, "alive", "").Get(ctx)
	if err != nil || out != "once" {
		t.Fatalf("alive: %q, %v", out, err)
	}
	evs, err := cb.AllHistory(ctx, "alive", "")
	if err != nil {
		t.Fatal(err)
	}
	if n := count(evs, api.EventStepCompleted); n != 1 || count(evs, api.EventStepAttemptFailed) != 0 {
		dump(t, evs)
		t.Errorf("alive: %d StepCompleted events; want one, and no failed attempt", n)
	}
	select {
	case r := <-runs["alive"]:
		t.Errorf("alive: ran a second time: %+v", r.info)
	default:
	}
}
