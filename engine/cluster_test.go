package engine_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

func clusterAdd(ctx context.Context, n int) (int, error) { return n + 1, nil }

// clusterChild runs a step.
func clusterChild(ctx workflow.Context, n int) (int, error) {
	return workflow.ExecuteStep(ctx, workflow.StepOptions{}, clusterAdd, n).Get(ctx)
}

// clusterParent runs a step and a child, answers a query and waits for a
// signal: each of these may cross from one node to the other.
func clusterParent(ctx workflow.Context, n int) (int, error) {
	stage := "step"
	workflow.SetQueryHandler(ctx, "stage", func(struct{}) (string, error) { return stage, nil })
	v, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, clusterAdd, n).Get(ctx)
	if err != nil {
		return 0, err
	}
	stage = "child"
	c, err := workflow.ExecuteChild(ctx, workflow.ChildOptions{WorkflowID: fmt.Sprintf("%s-child", workflow.GetInfo(ctx).WorkflowID)}, clusterChild, v).Get(ctx)
	if err != nil {
		return 0, err
	}
	stage = "signal"
	s, _ := workflow.GetSignalChannel[int](ctx, "bonus").Receive(ctx)
	return c + s, nil
}

// clusterNode is an engine behind its own HTTP server.
type clusterNode struct {
	eng *engine.Engine
	srv *httptest.Server
	// drain ends its long polls and task streams, as a node that stops
	// does (a hijacked connection outlives httptest.Server.Close).
	drain context.CancelFunc
}

func openNode(t *testing.T, st store.Store, id string) *clusterNode {
	t.Helper()
	return openNodeWith(t, st, id, nil)
}

