package remote

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/server"
)

// recorded is one request a test server received.
type recorded struct {
	method, path string
	body         []byte
	at           time.Time
}

// fakeServer answers the nth request (from 1) with answer, and records
// every request.
type fakeServer struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []recorded
	answer func(n int, w http.ResponseWriter, r *http.Request)
	// placement, when set, answers the placement route first: true when it
	// answered.
	placement func(w http.ResponseWriter, r *http.Request) bool
}

func newFakeServer(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *fakeServer {
	f := &fakeServer{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	if f.placement == nil && r.URL.Path == "/api/v1/placement" {
		// A cluster's placement, which these fakes do not have: not found,
		// and not counted among the calls a test checks.
		http.NotFound(w, r)
		return
	}
	if f.placement != nil && f.placement(w, r) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, body, time.Now()})
	n := len(f.reqs)
	f.mu.Unlock()
	f.answer(n, w, r)
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// unavailable answers 503 unavailable, as a server without its shards does.
func unavailable(w http.ResponseWriter) {
	writeJSON(w, http.StatusServiceUnavailable, server.Error{Code: server.CodeUnavailable, Message: "not ready"})
}

// described answers a describe.
func described(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, api.Description{WorkflowID: "wf", RunID: "r1"})
}

// failFirst answers the first n requests with fail and the rest with ok.
func failFirst(n int, fail, ok func(w http.ResponseWriter)) func(int, http.ResponseWriter, *http.Request) {
	return func(i int, w http.ResponseWriter, _ *http.Request) {
		if i <= n {
			fail(w)
			return
		}
		ok(w)
	}
}

// fast is a policy quick enough for tests.
var fast = RetryPolicy{Initial: 2 * time.Millisecond, Max: 10 * time.Millisecond}

func testService(url string, p RetryPolicy) *Service {
	return NewWithOptions(url, Options{Retry: p})
}

func TestBackoffGrowthAndJitter(t *testing.T) {
	p := RetryPolicy{}.withDefaults()
	if p.Initial != 50*time.Millisecond || p.Max != 2*time.Second {
		t.Fatalf("defaults: %+v", p)
	}
	low := func(int64) int64 { return 0 }
	high := func(k int64) int64 { return k - 1 }
	// d doubles from 50ms and stops at 2s; the wait is in [d/2, d].
	for n, d := range []time.Duration{50, 100, 200, 400, 800, 1600, 2000, 2000, 2000} {
		d *= time.Millisecond
		if got := p.backoff(n+1, low); got != d/2 {
			t.Errorf("retry %d: shortest wait %s, want %s", n+1, got, d/2)
		}
		if got := p.backoff(n+1, high); got != d {
			t.Errorf("retry %d: longest wait %s, want %s", n+1, got, d)
		}
		// Real draws stay within the bounds and use the range: some in its
		// lower quarter, some in its upper quarter.
		var lo, hi bool
		for range 2000 {
			got := p.backoff(n+1, rand.Int64N)
			if got < d/2 || got > d {
				t.Fatalf("retry %d: wait %s outside [%s, %s]", n+1, got, d/2, d)
			}
			lo = lo || got < d/2+d/8
			hi = hi || got > d-d/8
		}
		if !lo || !hi {
			t.Errorf("retry %d: 2000 draws did not spread over [%s, %s] (low %v, high %v)", n+1, d/2, d, lo, hi)
		}
	}
	// A huge retry number neither overflows nor passes Max.
	if got := p.backoff(1000, high); got != p.Max {
		t.Errorf("retry 1000: %s, want %s", got, p.Max)
	}
}

