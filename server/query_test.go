package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/worker"
)

// queryCounter is the engine as a worker sees it, counting the query tasks
// the worker receives.
type queryCounter struct {
	api.Service
	queries atomic.Int64
}

func (c *queryCounter) PollWorkflowTask(ctx context.Context, req api.PollRequest) (*api.WorkflowTask, error) {
	t, err := c.Service.PollWorkflowTask(ctx, req)
	if t != nil && t.Query != nil {
		c.queries.Add(1)
	}
	return t, err
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

const mib = 1 << 20

// TestQueryClientLeaves: an HTTP client that disconnects withdraws its
// query. 30 clients that send queries with 4 MB inputs and leave while no
// worker polls keep the server's heap under 256 MiB and leave it within
// 64 MiB of where it was; the server goes on serving, and the worker that
// comes later receives none of the abandoned queries.
//
// 30 is enough: abandoned queries that were held would hold at least their
// inputs, 120 MiB, nearly twice the bound (the test checks that it stays
// so), and three waves of 10 press the server's budget of bytes in flight
// as ten waves did. The 100 clients it had cost a minute of CPU under the
// race detector (decoding 400 MB of base64) and tested nothing more.
func TestQueryClientLeaves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// No worker polls while the queries wait (as long as the machine makes
	// them take): the no-worker rule is not what this test is about.
	eng := sqliteEngine(t, engine.Options{QueryPollerWindow: time.Hour})
	srv := httptest.NewServer(server.New(eng, server.Options{PollWait: time.Second}))
	defer srv.Close()
	svc := remote.New(srv.URL, nil)
	c := client.New(svc, client.Options{})

	startWorker := func(svc api.Service) *worker.Worker {
		w := worker.New(svc, worker.Options{})
		worker.RegisterWorkflow(w, Order)
		worker.RegisterStep(w, Double)
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := startWorker(eng)
	if _, err := client.Start(ctx, c, Order, 1, client.StartOptions{ID: "queried"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if stage, err := client.Query[string](ctx, c, "queried", "", "stage", struct{}{}); err == nil && stage == "waiting" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after a minute the run's stage is %q (%v); want waiting", stage, err)
		}
	}
	w.Stop(context.Background())

	waitWithdrawn := func() {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			st := eng.Stats()
			if st.QueriesWaiting == 0 && st.QueryTasksQueued == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("30s after their clients left, %d queries still wait, %d query tasks queued; want them withdrawn", st.QueriesWaiting, st.QueryTasksQueued)
			}
		}
	}
	// One client that leaves.
	backlogged := eng.Stats().Backlogged
	qctx, qcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := svc.QueryWorkflow(qctx, api.QueryRequest{RunRef: api.RunRef{WorkflowID: "queried"}, Name: "stage", Input: []byte("{}")})
		done <- err
	}()
	for deadline := time.Now().Add(time.Minute); eng.Stats().Backlogged == backlogged; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the query ended (%v) before it waited in its queue", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the query did not wait in its queue within a minute")
		}
	}
	qcancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("query of a client that left: %v", err)
	}
	waitWithdrawn()

	// 30 clients with 4 MB inputs that leave once their query waits in
	// the queue, in waves of 10 (so that the bodies fit the server's
	// budget of bytes in flight and every query reaches its queue). The
	// clients share one encoded body, so the heap measured is the
	// server's.
	const n, wave, size, bound, peakBound = 30, 10, 4 << 20, 64 * mib, 256 * mib
	if n*size < bound*3/2 {
		t.Fatalf("%d queries of %d MiB would hold %d MiB if they were all kept: too little to tell from the bound of %d MiB", n, size/mib, n*size/mib, bound/mib)
	}
	body, err := json.Marshal(api.QueryRequest{Name: "stage", Input: bytes.Repeat([]byte{'x'}, size)})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/api/v1/namespaces/default/workflows/queried/queries"
	base := heapAlloc()
	var peak atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > peak.Load() {
			peak.Store(ms.HeapAlloc)
		}
	}
	for sent := 0; sent < n; sent += wave {
		backlogged = eng.Stats().Backlogged
		qctx, qcancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var wrong atomic.Value
		for range wave {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(qctx, "POST", url, bytes.NewReader(body))
				if err != nil {
					wrong.Store(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
					wrong.Store(fmt.Errorf("answered %s", resp.Status))
				} else if !errors.Is(err, context.Canceled) {
					wrong.Store(err)
				}
			})
		}
		for deadline := time.Now().Add(2 * time.Minute); eng.Stats().Backlogged-backlogged < wave; time.Sleep(10 * time.Millisecond) {
			sample()
			if time.Now().After(deadline) {
				t.Fatalf("after 2m only %d of %d queries of a wave reached their queue", eng.Stats().Backlogged-backlogged, wave)
			}
		}
		sample()
		qcancel()
		wg.Wait()
		if err := wrong.Load(); err != nil {
			t.Fatalf("an abandoned query: %v, want the client's own cancellation", err)
		}
		waitWithdrawn()
	}
	after := heapAlloc()
	t.Logf("heap: %.1f MiB before %d abandoned %d MiB queries (%d at a time), peak %.1f MiB while they waited, %.1f MiB after",
		float64(base)/mib, n, size/mib, wave, float64(peak.Load())/mib, float64(after)/mib)
	if after > base+bound {
		t.Fatalf("heap grew by %.1f MiB (bound %d MiB): abandoned queries are held", float64(after-base)/mib, bound/mib)
	}
	if peak.Load() > peakBound {
		t.Fatalf("heap peaked at %.1f MiB (bound %d MiB)", float64(peak.Load())/mib, peakBound/mib)
	}

	// The server goes on serving; a worker gets the fresh query only.
	qc := &queryCounter{Service: eng}
	w = startWorker(qc)
	defer w.Stop(context.Background())
	if stage, err := client.Query[string](ctx, c, "queried", "", "stage", struct{}{}); err != nil || stage != "waiting" {
		t.Fatalf("fresh query: %q, %v", stage, err)
	}
	// Nothing more may come: give a straggler the time of a few polls to
	// show (a sleep that asserts that nothing happens, as short as that).
	time.Sleep(300 * time.Millisecond)
	if got := qc.queries.Load(); got != 1 {
		t.Fatalf("the worker received %d query tasks, want 1: abandoned queries were delivered", got)
	}
}

// A query of a queue no worker polls is a 409 no_worker, which remote
// turns back into api.ErrNoWorker.
func TestQueryNoWorkerOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng := sqliteEngine(t, engine.Options{QueryPollerWindow: 200 * time.Millisecond})
	srv := httptest.NewServer(server.New(eng, server.Options{PollWait: time.Second}))
	defer srv.Close()
	c := client.New(remote.New(srv.URL, nil), client.Options{})
	if _, err := client.Start(ctx, c, Order, 1, client.StartOptions{ID: "unserved", Queue: "nobody"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := client.Query[string](ctx, c, "unserved", "", "stage", struct{}{}); !errors.Is(err, api.ErrNoWorker) || time.Since(start) > 5*time.Second {
		t.Fatalf("query through remote: %v after %s, want ErrNoWorker", err, time.Since(start))
	}
	resp, err := http.Post(srv.URL+"/api/v1/namespaces/default/workflows/unserved/queries", "application/json", strings.NewReader(`{"name":"stage"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body server.Error
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusConflict || body.Code != "no_worker" || !strings.Contains(body.Message, `"nobody"`) {
		t.Fatalf("HTTP: %d %+v (%v), want 409 no_worker naming the queue", resp.StatusCode, body, err)
	}
}
