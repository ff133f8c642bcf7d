package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/store"
)

// tripPlan is the test worker's Trip saga input (internal/testworker).
type tripPlan struct {
	Fail       string         `json:"fail,omitempty"`
	Busy       map[string]int `json:"busy,omitempty"`
	UndoBroken string         `json:"undo_broken,omitempty"`
	UndoSleep  string         `json:"undo_sleep,omitempty"`
}

func startTrip(t *testing.T, ctx context.Context, svc api.Service, id string, p tripPlan) {
	t.Helper()
	in, _ := json.Marshal(p)
	if _, err := svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: id, WorkflowType: "Trip", Queue: "sagas", Input: in, RequestID: "start-" + id}); err != nil {
		t.Fatal(err)
	}
}

// waitSaga polls a saga's record until cond holds.
func waitSaga(t *testing.T, ctx context.Context, c *saga.Client, id, what string, cond func(*saga.Record) bool) *saga.Record {
	t.Helper()
	var rec *saga.Record
	var err error
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		rec, err = c.Get(ctx, id)
		if err == nil && cond(rec) {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out waiting for %s: %+v, %v", id, what, rec, err)
		}
	}
}

// TestSagaWorkerKilled: the worker running a compensation is SIGKILLed;
// the compensation runs again on another worker and completes once in
// the saga's history.
func TestSagaWorkerKilled(t *testing.T) {
	bin := binaries(t, "testworker")
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		url := systemServerOn(t, st)
		effects := filepath.Join(t.TempDir(), "effects")
		first, _ := process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url, "--effects", effects, "--identity", "first")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		svc := remote.New(url, nil)
		c := saga.NewClient(svc, "")
		// The car fails for good: hotel and flight are undone, each undo
		// taking 3 s.
		startTrip(t, ctx, svc, "trip-1", tripPlan{Fail: "car", UndoSleep: "3s"})
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if b, _ := os.ReadFile(effects); strings.Contains(string(b), "cancel-start hotel") {
				break
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(effects)
				t.Fatalf("the hotel's compensation never started: %s", b)
			}
		}
		first.Process.Kill()
		first.Wait()
		process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url, "--effects", effects, "--identity", "second")
		rec := waitSaga(t, ctx, c, "trip-1", "compensated", func(r *saga.Record) bool { return r.State == saga.StateCompensated })
		b, _ := os.ReadFile(effects)
		if n := strings.Count(string(b), "cancel-start hotel"); n != 2 || strings.Count(string(b), "cancel-end hotel") != 1 {
			t.Fatalf("the hotel's compensation started %d times and ended %d times; want 2 and 1:\n%s", n, strings.Count(string(b), "cancel-end hotel"), b)
		}
		// In history: the compensation's first attempt timed out, the
		// second completed, once.
		evs, err := client.New(svc, client.Options{}).AllHistory(ctx, "trip-1", "")
		if err != nil {
			t.Fatal(err)
		}
		completed := 0
		for _, ev := range evs {
			if ev.Type == api.EventStepCompleted && ev.Name == "cancel" {
				completed++
			}
		}
		var hotel []string
		for _, tr := range rec.Tryouts {
			if tr.Step == "hotel" && tr.Phase == saga.PhaseCompensation {
				hotel = append(hotel, fmt.Sprintf("%d:%s", tr.Attempt, tr.Outcome))
			}
		}
		if completed != 2 || fmt.Sprint(hotel) != "[1:retrying 2:succeeded]" {
			t.Fatalf("compensations completed in history: %d (want 2: hotel and flight); the hotel's tryouts %v", completed, hotel)
		}
	})
}

