package remote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/server"
)

// refusedURL is the URL of an address nothing listens on: connections to
// it are refused.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// dropped reads the request and closes the connection without an answer,
// as a node that dies while serving a call does.
func dropped(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// slow is a policy whose back-off a test would notice: a call that meets
// it takes 5s.
var slow = RetryPolicy{Initial: 10 * time.Second, Max: 10 * time.Second}

func cluster(t *testing.T, p RetryPolicy, urls ...string) *Service {
	t.Helper()
	// Plain task calls: these fakes answer the plain poll routes (task
	// exchanges across nodes are cmd/strand's cluster tests').
	s, err := NewCluster(urls, Options{Retry: p, PlainTaskCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClusterFailsOver: a call whose node is down (refused, or answering
// 503) goes at once to another node; the nodes that failed are marked down
// and the next calls go to the node that answered, until it fails.
func TestClusterFailsOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	busy := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { unavailable(w) })
	good := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { described(w) })
	s := cluster(t, slow, refusedURL(t), busy.URL, good.URL)
	begun := time.Now()
	for i := range 5 {
		if d, err := s.DescribeWorkflow(ctx, api.RunRef{WorkflowID: "wf"}); err != nil || d.RunID != "r1" {
			t.Fatalf("describe %d: %+v, %v", i, d, err)
		}
	}
	if took := time.Since(begun); took > 2*time.Second {
		t.Errorf("5 calls took %s: the failover waited a back-off", took)
	}
	if n := len(busy.requests()); n != 1 {
		t.Errorf("the busy node got %d requests, want 1 (then it is down)", n)
	}
	if n := len(good.requests()); n != 5 {
		t.Errorf("the good node served %d calls, want 5", n)
	}
	st := s.NodeStatuses()
	if st[0].Up || st[1].Up || !st[2].Up || st[0].Calls != 1 || st[0].LastError == "" || st[2].LastAnswer.IsZero() {
		t.Errorf("statuses: %+v", st)
	}

	// Every node down: the call waits its back-off and tries again, until
	// the context ends; the error says the nodes are unavailable.
	s = cluster(t, fast, refusedURL(t), refusedURL(t))
	sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer scancel()
	if _, err := s.DescribeWorkflow(sctx, api.RunRef{WorkflowID: "wf"}); !errors.Is(err, api.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "on 2 of 2 nodes") {
		t.Errorf("every node down: %v, want unavailable, tried on both nodes", err)
	}
	if st := s.NodeStatuses(); st[0].Calls < 2 || st[1].Calls < 2 {
		t.Errorf("every node down: both must be tried again in turn: %+v", st)
	}
}

// TestClusterSendOnce: a call sent once (a start without a request id)
// moves to another node only when the connection to the first was refused
// (nothing was sent); when the first node took it and died before its
// answer, it is not sent to another.
func TestClusterSendOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := api.StartRequest{WorkflowID: "wf", WorkflowType: "W"}
	started := func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, api.StartResponse{RunID: "r1"}) }

	good := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { started(w) })
	if out, err := cluster(t, slow, refusedURL(t), good.URL).StartWorkflow(ctx, start); err != nil || out.RunID != "r1" {
		t.Fatalf("start, the first node refusing: %+v, %v", out, err)
	}
	if n := len(good.requests()); n != 1 {
		t.Errorf("the second node got %d starts, want 1", n)
	}

	dying := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { dropped(w) })
	good = newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { started(w) })
	if _, err := cluster(t, slow, dying.URL, good.URL).StartWorkflow(ctx, start); !errors.Is(err, api.ErrUnavailable) {
		t.Fatalf("start, the first node dying with it: %v, want unavailable", err)
	}
	if n, m := len(dying.requests()), len(good.requests()); n != 1 || m != 0 {
		t.Errorf("a start sent once reached the nodes %d and %d times, want 1 and 0", n, m)
	}
	// With a request id it may be sent again: it goes to the other node.
	start.RequestID = "req-1"
	if out, err := cluster(t, slow, dying.URL, good.URL).StartWorkflow(ctx, start); err != nil || out.RunID != "r1" {
		t.Fatalf("start with a request id, the first node dying with it: %+v, %v", out, err)
	}
	if n := len(good.requests()); n != 1 {
		t.Errorf("the second node got %d starts, want 1", n)
	}
}

