package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testsmtp"
)

// TestConsoleInBrowser runs the web console's browser tests
// (console/web/e2e, Node's test runner driving Chromium with
// playwright-core, and axe-core) against a real `strand server` on a
// temporary SQLite store, with a worker and runs made for them: a
// completed Approval, one waiting for its "approve" signal, a terminated
// one and a completed Chores (four steps and a timer), and a namespace
// besides default; and DAG pipelines with a strand worker that runs them
// in a namespace of their own, and their instances (consoleDAGs); and
// the test worker's Trip sagas in a namespace of their own (consoleSagas).
// It writes the runs
// to a fixture file the tests read, and the tests' screenshots go to
// $STRAND_TEST_OUTPUT/console-screenshots, or else to
// console/web/e2e/screenshots-out (ignored by git).
//
// STRAND_TEST_CHROMIUM names the browser (default
// /usr/bin/chromium-headless-shell, Chromium's headless build);
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
		chromium = "/usr/bin/chromium-headless-shell"
	}
	const install = "run `make test` or scripts/console.sh deps, which install Chromium's headless shell and the console's node_modules " +
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
	// STRAND_TEST_CONSOLE=NAME runs only console/web/e2e/NAME.test.mjs
	// (while working on one page; CI runs them all).
	only := cmp.Or(os.Getenv("STRAND_TEST_CONSOLE"), "*")
	tests, err := filepath.Glob(filepath.Join(web, "e2e", only+".test.mjs"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no browser tests console/web/e2e/%s.test.mjs: %v", only, err)
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

	// Two shards side by side, each with a server, a worker and runs of
	// its own: the tests mostly wait (for the browser to draw, for the
	// server to answer, for a page to go quiet), so two at once take
	// little more than half the time of one after the other. The first
	// shard is console.test.mjs and the files of withConsole, which run
	// after it in namespaces of their own (so that its counts of the
	// default namespace's runs hold): together about as long as the
	// others.
	var shards [2][]string
	for _, test := range tests {
		i := 1
		if withConsole[filepath.Base(test)] {
			i = 0
		}
		shards[i] = append(shards[i], test)
	}
	for i, files := range shards {
		if len(files) == 0 {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(files[0]), ".test.mjs")
		if len(files) > 1 {
			name = [...]string{"console", "others"}[i]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			consoleShard(t, node, chromium, web, shots, files)
		})
	}
}

// withConsole are the browser test files of the first shard, in the order
// they run: console.test.mjs first.
var withConsole = map[string]bool{"console.test.mjs": true, "statemachines.test.mjs": true, "sagas.test.mjs": true}

// consoleShard starts a server and a worker, makes the runs and the
// fixture file the browser tests read, and runs the browser test files
// against them, one after another.
func consoleShard(t *testing.T, node, chromium, web, shots string, tests []string) {
	bin := binaries(t, "strand", "testworker")
	addr := freePort(t)
	url := "http://" + addr
	store := "sqlite://" + filepath.Join(t.TempDir(), "strand.db")
	// Alert emails go to a real SMTP server of the test's.
	mail := testsmtp.Start(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", store, "--listen", addr,
		"--node-id", consoleNode, "--drain", "1s", "--smtp-server", mail.Addr, "--smtp-from", "strand@example.com", "--smtp-tls", "none")
	// The state machines' instances are a namespace's of their own (made
	// before the worker polls it), so that the default namespace's counts
	// of runs stay those of consoleRuns.
	if out, code := run(t, "namespace", "create", consoleSMNamespace, "--retention", "240h",
		"--description", consoleSMNamespaceDescription, "--server", url); code != 0 {
		t.Fatalf("namespace create %s: exit %d: %s", consoleSMNamespace, code, out)
	}
	// So are the sagas' (and the worker runs them there only, so that the
	// default namespace's queues stay those the queues page expects).
	if out, code := run(t, "namespace", "create", consoleSagaNamespace, "--retention", "240h",
		"--description", consoleSagaNamespaceDescription, "--server", url); code != 0 {
		t.Fatalf("namespace create %s: exit %d: %s", consoleSagaNamespace, code, out)
	}
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url, "--identity", consoleWorker,
		"--sm-namespaces", "default,"+consoleSMNamespace, "--saga-namespaces", consoleSagaNamespace)

	fixture := consoleRuns(t, bin, url)
	fixture.DAGs = consoleDAGs(t, bin, url)
	fixture.Namespaces = append(fixture.Namespaces, consoleNamespace{Name: fixture.DAGs.Namespace,
		Description: consoleDAGNamespaceDescription, Retention: "10d"})
	fixture.StateMachines = consoleStateMachines(t, url)
	fixture.Namespaces = append(fixture.Namespaces, consoleNamespace{Name: consoleSMNamespace,
		Description: consoleSMNamespaceDescription, Retention: "10d"})
	fixture.Sagas = consoleSagas(t, url)
	fixture.Secure = consoleSecured(t, bin)
	fixture.Namespaces = append(fixture.Namespaces, consoleNamespace{Name: consoleSagaNamespace,
		Description: consoleSagaNamespaceDescription, Retention: "10d"})
	fixturePath := filepath.Join(t.TempDir(), "fixture.json")
	data, err := json.MarshalIndent(fixture, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixturePath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the runs: %s", data)

	// No deadline of its own (each browser test has generous bounds on what
	// it waits for): the tests stop only when the test binary's -timeout
	// is near, with time left to say which one was running.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if deadline, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		defer cancel()
	}
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
	var passed atomic.Value // the last test the spec reporter said passed
	passed.Store("")
	cmd.Stdout, cmd.Stderr = w, w
	done := make(chan struct{})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(r)
		lines.Buffer(make([]byte, 64<<10), 4<<20)
		for lines.Scan() {
			line := lines.Text()
			if done, ok := strings.CutPrefix(strings.TrimSpace(line), "✔ "); ok {
				passed.Store(done)
			}
			t.Log(line)
		}
		io.Copy(io.Discard, r)
	}()
	t.Logf("node %s (in console/web; screenshots in %s)", strings.Join(args, " "), shots)
	start := time.Now()
	err = cmd.Run()
	w.Close()
	<-done
	t.Logf("the browser tests took %s; screenshots in %s", time.Since(start).Round(time.Millisecond), shots)
	if ctx.Err() != nil {
		t.Fatalf("the console's browser tests did not end before go test's -timeout (%v), the last to pass being %q: see their output above", err, passed.Load())
	}
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
	// DAGs are the DAG pipelines and instances the DAG pages show.
	DAGs consoleDAGSet `json:"dags"`
	// StateMachines are the state machines and instances their pages show.
	StateMachines consoleSMSet `json:"statemachines"`
	// Sagas are the Trip sagas the saga pages show.
	Sagas consoleSagaSet `json:"sagas"`
	// Secure is a second server, with access control, for the login tests.
	Secure consoleSecure `json:"secure"`
}

