package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Approval waits for an "approve" signal carrying who approved.
func Approval(ctx workflow.Context, item string) (string, error) {
	workflow.SetQueryHandler(ctx, "item", func(struct{}) (string, error) { return item, nil })
	who, _ := workflow.GetSignalChannel[string](ctx, "approve").Receive(ctx)
	return item + " approved by " + who, nil
}

// TestWorkflowVerbs drives every `strand workflow` verb against a server
// with a remote worker.
func TestWorkflowVerbs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, testdb.SQLite(t), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(server.New(eng, server.Options{PollWait: time.Second}))
	defer srv.Close()
	w := worker.New(remote.New(srv.URL, nil), worker.Options{})
	worker.RegisterWorkflow(w, Approval)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())

	cli := func(args ...string) string {
		t.Helper()
		out, code := run(t, append(args, "--server", srv.URL)...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	out := cli("workflow", "start", "po-1", "--type", "Approval", "--input", `"laptop"`)
	if !strings.Contains(out, "po-1") || !strings.Contains(out, "true") {
		t.Fatalf("start: %s", out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, code := run(t, "workflow", "query", "po-1", "item", "--server", srv.URL)
		if code == 0 && strings.TrimSpace(out) == `"laptop"` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("query: %d %s", code, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out := cli("workflow", "describe", "po-1"); !strings.Contains(out, "running") || !strings.Contains(out, "Approval") {
		t.Fatalf("describe: %s", out)
	}
	cli("workflow", "signal", "po-1", "approve", "--input", `"ada"`)
	var res api.Result
	if err := json.Unmarshal([]byte(cli("workflow", "result", "po-1", "-o", "json")), &res); err != nil || string(res.Output) != `"laptop approved by ada"` {
		t.Fatalf("result: %+v, %v", res, err)
	}
	if out := cli("workflow", "history", "po-1"); !strings.Contains(out, "SignalReceived") || !strings.Contains(out, "WorkflowCompleted") {
		t.Fatalf("history: %s", out)
	}
	for time.Now().Before(deadline) {
		if out := cli("workflow", "list", "--status", "completed"); strings.Contains(out, "po-1") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := cli("workflow", "list", "--status", "completed"); !strings.Contains(out, "po-1") {
		t.Fatalf("list: %s", out)
	}
	cli("workflow", "start", "po-2", "--type", "Approval", "--input", `"desk"`)
	// Pages: one run a page, then the next page by its token.
	for time.Now().Before(deadline) {
		if out := cli("workflow", "list"); strings.Count(out, "Approval") == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	first := cli("workflow", "list", "--limit", "1")
	i := strings.Index(first, "--page-token ")
	if strings.Count(first, "Approval") != 1 || i < 0 {
		t.Fatalf("first page: %s", first)
	}
	second := cli("workflow", "list", "--limit", "1", "--page-token", strings.TrimSpace(first[i+len("--page-token "):]))
	if strings.Count(second, "Approval") != 1 || second == first {
		t.Fatalf("second page: %s", second)
	}
	// Prefixes: "po-" finds both, "po-2" one.
	if out := cli("workflow", "list", "--workflow-id-prefix", "po-"); strings.Count(out, "Approval") != 2 {
		t.Fatalf("list --workflow-id-prefix po-: %s", out)
	}
	if out := cli("workflow", "list", "--workflow-id-prefix", "po-2"); strings.Count(out, "Approval") != 1 || !strings.Contains(out, "po-2") {
		t.Fatalf("list --workflow-id-prefix po-2: %s", out)
	}
	cli("workflow", "cancel", "po-2", "--reason", "not needed")
	// A terminate sent again with its request id answers as the first did;
	// another one finds the run closed.
	for range 2 {
		cli("workflow", "terminate", "po-2", "--reason", "really not needed", "--request-id", "term-po-2")
	}
	if out, code := run(t, "workflow", "terminate", "po-2", "--request-id", "term-again", "--server", srv.URL); code != 1 || !strings.Contains(out, "closed") {
		t.Errorf("terminate of a closed run with another request id: %d %s", code, out)
	}
	if out := cli("workflow", "result", "po-2"); !strings.Contains(out, "terminated") {
		t.Fatalf("result of terminated: %s", out)
	}

	// Bad input: exit status 2, nothing changes.
	for _, args := range [][]string{
		{"workflow", "start", "po-3", "--type", "Approval", "--input", "{not json"},
		{"workflow", "start", "po-3", "--type", "Approval", "--id-reuse", "sometimes"},
		{"workflow", "list", "--status", "sleeping"},
		{"workflow", "describe", "po-1", "-o", "yaml"},
		{"workflow", "signal", "po-1"},
	} {
		if out, code := run(t, append(args, "--server", srv.URL)...); code != 2 {
			t.Errorf("strand %s: exit %d (%s), want 2", strings.Join(args, " "), code, out)
		}
	}
	if _, code := run(t, "workflow", "describe", "po-3", "--server", srv.URL); code != 1 {
		t.Errorf("po-3 exists after bad starts")
	}
	if out, code := run(t, "workflow", "start", "po-1", "--type", "Approval", "--id-reuse", "reject-duplicate", "--server", srv.URL); code != 1 || !strings.Contains(out, "already started") {
		t.Errorf("duplicate start: %d %s", code, out)
	}
}

// TestServerSettings: settings come from flags, then the environment, then
// the config file; anything unknown or malformed is bad input (status 2).
func TestServerSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"server", "--config", write("unknown.json", `{"listen": "127.0.0.1:0", "colour": "blue"}`)}},
		{args: []string{"server", "--config", write("bad.json", `{"listen": `)}},
		{args: []string{"server", "--config", write("badvalue.json", `{"poll-wait": "soon"}`)}},
		{args: []string{"server", "--config", dir + "/missing.json"}},
		{args: []string{"server"}, env: map[string]string{"STRAND_POLL_WAIT": "-1s", "STRAND_LISTEN": "127.0.0.1:0"}},
		{args: []string{"server", "--listen", "not an address"}},
		{args: []string{"server", "--listen", "127.0.0.1:0", "--body-memory", "1024"}},
		{args: []string{"server", "--listen", "127.0.0.1:0", "--idle-timeout", "0s"}},
		{args: []string{"server", "--listen", "127.0.0.1:0", "--cache-memory", "1000"}},
		{args: []string{"server", "--listen", "127.0.0.1:0", "--eager-commit-delay", "0s"}},
		{args: []string{"server", "--config", write("eager.json", `{"listen": "127.0.0.1:0", "eager-commit-delay": "-1ms"}`)}},
		{args: []string{"server", "--listen", "127.0.0.1:0"}, env: map[string]string{"STRAND_EAGER_COMMIT_DELAY": "soon"}},
		{args: []string{"server", "--store", "mysql://x"}, env: map[string]string{"STRAND_LISTEN": "127.0.0.1:0"}},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		if out, code := run(t, tc.args...); code != 2 {
			t.Errorf("strand %v (env %v): exit %d: %s", tc.args, tc.env, code, out)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}

// TestWorkflowPauseResume pauses and resumes a run with strand workflow.
func TestWorkflowPauseResume(t *testing.T) {
	url := systemServer(t)
	ctx := context.Background()
	cli := func(args ...string) (string, int) { return run(t, append(args, "--server", url)...) }
	if out, code := cli("workflow", "start", "po-9", "--type", "Approval", "--input", `"chair"`); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	if out, code := cli("workflow", "pause", "po-9", "--reason", "audit"); code != 0 || !strings.Contains(out, "paused po-9") {
		t.Fatalf("pause: %d %s", code, out)
	}
	if out, _ := cli("workflow", "describe", "po-9"); !strings.Contains(out, "paused") || !strings.Contains(out, "audit") || !strings.Contains(out, "strand-cli:") {
		t.Fatalf("describe: %s", out)
	}
	cli("workflow", "signal", "po-9", "approve", "--input", `"bo"`)
	time.Sleep(300 * time.Millisecond)
	if d, _ := remote.New(url, nil).DescribeWorkflow(ctx, api.RunRef{WorkflowID: "po-9"}); d.Status != store.StatusRunning {
		t.Fatalf("a paused run went on: %s", d.Status)
	}
	if out, code := cli("workflow", "resume", "po-9"); code != 0 {
		t.Fatalf("resume: %d %s", code, out)
	}
	if out, code := cli("workflow", "result", "po-9"); code != 0 || !strings.Contains(out, "chair approved by bo") {
		t.Fatalf("result: %d %s", code, out)
	}
	if out, code := cli("workflow", "pause", "po-9"); code == 0 || !strings.Contains(out, "closed") {
		t.Fatalf("pause of a closed run: %d %s", code, out)
	}
}
