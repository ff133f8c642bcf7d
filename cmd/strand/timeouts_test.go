package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerTimeouts: strand server closes an idle keep-alive connection
// after --idle-timeout (200 idle connections stayed open) and answers a
// body trickled one byte every 3 s with 400 once --body-timeout passes.
func TestServerTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	bin := binaries(t, "strand")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"),
		"--listen", addr, "--idle-timeout", "1s", "--body-timeout", "1s")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	begin := time.Now()
	if n, err := r.Read(make([]byte, 1)); err == nil || time.Since(begin) > 5*time.Second {
		t.Fatalf("an idle connection: read %d, %v after %v", n, err, time.Since(begin))
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "POST /api/v1/namespaces/default/workflows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
	go func() {
		for range 20 {
			time.Sleep(3 * time.Second)
			if _, err := io.WriteString(slow, "\""); err != nil {
				return
			}
		}
	}()
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	begin = time.Now()
	resp, err = http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatalf("a trickled body: %v after %v", err, time.Since(begin))
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "not received within") {
		t.Fatalf("a trickled body: %s %s", resp.Status, body)
	}
}