// consoleSecure is a `strand server` with users, for the browser tests of
// logging in and of what each role sees.
type consoleSecure struct {
	URL string `json:"url"`
	// Users by role: admin (a cluster admin), and namespace_admin,
	// operator and reader (of the default namespace).
	Users map[string]consoleUser `json:"users"`
	// Waiting is the workflow id of a run that stays open (no worker).
	Waiting string `json:"waiting"`
}

type consoleUser struct {
	Name     string `json:"name"`
	Password string `json:"password"`
}

// consoleSecured starts the second server: its users are made against the
// store first, so it controls access from its start.
func consoleSecured(t *testing.T, bin string) consoleSecure {
	t.Helper()
	store := "sqlite://" + filepath.Join(t.TempDir(), "secure.db")
	sec := consoleSecure{Users: map[string]consoleUser{
		"admin":           {"root", "the admin's password"},
		"namespace_admin": {"nadia", "the namespace admin's password"},
		"operator":        {"otto", "the operator's password"},
		"reader":          {"rita", "the reader's password"},
	}, Waiting: "secure-waiting"}
	for role, u := range sec.Users {
		args := []string{"user", "create", u.Name, "--password-stdin", "--store", store}
		if role == "admin" {
			args = append(args, "--admin")
		}
		if out, code := runIn(t, u.Password+"\n", args...); code != 0 {
			t.Fatalf("user create %s: %s", u.Name, out)
		}
		if role != "admin" {
			if out, code := runIn(t, "", "user", "grant", u.Name, "--roles", strings.TrimPrefix(role, "namespace_"), "--store", store); code != 0 {
				t.Fatalf("user grant %s: %s", u.Name, out)
			}
		}
	}
	out, code := runIn(t, "", "token", "create", "--user", "root", "--store", store, "-o", "json")
	if code != 0 {
		t.Fatalf("token create: %s", out)
	}
	token := between(out, `"token": "`, `"`)
	addr := freePort(t)
	sec.URL = "http://" + addr
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", store, "--listen", addr, "--drain", "1s")
	if out, code := run(t, "workflow", "start", sec.Waiting, "--type", "Approval", "--queue", "nobody-polls", "--server", sec.URL, "--token", token); code != 0 {
		t.Fatalf("start %s on the secure server: %s", sec.Waiting, out)
	}
	return sec
}

// consoleDAGSet is what the DAG pages' tests (console/web/e2e/dags.test.mjs)
// look at: the definitions the CLI applied and the instances it ran, in a
// namespace of their own, so that the other pages' counts of the default
// namespace's runs and queues stay those of consoleRuns.
type consoleDAGSet struct {
	Namespace string `json:"namespace"`
	// Worker is the identity of the strand worker that runs the DAGs.
	Worker string `json:"worker"`
	// Definitions by role: success (fan-out and fan-in, an output
	// parameter, a forbidden task), failure (a shell task that fails after
	// a retry, writing to stderr), retried (a task that fails twice and
	// passes on its third attempt), slow (a task that sleeps, to be run,
	// paused and stopped from the browser).
	Definitions map[string]consoleDAG `json:"definitions"`
	// Instances by role: success, failure and retried, each of its
	// definition.
	Instances map[string]consoleDAGInstance `json:"instances"`
	// AlertGroup is an alert group the CLI made, with the test alert it
	// sent (console/web/e2e/alerts.test.mjs).
	AlertGroup consoleAlertGroup `json:"alert_group"`
	// Waiting is an instance whose task waits for a worker of a group no
	// worker polls (console/web/e2e/dagwait.test.mjs).
	Waiting consoleDAGWaiting `json:"waiting"`
}

