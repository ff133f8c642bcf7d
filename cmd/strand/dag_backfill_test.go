package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDAGBackfillSurvivesRestart kills strand server (SIGKILL) while a
// serial backfill waits on its first date's task, and starts it again: the
// backfill goes on where it was and runs both dates once.
func TestDAGBackfillSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	t.Parallel()
	bin := binaries(t, "strand")
	dir := t.TempDir()
	addr := freePort(t)
	logf := serverLog(t, dir)
	srv := &restartingServer{t: t, bin: bin, url: "http://" + addr, log: logf,
		args: []string{"server", "--store", "sqlite://" + filepath.Join(dir, "strand.db"), "--listen", addr, "--poll-wait", "2s", "--drain", "1s"}}
	srv.start()
	defer srv.stop()
	process(t, "running the groups", filepath.Join(bin, "strand"), "worker", "--server", srv.url, "--group", "default", "--workdir", t.TempDir())
	cli := func(args ...string) string {
		t.Helper()
		out, code := run(t, append(args, "--server", srv.url)...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	// Each date's task says it started, then waits for the test's go.
	def := filepath.Join(dir, "wait.yaml")
	os.WriteFile(def, []byte(`name: waits
tasks:
  - name: work
    type: shell
    script: |
      echo >> `+dir+`/started-${system.biz.curdate}
      for i in $(seq 600); do test -e `+dir+`/go && break; sleep 0.1; done; test -e `+dir+`/go
`), 0o644)
	cli("dag", "apply", "-f", def)
	cli("dag", "backfill", "waits", "--from", "2026-01-01", "--to", "2026-01-02", "--id", "bf-restart")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "started-20260101")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first date's task did not start")
		}
	}
	srv.kill()
	srv.start()
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := cli("dag", "backfill-status", "bf-restart", "--wait")
	if !strings.Contains(out, "backfill bf-restart of waits: success") || !strings.Contains(out, "bf-restart-20260101") || !strings.Contains(out, "bf-restart-20260102") {
		t.Fatalf("after the restart: %s", out)
	}
	for _, day := range []string{"20260101", "20260102"} {
		if b, err := os.ReadFile(filepath.Join(dir, "started-"+day)); err != nil || len(b) != 1 {
			t.Fatalf("the task of %s started %d times (%v); want once", day, len(b), err)
		}
	}
}
