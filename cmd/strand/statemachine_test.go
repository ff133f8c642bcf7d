package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/statemachine"
	"github.com/strandhq/strand/store"
)

// TestStateMachineWorkerKilled: the worker running a state's method is
// SIGKILLed; the instance records a recovery action and the method runs
// again on another worker.
func TestStateMachineWorkerKilled(t *testing.T) {
	bin := binaries(t, "testworker")
	testdb.Backends(t, func(t *testing.T, st store.Store) { stateMachineWorkerKilled(t, bin, st) })
}

func stateMachineWorkerKilled(t *testing.T, bin string, st store.Store) {
	url := systemServerOn(t, st)
	effects := filepath.Join(t.TempDir(), "effects")
	first, _ := process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url, "--effects", effects, "--identity", "first")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := statemachine.NewClient(remote.New(url, nil), "")
	id, err := c.Create(ctx, statemachine.CreateRequest{Type: "delivery", ExternalID: "parcel-1", Vars: map[string]string{"sleep": "3s"}, ExecutorGroup: "statemachines"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, _ := os.ReadFile(effects); strings.Count(string(b), "deliver "+id) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the state never started")
		}
	}
	first.Process.Kill()
	first.Wait()
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url, "--effects", effects, "--identity", "second")
	var inst *statemachine.Instance
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		inst, err = c.Get(ctx, id)
		if err == nil && inst.Status == statemachine.StatusFinished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not finished after the worker was killed: %+v, %v", inst, err)
		}
	}
	var types []string
	for _, a := range inst.Actions {
		types = append(types, string(a.Type))
	}
	if got := strings.Join(types, " "); got != "recovery stateExecution" || inst.State != "delivered" {
		t.Fatalf("actions %s, state %s", got, inst.State)
	}
	if b, _ := os.ReadFile(effects); strings.Count(string(b), "deliver "+id) != 2 {
		t.Fatalf("the method ran %d times; want twice: %s", strings.Count(string(b), "deliver "+id), b)
	}
}