// consoleAlertGroup is an alert group as the CLI set it: addresses to
// email with a copy, and a webhook (a server of the test's).
type consoleAlertGroup struct {
	Name    string   `json:"name"`
	Emails  []string `json:"emails"`
	CC      []string `json:"cc"`
	Webhook string   `json:"webhook"`
}

// consoleDAGWaiting is an instance left running: its task Task waits,
// submitted, for a worker of group Group, which none polls.
type consoleDAGWaiting struct {
	DAG        string `json:"dag"`
	WorkflowID string `json:"workflow_id"`
	Task       string `json:"task"`
	Group      string `json:"group"`
}

// consoleDAG is a definition as the CLI applied it.
type consoleDAG struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	Text        string            `json:"text"`
	Tasks       []consoleDAGTask  `json:"tasks"`
	Versions    int               `json:"versions"`
	Online      bool              `json:"online"`
}

// consoleDAGTask is a task of a definition: the graph's node.
type consoleDAGTask struct {
	Name      string   `json:"name"`
	Type      string   `json:"type"`
	Upstream  []string `json:"upstream,omitempty"`
	Forbidden bool     `json:"forbidden,omitempty"`
}

// consoleDAGInstance is an instance the CLI ran, as its page should show it.
type consoleDAGInstance struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	DAG        string `json:"dag"`
	Version    int32  `json:"version"`
	// State is the instance's, Status its run's.
	State  string `json:"state"`
	Status string `json:"status"`
	// Tasks are the tasks' states by name.
	Tasks map[string]string `json:"tasks"`
	// Outputs are output parameters by task.
	Outputs map[string]map[string]string `json:"outputs,omitempty"`
	// Logs are lines of the tasks' logs, by task.
	Logs map[string]string `json:"logs"`
	// Attempts are the attempts of the tasks retried, by task.
	Attempts map[string]int `json:"attempts,omitempty"`
	// AttemptLogs are a line of each attempt's log, first to last, and
	// AttemptStates each attempt's outcome, by task (retried tasks).
	AttemptLogs   map[string][]string `json:"attempt_logs,omitempty"`
	AttemptStates map[string][]string `json:"attempt_states,omitempty"`
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

// The DAG pipelines' namespace and worker.
const (
	consoleDAGNamespace            = "pipelines"
	consoleDAGNamespaceDescription = "DAG pipelines' instances"
	consoleDAGWorker               = "dag-worker"
)

// The definitions the DAG pages' tests look at.
const (
	// Fan-out and fan-in: extract sets rows for the tasks after it; audit is
	// forbidden, and gather runs after it as if it succeeded.
	consoleFanout = `name: fanout
description: count the rows, load them in two parts, gather
params:
  region: eu
tasks:
  - name: extract
    type: shell
    script: |
      echo "extracting ${region}"
      echo '${setValue(rows=3)}'
    outputs: [rows]
  - {name: part-a, type: shell, upstream: [extract], script: 'echo "part a of ${rows} rows"'}
  - {name: part-b, type: shell, upstream: [extract], script: 'echo "part b of ${rows} rows"'}
  - {name: audit, type: shell, upstream: [extract], forbidden: true, script: 'echo never'}
  - {name: gather, type: shell, upstream: [part-a, part-b, audit], script: 'echo "gathered ${rows} rows"'}
`
	// load fails twice (one retry), saying why on stderr; report never runs.
	consoleBroken = `name: broken
description: a load that fails
tasks:
  - {name: prepare, type: shell, script: 'echo ready'}
  - name: load
    type: shell
    upstream: [prepare]
    retries: 1
    retry_interval: 1s
    script: |
      echo "loading"
      echo "disk quota exceeded on /data" >&2
      exit 3
  - {name: report, type: shell, upstream: [load], script: 'echo done'}
`
	// load fails twice, each attempt saying so on stderr, and passes on
	// its third (its count of attempts is in the file %s names).
	consoleFlaky = `name: flaky
description: a load that passes on its third attempt
tasks:
  - name: load
    type: shell
    retries: 2
    retry_interval: 1s
    script: |
      n=$(( $(cat %[1]s 2>/dev/null || echo 0) + 1 )); echo $n > %[1]s
      echo "attempt $n loading"
      if [ $n -lt 3 ]; then echo "attempt $n: the source is busy" >&2; exit 1; fi
`
	// nap sleeps long enough for the browser to pause, resume and stop it.
	consoleSlow = `name: slow
description: a nap long enough to be paused and stopped
params:
  naptime: "120"
tasks:
  - {name: nap, type: shell, script: 'echo "napping ${naptime}s"; sleep ${naptime}'}
  - {name: wake, type: shell, upstream: [nap], script: 'echo awake'}
`
)