// openNodeWith opens a node whose options tweak changes first.
func openNodeWith(t *testing.T, st store.Store, id string, tweak func(*engine.Options)) *clusterNode {
	t.Helper()
	var h atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hh := h.Load(); hh != nil {
			(*hh).ServeHTTP(w, r)
			return
		}
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	opts := engine.Options{Identity: id, NodeTTL: 6 * time.Second, NumShards: 8,
		Address: srv.URL, Dial: func(addr string) api.Peer { return remote.New(addr, nil) }, Logger: logger()}
	if tweak != nil {
		tweak(&opts)
	}
	eng, err := engine.Open(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	draining, drain := context.WithCancel(context.Background())
	var handler http.Handler = server.New(eng, server.Options{PollWait: 2 * time.Second, Draining: draining})
	h.Store(&handler)
	n := &clusterNode{eng: eng, srv: srv, drain: drain}
	t.Cleanup(func() { n.close() })
	return n
}

var closeMu sync.Mutex

func (n *clusterNode) close() {
	closeMu.Lock()
	defer closeMu.Unlock()
	if n.eng != nil {
		if n.drain != nil {
			n.drain()
		}
		n.eng.Close()
		n.srv.Close()
		n.eng = nil
	}
}

// serving returns the shards each node serves.
func serving(t *testing.T, nodes ...*clusterNode) map[int32]int {
	t.Helper()
	got := map[int32]int{}
	for _, n := range nodes {
		shards, err := n.eng.ListShards(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range shards {
			if s.Serving {
				got[s.ID]++
			}
		}
	}
	return got
}

func waitPlaced(t *testing.T, within time.Duration, nodes ...*clusterNode) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := serving(t, nodes...)
		ok := len(got) == 8
		for _, c := range got {
			ok = ok && c == 1
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("shards not placed once each after %s: %v", within, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReady waits until every node owns the shards placement gives it.
func waitReady(t *testing.T, nodes ...*clusterNode) {
	t.Helper()
	waitUntil(t, time.Minute, "every node ready", func() bool {
		for _, n := range nodes {
			if !n.eng.Ready() {
				return false
			}
		}
		return true
	})
}

// TestClusterInProcess runs two engines over one store, each behind its own
// HTTP server. The worker is connected to node a only and the client to
// node b only, so every call for a's shards is forwarded by b, every task
// of b's shards reaches the worker through a forwarded poll, and children,
// signals and queries cross between them. Then b closes and a takes its
// shards by handover, without waiting for b's heartbeat to expire.
func TestClusterInProcess(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { t.Parallel(); clusterInProcess(t, testdb.Postgres(t)) })
	t.Run("cassandra", func(t *testing.T) { t.Parallel(); clusterInProcess(t, testdb.Cassandra(t)) })
}

func clusterInProcess(t *testing.T, st store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := openNode(t, st, "a")
	b := openNode(t, st, "b")
	// b joins: a hands over the shards placement now gives b.
	waitReady(t, a, b)
	waitPlaced(t, time.Minute, a, b)
	if got := serving(t, b); len(got) == 0 || len(got) == 8 {
		t.Fatalf("b serves %d of 8 shards; want some", len(got))
	}

	w := worker.New(a.eng, worker.Options{Logger: logger()})
	worker.RegisterWorkflow(w, clusterParent)
	worker.RegisterWorkflow(w, clusterChild)
	worker.RegisterStep(w, clusterAdd)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	cb := client.New(b.eng, client.Options{})
	ca := client.New(a.eng, client.Options{})

	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("parent-%d", i)
			run, err := client.Start(ctx, cb, clusterParent, i, client.StartOptions{ID: id})
			if err != nil {
				t.Errorf("start %s: %v", id, err)
				return
			}
			for {
				stage, err := client.Query[string](ctx, cb, id, "", "stage", struct{}{})
				if err != nil {
					t.Errorf("query %s: %v", id, err)
					return
				}
				if stage == "signal" {
					break
				}
				time.Sleep(20 * time.Millisecond) // queried hard: queries must not starve the workflow tasks
			}
			if err := ca.Signal(ctx, id, "", "bonus", 100); err != nil {
				t.Errorf("signal %s: %v", id, err)
				return
			}
			got, err := run.Get(ctx)
			if err != nil || got != i+2+100 {
				t.Errorf("%s: got %d, %v; want %d", id, got, err, i+102)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Either node's overview and queues cover both nodes: each counted the
	// runs of its own shards; the worker polls a alone.
	for _, node := range []*clusterNode{a, b} {
		o, err := node.eng.Overview(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var parents api.TypeStats
		for _, ts := range o.Types {
			if strings.HasSuffix(ts.WorkflowType, "clusterParent") {
				parents = ts
			}
		}
		if parents.Started != n || parents.Closed != n || parents.Failed != 0 || o.Partial {
			t.Errorf("overview: parents %+v, partial %v; want %d started and closed", parents, o.Partial, n)
		}
		list, err := node.eng.ListQueues(ctx, "")
		if err != nil || list.Partial {
			t.Fatalf("queues: %+v, %v", list, err)
		}
		queues := list.Queues
		for _, q := range queues {
			if len(q.Pollers) != 1 || q.Pollers[0].Node != "a" || q.SyncMatched+q.Backlogged == 0 {
				t.Errorf("queue %s %s: pollers %+v, %d matched, %d backlogged", q.Kind, q.Name, q.Pollers, q.SyncMatched, q.Backlogged)
			}
		}
		if len(queues) != 2 {
			t.Errorf("queues: %+v; want the default workflow and step queues", queues)
		}
	}

	// b leaves: it hands its shards back before Close returns (no shard
	// still names it), so a takes them without waiting for b's heartbeat
	// to expire.
	b.close()
	shards, err := a.eng.ListShards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shards {
		if s.Owner == "b" {
			t.Errorf("shard %d still names b after b closed: not handed back", s.ID)
		}
	}
	took := waitPlaced(t, time.Minute, a)
	t.Logf("a serves every shard %s after b closed (node TTL 6s)", took.Round(time.Millisecond))
	run, err := client.Start(ctx, ca, clusterParent, 1000, client.StartOptions{ID: "after"})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Minute, `the run "after" waiting for its signal`, func() bool {
		stage, err := client.Query[string](ctx, ca, "after", "", "stage", struct{}{})
		return err == nil && stage == "signal"
	})
	if err := ca.Signal(ctx, "after", "", "bonus", 1); err != nil {
		t.Fatal(err)
	}
	if got, err := run.Get(ctx); err != nil || got != 1003 {
		t.Fatalf("after handover: %d, %v", got, err)
	}
}

// releaseWait bounds the wait for a step to go back to its owner: well
// past engine.releaseAfter (2s) on a busy machine, and well short of the
// step's start-to-close timeout (a minute), after which it would be
// offered again anyway.
const releaseWait = 30 * time.Second

func releaseFlow(ctx workflow.Context, _ int) (int, error) {
	return workflow.ExecuteStep(ctx, workflow.StepOptions{Queue: "rel", StartToClose: time.Minute}, clusterAdd, 1).Get(ctx)
}

// TestClusterRelease: a step a forwarded poll fetched for node a after a's
// worker had left goes back to its owner b, ready for the next worker,
// instead of waiting out its start-to-close timeout as started: after
// releaseAfter, or at once when a closes.
func TestClusterRelease(t *testing.T) {
	t.Run("unclaimed", func(t *testing.T) {
		t.Parallel()
		ctx, _, b, id := legTookStep(t)
		// The leg's answer, then a's release after releaseAfter.
		waitUntil(t, releaseWait, "the step a's leg took, with no worker waiting on a, given back to b (scheduled)", func() bool {
			return stepState(ctx, t, b, id) == "scheduled"
		})
		// The next worker, on b, gets it at once.
		tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
		defer tcancel()
		task, err := b.eng.PollStepTask(tctx, api.PollRequest{Queue: "rel"})
		if err != nil || task == nil {
			t.Fatalf("poll after release: %v, %v", task, err)
		}
	})
	t.Run("on close", func(t *testing.T) {
		t.Parallel()
		ctx, a, b, id := legTookStep(t)
		// The leg's answer: the step waits in a's queue until a's
		// release, releaseAfter (2s) later; a closes before that.
		released := false
		waitUntil(t, time.Minute, "the step a's leg took in a's queue", func() bool {
			released = stepState(ctx, t, b, id) == "scheduled"
			return released || backlog(ctx, t, a, "rel") == 1
		})
		if released {
			t.Skip("the machine is too slow: a released the step (after releaseAfter) before the test saw it in a's queue")
		}
		a.close()
		waitUntil(t, releaseWait, "the step a held when it closed given back to b (scheduled)", func() bool {
			return stepState(ctx, t, b, id) == "scheduled"
		})
	})
}

// stepQueue looks up step queue q in node n's own queues (n's alone: the
// call is marked forwarded, so n asks no other node); found is false if n
// does not know it (no one polled it there, no task was offered to it).
func stepQueue(ctx context.Context, t *testing.T, n *clusterNode, q string) (info api.QueueInfo, found bool) {
	t.Helper()
	l, err := n.eng.ListQueues(api.WithForwarded(ctx), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range l.Queues {
		if info.Kind == api.QueueKindStep && info.Name == q {
			return info, true
		}
	}
	return api.QueueInfo{}, false
}

// backlog returns the tasks waiting in node n's own step queue q.
func backlog(ctx context.Context, t *testing.T, n *clusterNode, q string) int {
	t.Helper()
	info, _ := stepQueue(ctx, t, n, q)
	return info.Backlog
}

// hasQueue reports whether node n knows step queue q.
func hasQueue(ctx context.Context, t *testing.T, n *clusterNode, q string) bool {
	t.Helper()
	_, found := stepQueue(ctx, t, n, q)
	return found
}

func stepState(ctx context.Context, t *testing.T, n *clusterNode, id string) string {
	d, err := n.eng.DescribeWorkflow(ctx, api.RunRef{WorkflowID: id})
	if err != nil || len(d.Steps) == 0 {
		return ""
	}
	return d.Steps[0].State
}

// legTookStep sets up nodes a and b where a's leg (its worker gone) took a
// step of a workflow on b's shard, and returns them with the workflow id.
func legTookStep(t *testing.T) (context.Context, *clusterNode, *clusterNode, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	st := testdb.Postgres(t)
	a := openNode(t, st, "a")
	b := openNode(t, st, "b")
	waitReady(t, a, b)
	waitPlaced(t, time.Minute, a, b)
	// A workflow id of a shard b serves: b answers a forwarded call for it
	// itself (not found) instead of refusing it.
	id := ""
	for i := 0; id == ""; i++ {
		cand := fmt.Sprintf("rel-%d", i)
		if _, err := b.eng.DescribeWorkflow(api.WithForwarded(ctx), api.RunRef{WorkflowID: cand}); errors.Is(err, api.ErrNotFound) {
			id = cand
		}
	}
	// A worker polls queue rel on a, then leaves: a's leg on b stays.
	pctx, pcancel := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		a.eng.PollStepTask(pctx, api.PollRequest{Queue: "rel"})
	}()
	// b has queue rel once a's leg polls it there (nothing else on b has
	// named it yet); the leg waits there for legWait (10s), long past
	// the start below.
	waitUntil(t, time.Minute, "a's leg polling queue rel on b", func() bool { return hasQueue(ctx, t, b, "rel") })
	pcancel()
	<-polled

	w := worker.New(b.eng, worker.Options{Logger: logger()})
	worker.RegisterWorkflow(w, releaseFlow)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	before := b.eng.Stats().SyncMatched
	if _, err := client.Start(ctx, client.New(b.eng, client.Options{}), releaseFlow, 0, client.StartOptions{ID: id}); err != nil {
		t.Fatal(err)
	}
	// The step is offered when its StepScheduled commits; a's leg waits on
	// b, so it takes the step at once (a sync match on b).
	waitUntil(t, time.Minute, "the step scheduled on b and matched to a's leg", func() bool {
		evs, _ := client.New(b.eng, client.Options{}).AllHistory(ctx, id, "")
		return count(evs, api.EventStepScheduled) == 1 && b.eng.Stats().SyncMatched > before
	})
	return ctx, a, b, id
}