// TestRetryUnavailable: 503s are retried, each wait at least half the
// doubling back-off, until the server answers.
func TestRetryUnavailable(t *testing.T) {
	f := newFakeServer(t, failFirst(4, unavailable, described))
	p := RetryPolicy{Initial: 20 * time.Millisecond, Max: 80 * time.Millisecond}
	d, err := testService(f.URL, p).DescribeWorkflow(context.Background(), api.RunRef{WorkflowID: "wf"})
	if err != nil || d.RunID != "r1" {
		t.Fatalf("describe: %+v, %v", d, err)
	}
	reqs := f.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	for i, min := range []time.Duration{10, 20, 40, 40} {
		if gap := reqs[i+1].at.Sub(reqs[i].at); gap < min*time.Millisecond {
			t.Errorf("retry %d came %s after the attempt before, want at least %s", i+1, gap, min*time.Millisecond)
		}
	}
}

// TestRetryTransient: each transient answer, and a dropped connection, is
// retried for an idempotent call.
func TestRetryTransient(t *testing.T) {
	cases := map[string]func(w http.ResponseWriter){
		"429": func(w http.ResponseWriter) {
			writeJSON(w, 429, server.Error{Code: server.CodeRateLimited, Message: "slow down"})
		},
		"502 no body": func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) },
		"503 html":    func(w http.ResponseWriter) { w.WriteHeader(503); io.WriteString(w, "<html>down</html>") },
		"504": func(w http.ResponseWriter) {
			writeJSON(w, 504, server.Error{Code: server.CodeTimeout, Message: "timeout"})
		},
		"EOF": func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		},
		"cut answer": func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"workflow_id":`)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		},
	}
	for name, fail := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFakeServer(t, failFirst(2, fail, described))
			d, err := testService(f.URL, fast).DescribeWorkflow(context.Background(), api.RunRef{WorkflowID: "wf"})
			if err != nil || d.RunID != "r1" {
				t.Fatalf("describe: %+v, %v", d, err)
			}
			if n := len(f.requests()); n != 3 {
				t.Fatalf("%d requests, want 3", n)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":     0,
		"2":    2 * time.Second,
		"0":    0,
		"-3":   0,
		"3600": maxRetryAfter,
		"soon": 0,
		now.Add(5 * time.Second).Format(http.TimeFormat): 5 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):    0,
		now.Add(time.Hour).Format(http.TimeFormat):       maxRetryAfter,
	} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", h, got, want)
		}
	}

	// The server's Retry-After (seconds) holds the retry back though the
	// policy's back-off is a few milliseconds.
	f := newFakeServer(t, failFirst(1, func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, server.Error{Code: server.CodeRateLimited, Message: "too many task polls"})
	}, described))
	if _, err := testService(f.URL, fast).DescribeWorkflow(context.Background(), api.RunRef{WorkflowID: "wf"}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if gap := reqs[1].at.Sub(reqs[0].at); gap < time.Second {
		t.Fatalf("retried %s after a 429 with Retry-After: 1", gap)
	}
}

// TestRetryStopsWhenContextEnds: a call keeps failing; when its context
// ends the error says so and still matches the last failure's kind.
func TestRetryStopsWhenContextEnds(t *testing.T) {
	f := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { unavailable(w) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := testService(f.URL, fast).DescribeWorkflow(ctx, api.RunRef{WorkflowID: "wf"})
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("returned %s after its context ended", took)
	}
	if !errors.Is(err, api.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want an error matching both unavailable and the context's end", err)
	}
	if !strings.Contains(err.Error(), "context ended") || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("error %q does not say the context ended and what failed last", err)
	}
	if n := len(f.requests()); n < 3 {
		t.Fatalf("%d requests in 300ms of 2-10ms back-offs", n)
	}

	// A poll whose context ends while retrying is "no task", as the engine
	// answers.
	pctx, pcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer pcancel()
	if task, err := testService(f.URL, fast).PollStepTask(pctx, api.PollRequest{}); task != nil || err != nil {
		t.Fatalf("poll: %v, %v; want nil, nil", task, err)
	}
}

// TestRetryLimits: MaxAttempts and MaxElapsed end the retries before the
// context does.
func TestRetryLimits(t *testing.T) {
	f := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { unavailable(w) })
	p := fast
	p.MaxAttempts = 3
	_, err := testService(f.URL, p).DescribeWorkflow(context.Background(), api.RunRef{WorkflowID: "wf"})
	if !errors.Is(err, api.ErrUnavailable) || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("got %v", err)
	}
	if n := len(f.requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}

	p = RetryPolicy{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond, MaxElapsed: 200 * time.Millisecond}
	start := time.Now()
	_, err = testService(f.URL, p).DescribeWorkflow(context.Background(), api.RunRef{WorkflowID: "wf"})
	if took := time.Since(start); !errors.Is(err, api.ErrUnavailable) || took > 5*time.Second {
		t.Fatalf("got %v after %s", err, took)
	}
}

// TestRequestIDKeptAcrossRetries: the client makes one request id per
// call; every retry sends the same body with it.
func TestRequestIDKeptAcrossRetries(t *testing.T) {
	ok := func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK); io.WriteString(w, `{"run_id":"r1"}`) }
	f := newFakeServer(t, failFirst(2, unavailable, ok))
	c := client.New(testService(f.URL, fast), client.Options{})
	check := func(call string, n int) {
		t.Helper()
		reqs := f.requests()
		if len(reqs) != n {
			t.Fatalf("%s: %d requests, want %d", call, len(reqs), n)
		}
		reqs = reqs[n-3:]
		var first struct {
			RequestID string `json:"request_id"`
			Start     struct {
				RequestID string `json:"request_id"`
			} `json:"start"`
		}
		if err := json.Unmarshal(reqs[0].body, &first); err != nil {
			t.Fatal(err)
		}
		if first.RequestID == "" && first.Start.RequestID == "" {
			t.Fatalf("%s sent no request id: %s", call, reqs[0].body)
		}
		for _, r := range reqs[1:] {
			if string(r.body) != string(reqs[0].body) {
				t.Fatalf("%s retried with another body:\n%s\n%s", call, reqs[0].body, r.body)
			}
		}
	}
	ctx := context.Background()
	if err := c.Signal(ctx, "wf", "", "go", 1); err != nil {
		t.Fatal(err)
	}
	check("signal", 3)
	again := func() {
		f.mu.Lock()
		f.answer = failFirst(len(f.reqs)+2, unavailable, ok)
		f.mu.Unlock()
	}
	again()
	if err := c.Cancel(ctx, "wf", "", "why"); err != nil {
		t.Fatal(err)
	}
	check("cancel", 6)
	again()
	if err := c.Terminate(ctx, "wf", "", "why", client.WithRequestID("mine")); err != nil {
		t.Fatal(err)
	}
	check("terminate", 9)
	if !strings.Contains(string(f.requests()[8].body), `"request_id":"mine"`) {
		t.Fatalf("terminate did not send the caller's request id: %s", f.requests()[8].body)
	}
	again()
	if _, err := client.StartByName[string](ctx, c, "W", nil, client.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	check("start", 12)
	again()
	if _, err := client.SignalWithStart[string](ctx, c, "W", nil, client.StartOptions{}, "go", 1); err != nil {
		t.Fatal(err)
	}
	check("signal-with-start", 15)
}

// TestNotRetried: a call that is not idempotent without a request id, a
// client mistake, and a call forwarded between nodes reach the server once.
func TestNotRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ref := api.RunRef{WorkflowID: "wf"}
	for name, call := range map[string]func(s *Service) error{
		"start": func(s *Service) error {
			_, err := s.StartWorkflow(ctx, api.StartRequest{WorkflowID: "wf", WorkflowType: "W"})
			return err
		},
		"signal": func(s *Service) error { return s.SignalWorkflow(ctx, api.SignalRequest{RunRef: ref, Name: "go"}) },
		"signal-with-start": func(s *Service) error {
			_, err := s.SignalWithStart(ctx, api.SignalWithStartRequest{Start: api.StartRequest{WorkflowID: "wf", WorkflowType: "W"}, SignalName: "go"})
			return err
		},
		"cancel":    func(s *Service) error { return s.CancelWorkflow(ctx, api.CancelRequest{RunRef: ref}) },
		"terminate": func(s *Service) error { return s.TerminateWorkflow(ctx, api.TerminateRequest{RunRef: ref}) },
		"create namespace": func(s *Service) error {
			_, err := s.CreateNamespace(ctx, api.Namespace{Name: "n"})
			return err
		},
		"forwarded": func(s *Service) error {
			_, err := s.DescribeWorkflow(api.WithForwarded(ctx), ref)
			return err
		},
		"forwarded peer call": func(s *Service) error {
			_, err := s.PeerCall(api.WithForwarded(ctx), "poll", json.RawMessage(`{}`))
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { unavailable(w) })
			if err := call(testService(f.URL, fast)); !errors.Is(err, api.ErrUnavailable) {
				t.Fatalf("got %v, want unavailable", err)
			}
			if n := len(f.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
		})
	}
	for status, want := range map[int]error{
		http.StatusBadRequest:          api.ErrInvalidArgument,
		http.StatusNotFound:            api.ErrNotFound,
		http.StatusConflict:            api.ErrRunClosed,
		http.StatusUnprocessableEntity: api.ErrQueryFailed,
	} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			code := map[int]string{400: server.CodeInvalidArgument, 404: server.CodeNotFound, 409: server.CodeRunClosed, 422: server.CodeQueryFailed}[status]
			f := newFakeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, status, server.Error{Code: code, Message: "no"})
			})
			_, err := testService(f.URL, fast).DescribeWorkflow(ctx, ref)
			if !errors.Is(err, want) {
				t.Fatalf("got %v, want %v", err, want)
			}
			if n := len(f.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
		})
	}
}

// TestRetryUntilServerComesUp: connection refused is retried until a
// server listens on the address.
func TestRetryUntilServerComesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type answer struct {
		d   api.Description
		err error
	}
	done := make(chan answer, 1)
	go func() {
		d, err := testService("http://"+addr, fast).DescribeWorkflow(ctx, api.RunRef{WorkflowID: "wf"})
		done <- answer{d, err}
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case a := <-done:
		t.Fatalf("returned before a server listened: %+v, %v", a.d, a.err)
	default:
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { described(w) }))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	a := <-done
	if a.err != nil || a.d.RunID != "r1" {
		t.Fatalf("describe: %+v, %v", a.d, a.err)
	}
}

// TestQueryNotRetriedAfterItsDeadline: a query the server answers 504
// timeout (it waited its deadline for a worker's answer) is not sent
// again, while a query that met a 503 is.
func TestQueryNotRetriedAfterItsDeadline(t *testing.T) {
	answered := func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, server.QueryResult{Result: []byte(`1`)}) }
	timedOut := func(w http.ResponseWriter) {
		writeJSON(w, http.StatusGatewayTimeout, server.Error{Code: server.CodeTimeout, Message: "no answer within 30s"})
	}
	unavailable := func(w http.ResponseWriter) {
		writeJSON(w, http.StatusServiceUnavailable, server.Error{Code: server.CodeUnavailable, Message: "starting"})
	}
	query := api.QueryRequest{RunRef: api.RunRef{WorkflowID: "wf"}, Name: "state"}

	f := newFakeServer(t, failFirst(1, timedOut, answered))
	if _, err := testService(f.URL, fast).QueryWorkflow(context.Background(), query); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("query after a 504 timeout: %v, want the timeout", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("a query that timed out was sent %d times, want once", n)
	}

	f = newFakeServer(t, failFirst(2, unavailable, answered))
	if out, err := testService(f.URL, fast).QueryWorkflow(context.Background(), query); err != nil || string(out) != "1" {
		t.Errorf("query after 503s: %s, %v", out, err)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("a query that met 503s was sent %d times, want 3", n)
	}
}