// consoleDAGs makes what the DAG pages' tests look at: a namespace for the
// instances, a strand worker that runs them there, three definitions
// applied with the CLI, and an instance of the first two run to their end
// (the second fails, as it should).
func consoleDAGs(t *testing.T, bin, url string) consoleDAGSet {
	t.Helper()
	// The CLI's client commands run in this process; the worker is a process of its own.
	cli := func(args ...string) (string, int) {
		t.Helper()
		return run(t, append(args, "--server", url)...)
	}
	must := func(args ...string) string {
		t.Helper()
		out, code := cli(args...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	ns := consoleDAGNamespace
	must("namespace", "create", ns, "--retention", "240h", "--description", consoleDAGNamespaceDescription)
	// A short --stop-wait: the slow DAG's nap, if a test leaves it running,
	// does not hold the worker past the cleanup's patience.
	process(t, "running the groups", filepath.Join(bin, "strand"), "worker", "--server", url, "--group", "default",
		"--identity", consoleDAGWorker, "--namespace", ns, "--stop-wait", "2s")

	dir := t.TempDir()
	set := consoleDAGSet{Namespace: ns, Worker: consoleDAGWorker, Definitions: map[string]consoleDAG{},
		Instances: map[string]consoleDAGInstance{}}
	for _, d := range []struct {
		role, text string
		def        consoleDAG
	}{
		{"success", consoleFanout, consoleDAG{Name: "fanout", Description: "count the rows, load them in two parts, gather",
			Params: map[string]string{"region": "eu"}, Tasks: []consoleDAGTask{
				{Name: "extract", Type: "shell"},
				{Name: "part-a", Type: "shell", Upstream: []string{"extract"}},
				{Name: "part-b", Type: "shell", Upstream: []string{"extract"}},
				{Name: "audit", Type: "shell", Upstream: []string{"extract"}, Forbidden: true},
				{Name: "gather", Type: "shell", Upstream: []string{"part-a", "part-b", "audit"}},
			}}},
		{"failure", consoleBroken, consoleDAG{Name: "broken", Description: "a load that fails", Tasks: []consoleDAGTask{
			{Name: "prepare", Type: "shell"},
			{Name: "load", Type: "shell", Upstream: []string{"prepare"}},
			{Name: "report", Type: "shell", Upstream: []string{"load"}},
		}}},
		{"retried", fmt.Sprintf(consoleFlaky, filepath.Join(dir, "flaky-attempts")), consoleDAG{Name: "flaky", Description: "a load that passes on its third attempt",
			Tasks: []consoleDAGTask{{Name: "load", Type: "shell"}}}},
		{"slow", consoleSlow, consoleDAG{Name: "slow", Description: "a nap long enough to be paused and stopped",
			Params: map[string]string{"naptime": "120"}, Tasks: []consoleDAGTask{
				{Name: "nap", Type: "shell"},
				{Name: "wake", Type: "shell", Upstream: []string{"nap"}},
			}}},
	} {
		file := filepath.Join(dir, d.def.Name+".yaml")
		if err := os.WriteFile(file, []byte(d.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := must("dag", "apply", "-f", file); !strings.Contains(out, d.def.Name+" version 1 stored") {
			t.Fatalf("apply %s: %s", d.def.Name, out)
		}
		d.def.Text, d.def.Versions, d.def.Online = d.text, 1, true
		set.Definitions[d.role] = d.def
	}

	// The instances, each run to its end.
	runID := func(id string) string {
		t.Helper()
		var d struct {
			RunID string `json:"run_id"`
		}
		out := must("workflow", "describe", id, "-o", "json", "--namespace", ns)
		if err := json.Unmarshal([]byte(out), &d); err != nil || d.RunID == "" {
			t.Fatalf("describe %s: %v: %s", id, err, out)
		}
		return d.RunID
	}
	if out := must("dag", "run", "fanout", "--id", "fanout-1", "--wait", "--namespace", ns); !strings.Contains(out, "fanout version 1: success") || !strings.Contains(out, "rows=3") {
		t.Fatalf("run fanout: %s", out)
	}
	set.Instances["success"] = consoleDAGInstance{WorkflowID: "fanout-1", RunID: runID("fanout-1"), DAG: "fanout",
		Version: 1, State: "success", Status: "completed",
		Tasks: map[string]string{"extract": "success", "part-a": "success", "part-b": "success",
			"audit": "forbidden", "gather": "success"},
		Outputs: map[string]map[string]string{"extract": {"rows": "3"}},
		Logs:    map[string]string{"extract": "extracting eu", "part-a": "part a of 3 rows", "gather": "gathered 3 rows"},
	}
	// It fails, and says so with exit 1.
	if out, code := cli("dag", "run", "broken", "--id", "broken-1", "--wait", "--namespace", ns); code != 1 || !strings.Contains(out, "broken version 1: failure") {
		t.Fatalf("run broken: exit %d: %s", code, out)
	}
	set.Instances["failure"] = consoleDAGInstance{WorkflowID: "broken-1", RunID: runID("broken-1"), DAG: "broken",
		Version: 1, State: "failure", Status: "failed",
		Tasks:    map[string]string{"prepare": "success", "load": "failure", "report": "skipped"},
		Logs:     map[string]string{"prepare": "ready", "load": "disk quota exceeded on /data"},
		Attempts: map[string]int{"load": 2},
	}
	// An alert group, with the test alert it sent through both channels.
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(hook.Close)
	set.AlertGroup = consoleAlertGroup{Name: "data-team", Emails: []string{"oncall@example.com"}, CC: []string{"lead@example.com"}, Webhook: hook.URL}
	must("alert-group", "set", "data-team", "--email", "oncall@example.com", "--cc", "lead@example.com", "--webhook", hook.URL,
		"--description", "the data team's on-call")
	must("alert-group", "test", "data-team")
	// A task in worker group ghost, which no worker polls: it waits.
	ghostly := filepath.Join(dir, "ghostly.yaml")
	if err := os.WriteFile(ghostly, []byte(consoleGhostly), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := must("dag", "apply", "-f", ghostly, "--namespace", ns); !strings.Contains(out, "no worker polls worker group ghost") {
		t.Fatalf("apply ghostly: no warning of group ghost: %s", out)
	}
	if out := must("dag", "run", "ghostly", "--id", "ghostly-1", "--namespace", ns); !strings.Contains(out, "no worker polls worker group ghost") {
		t.Fatalf("run ghostly: no warning of group ghost: %s", out)
	}
	set.Waiting = consoleDAGWaiting{DAG: "ghostly", WorkflowID: "ghostly-1", Task: "lost", Group: "ghost"}
	if out := must("dag", "run", "flaky", "--id", "flaky-1", "--wait", "--namespace", ns); !strings.Contains(out, "flaky version 1: success") {
		t.Fatalf("run flaky: %s", out)
	}
	set.Instances["retried"] = consoleDAGInstance{WorkflowID: "flaky-1", RunID: runID("flaky-1"), DAG: "flaky",
		Version: 1, State: "success", Status: "completed",
		Tasks:         map[string]string{"load": "success"},
		Logs:          map[string]string{"load": "attempt 3 loading"},
		Attempts:      map[string]int{"load": 3},
		AttemptLogs:   map[string][]string{"load": {"[stderr] attempt 1: the source is busy", "[stderr] attempt 2: the source is busy", "attempt 3 loading"}},
		AttemptStates: map[string][]string{"load": {"failure", "failure", "success"}},
	}
	// The instances' lists (the visibility store) catch up with them.
	for _, name := range []string{"fanout", "broken", "flaky"} {
		eventually(t, "the instances of "+name+" listed closed", func() bool {
			res, err := http.Get(url + "/api/v1/namespaces/" + ns + "/dags/" + name + "/instances")
			if err != nil {
				return false
			}
			defer res.Body.Close()
			var l struct {
				Runs []struct {
					Status string `json:"status"`
				} `json:"runs"`
			}
			return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&l) == nil &&
				len(l.Runs) == 1 && l.Runs[0].Status != "running"
		})
	}
	return set
}

// The state machines' namespace.
const (
	consoleSMNamespace            = "machines"
	consoleSMNamespaceDescription = "state machine instances"
)

// consoleSMSet is what the state machine pages' tests
// (console/web/e2e/statemachines.test.mjs) look at: the definitions the
// test worker registered (delivery and creditApplication) and instances
// the CLI made in a namespace of their own.
type consoleSMSet struct {
	Namespace string `json:"namespace"`
	// ExecutorGroup is the queue the test worker runs the instances on.
	ExecutorGroup string `json:"executor_group"`
	// Definitions by type.
	Definitions map[string]consoleSMDefinition `json:"definitions"`
	// Counts are the instances per type and state, as the graph should count them.
	Counts map[string]map[string]int `json:"counts"`
	// Instances by role: granted (created, moved on from its manual state
	// by an update with a variable, granted, finished, done), waiting and
	// waiting2 (in the manual state; the browser moves waiting on),
	// failed (its loan fails: the error state), delivered (a delivery).
	Instances map[string]consoleSMInstance `json:"instances"`
}

// consoleSMDefinition is a definition as the worker registered it.
type consoleSMDefinition struct {
	Type        string              `json:"type"`
	Description string              `json:"description"`
	Version     int32               `json:"version"`
	States      []consoleSMState    `json:"states"`
	Transitions map[string][]string `json:"transitions"`
	ErrorState  string              `json:"error_state,omitempty"`
}

// consoleSMState is a state of a definition: a node of the graph.
type consoleSMState struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Failure string `json:"failure,omitempty"`
}

// consoleSMInstance is an instance as its page should show it.
type consoleSMInstance struct {
	ID          string            `json:"id"`
	Type        string            `json:"type"`
	Status      string            `json:"status"`
	State       string            `json:"state"`
	ExternalID  string            `json:"external_id"`
	BusinessKey string            `json:"business_key,omitempty"`
	Vars        map[string]string `json:"vars"`
	// Actions are its actions in order: type, state, the variables each set.
	Actions []consoleSMAction `json:"actions"`
}

// consoleSMAction is an action of an instance.
type consoleSMAction struct {
	Type    string            `json:"type"`
	State   string            `json:"state"`
	Text    string            `json:"text,omitempty"`
	Updated map[string]string `json:"updated,omitempty"`
}

// consoleStateMachines makes the state machine instances of the fixture
// with the CLI, waits until each is where it should be and the lists
// count them, and checks their actions against what the fixture says.
func consoleStateMachines(t *testing.T, url string) consoleSMSet {
	t.Helper()
	ns := consoleSMNamespace
	must := func(args ...string) string {
		t.Helper()
		out, code := run(t, append(args, "--server", url, "--namespace", ns)...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	getJSON := func(path string, v any) bool {
		res, err := http.Get(url + "/api/v1" + path)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(v) == nil
	}
	instance := func(id string) (inst struct {
		Status  string            `json:"status"`
		State   string            `json:"state"`
		Vars    map[string]string `json:"vars"`
		Actions []consoleSMAction `json:"actions"`
	}) {
		getJSON("/namespaces/"+ns+"/statemachine-instances/"+strings.ReplaceAll(id, "/", "%2F"), &inst)
		return inst
	}
	waitFor := func(id, status, state string) {
		t.Helper()
		eventually(t, id+" "+status+" in "+state, func() bool {
			i := instance(id)
			return i.Status == status && i.State == state
		})
	}
	group := "statemachines"
	create := func(typ, ext string, vars ...string) {
		t.Helper()
		args := []string{"sm", "create", typ, "--external-id", ext, "--executor-group", group}
		for _, v := range vars {
			args = append(args, "--var", v)
		}
		if typ == "creditApplication" {
			args = append(args, "--business-key", "customer-"+ext)
		}
		if out := must(args...); !strings.Contains(out, "created "+typ+"/"+ext) {
			t.Fatalf("create %s/%s: %s", typ, ext, out)
		}
	}
	// Granted: moved on by a person, with the variable "approver".
	create("creditApplication", "credit-1", "amount=1000")
	waitFor("creditApplication/credit-1", "manual", "acceptCreditApplication")
	must("sm", "update", "creditApplication/credit-1", "--state", "grantLoan", "--var", "approver=ada", "--reason", "approved by ada")
	waitFor("creditApplication/credit-1", "finished", "done")
	// Waiting for a person: two.
	create("creditApplication", "credit-2", "amount=250")
	create("creditApplication", "credit-3", "amount=5000")
	waitFor("creditApplication/credit-2", "manual", "acceptCreditApplication")
	waitFor("creditApplication/credit-3", "manual", "acceptCreditApplication")
	// Failed: the loan fails twice (one retry), then the error state.
	create("creditApplication", "credit-4", "amount=70", "loanFails=over limit")
	waitFor("creditApplication/credit-4", "manual", "acceptCreditApplication")
	must("sm", "update", "creditApplication/credit-4", "--state", "grantLoan", "--reason", "approved")
	waitFor("creditApplication/credit-4", "manual", "error") // the error state waits for a person
	// A delivery, at once.
	create("delivery", "parcel-1", "sleep=10ms")
	waitFor("delivery/parcel-1", "finished", "delivered")

	set := consoleSMSet{Namespace: ns, ExecutorGroup: group,
		Definitions: map[string]consoleSMDefinition{},
		Counts: map[string]map[string]int{
			"creditApplication": {"acceptCreditApplication": 2, "done": 1, "error": 1},
			"delivery":          {"delivered": 1},
		},
		Instances: map[string]consoleSMInstance{
			"granted": {ID: "creditApplication/credit-1", Type: "creditApplication", Status: "finished", State: "done",
				ExternalID: "credit-1", BusinessKey: "customer-credit-1",
				Vars: map[string]string{"amount": "1000", "applicationId": "CA-credit-1", "approver": "ada",
					"loanId": "L-credit-1", "granted": "1000", "notified": "true"},
				Actions: []consoleSMAction{
					{Type: "stateExecution", State: "createCreditApplication", Text: "waiting for acceptance", Updated: map[string]string{"applicationId": "CA-credit-1"}},
					{Type: "externalChange", State: "grantLoan", Text: "approved by ada", Updated: map[string]string{"approver": "ada"}},
					{Type: "stateExecution", State: "grantLoan", Text: "loan granted", Updated: map[string]string{"loanId": "L-credit-1", "granted": "1000"}},
					{Type: "stateExecution", State: "finishCreditApplication", Text: "customer notified", Updated: map[string]string{"notified": "true"}},
				}},
			"waiting": {ID: "creditApplication/credit-2", Type: "creditApplication", Status: "manual", State: "acceptCreditApplication",
				ExternalID: "credit-2", BusinessKey: "customer-credit-2",
				Vars: map[string]string{"amount": "250", "applicationId": "CA-credit-2"},
				Actions: []consoleSMAction{
					{Type: "stateExecution", State: "createCreditApplication", Text: "waiting for acceptance", Updated: map[string]string{"applicationId": "CA-credit-2"}},
				}},
			"waiting2": {ID: "creditApplication/credit-3", Type: "creditApplication", Status: "manual", State: "acceptCreditApplication",
				ExternalID: "credit-3", BusinessKey: "customer-credit-3",
				Vars: map[string]string{"amount": "5000", "applicationId": "CA-credit-3"},
				Actions: []consoleSMAction{
					{Type: "stateExecution", State: "createCreditApplication", Text: "waiting for acceptance", Updated: map[string]string{"applicationId": "CA-credit-3"}},
				}},
			"delivered": {ID: "delivery/parcel-1", Type: "delivery", Status: "finished", State: "delivered", ExternalID: "parcel-1",
				Vars: map[string]string{"sleep": "10ms"},
				Actions: []consoleSMAction{
					{Type: "stateExecution", State: "deliver", Text: "handed over"},
				}},
		},
	}
	for role, want := range set.Instances {
		got := instance(want.ID)
		if fmt.Sprint(got.Actions) != fmt.Sprint(want.Actions) || fmt.Sprint(got.Vars) != fmt.Sprint(want.Vars) {
			t.Fatalf("instance %s (%s): actions %+v, vars %v; want %+v, %v", want.ID, role, got.Actions, got.Vars, want.Actions, want.Vars)
		}
	}
	// The failed one's actions are the interpreter's (a failed run per
	// attempt, then the move to the error state): as they are.
	failed := instance("creditApplication/credit-4")
	set.Instances["failed"] = consoleSMInstance{ID: "creditApplication/credit-4", Type: "creditApplication", Status: "manual",
		State: "error", ExternalID: "credit-4", BusinessKey: "customer-credit-4", Vars: failed.Vars, Actions: failed.Actions}

	var defs struct {
		Definitions []consoleSMDefinition `json:"definitions"`
	}
	if !getJSON("/statemachines", &defs) || len(defs.Definitions) != 2 {
		t.Fatalf("the state machine definitions: %+v", defs)
	}
	for _, d := range defs.Definitions {
		set.Definitions[d.Type] = d
	}
	if d := set.Definitions["creditApplication"]; len(d.States) != 7 || d.ErrorState != "error" {
		t.Fatalf("creditApplication: %+v", d)
	}
	// The lists (the visibility store) catch up with the instances.
	for typ, counts := range set.Counts {
		eventually(t, "the stats of "+typ, func() bool {
			var s struct {
				States []struct {
					State string `json:"state"`
					Count int    `json:"count"`
				} `json:"states"`
			}
			if !getJSON("/namespaces/"+ns+"/statemachines/"+typ+"/stats", &s) {
				return false
			}
			got := map[string]int{}
			for _, c := range s.States {
				got[c.State] += c.Count
			}
			return fmt.Sprint(got) == fmt.Sprint(counts)
		})
	}
	return set
}

// The sagas' namespace.
const (
	consoleSagaNamespace            = "trips"
	consoleSagaNamespaceDescription = "Trip sagas"
)

// consoleSagaSet is what the saga pages' tests (console/web/e2e/sagas.test.mjs)
// look at: runs of the test worker's Trip saga (internal/testworker/trip.go),
// in a namespace of their own so that the default namespace's counts of
// runs stay those of consoleRuns.
type consoleSagaSet struct {
	Namespace string `json:"namespace"`
	// Type and Queue are the Trip workflow's (to start more), Name the
	// saga's name.
	Type  string `json:"type"`
	Queue string `json:"queue"`
	Name  string `json:"name"`
	// Sagas by role: completed (the hotel busy for two attempts, retried),
	// compensated (the car fails: hotel and flight undone), stuck and
	// stuck2 (the tickets fail and the car's compensation always fails:
	// both wait in compensation_failed; the browser marks stuck's done and
	// skips stuck2's in a batch).
	Sagas map[string]consoleSaga `json:"sagas"`
}

// consoleSaga is a saga as its page should show it.
type consoleSaga struct {
	ID     string         `json:"id"`
	RunID  string         `json:"run_id"`
	Input  map[string]any `json:"input"`
	State  string         `json:"state"`
	Status string         `json:"status"`
	// Steps are its steps in order, Tryouts every attempt in the order the
	// record lists them.
	Steps   []consoleSagaStep   `json:"steps"`
	Tryouts []consoleSagaTryout `json:"tryouts"`
}

// consoleSagaStep is a line of a saga's steps table.
type consoleSagaStep struct {
	Name         string           `json:"name"`
	Group        int              `json:"group,omitempty"`
	Forward      consoleSagaPhase `json:"forward"`
	Compensation consoleSagaPhase `json:"compensation"`
}

// consoleSagaPhase is a step's forward run or compensation.
type consoleSagaPhase struct {
	State    string `json:"state"`
	Attempts int    `json:"attempts,omitempty"`
	Error    string `json:"error,omitempty"`
}

// consoleSagaTryout is a line of a saga's tryouts table.
type consoleSagaTryout struct {
	Step    string `json:"step"`
	Phase   string `json:"phase"`
	Attempt int    `json:"attempt"`
	Outcome string `json:"outcome"`
	Key     string `json:"idempotency_key"`
	Error   string `json:"error,omitempty"`
}

// consoleSagas starts the Trip sagas of the fixture with the CLI, waits
// until each is in its state with its steps where they should be, and
// until the sagas list shows them so.
func consoleSagas(t *testing.T, url string) consoleSagaSet {
	t.Helper()
	ns := consoleSagaNamespace
	set := consoleSagaSet{Namespace: ns, Type: "Trip", Queue: "sagas", Name: "trip", Sagas: map[string]consoleSaga{}}
	getJSON := func(path string, v any) bool {
		res, err := http.Get(url + "/api/v1" + path)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(v) == nil
	}
	// phase is a step's phase as the fixture writes it: state and attempts.
	phase := func(state string, attempts int) consoleSagaPhase {
		return consoleSagaPhase{State: state, Attempts: attempts}
	}
	step := func(name string, group int, forward, compensation consoleSagaPhase) consoleSagaStep {
		return consoleSagaStep{Name: name, Group: group, Forward: forward, Compensation: compensation}
	}
	none := phase("none", 0)
	stuck := []consoleSagaStep{
		step("flight", 0, phase("completed", 1), none),
		step("hotel", 1, phase("completed", 1), phase("completed", 1)),
		step("car", 1, phase("completed", 1), phase("failed", 3)),
		step("tickets", 0, phase("failed", 1), none),
	}
	for _, s := range []struct {
		role, id string
		input    map[string]any
		state    string
		status   string
		steps    []consoleSagaStep
		tryouts  int
	}{
		{"completed", "trip-ok", map[string]any{"busy": map[string]int{"hotel": 2}}, "completed", "completed", []consoleSagaStep{
			step("flight", 0, phase("completed", 1), none),
			step("hotel", 1, phase("completed", 3), none),
			step("car", 1, phase("completed", 1), none),
			step("tickets", 0, phase("completed", 1), none),
		}, 6},
		{"compensated", "trip-undone", map[string]any{"fail": "car"}, "compensated", "failed", []consoleSagaStep{
			step("flight", 0, phase("completed", 1), phase("completed", 1)),
			step("hotel", 1, phase("completed", 1), phase("completed", 1)),
			step("car", 1, phase("failed", 1), none),
		}, 5},
		{"stuck", "trip-stuck-1", map[string]any{"fail": "tickets", "undo_broken": "car"}, "compensation_failed", "running", stuck, 8},
		{"stuck2", "trip-stuck-2", map[string]any{"fail": "tickets", "undo_broken": "car"}, "compensation_failed", "running", stuck, 8},
	} {
		in, _ := json.Marshal(s.input)
		if out, code := run(t, "workflow", "start", s.id, "--type", set.Type, "--queue", set.Queue, "--input", string(in),
			"--namespace", ns, "--server", url); code != 0 {
			t.Fatalf("start %s: exit %d: %s", s.id, code, out)
		}
		var rec struct {
			RunID   string              `json:"run_id"`
			State   string              `json:"state"`
			Status  string              `json:"status"`
			Steps   []consoleSagaStep   `json:"steps"`
			Tryouts []consoleSagaTryout `json:"tryouts"`
		}
		eventually(t, s.id+" "+s.state, func() bool {
			rec.Steps, rec.Tryouts = nil, nil
			return getJSON("/namespaces/"+ns+"/sagas/"+s.id, &rec) && rec.State == s.state && rec.Status == s.status &&
				len(rec.Tryouts) == s.tryouts
		})
		// The steps as expected, their errors as read.
		got := make([]consoleSagaStep, len(rec.Steps))
		for i, st := range rec.Steps {
			got[i] = st
			got[i].Forward.Error, got[i].Compensation.Error = "", ""
		}
		if fmt.Sprint(got) != fmt.Sprint(s.steps) {
			t.Fatalf("saga %s: steps %+v; want %+v", s.id, got, s.steps)
		}
		set.Sagas[s.role] = consoleSaga{ID: s.id, RunID: rec.RunID, Input: s.input, State: s.state, Status: s.status,
			Steps: rec.Steps, Tryouts: rec.Tryouts}
	}
	// The list (the visibility store) catches up with the sagas.
	eventually(t, "the sagas listed in their states", func() bool {
		var l struct {
			Runs []struct {
				WorkflowID string            `json:"workflow_id"`
				Attributes map[string]string `json:"attributes"`
			} `json:"runs"`
		}
		if !getJSON("/namespaces/"+ns+"/sagas", &l) || len(l.Runs) != len(set.Sagas) {
			return false
		}
		for _, r := range l.Runs {
			if s, ok := set.Sagas[roleOf(set, r.WorkflowID)]; !ok || r.Attributes["strand.saga.state"] != s.State {
				return false
			}
		}
		return true
	})
	return set
}

// roleOf is the role of the saga id in set ("" if none).
func roleOf(set consoleSagaSet, id string) string {
	for role, s := range set.Sagas {
		if s.ID == id {
			return role
		}
	}
	return ""
}

// consoleGhostly is a DAG whose second task is in worker group ghost,
// which no worker polls: its instance stays running, the task submitted.
const consoleGhostly = `name: ghostly
description: a load whose worker group has no worker
tasks:
  - {name: ready, type: shell, script: 'echo ready'}
  - {name: lost, type: shell, worker_group: ghost, upstream: [ready], script: 'echo never'}
`
