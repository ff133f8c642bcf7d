package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/server"
)

// TestKillBeforeEagerCommit kills `strand server` (SIGKILL) while a
// workflow task it handed eagerly to a waiting worker holds inputs not yet
// committed (docs/architecture.md, "eager dispatch"), and shows that
// nothing of them got out: the caller that brought them (a start, a
// signal) got no answer, and after a restart the store has none of them.
// The server runs with --eager-commit-delay 1h, so the inputs cannot
// commit alone; the worker is the test's own plain HTTP calls.
func TestKillBeforeEagerCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	// Its server, port and store are its own: it runs beside the others.
	t.Parallel()
	bin := binaries(t, "strand")
	t.Run("sqlite", func(t *testing.T) {
		eagerKillTest(t, bin, "sqlite://"+filepath.Join(t.TempDir(), "strand.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		base := testdb.PostgresURL(t)
		eagerKillTest(t, bin, testdb.WithSearchPath(t, base, testdb.NewSchema(t, base)))
	})
}

func eagerKillTest(t *testing.T, bin, storeURL string) {
	dir := t.TempDir()
	addr := freePort(t)
	logf := serverLog(t, dir)
	// The delay comes once from the flag and once from the --config file.
	config := filepath.Join(dir, "eager.json")
	if err := os.WriteFile(config, []byte(`{"eager-commit-delay": "1h"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"server", "--store", storeURL, "--listen", addr, "--poll-wait", "10s", "--drain", "1s"}
	srv := &restartingServer{t: t, bin: bin, url: "http://" + addr, log: logf,
		args: append(slices.Clip(base), "--eager-commit-delay", "1h")}
	srv.start()
	defer srv.stop()
	c := &eagerClient{t: t, url: srv.url + "/api/v1"}

	// The start: the task of W's first workflow task goes to the waiting
	// poll before the run is written.
	const w = "eager-start"
	held := c.eagerHandOff("worker-1", func() httpAnswer {
		return c.do("POST", "/namespaces/default/workflows", api.StartRequest{WorkflowID: w, WorkflowType: "EagerKill", RequestID: "start-" + w})
	}, func(task *api.WorkflowTask) bool {
		return task.Run.WorkflowID == w && task.PrevEventID == 0 && len(task.Events) > 0 && task.Events[0].Type == api.EventWorkflowStarted
	})
	// While the task is held, no client sees the run, and no step is there.
	c.expect("describe "+w+" before the commit", c.do("GET", "/namespaces/default/workflows/"+w, nil), http.StatusNotFound, server.CodeNotFound)
	c.expect("result of "+w+" before the commit", c.do("GET", "/namespaces/default/workflows/"+w+"/result?wait=1s", nil), http.StatusNotFound, server.CodeNotFound)
	// Nor by the run id the held task names (these reads once read a run
	// with no committed state, and failed on it).
	runID := "?run_id=" + held.task.Run.RunID
	c.expect("describe "+w+"'s run before the commit", c.do("GET", "/namespaces/default/workflows/"+w+runID, nil), http.StatusNotFound, server.CodeNotFound)
	c.expect("result of "+w+"'s run before the commit", c.do("GET", "/namespaces/default/workflows/"+w+"/result"+runID+"&wait=1s", nil), http.StatusNotFound, server.CodeNotFound)
	c.noStep("before the commit")
	srv.kill()
	held.callerGotNoAnswer("the start of " + w)

	srv.args = base
	srv.start()
	c.expect("describe "+w+" after the restart", c.do("GET", "/namespaces/default/workflows/"+w, nil), http.StatusNotFound, server.CodeNotFound)
	c.expect("result of "+w+" after the restart", c.do("GET", "/namespaces/default/workflows/"+w+"/result?wait=1s", nil), http.StatusNotFound, server.CodeNotFound)
	schedule := []api.Command{{Type: api.CommandScheduleStep, Seq: 1, Name: "Charge", Payload: api.Value(`"ten"`)}}
	// The worker's SDK drops a task whose run does not exist (not_found):
	// its start was never committed.
	c.expect("completion of the held task of "+w, c.do("POST", "/workflow-tasks/complete",
		api.CompleteWorkflowTaskRequest{Token: held.task.Token, Commands: schedule, Identity: "worker-1"}), http.StatusNotFound, server.CodeNotFound)
	c.expect("describe "+w+" after the completion", c.do("GET", "/namespaces/default/workflows/"+w, nil), http.StatusNotFound, server.CodeNotFound)
	c.noStep("after the restart")

	// The signal: W2 runs and waits (its first workflow task committed);
	// the task that brings it a signal goes to the waiting poll before the
	// signal is written.
	const w2 = "eager-signal"
	if a := c.do("POST", "/namespaces/default/workflows", api.StartRequest{WorkflowID: w2, WorkflowType: "EagerKill", RequestID: "start-" + w2}); a.code != http.StatusOK {
		t.Fatalf("start %s: %s", w2, a)
	}
	first := c.poll("worker-2", false)
	if first == nil || first.Run.WorkflowID != w2 {
		t.Fatalf("the first workflow task of %s: %+v", w2, first)
	}
	if a := c.do("POST", "/workflow-tasks/complete", api.CompleteWorkflowTaskRequest{Token: first.Token, Commands: []api.Command{}, Identity: "worker-2"}); a.code != http.StatusOK {
		t.Fatalf("complete the first workflow task of %s: %s", w2, a)
	}
	before := c.history(w2)
	srv.stop()
	srv.args = append(slices.Clip(base), "--config", config)
	srv.start()
	// A signal with a request id writes its dedup row and is not handed
	// eagerly; this one has none.
	held = c.eagerHandOff("worker-3", func() httpAnswer {
		return c.do("POST", "/namespaces/default/workflows/"+w2+"/signals", map[string]any{"name": "go", "input": "now"})
	}, func(task *api.WorkflowTask) bool {
		return task.Run.WorkflowID == w2 && slices.ContainsFunc(task.Events, func(ev api.Event) bool { return ev.Type == api.EventSignalReceived })
	})
	if evs := c.history(w2); len(evs) != len(before) || signaled(evs) {
		t.Fatalf("the history of %s changed before the commit: %d events, then %d, signal received: %v", w2, len(before), len(evs), signaled(evs))
	}
	c.noStep("before the signal's commit")
	srv.kill()
	held.callerGotNoAnswer("the signal of " + w2)

	srv.args = base
	srv.start()
	if evs := c.history(w2); len(evs) != len(before) || signaled(evs) {
		t.Fatalf("the history of %s after the restart: %d events (%d before the signal), signal received: %v", w2, len(evs), len(before), signaled(evs))
	}
	c.expect("completion of the held task of "+w2, c.do("POST", "/workflow-tasks/complete",
		api.CompleteWorkflowTaskRequest{Token: held.task.Token, Commands: schedule, Identity: "worker-3"}), http.StatusNotFound, server.CodeTaskNotFound)
	if evs := c.history(w2); len(evs) != len(before) || signaled(evs) {
		t.Fatalf("the history of %s after the held task's completion: %d events (%d before), signal received: %v", w2, len(evs), len(before), signaled(evs))
	}
	c.noStep("after the second restart")
}

func signaled(evs []api.Event) bool {
	return slices.ContainsFunc(evs, func(ev api.Event) bool { return ev.Type == api.EventSignalReceived })
}

// eagerClient is a worker and a client made of plain HTTP calls.
type eagerClient struct {
	t   *testing.T
	url string
}

// httpAnswer is an HTTP call's outcome: an answer, or err (none came).
type httpAnswer struct {
	code int
	body []byte
	err  error
}

func (a httpAnswer) String() string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.code, bytes.TrimSpace(a.body))
}

// do calls the API with body as JSON (none when nil), on a connection of
// its own: none outlives the server it went to.
func (c *eagerClient) do(method, path string, body any) httpAnswer {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return httpAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return httpAnswer{code: resp.StatusCode, body: b, err: err}
}

// expect fails the test unless a is an answer with code and, for an
// error, the error code errCode.
func (c *eagerClient) expect(what string, a httpAnswer, code int, errCode string) {
	c.t.Helper()
	var e struct {
		Code string `json:"code"`
	}
	if a.err != nil || a.code != code || json.Unmarshal(a.body, &e) != nil || e.Code != errCode {
		c.t.Fatalf("%s: %s; want %d %s", what, a, code, errCode)
	}
}

// poll polls the default workflow queue as identity: nil when no task came.
func (c *eagerClient) poll(identity string, noWait bool) *api.WorkflowTask {
	c.t.Helper()
	a := c.do("POST", "/namespaces/default/workflow-tasks/poll", api.PollRequest{Identity: identity, NoWait: noWait})
	return decodeTask[api.WorkflowTask](c.t, "workflow task poll", a)
}

func decodeTask[T any](t *testing.T, what string, a httpAnswer) *T {
	t.Helper()
	switch {
	case a.err == nil && a.code == http.StatusNoContent:
		return nil
	case a.err != nil || a.code != http.StatusOK:
		t.Fatalf("%s: %s", what, a)
	}
	var task T
	if err := json.Unmarshal(a.body, &task); err != nil {
		t.Fatalf("%s: %v: %s", what, err, a.body)
	}
	return &task
}

// noStep fails the test if a step task waits in the default queue.
func (c *eagerClient) noStep(when string) {
	c.t.Helper()
	a := c.do("POST", "/namespaces/default/step-tasks/poll", api.PollRequest{Identity: "step-worker", NoWait: true})
	if st := decodeTask[api.StepTask](c.t, "step task poll", a); st != nil {
		c.t.Fatalf("a step task %s: %s", when, a.body)
	}
}

// history reads a workflow's history (one page: these are short).
func (c *eagerClient) history(workflowID string) []api.Event {
	c.t.Helper()
	a := c.do("GET", "/namespaces/default/workflows/"+workflowID+"/history", nil)
	var page api.HistoryPage
	if a.err != nil || a.code != http.StatusOK || json.Unmarshal(a.body, &page) != nil || len(page.NextPageToken) > 0 {
		c.t.Fatalf("history of %s: %s", workflowID, a)
	}
	return page.Events
}

// heldTask is a workflow task handed eagerly, and the call that brought
// its inputs.
type heldTask struct {
	t      *testing.T
	task   *api.WorkflowTask
	caller <-chan httpAnswer
}

// eagerHandOff polls as identity and, once the poll waits in the server,
// makes call in the background: its inputs go to the waiting poll before
// they are committed. It returns the task, which `is` must accept, and the
// call, which must not have been answered: it waits for the commit.
func (c *eagerClient) eagerHandOff(identity string, call func() httpAnswer, is func(*api.WorkflowTask) bool) *heldTask {
	c.t.Helper()
	polled := make(chan httpAnswer, 1)
	go func() {
		polled <- c.do("POST", "/namespaces/default/workflow-tasks/poll", api.PollRequest{Identity: identity})
	}()
	// The queue's pollers say when the poll waits (the server lists it in
	// the same step as it queues it).
	for deadline := time.Now().Add(10 * time.Second); !c.polling(identity); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the poll of %s is not listed as waiting after 10s", identity)
		}
	}
	caller := make(chan httpAnswer, 1)
	go func() { caller <- call() }()
	task := decodeTask[api.WorkflowTask](c.t, "the waiting poll", <-polled)
	if task == nil || !is(task) {
		c.t.Fatalf("the waiting poll got %+v", task)
	}
	select {
	case a := <-caller:
		c.t.Fatalf("the call that brought the inputs was answered before their commit: %s", a)
	default:
	}
	return &heldTask{t: c.t, task: task, caller: caller}
}

// polling reports whether a poll of identity waits on the default workflow
// queue.
func (c *eagerClient) polling(identity string) bool {
	c.t.Helper()
	a := c.do("GET", "/namespaces/default/queues", nil)
	var list api.QueueList
	if a.err != nil || a.code != http.StatusOK || json.Unmarshal(a.body, &list) != nil {
		c.t.Fatalf("queues: %s", a)
	}
	for _, q := range list.Queues {
		if q.Name == api.DefaultQueue && q.Kind == api.QueueKindWorkflow {
			return slices.ContainsFunc(q.Pollers, func(p api.PollerInfo) bool { return p.Identity == identity && p.Polling })
		}
	}
	return false
}

// callerGotNoAnswer, after the server was killed, fails the test unless
// the call that brought the held task's inputs ended without an answer.
func (h *heldTask) callerGotNoAnswer(what string) {
	h.t.Helper()
	select {
	case a := <-h.caller:
		if a.err == nil {
			h.t.Fatalf("%s was answered though the server died before its commit: %s", what, a)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%s still waits 10s after the server died", what)
	}
}
