package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
)

// filler is an io.Reader of n bytes of 'A' (valid base64), made on the fly.
type filler struct{ n int64 }

var fill = []byte(strings.Repeat("A", 32<<10))

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(int64(len(p)), f.n)], fill)
	f.n -= int64(n)
	return n, nil
}

// heapBound is the documented bound of the server's heap under any number
// of parallel large bodies with the default options: BodyMemory (128 MiB)
// and what decoding adds, with room for the engine.
const heapBound = 256 << 20

// TestParallelLargeBodies sends 16 bodies of 100 MB at once (half with a
// Content-Length, half without), each refused at the 64 MiB limit (or
// turned away for lack of room), while small starts and describes go on:
// they all succeed, and the heap stays under heapBound. Each such body
// cost about 230 MiB before the body budget, 16 of them 3.8 GiB.
func TestParallelLargeBodies(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 1.6 GB")
	}
	ctx := context.Background()
	_, srv := hardServer(t, server.Options{})
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	// Small calls all along.
	svc := remote.New(srv.URL, nil)
	small := make(chan error, 1)
	var smallDone atomic.Bool
	var calls atomic.Int64
	var slowest atomic.Int64
	go func() {
		for i := 0; !smallDone.Load(); i++ {
			begin := time.Now()
			id := fmt.Sprint("small-", i)
			if _, err := svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: id, WorkflowType: "T"}); err != nil {
				small <- fmt.Errorf("start %s: %w", id, err)
				return
			}
			if _, err := svc.DescribeWorkflow(ctx, api.RunRef{WorkflowID: id}); err != nil {
				small <- fmt.Errorf("describe %s: %w", id, err)
				return
			}
			calls.Add(1)
			if d := int64(time.Since(begin)); d > slowest.Load() {
				slowest.Store(d)
			}
			time.Sleep(20 * time.Millisecond)
		}
		small <- nil
	}()

	const uploads, size = 16, 100_000_000
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	began := time.Now()
	for i := range uploads {
		wg.Go(func() {
			prefix := fmt.Sprintf(`{"workflow_id":"big-%d","workflow_type":"T","input":"`, i)
			suffix := `"}`
			body := io.MultiReader(strings.NewReader(prefix), &filler{n: size}, strings.NewReader(suffix))
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/namespaces/default/workflows", body)
			if i%2 == 0 {
				req.ContentLength = int64(len(prefix) + size + len(suffix))
			} // else: chunked
			resp, err := http.DefaultTransport.RoundTrip(req)
			outcome := ""
			if err != nil {
				outcome = "transport error (the server closed the connection)"
			} else {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				outcome = resp.Status
				if resp.StatusCode < 400 || resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("upload %d: %s", i, resp.Status)
				}
			}
			mu.Lock()
			outcomes[outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	smallDone.Store(true)
	if err := <-small; err != nil {
		t.Fatalf("a small call during the uploads: %v", err)
	}
	close(stop)
	<-sampled
	// And after.
	if _, err := svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: "after", WorkflowType: "T"}); err != nil {
		t.Fatalf("start after the uploads: %v", err)
	}
	if _, err := svc.DescribeWorkflow(ctx, api.RunRef{WorkflowID: "after"}); err != nil {
		t.Fatalf("describe after the uploads: %v", err)
	}
	t.Logf("%d uploads of %d MB in %v: %v; heap in use %d MiB before, peak %d MiB; %d small start+describe pairs meanwhile, slowest %v",
		uploads, size/1_000_000, elapsed.Round(time.Millisecond), outcomes, base.HeapInuse>>20, peak.Load()>>20, calls.Load(), time.Duration(slowest.Load()).Round(time.Millisecond))
	if peak.Load() > heapBound {
		t.Fatalf("heap in use peaked at %d MiB, above the bound of %d MiB", peak.Load()>>20, heapBound>>20)
	}
	if calls.Load() == 0 {
		t.Fatal("no small call completed during the uploads")
	}
}

// TestSlowBody: a body trickled one byte every 3 s is cut off by the body
// read deadline (it stayed open for as long as the client kept sending).
// The deadlines are short (the first 300 ms, ten times shorter than the
// trickle's pace; the second 200 ms, five times shorter than the poll):
// the test waits them out.
func TestSlowBody(t *testing.T) {
	_, srv := hardServer(t, server.Options{BodyTimeout: 300 * time.Millisecond})
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		for _, c := range []byte(`{"workflow_id":"slow","workflow_type":"T"}`) {
			if _, err := pw.Write([]byte{c}); err != nil {
				return
			}
			time.Sleep(3 * time.Second)
		}
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/namespaces/default/workflows", pr)
	req.ContentLength = 42
	begin := time.Now()
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(begin)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("a trickled body: %s", resp.Status)
		}
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if took > 8*time.Second {
		t.Fatalf("a trickled body was read for %v", took)
	}
	t.Logf("a trickled body ended after %v: %v", took.Round(time.Millisecond), err)
	// A long poll has no body to read and outlives the deadline.
	_, srv2 := hardServer(t, server.Options{BodyTimeout: 200 * time.Millisecond, PollWait: time.Second})
	begin = time.Now()
	resp, err = http.Post(srv2.URL+"/api/v1/namespaces/default/step-tasks/poll", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || time.Since(begin) < 800*time.Millisecond {
		t.Fatalf("a poll past the body deadline: %s after %v", resp.Status, time.Since(begin))
	}
}
