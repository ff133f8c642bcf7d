package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/humantask"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/schedule"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
)

// systemServer is a server as strand server makes it (the engine, the
// schedules and batches, their system worker) with a worker running
// Approval and Report; it returns the server's URL.
func systemServer(t *testing.T) string {
	t.Helper()
	return systemServerOn(t, testdb.SQLite(t))
}

// systemServerOn is systemServer over st.
func systemServerOn(t *testing.T, st store.Store) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	eng, err := engine.Open(ctx, st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	runner := system.NewRunner(eng, system.RunnerOptions{})
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Stop(context.Background()) })
	srv := httptest.NewServer(server.New(served{eng, schedule.NewService(eng), batch.NewService(eng), message.NewService(eng), humantask.NewService(eng)}, server.Options{PollWait: time.Second}))
	t.Cleanup(srv.Close)
	w := worker.New(remote.New(srv.URL, nil), worker.Options{})
	worker.RegisterWorkflow(w, Approval)
	worker.RegisterWorkflow(w, Report)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return srv.URL
}

// TestOperatorVerbs drives strand workflow reset and rerun and strand
// batch against a server.
func TestOperatorVerbs(t *testing.T) {
	url := systemServer(t)
	cli := func(args ...string) string {
		t.Helper()
		out, code := run(t, append(args, "--server", url)...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	// Reset: the approval runs again from its last task, the signal with it.
	cli("workflow", "start", "po-r", "--type", "Approval", "--input", `"lamp"`)
	cli("workflow", "signal", "po-r", "approve", "--input", `"cy"`)
	cli("workflow", "result", "po-r")
	if out, code := run(t, "workflow", "reset", "po-r", "--point", "first-failed-step", "--server", url); code == 0 || !strings.Contains(out, "no failed step") {
		t.Fatalf("reset to a point that does not exist: exit %d: %s", code, out)
	}
	var resp api.StartResponse
	if err := json.Unmarshal([]byte(cli("workflow", "reset", "po-r", "--reason", "recompute", "-o", "json")), &resp); err != nil || resp.RunID == "" {
		t.Fatalf("reset: %+v, %v", resp, err)
	}
	if out := cli("workflow", "result", "po-r", "--run-id", resp.RunID); !strings.Contains(out, "lamp approved by cy") {
		t.Fatalf("reset run's result: %s", out)
	}
	if out := cli("workflow", "history", "po-r", "--run-id", resp.RunID); !strings.Contains(out, "WorkflowReset") || !strings.Contains(out, `reason="recompute"`) {
		t.Fatalf("reset run's history: %s", out)
	}
	if out := cli("workflow", "rerun", "po-r"); !strings.Contains(out, "new run") {
		t.Fatalf("rerun: %s", out)
	}

	// A batch terminates the open approvals.
	for _, id := range []string{"po-b1", "po-b2", "po-b3"} {
		cli("workflow", "start", id, "--type", "Approval", "--input", `"desk"`)
	}
	eventually("three open runs listed", func() bool {
		return strings.Count(cli("workflow", "list", "--workflow-id-prefix", "po-b", "--status", "running"), "Approval") == 3
	})
	cli("batch", "start", "--id", "close-po", "--operation", "terminate", "--workflow-id-prefix", "po-b", "--status", "running", "--reason", "budget frozen")
	eventually("the batch done", func() bool { return strings.Contains(cli("batch", "describe", "close-po"), "completed") })
	if out := cli("batch", "describe", "close-po"); !strings.Contains(out, "3 (3 succeeded, 0 failed)") {
		t.Fatalf("batch: %s", out)
	}
	eventually("the batch listed", func() bool {
		out := cli("batch", "list")
		return strings.Contains(out, "close-po") && strings.Contains(out, "terminate")
	})
	if out, code := run(t, "batch", "start", "--operation", "explode", "--server", url); code == 0 || !strings.Contains(out, "operation") {
		t.Fatalf("a bad batch: exit %d: %s", code, out)
	}
}