// TestClusterPollsSpread: polls go to the nodes in turn; when a node goes
// down, they go to the others, and come back to it once it answers again.
func TestClusterPollsSpread(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var fakes []*fakeServer
	var urls []string
	var down atomic.Bool // the third node answers 503
	for i := range 3 {
		f := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			if i == 2 && down.Load() {
				unavailable(w)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
		fakes = append(fakes, f)
		urls = append(urls, f.URL)
	}
	s := cluster(t, slow, urls...)
	poll := func(k int) {
		t.Helper()
		for i := range k {
			if task, err := s.PollStepTask(ctx, api.PollRequest{Queue: "q"}); err != nil || task != nil {
				t.Fatalf("poll %d: %v, %v", i, task, err)
			}
		}
	}
	poll(9)
	for i, f := range fakes {
		if n := len(f.requests()); n != 3 {
			t.Errorf("node %d got %d of 9 polls, want 3", i, n)
		}
	}

	// The third node answers 503 (it is starting): one poll meets it, and
	// the others go to the first two.
	down.Store(true)
	poll(10)
	if n := len(fakes[2].requests()); n != 4 {
		t.Errorf("the node answering 503 got %d more polls, want 1", n-3)
	}
	if n := len(fakes[0].requests()) + len(fakes[1].requests()); n != 6+10 {
		t.Errorf("the live nodes served %d polls, want 16", n)
	}
	// It answers again: once its back-off passes, polls come back to it.
	down.Store(false)
	for s.NodeStatuses()[2].DownUntil.After(time.Now()) {
		if ctx.Err() != nil {
			t.Fatal("the node's back-off did not pass")
		}
		time.Sleep(10 * time.Millisecond)
	}
	poll(6)
	if n := len(fakes[2].requests()); n != 6 {
		t.Errorf("the node that came back got %d of 6 polls, want 2", n-4)
	}
}

// TestNewClusterInput: the URLs are checked; a comma-separated entry gives
// several.
func TestNewClusterInput(t *testing.T) {
	for _, bad := range [][]string{nil, {""}, {" , "}, {"127.0.0.1:8233"}, {"http://a:1", "ftp://b"}, {"http://"}} {
		if _, err := NewCluster(bad, Options{}); !errors.Is(err, api.ErrInvalidArgument) {
			t.Errorf("NewCluster(%q): %v, want invalid argument", bad, err)
		}
	}
	s, err := NewCluster([]string{"http://a:1/, http://b:2", "https://c:3"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.URLs(); len(got) != 3 || got[0] != "http://a:1" || got[1] != "http://b:2" || got[2] != "https://c:3" {
		t.Errorf("URLs: %q", got)
	}
}

// TestClusterResolve: a URL whose name resolves to several addresses is a
// node per address, and the name is resolved again now and then.
func TestClusterResolve(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Two servers on one port, at 127.0.0.1 and 127.0.0.2.
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l1.Addr().(*net.TCPAddr).Port
	l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
	if err != nil {
		l1.Close()
		t.Skipf("no second loopback address: %v", err)
	}
	var fakes []*fakeServer
	for _, l := range []net.Listener{l1, l2} {
		f := &fakeServer{answer: func(_ int, w http.ResponseWriter, r *http.Request) {
			if r.Host != "strand.test:"+strconv.Itoa(port) {
				t.Errorf("Host %q, want the name", r.Host)
			}
			w.WriteHeader(http.StatusNoContent)
		}}
		f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
		f.Listener.Close()
		f.Listener = l
		f.Start()
		t.Cleanup(f.Close)
		fakes = append(fakes, f)
	}
	s, err := NewCluster([]string{"http://strand.test:" + strconv.Itoa(port)}, Options{Retry: slow, ResolveEvery: time.Millisecond, PlainTaskCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	addrs := []string{"127.0.0.1", "127.0.0.2"}
	s.resolve.lookup = func(_ context.Context, host string) ([]string, error) {
		if host != "strand.test" {
			return nil, errors.New("no such host")
		}
		mu.Lock()
		defer mu.Unlock()
		return addrs, nil
	}
	poll := func() {
		t.Helper()
		if task, err := s.PollStepTask(ctx, api.PollRequest{Queue: "q"}); err != nil || task != nil {
			t.Fatalf("poll: %v, %v", task, err)
		}
	}
	for range 6 {
		poll()
	}
	if n1, n2 := len(fakes[0].requests()), len(fakes[1].requests()); n1 < 2 || n2 < 2 || n1+n2 != 6 {
		t.Errorf("6 polls went %d and %d to the two addresses, want them spread", n1, n2)
	}
	if urls := s.URLs(); len(urls) != 2 {
		t.Errorf("nodes %q, want one per address", urls)
	}
	// The name now resolves to the second address only: once resolved
	// again, the polls go there.
	mu.Lock()
	addrs = []string{"127.0.0.2"}
	mu.Unlock()
	for len(s.URLs()) != 1 {
		if ctx.Err() != nil {
			t.Fatalf("the name was not resolved again: %q", s.URLs())
		}
		poll()
	}
	before := len(fakes[0].requests())
	for range 4 {
		poll()
	}
	if n := len(fakes[0].requests()); n != before {
		t.Errorf("%d polls went to an address the name no longer has", n-before)
	}
}

// TestClusterFrozenNode: a node that accepts connections but answers
// nothing, not even its health checks (a paused process), is given up
// while a call waits on it: a call that may be sent again, and a poll, move
// to another node; a call sent once fails.
func TestClusterFrozenNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	frozen := newFakeServer(t, func(_ int, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	good := newFakeServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz":
			w.WriteHeader(http.StatusOK)
		case strings.HasSuffix(r.URL.Path, "/poll"):
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodPost:
			writeJSON(w, http.StatusOK, api.StartResponse{RunID: "r1"})
		default:
			described(w)
		}
	})
	svc := func() *Service {
		s := cluster(t, slow, frozen.URL, good.URL)
		s.probeEvery, s.probeTimeout = 20*time.Millisecond, 50*time.Millisecond
		return s
	}
	s := svc()
	if d, err := s.DescribeWorkflow(ctx, api.RunRef{WorkflowID: "wf"}); err != nil || d.RunID != "r1" {
		t.Fatalf("describe, the first node frozen: %+v, %v", d, err)
	}
	if st := s.NodeStatuses(); st[0].Up || !strings.Contains(st[0].LastError, "health checks") {
		t.Errorf("the frozen node must be marked down: %+v", st[0])
	}

	s = svc()
	for i := range 4 {
		if task, err := s.PollStepTask(ctx, api.PollRequest{Queue: "q"}); err != nil || task != nil {
			t.Fatalf("poll %d: %v, %v", i, task, err)
		}
	}

	s = svc()
	before := len(good.requests())
	if _, err := s.StartWorkflow(ctx, api.StartRequest{WorkflowID: "wf", WorkflowType: "W"}); !errors.Is(err, api.ErrUnavailable) {
		t.Errorf("a start sent once to the frozen node: %v, want unavailable", err)
	}
	if n := len(good.requests()) - before; n != 0 {
		t.Errorf("a start sent once reached the other node %d times after the frozen node took it", n)
	}
}

// TestClusterCallsTheOwner: a call about a workflow goes to the node that
// owns the workflow's shard, as the cluster's placement says, not to the
// node that answered last; an owner that is not among the Service's nodes
// leaves the choice as it was.
func TestClusterCallsTheOwner(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const shards = 4
	var nodes [2]*fakeServer
	place := func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/api/v1/placement" {
			return false
		}
		writeJSON(w, http.StatusOK, server.Placement{Owners: []string{nodes[0].URL, nodes[1].URL + "/", nodes[0].URL, "http://10.1.2.3:8233"}})
		return true
	}
	for i := range nodes {
		nodes[i] = newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { described(w) })
		nodes[i].placement = place
	}
	s := cluster(t, slow, nodes[0].URL, nodes[1].URL)
	// A workflow id of each shard.
	ids := map[int32]string{}
	for i := 0; len(ids) < shards; i++ {
		id := "wf-" + strconv.Itoa(i)
		if sh := api.ShardOf(api.DefaultNamespace, id, shards); ids[sh] == "" {
			ids[sh] = id
		}
	}
	for _, sh := range []int32{1, 0, 1, 2, 3} {
		before := [2]int{len(nodes[0].requests()), len(nodes[1].requests())}
		if _, err := s.DescribeWorkflow(ctx, api.RunRef{WorkflowID: ids[sh]}); err != nil {
			t.Fatal(err)
		}
		got := -1
		for i := range nodes {
			if len(nodes[i].requests()) > before[i] {
				got = i
			}
		}
		want := map[int32]int{0: 0, 1: 1, 2: 0, 3: 0}[sh] // shard 3's owner is no node of s: the last that answered (0)
		if got != want {
			t.Errorf("a call about a workflow of shard %d went to node %d, want %d", sh, got, want)
		}
	}
}
