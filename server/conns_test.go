package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/worker"
)

// TestSlowAndIdleClients: slow and idle clients do not hold connections
// (a body trickled one byte every 3 s stayed open for as long as the
// client kept sending, up to the 2 minute body timeout, and 200 idle
// keep-alive connections from one address all stayed open). On a real
// server with small limits (100 bytes a second over a 1 s window; 3 idle
// connections an address): a trickled body is answered 408 and its
// connection closed; a body paced above the rate but longer than the
// window goes through; connections beyond the cap are closed, the
// longest idle first, the others serve on; 64 long polls at once from one
// address outlive the window and none is closed between two rounds; the
// cap holds over TLS and HTTP/2; and workflows run by a remote worker and
// client through a cap of 2 with no grace lose nothing (before idle
// connections were closed only while no request had begun to come on
// them, runs stalled there: a poll read just before its connection was
// closed took a task whose answer could not be written).
func TestSlowAndIdleClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	eng := sqliteEngine(t, engine.Options{})
	idle := server.NewIdleConns(server.IdleConnsOptions{MaxPerAddress: 3}) // closed after the default grace, 1s
	defer idle.Close()
	srv := httptest.NewUnstartedServer(server.New(eng, server.Options{MinBodyRate: 100, BodyRateWindow: time.Second, PollWait: 1500 * time.Millisecond}))
	srv.Listener = idle.Listener(srv.Listener)
	srv.Config.ConnState = idle.ConnState
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	dial := func(t *testing.T) (net.Conn, *bufio.Reader) {
		t.Helper()
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if dl, ok := ctx.Deadline(); ok {
			conn.SetDeadline(dl)
		}
		return conn, bufio.NewReader(conn)
	}
	// answer reads a response whole: its status and body.
	answer := func(t *testing.T, r *bufio.Reader) (int, string) {
		t.Helper()
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("reading the answer's body: %v", err)
		}
		return resp.StatusCode, string(body)
	}
	waitFor := func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}

	t.Run("idle connections beyond the cap", func(t *testing.T) {
		const n, capped = 8, 3
		conns := make([]net.Conn, n)
		readers := make([]*bufio.Reader, n)
		begin := time.Now()
		for i := range n {
			conns[i], readers[i] = dial(t)
			io.WriteString(conns[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			if status, body := answer(t, readers[i]); status != http.StatusOK {
				t.Fatalf("healthz on connection %d: %d %s", i, status, body)
			}
			// One at a time, so that which is the longest idle is known.
			waitFor(t, fmt.Sprintf("connection %d counted idle", i), func() bool { return idle.Idle()+int(idle.Closed()) == i+1 })
		}
		waitFor(t, "the connections beyond the cap closed", func() bool { return idle.Closed() > 0 })
		if took := time.Since(begin); took < time.Second {
			t.Fatalf("a connection beyond the cap was closed %v after the first went idle, before the grace (1s)", took)
		}
		waitFor(t, "the connections beyond the cap closed", func() bool { return idle.Closed() == n-capped && idle.Idle() == capped })
		for i := range n - capped {
			if b, err := readers[i].ReadByte(); err == nil || isTimeout(err) {
				t.Fatalf("connection %d, among the longest idle, was not closed: read %q, %v", i, b, err)
			}
		}
		for i := n - capped; i < n; i++ {
			io.WriteString(conns[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			if status, body := answer(t, readers[i]); status != http.StatusOK {
				t.Fatalf("healthz again on connection %d, within the cap: %d %s", i, status, body)
			}
		}
		if got := idle.Closed(); got != n-capped {
			t.Fatalf("%d connections closed for the cap, want %d", got, n-capped)
		}
		for _, c := range conns {
			c.Close()
		}
		waitFor(t, "no connection idle", func() bool { return idle.Idle() == 0 })
	})

	t.Run("a trickled body", func(t *testing.T) {
		conn, r := dial(t)
		begin := time.Now()
		io.WriteString(conn, "POST /api/v1/namespaces/default/workflows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		// One byte every 200 ms (5 bytes a second, the rate 100) until
		// the server answers or the connection fails.
		trickled := make(chan struct{})
		defer func() { <-trickled }()
		go func() {
			defer close(trickled)
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for range 99 {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if _, err := io.WriteString(conn, " "); err != nil {
					return
				}
			}
		}()
		status, body := answer(t, r)
		took := time.Since(begin)
		var e server.Error
		json.Unmarshal([]byte(body), &e)
		if status != http.StatusRequestTimeout || e.Code != server.CodeRequestTimeout || !strings.Contains(e.Message, "the request body came too slowly") ||
			!strings.Contains(e.Message, "of 100 bytes") || !strings.Contains(e.Message, "no less than 100 bytes a second") {
			t.Fatalf("a trickled body: %d %s after %v", status, body, took)
		}
		if took < time.Second || took > 20*time.Second {
			t.Fatalf("a trickled body was cut off after %v; want after the window (1s), long before the body timeout (2m)", took)
		}
		if b, err := r.ReadByte(); err == nil {
			t.Fatalf("the connection of a trickled body stayed open: read %q", b)
		}
		conn.Close()
		t.Logf("a trickled body cut off after %v: %s", took.Round(time.Millisecond), e.Message)
	})

	t.Run("a body paced above the rate", func(t *testing.T) {
		// 20 bytes every 20 ms (1000 bytes a second, ten times the rate)
		// for 1.5 s, longer than the window.
		pad := strings.Repeat(" ", 1500)
		body := `{"workflow_id":"paced","workflow_type":"T","queue":"no-worker"` + pad + `}`
		conn, r := dial(t)
		fmt.Fprintf(conn, "POST /api/v1/namespaces/default/workflows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		begin := time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for rest := body; rest != ""; {
			<-tick.C
			k := min(20, len(rest))
			if _, err := io.WriteString(conn, rest[:k]); err != nil {
				t.Fatalf("sending the paced body after %v: %v", time.Since(begin), err)
			}
			rest = rest[k:]
		}
		if status, body := answer(t, r); status != http.StatusOK {
			t.Fatalf("a body paced above the rate, in %v: %d %s", time.Since(begin), status, body)
		}
	})

	t.Run("long polls", func(t *testing.T) {
		// 64 polls at once from one address, twice over, as a busy worker
		// holds them: each waits out the poll wait (longer than the
		// window) and none is cut off; between the two, the connections
		// are idle for a moment, within the grace, and none is closed.
		// A server of its own, whose grace is longer than a loaded
		// machine's pause between a poll's answer and the next poll.
		idle := server.NewIdleConns(server.IdleConnsOptions{MaxPerAddress: 3, Grace: 10 * time.Second})
		defer idle.Close()
		srv := httptest.NewUnstartedServer(server.New(eng, server.Options{MinBodyRate: 100, BodyRateWindow: time.Second, PollWait: 1500 * time.Millisecond}))
		srv.Listener = idle.Listener(srv.Listener)
		srv.Config.ConnState = idle.ConnState
		srv.Start()
		defer srv.Close()
		tr := &http.Transport{MaxIdleConnsPerHost: 512}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr}
		closed := idle.Closed()
		var wg sync.WaitGroup
		errs := make(chan error, 128)
		for range 64 {
			wg.Go(func() {
				for range 2 {
					begin := time.Now()
					req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/namespaces/default/step-tasks/poll", strings.NewReader(`{"queue":"none"}`))
					resp, err := hc.Do(req)
					if err != nil {
						errs <- err
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent || time.Since(begin) < time.Second {
						errs <- fmt.Errorf("a poll: %s after %v", resp.Status, time.Since(begin))
					}
				}
			})
		}
		wg.Wait()
		if got := idle.Closed() - closed; got != 0 {
			t.Errorf("%d connections closed while a busy client polled", got)
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("over TLS and HTTP/2", func(t *testing.T) {
		// Five clients of one connection each; the cap is 2: three
		// connections are closed (the cap sees through TLS to the TCP
		// connection), and every client is served again (on a new
		// connection where its own was closed).
		idle2 := server.NewIdleConns(server.IdleConnsOptions{MaxPerAddress: 2, Grace: -1})
		defer idle2.Close()
		tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) }))
		tlsSrv.EnableHTTP2 = true
		tlsSrv.Listener = idle2.Listener(tlsSrv.Listener) // under TLS
		tlsSrv.Config.ConnState = idle2.ConnState
		tlsSrv.StartTLS()
		defer tlsSrv.Close()
		get := func(c *http.Client, tries int) string {
			t.Helper()
			for try := 1; ; try++ {
				req, _ := http.NewRequestWithContext(ctx, "GET", tlsSrv.URL, nil)
				resp, err := c.Do(req)
				if err != nil {
					if try < tries {
						t.Logf("sent as its connection was closed: %v", err)
						continue
					}
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return string(b)
			}
		}
		var clients []*http.Client
		for range 5 {
			tr := tlsSrv.Client().Transport.(*http.Transport).Clone()
			tr.ForceAttemptHTTP2 = true
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			clients = append(clients, c)
			if proto := get(c, 1); proto != "HTTP/2.0" {
				t.Fatalf("served over %s, want HTTP/2.0", proto)
			}
		}
		waitFor(t, "3 connections closed for the cap", func() bool { return idle2.Closed() == 3 && idle2.Idle() == 2 })
		// A request sent in the instant between the server's close and
		// the client's seeing it fails: Go's HTTP/2 transport does not
		// send it again (HTTP/1's does, when nothing of it was written).
		// Here the clients send right after the close; with the grace a
		// connection closed has been idle for a second first.
		for _, c := range clients {
			get(c, 2)
		}
	})

	t.Run("workflows through a cap of 2", func(t *testing.T) {
		// The harshest cap: 2 idle connections, closed at once beyond it.
		idle2 := server.NewIdleConns(server.IdleConnsOptions{MaxPerAddress: 2, Grace: -1})
		defer idle2.Close()
		srv2 := httptest.NewUnstartedServer(server.New(eng, server.Options{PollWait: time.Second}))
		srv2.Listener = idle2.Listener(srv2.Listener)
		srv2.Config.ConnState = idle2.ConnState
		srv2.Start()
		defer srv2.Close()
		svc := remote.New(srv2.URL, nil)
		w := worker.New(svc, worker.Options{WorkflowPollers: 8, StepPollers: 8})
		worker.RegisterWorkflow(w, Order)
		worker.RegisterStep(w, Double)
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(context.Background())
		c := client.New(svc, client.Options{})
		const runs = 60
		var wg sync.WaitGroup
		errs := make(chan error, runs)
		for i := range runs {
			wg.Go(func() {
				id := fmt.Sprintf("capped-%d", i)
				r, err := client.Start(ctx, c, Order, i, client.StartOptions{ID: id})
				if err == nil {
					err = c.Signal(ctx, id, "", "approve", 1)
				}
				var got int
				if err == nil {
					got, err = r.Get(ctx)
				}
				if err != nil || got != 2*i+1 {
					errs <- fmt.Errorf("run %s: %d, %v", id, got, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if idle2.Closed() == 0 {
			t.Error("no idle connection was closed: the cap was not reached")
		}
		t.Logf("%d runs through a cap of 2 idle connections: %d closed for the cap", runs, idle2.Closed())
	})
}

// isTimeout reports whether a read ended at its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
