package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsoleInBrowser runs the web console's browser tests
// (console/web/e2e, Node's test runner driving Chromium with
// playwright-core, and axe-core) against a real `strand server` on a
// temporary SQLite store, with a worker and runs made for them: a
// completed Approval, one waiting for its "approve" signal, a terminated
// one and a completed Chores (four steps and a timer), and a namespace
// besides default. It writes the runs
// to a fixture file the tests read, and the tests' screenshots go to
// $STRAND_TEST_OUTPUT/console-screenshots, or else to
// console/web/e2e/screenshots-out (ignored by git).
//
// STRAND_TEST_CHROMIUM names the browser (default /usr/bin/chromium);
// "skip" skips the test. The browser and console/web/node_modules come
// from `make test` (scripts/console.sh deps).
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	chromium := os.Getenv("STRAND_TEST_CHROMIUM")
	switch chromium {
	case "skip":
		t.Skip("STRAND_TEST_CHROMIUM=skip: the console's browser tests do not run")
	case "":
		chromium = "/usr/bin/chromium"
	}
	const install = "run `make test` or scripts/console.sh deps, which install Chromium and the console's node_modules " +
		"(or set STRAND_TEST_CHROMIUM to a Chromium binary, or to skip)"
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("no browser for the console's tests: %v: %s", err, install)
	}
	web, err := filepath.Abs(filepath.Join("..", "..", "console", "web"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (the console's tests run in Node 20 or later): %v", err)
	}
	for _, pkg := range []string{"playwright-core", "@axe-core/playwright"} {
		if _, err := os.Stat(filepath.Join(web, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("console/web/node_modules has no %s: %s", pkg, install)
		}
	}
	if lock, err := os.Stat(filepath.Join(web, "package-lock.json")); err == nil {
		installed, err := os.Stat(filepath.Join(web, "node_modules", ".package-lock.json"))
		if err != nil || installed.ModTime().Before(lock.ModTime()) {
			t.Fatalf("console/web/node_modules is older than package-lock.json: %s", install)
		}
	}
	tests, err := filepath.Glob(filepath.Join(web, "e2e", "*.test.mjs"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no browser tests in console/web/e2e: %v", err)
	}

	shots := filepath.Join(web, "e2e", "screenshots-out")
	if out := os.Getenv("STRAND_TEST_OUTPUT"); out != "" {
		shots = filepath.Join(out, "console-screenshots")
	}
	// Only this run's screenshots.
	if err := os.RemoveAll(shots); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	bin := binaries(t, "strand", "testworker")
	addr := freePort(t)
	url := "http://" + addr
	store := "sqlite://" + filepath.Join(t.TempDir(), "strand.db")
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", store, "--listen", addr,
		"--node-id", consoleNode, "--drain", "1s")
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url, "--identity", consoleWorker)

	fixture := consoleRuns(t, bin, url)
	fixturePath := filepath.Join(t.TempDir(), "fixture.json")
	data, err := json.MarshalIndent(fixture, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixturePath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the runs: %s", data)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := append([]string{"--test", "--test-reporter=spec", "--test-concurrency=1"}, tests...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = web
	cmd.Env = append(os.Environ(),
		"STRAND_URL="+url,
		"STRAND_CHROMIUM="+chromium,
		"STRAND_SCREENSHOTS="+shots,
		"STRAND_FIXTURE="+fixturePath,
		"FORCE_COLOR=0",
	)
	// The tests' output, line by line into the test's log as it comes.
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	done := make(chan struct{})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(r)
		lines.Buffer(make([]byte, 64<<10), 4<<20)
		for lines.Scan() {
			t.Log(lines.Text())
		}
		io.Copy(io.Discard, r)
	}()
	t.Logf("node %s (in console/web; screenshots in %s)", strings.Join(args, " "), shots)
	start := time.Now()
	err = cmd.Run()
	w.Close()
	<-done
	t.Logf("the browser tests took %s; screenshots in %s", time.Since(start).Round(time.Millisecond), shots)
	if err != nil {
		t.Fatalf("the console's browser tests failed (%v): see their output above", err)
	}
}

// consoleNode is the node id of the server the browser tests look at,
// consoleWorker the identity of its worker.
const (
	consoleNode   = "console-test"
	consoleWorker = "console-worker"
)

// consoleRun is a run the browser tests look at, as the fixture names it.
type consoleRun struct {
	WorkflowID string   `json:"workflow_id"`
	RunID      string   `json:"run_id"`
	Type       string   `json:"type"`
	Status     string   `json:"status"`
	Input      any      `json:"input"`
	Result     any      `json:"result,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Signal     string   `json:"signal,omitempty"`
	Steps      []string `json:"steps"`
	Timers     int      `json:"timers,omitempty"`
}

// consoleFixture is what the browser tests read from STRAND_FIXTURE.
type consoleFixture struct {
	Namespace string                `json:"namespace"`
	Runs      map[string]consoleRun `json:"runs"`
	// Counts are the runs by status, as the runs page should count them.
	Counts map[string]int `json:"counts"`
	// Namespaces are those made besides default.
	Namespaces []consoleNamespace `json:"namespaces"`
	// Node is the server's node id, Worker its worker's identity.
	Node   string `json:"node"`
	Worker string `json:"worker"`
}

// consoleNamespace is a namespace as the namespaces page should show it.
type consoleNamespace struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Retention as the page writes it ("10d").
	Retention string `json:"retention"`
}

// consoleRuns makes the runs and the namespace of the fixture with the
// CLI, and waits until the runs list shows each run in its status.
func consoleRuns(t *testing.T, bin, url string) consoleFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "strand"), append(args, "--server", url)...).CombinedOutput()
		if err != nil {
			t.Fatalf("strand %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	runID := func(id string) string {
		t.Helper()
		var d struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(must("workflow", "describe", id, "-o", "json")), &d); err != nil || d.RunID == "" {
			t.Fatalf("describe %s: %v", id, err)
		}
		return d.RunID
	}
	// Approval waits for "approve", then shouts who approved in a step.
	must("workflow", "start", "order-1", "--type", "Approval", "--input", `"laptop"`)
	must("workflow", "signal", "order-1", "approve", "--input", `"ada"`)
	if out := must("workflow", "result", "order-1"); !strings.Contains(out, "laptop approved by ADA") {
		t.Fatalf("result of order-1: %s", out)
	}
	// This one waits for the signal the browser test sends; its worker has
	// taken its first task once its query answers.
	must("workflow", "start", "order-2", "--type", "Approval", "--input", `"desk"`)
	eventually(t, "order-2's query to answer", func() bool {
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "strand"), "workflow", "query", "order-2", "item", "--server", url).CombinedOutput()
		return err == nil && strings.TrimSpace(string(out)) == `"desk"`
	})
	must("workflow", "start", "order-3", "--type", "Approval", "--input", `"chair"`)
	must("workflow", "terminate", "order-3", "--reason", "ordered twice")
	// Chores runs two steps, sleeps, waits for "go", then runs two more.
	must("workflow", "start", "chores-1", "--type", "Chores", "--input", `"home"`)
	must("workflow", "signal", "chores-1", "go", "--input", `"now"`)
	if out := must("workflow", "result", "chores-1"); !strings.Contains(out, "completed") {
		t.Fatalf("result of chores-1: %s", out)
	}

	must("namespace", "create", "billing", "--retention", "240h", "--description", "invoices and receipts")

	f := consoleFixture{
		Namespace:  "default",
		Namespaces: []consoleNamespace{{Name: "billing", Description: "invoices and receipts", Retention: "10d"}},
		Node:       consoleNode,
		Worker:     consoleWorker,
		Runs: map[string]consoleRun{
			"completed": {WorkflowID: "order-1", Type: "Approval", Status: "completed", Input: "laptop",
				Result: "laptop approved by ADA", Steps: []string{"Shout"}},
			"waiting": {WorkflowID: "order-2", Type: "Approval", Status: "running", Input: "desk",
				Signal: "approve", Steps: []string{}},
			"terminated": {WorkflowID: "order-3", Type: "Approval", Status: "terminated", Input: "chair",
				Reason: "ordered twice", Steps: []string{}},
			"multistep": {WorkflowID: "chores-1", Type: "Chores", Status: "completed", Input: "home",
				Result: 4, Steps: []string{"Chore", "Chore", "Chore", "Chore"}, Timers: 1},
		},
		Counts: map[string]int{"completed": 2, "running": 1, "terminated": 1},
	}
	for role, r := range f.Runs {
		r.RunID = runID(r.WorkflowID)
		f.Runs[role] = r
	}
	// The runs list (the visibility store) catches up with the runs.
	for status, want := range f.Counts {
		eventually(t, fmt.Sprintf("%d %s runs listed", want, status), func() bool {
			body, _ := json.Marshal(map[string][]string{"statuses": {status}})
			res, err := http.Post(url+"/api/v1/namespaces/default/workflow-count", "application/json", bytes.NewReader(body))
			if err != nil {
				return false
			}
			defer res.Body.Close()
			var c struct{ Count int }
			return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&c) == nil && c.Count == want
		})
	}
	return f
}