// TestStateMachineVerbs drives strand sm against a server and the test
// worker, which defines "delivery".
func TestStateMachineVerbs(t *testing.T) {
	url := systemServer(t)
	bin := binaries(t, "testworker")
	worker, _ := process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url)
	cli := func(args ...string) (string, int) {
		t.Helper()
		return run(t, append(args, "--server", url)...)
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	if out, code := cli("sm", "definitions"); code != 0 || !strings.Contains(out, "delivery") {
		t.Fatalf("definitions: exit %d: %s", code, out)
	}
	if out, _ := cli("sm", "definitions", "delivery"); !strings.Contains(out, "deliver") || !strings.Contains(out, "delivered") {
		t.Fatalf("definition: %s", out)
	}
	if out, code := cli("sm", "create", "delivery", "--external-id", "p-1", "--var", "sleep=0s", "--business-key", "order-9", "--executor-group", "statemachines", "--priority", "1"); code != 0 || !strings.Contains(out, "created delivery/p-1") {
		t.Fatalf("create: exit %d: %s", code, out)
	}
	eventually("delivered in the list", func() bool {
		out, _ := cli("sm", "list", "--type", "delivery", "--state", "delivered", "--status", "finished")
		return strings.Contains(out, "delivery/p-1") && strings.Contains(out, "order-9")
	})
	if out, _ := cli("sm", "show", "delivery/p-1"); !strings.Contains(out, "finished in delivered") || !strings.Contains(out, "stateExecution") ||
		!strings.Contains(out, "executor group statemachines, priority 1") {
		t.Fatalf("show: %s", out)
	}
	// Bad input changes nothing.
	if out, code := cli("sm", "create", "delivery", "--external-id", "p-1"); code == 0 || !strings.Contains(out, `external id "p-1"`) {
		t.Fatalf("duplicate external id: exit %d: %s", code, out)
	}
	if out, code := cli("sm", "create", "delivery", "--state", "lost"); code != 2 || !strings.Contains(out, `no state "lost"`) {
		t.Fatalf("unknown state: exit %d: %s", code, out)
	}
	if out, code := cli("sm", "create", "delivery", "--priority", "9"); code != 2 || !strings.Contains(out, "priority") {
		t.Fatalf("priority 9: exit %d: %s", code, out)
	}
	if out, code := cli("sm", "create", "delivery", "--state", "delivered"); code != 2 || !strings.Contains(out, `an instance begins in a start state ("deliver")`) {
		t.Fatalf("created in an end state: exit %d: %s", code, out)
	}
	if out, code := cli("sm", "list", "--status", "executing"); code != 2 || !strings.Contains(out, "created, inProgress, manual, finished") {
		t.Fatalf("list --status executing: exit %d: %s", code, out)
	}
	if out, code := cli("sm", "wakeup", "delivery/p-1", "--from", "deliver"); code == 0 || strings.Contains(out, "woke delivery") || !strings.Contains(out, `not woken: it finished in "delivered"`) {
		t.Fatalf("waking a finished instance: exit %d: %s", code, out)
	}
	// Errors speak of the user's things, without the engine's prefixes.
	for _, args := range [][]string{{"sm", "create", "delivery", "--state", "lost"}, {"sm", "show", "delivery/nobody"}} {
		out, _ := cli(args...)
		if strings.Contains(out, "store:") || strings.Contains(out, "workflow not found") {
			t.Errorf("%v: %s", args, out)
		}
	}
	// Waiting for its activation, it is moved on by an update.
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	cli("sm", "create", "delivery", "--external-id", "p-2", "--activation", later, "--executor-group", "statemachines")
	eventually("p-2 created", func() bool {
		out, _ := cli("sm", "show", "delivery/p-2")
		return strings.Contains(out, "created in deliver")
	})
	if out, code := cli("sm", "wakeup", "delivery/p-2", "--from", "validate"); code == 0 || strings.Contains(out, "woke delivery") ||
		!strings.Contains(out, `not woken: it is in "deliver", not in "validate"`) {
		t.Fatalf("waking from another state: exit %d: %s", code, out)
	}
	note := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(note, []byte("left with the neighbour"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := cli("sm", "update", "delivery/p-2", "--state", "delivered", "--reason", "picked up at the depot", "--var", "note=@"+note); code != 0 {
		t.Fatalf("update: exit %d: %s", code, out)
	}
	eventually("p-2 finished", func() bool {
		out, _ := cli("sm", "show", "delivery/p-2")
		return strings.Contains(out, "finished in delivered") && strings.Contains(out, "externalChange") && strings.Contains(out, "picked up at the depot") &&
			strings.Contains(out, "note = left with the neighbour")
	})
	if out, code := cli("sm", "update", "delivery/p-2", "--var", "note=@"+note+".missing"); code != 2 || !strings.Contains(out, "note.txt.missing") {
		t.Fatalf("update from a missing file: exit %d: %s", code, out)
	}
	// The executors: the test worker polls the executor group.
	if out, code := cli("sm", "executors"); code != 0 || !strings.Contains(out, "EXECUTOR GROUP") || !strings.Contains(out, "statemachines") {
		t.Fatalf("executors: exit %d: %s", code, out)
	}
	eventually("the stats", func() bool {
		out, _ := cli("sm", "stats", "delivery")
		return strings.Contains(out, "delivered  finished  2")
	})

	// An instance no worker picks up (no worker polls its executor group)
	// is read as created in its start state from the moment the create
	// returns, and listed and counted as created.
	if out, code := cli("sm", "create", "delivery", "--external-id", "idle-1", "--executor-group", "nobody"); code != 0 {
		t.Fatalf("create idle-1: exit %d: %s", code, out)
	}
	if out, code := cli("sm", "show", "delivery/idle-1"); code != 0 || !strings.Contains(out, "created in deliver") || !strings.Contains(out, "executor group nobody") {
		t.Fatalf("show idle-1: exit %d: %s", code, out)
	}
	eventually("idle-1 listed as created", func() bool {
		out, _ := cli("sm", "list", "--type", "delivery", "--status", "created")
		return strings.Contains(out, "delivery/idle-1") && strings.Contains(out, "deliver")
	})
	createdCount := regexp.MustCompile(`(?m)^deliver\s+created\s+1\b`)
	eventually("idle-1 counted as created", func() bool {
		out, _ := cli("sm", "stats", "delivery")
		return createdCount.MatchString(out)
	})

	// An instance waiting in a manual state is read, with its actions and
	// variables, after its worker stopped: from the store, not from a
	// worker.
	cli("sm", "create", "creditApplication", "--external-id", "c7", "--var", "amount=5000", "--executor-group", "statemachines")
	eventually("c7 in its manual state", func() bool {
		out, _ := cli("sm", "show", "creditApplication/c7")
		return strings.Contains(out, "manual in acceptCreditApplication")
	})
	worker.Process.Kill()
	worker.Wait()
	out, code := cli("sm", "show", "creditApplication/c7")
	if code != 0 || !strings.Contains(out, "manual in acceptCreditApplication") || !strings.Contains(out, "stateExecution") ||
		!strings.Contains(out, "applicationId = CA-c7") || !strings.Contains(out, "amount = 5000") {
		t.Fatalf("show c7 with its worker stopped: exit %d: %s", code, out)
	}
}

// TestStateMachineHTTP drives the state machine routes as the console
// does: create, read (the id escaped), update, wake up, stats.
func TestStateMachineHTTP(t *testing.T) {
	url := systemServer(t)
	bin := binaries(t, "testworker")
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	base := "/api/v1/namespaces/default/statemachine-instances"
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if code, out := do("POST", base, `{"type": "delivery", "external_id": "h-1", "executor_group": "statemachines", "activation": "`+later+`"}`); code != 200 || !strings.Contains(out, `"delivery/h-1"`) {
		t.Fatalf("create: %d %s", code, out)
	}
	if code, out := do("POST", base, `{"type": "delivery", "external_id": "h-1"}`); code != 409 {
		t.Fatalf("duplicate: %d %s", code, out)
	}
	if code, out := do("POST", base, `{"type": "delivery", "state": "lost"}`); code != 400 || !strings.Contains(out, "invalid_argument") {
		t.Fatalf("unknown state: %d %s", code, out)
	}
	if code, out := do("POST", base, `{"type": "delivery", "vars": {"a": 1}}`); code != 400 {
		t.Fatalf("bad variable JSON: %d %s", code, out)
	}
	one := base + "/delivery%2Fh-1"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, out := do("GET", one, ""); code == 200 && strings.Contains(out, `"status":"created"`) {
			break
		}
		if time.Now().After(deadline) {
			code, out := do("GET", one, "")
			t.Fatalf("get: %d %s", code, out)
		}
	}
	if code, out := do("PUT", one, `{"state": "nowhere"}`); code != 400 {
		t.Fatalf("update to an unknown state: %d %s", code, out)
	}
	if code, out := do("POST", one+"/wakeup", `{"states": ["deliver"]}`); code != 200 {
		t.Fatalf("wakeup: %d %s", code, out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, out := do("GET", one, ""); code == 200 && strings.Contains(out, `"status":"finished"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wake-up did not run the instance")
		}
	}
	if code, out := do("GET", "/api/v1/statemachines/delivery", ""); code != 200 || !strings.Contains(out, `"transitions"`) {
		t.Fatalf("definition: %d %s", code, out)
	}
	if code, out := do("GET", "/api/v1/statemachines/delivery/versions/1", ""); code != 200 || !strings.Contains(out, `"version":1,`) || !strings.Contains(out, `"transitions"`) {
		t.Fatalf("definition version 1: %d %s", code, out)
	}
	if code, out := do("GET", "/api/v1/statemachines/delivery/versions/99", ""); code != 404 || !strings.Contains(out, "no version 99") {
		t.Fatalf("definition version 99: %d %s", code, out)
	}
	if code, out := do("GET", "/api/v1/statemachines/delivery/versions/x", ""); code != 400 {
		t.Fatalf("definition version x: %d %s", code, out)
	}
	// The executors: this node, and the test worker in its group.
	if code, out := do("GET", "/api/v1/namespaces/default/statemachine-executors", ""); code != 200 || !strings.Contains(out, `"group":"statemachines"`) ||
		!strings.Contains(out, `"nodes":[{"id":`) || !strings.Contains(out, `"executors":[{"identity":`) {
		t.Fatalf("executors: %d %s", code, out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, out := do("GET", "/api/v1/namespaces/default/statemachines/delivery/stats", ""); code == 200 && strings.Contains(out, `"state":"delivered","status":"finished","count":1`) {
			break
		}
		if time.Now().After(deadline) {
			code, out := do("GET", "/api/v1/namespaces/default/statemachines/delivery/stats", "")
			t.Fatalf("stats: %d %s", code, out)
		}
	}
}