// TestSagaVerbs drives strand saga and the saga routes against a server
// and the test worker: list, show, tryouts, an operator's decisions, a
// batch, terminate.
func TestSagaVerbs(t *testing.T) {
	url := systemServer(t)
	bin := binaries(t, "testworker")
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc := remote.New(url, nil)
	c := saga.NewClient(svc, "")
	cli := func(args ...string) (string, int) {
		t.Helper()
		return run(t, append(args, "--server", url)...)
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	startTrip(t, ctx, svc, "trip-ok", tripPlan{Busy: map[string]int{"hotel": 2}})
	startTrip(t, ctx, svc, "trip-stuck-1", tripPlan{Fail: "tickets", UndoBroken: "car"})
	startTrip(t, ctx, svc, "trip-stuck-2", tripPlan{Fail: "tickets", UndoBroken: "car"})
	waitSaga(t, ctx, c, "trip-ok", "completed", func(r *saga.Record) bool { return r.State == saga.StateCompleted })
	for _, id := range []string{"trip-stuck-1", "trip-stuck-2"} {
		waitSaga(t, ctx, c, id, "compensation_failed", func(r *saga.Record) bool { return r.State == saga.StateCompensationFailed })
	}

	eventually("the stuck sagas listed", func() bool {
		out, _ := cli("saga", "list", "--state", "compensation_failed", "--since", "1h")
		return strings.Contains(out, "trip-stuck-1") && strings.Contains(out, "trip-stuck-2") && !strings.Contains(out, "trip-ok")
	})
	// row is the fields of the line of out that starts with first.
	row := func(out, first string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == first {
				return strings.Join(f, " ")
			}
		}
		return ""
	}
	if out, code := cli("saga", "show", "trip-ok"); code != 0 || !strings.Contains(out, "trip-ok (saga trip): completed") || row(out, "hotel") != "hotel 1 completed 3 none 0" {
		t.Fatalf("show: exit %d: %s", code, out)
	}
	if out, _ := cli("saga", "tryouts", "trip-ok"); strings.Count(out, "retrying") != 2 || !strings.Contains(out, "the booking service is busy") {
		t.Fatalf("tryouts: %s", out)
	}
	if out, _ := cli("saga", "show", "trip-stuck-1"); !strings.HasPrefix(row(out, "car"), "car 1 completed 1 failed 3 car: the cancellation service refused") {
		t.Fatalf("show stuck: %s", out)
	}
	// Bad decisions change nothing.
	if out, code := cli("saga", "skip", "trip-stuck-1", "--step", "flight"); code == 0 || !strings.Contains(out, "failed_precondition") && !strings.Contains(out, "only a failed compensation") {
		t.Fatalf("skip a step whose compensation did not fail: exit %d: %s", code, out)
	}
	if out, code := cli("saga", "retry", "trip-ok"); code == 0 || !strings.Contains(out, "only a saga in compensation_failed") {
		t.Fatalf("retry a completed saga: exit %d: %s", code, out)
	}
	if out, code := cli("saga", "list", "--state", "lost"); code != 2 {
		t.Fatalf("list --state lost: exit %d: %s", code, out)
	}
	// One by one: the car's cancellation is marked done by hand; the saga
	// goes on undoing the hotel and flight.
	if out, code := cli("saga", "done", "trip-stuck-1", "--step", "car", "--note", "refunded by phone"); code != 0 {
		t.Fatalf("done: exit %d: %s", code, out)
	}
	rec := waitSaga(t, ctx, c, "trip-stuck-1", "compensated", func(r *saga.Record) bool { return r.State == saga.StateCompensated })
	if rec.Steps[2].Name != "car" || rec.Steps[2].Compensation.State != saga.PhaseDone || len(rec.Operators) != 1 || rec.Operators[0].Note != "refunded by phone" {
		t.Fatalf("after done: %+v, %+v", rec.Steps, rec.Operators)
	}
	// In a batch: every stuck trip's failed compensations skipped.
	if out, code := cli("saga", "batch", "--action", "skip", "--name", "trip", "--note", "written off"); code != 0 || !strings.Contains(out, "started batch") {
		t.Fatalf("batch: exit %d: %s", code, out)
	}
	rec = waitSaga(t, ctx, c, "trip-stuck-2", "compensated", func(r *saga.Record) bool { return r.State == saga.StateCompensated })
	if rec.Steps[2].Compensation.State != saga.PhaseSkipped {
		t.Fatalf("after the batch: %+v", rec.Steps)
	}

	// Over HTTP, as the console does.
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
	base := "/api/v1/namespaces/default/sagas"
	if code, out := do("GET", base+"/trip-ok", ""); code != 200 || !strings.Contains(out, `"state":"completed"`) || !strings.Contains(out, `"tryouts":[`) {
		t.Fatalf("get: %d %s", code, out)
	}
	eventually("the compensated sagas listed", func() bool {
		code, out := do("GET", base+"?state=compensated&name=trip", "")
		return code == 200 && strings.Contains(out, "trip-stuck-1") && strings.Contains(out, "trip-stuck-2")
	})
	if code, out := do("GET", base+"?state=lost", ""); code != 400 {
		t.Fatalf("list a bad state: %d %s", code, out)
	}
	if code, out := do("POST", base+"/trip-ok/resolve", `{"action": "retry"}`); code != 412 && code != 409 {
		t.Fatalf("resolve a completed saga: %d %s", code, out)
	}
	if code, out := do("GET", base+"/nothing", ""); code != 404 {
		t.Fatalf("get an unknown saga: %d %s", code, out)
	}
	// Disable, enable, terminate.
	startTrip(t, ctx, svc, "trip-slow", tripPlan{Busy: map[string]int{"flight": 1000}})
	waitSaga(t, ctx, c, "trip-slow", "in progress", func(r *saga.Record) bool { return r.State == saga.StateInProgress })
	if code, out := do("POST", base+"/trip-slow/disable", `{"reason": "maintenance"}`); code != 200 {
		t.Fatalf("disable: %d %s", code, out)
	}
	waitSaga(t, ctx, c, "trip-slow", "disabled", func(r *saga.Record) bool { return r.State == saga.StateDisabled })
	// Every documented state is a filter: disabled lists the paused ones.
	for _, st := range saga.States {
		if out, code := cli("saga", "list", "--state", string(st)); code != 0 {
			t.Fatalf("list --state %s: exit %d: %s", st, code, out)
		}
	}
	eventually("the disabled saga listed", func() bool {
		out, code := cli("saga", "list", "--state", "disabled")
		if code != 0 || strings.Contains(out, "trip-ok") || strings.Contains(out, "trip-stuck") {
			t.Fatalf("list --state disabled: exit %d: %s", code, out)
		}
		return strings.HasPrefix(row(out, "trip-slow"), "trip-slow trip disabled running")
	})
	if code, out := do("GET", base+"?state=disabled&name=trip", ""); code != 200 || !strings.Contains(out, `"workflow_id":"trip-slow"`) || strings.Contains(out, "trip-ok") {
		t.Fatalf("list disabled sagas over HTTP: %d %s", code, out)
	}
	if code, out := do("POST", base+"/trip-slow/enable", `{}`); code != 200 {
		t.Fatalf("enable: %d %s", code, out)
	}
	if out, code := cli("saga", "terminate", "trip-slow", "--reason", "customer left"); code != 0 {
		t.Fatalf("terminate: exit %d: %s", code, out)
	}
	waitSaga(t, ctx, c, "trip-slow", "terminated", func(r *saga.Record) bool { return r.State == saga.StateTerminated })
}
