package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerTimeouts: strand server closes the idle keep-alive connections
// an address holds beyond --max-idle-conns-per-address, the others after
// --idle-timeout (200 idle connections from one address all stayed open),
// and answers a body trickled far below --min-body-rate with 408 once it
// falls a --min-body-rate-window behind (one byte every 3 s was still read
// after 45 s).
func TestServerTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deadline, _ := ctx.Deadline()
	bin := binaries(t, "strand")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"),
		"--listen", addr, "--idle-timeout", "2s", "--max-idle-conns-per-address", "2", "--min-body-rate", "1000", "--min-body-rate-window", "1s")
	dial := func() net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(deadline)
		return conn
	}
	healthz := func(conn net.Conn, r *bufio.Reader) {
		t.Helper()
		io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
	}

	// Four keep-alive connections from one address, each after a request:
	// two of them are closed a grace of 1 s after they went idle, the two
	// others serve on until --idle-timeout.
	type heard struct {
		i   int
		err error
	}
	const n, capped = 4, 2
	conns := make([]net.Conn, n)
	readers := make([]*bufio.Reader, n)
	ends := make(chan heard, n)
	begin := time.Now()
	for i := range n {
		conns[i] = dial()
		readers[i] = bufio.NewReader(conns[i])
		healthz(conns[i], readers[i])
		go func() {
			_, err := readers[i].Peek(1) // the connection's end, or the next answer
			ends <- heard{i, err}
		}()
	}
	open := map[int]bool{0: true, 1: true, 2: true, 3: true}
	for range n - capped {
		h := <-ends
		if h.err == nil || strings.Contains(h.err.Error(), "timeout") {
			t.Fatalf("connection %d: %v, want it closed", h.i, h.err)
		}
		delete(open, h.i)
	}
	if took := time.Since(begin); took < time.Second {
		t.Fatalf("idle connections beyond the cap were closed after %v, within the grace (1s)", took)
	}
	closedAt := time.Now()
	for i := range open {
		io.WriteString(conns[i], "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	}
	for range open {
		if h := <-ends; h.err != nil {
			t.Fatalf("connection %d, within the cap: %v", h.i, h.err)
		}
	}
	for i := range open {
		resp, err := http.ReadResponse(readers[i], nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz again on a connection within the cap: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		go func() {
			_, err := readers[i].Peek(1)
			ends <- heard{i, err}
		}()
	}
	for range open {
		if h := <-ends; h.err == nil || strings.Contains(h.err.Error(), "timeout") || time.Since(closedAt) > 10*time.Second {
			t.Fatalf("an idle connection within the cap, after --idle-timeout: %v after %v", h.err, time.Since(closedAt))
		}
	}

	// A body of 50 bytes trickled a byte every 300 ms.
	slow := dial()
	io.WriteString(slow, "POST /api/v1/namespaces/default/workflows HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
	trickled := make(chan struct{})
	defer func() { <-trickled }()
	go func() {
		defer close(trickled)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for range 49 {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if _, err := io.WriteString(slow, " "); err != nil {
				return
			}
		}
	}()
	begin = time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatalf("a trickled body: %v after %v", err, time.Since(begin))
	}
	body, _ := io.ReadAll(resp.Body)
	var e struct{ Code, Message string }
	json.Unmarshal(body, &e)
	if resp.StatusCode != http.StatusRequestTimeout || e.Code != "request_timeout" || !strings.Contains(e.Message, "came too slowly") ||
		!strings.Contains(e.Message, "no less than 1000 bytes a second") || time.Since(begin) > 10*time.Second {
		t.Fatalf("a trickled body: %s %s after %v", resp.Status, body, time.Since(begin))
	}
	slow.Close()
}
