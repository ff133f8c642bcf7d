package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// Triple runs Double three times in a row.
func Triple(ctx workflow.Context, n int) (int, error) {
	for range 3 {
		v, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Double, n).Get(ctx)
		if err != nil {
			return 0, err
		}
		n = v
	}
	return n, nil
}

// exchangeServer serves an engine on a SQLite file through a recorder;
// hide, when set, answers the routes it matches 404 as a server without
// them does.
func exchangeServer(t *testing.T, ctx context.Context, hide string) (*recorder, string) {
	t.Helper()
	eng := sqliteEngine(t, engine.Options{})
	h := server.New(eng, server.Options{PollWait: 2 * time.Second, Ready: eng.Ready})
	rec := &recorder{h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hide != "" && strings.HasSuffix(r.URL.Path, hide) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"code":"not_found","message":"no route for %s %s"}`, r.Method, r.URL.Path)
			return
		}
		h.ServeHTTP(w, r)
	})}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

// runTriples runs n Triple workflows at once through a worker on svc and
// checks their results.
func runTriples(t *testing.T, ctx context.Context, svc *remote.Service, n int) {
	t.Helper()
	w := worker.New(svc, worker.Options{})
	worker.RegisterWorkflow(w, Triple)
	worker.RegisterStep(w, Double)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	c := client.New(svc, client.Options{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := client.Start(ctx, c, Triple, i, client.StartOptions{ID: fmt.Sprintf("triple-%d", i)})
			if err != nil {
				t.Error(err)
				return
			}
			if got, err := r.Get(ctx); err != nil || got != 8*i {
				t.Errorf("triple-%d: %d, %v; want %d", i, got, err, 8*i)
			}
		})
	}
	wg.Wait()
}

// routesCalled counts the recorded requests by route suffix.
func routesCalled(rec *recorder, suffixes ...string) map[string]int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := map[string]int{}
	for _, e := range rec.log {
		for _, s := range suffixes {
			if strings.HasSuffix(e.path, s) {
				n[s]++
			}
		}
	}
	return n
}

var taskRoutes = []string{"/task-exchange", "/workflow-tasks/poll", "/workflow-tasks/complete", "/step-tasks/poll", "/step-tasks/complete"}

// TestTaskExchange: a remote worker's polls and reports go in task
// exchanges on a task stream (or POSTed, fewer requests than a plain
// worker's), with the same results as plain calls; a worker of a server
// without streams posts its exchanges, and one of a server without
// exchanges makes plain calls.
func TestTaskExchange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const runs, tasks = 40, 40 * 7 // each: 4 workflow tasks and 3 steps

	rec, url := exchangeServer(t, ctx, "")
	runTriples(t, ctx, remote.New(url, nil), runs)
	if n := routesCalled(rec, taskRoutes...); len(n) != 0 || rec.streams != 1 {
		t.Errorf("requests by route: %v, %d task streams; want one task stream alone", n, rec.streams)
	}

	rec, url = exchangeServer(t, ctx, "")
	runTriples(t, ctx, remote.NewWithOptions(url, remote.Options{PostedExchanges: true}), runs)
	n := routesCalled(rec, taskRoutes...)
	if n["/task-exchange"] == 0 || n["/workflow-tasks/poll"]+n["/workflow-tasks/complete"]+n["/step-tasks/poll"]+n["/step-tasks/complete"] != 0 || rec.streams != 0 {
		t.Errorf("requests by route: %v, %d streams; want task exchanges alone", n, rec.streams)
	}
	if n["/task-exchange"] >= 2*tasks {
		t.Errorf("%d task exchanges for %d tasks; want fewer than a plain worker's two calls per task", n["/task-exchange"], tasks)
	}
	t.Logf("%d tasks in %d task exchanges", tasks, n["/task-exchange"])
	checkExchanges(t, loadDoc(t, url), rec)

	// A closed service ends its stream and posts its exchanges from then on.
	rec, url = exchangeServer(t, ctx, "")
	svc := remote.New(url, nil)
	runTriples(t, ctx, svc, 5)
	svc.Close()
	runTriples(t, ctx, svc, 5)
	if n := routesCalled(rec, taskRoutes...); n["/task-exchange"] == 0 || rec.streams != 1 {
		t.Errorf("after Close: requests by route %v, %d task streams; want the one stream, then exchanges posted", n, rec.streams)
	}

	// A server without streams gets the exchanges POSTed.
	rec, url = exchangeServer(t, ctx, "/task-stream")
	runTriples(t, ctx, remote.New(url, nil), 5)
	if n := routesCalled(rec, taskRoutes...); n["/task-exchange"] == 0 || n["/step-tasks/complete"] != 0 {
		t.Errorf("a server without task streams: requests by route %v", n)
	}

	// A worker told to make plain calls, and one of a server without
	// exchanges, make plain calls.
	rec, url = exchangeServer(t, ctx, "")
	runTriples(t, ctx, remote.NewWithOptions(url, remote.Options{PlainTaskCalls: true}), 5)
	if n := routesCalled(rec, taskRoutes...); n["/task-exchange"] != 0 || n["/step-tasks/complete"] != 15 || rec.streams != 0 {
		t.Errorf("with PlainTaskCalls: requests by route %v, %d streams", n, rec.streams)
	}
	rec, url = exchangeServer(t, ctx, "/task-exchange")
	runTriples(t, ctx, remote.NewWithOptions(url, remote.Options{PostedExchanges: true}), 5)
	if n := routesCalled(rec, taskRoutes...); n["/task-exchange"] == 0 || n["/step-tasks/complete"] != 15 {
		t.Errorf("a server without exchanges: requests by route %v", n)
	}
}

// TestTaskExchangeReports: each report of an exchange has its own outcome
// (one that fails does not fail the others or the call), and a take
// without a task waits for one only when Wait says so.
func TestTaskExchangeReports(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, url := exchangeServer(t, ctx, "")
	svc := remote.NewWithOptions(url, remote.Options{PlainTaskCalls: true})
	if _, err := svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: "r1", WorkflowType: "Triple", Input: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	call := func(body string) (int, server.ExchangeAnswer, time.Duration) {
		t.Helper()
		begun := time.Now()
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/api/v1/namespaces/default/task-exchange", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out server.ExchangeAnswer
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out, time.Since(begun)
	}
	// The run's first workflow task, taken at once.
	code, out, _ := call(`{"takes":[{"kind":"workflow","max":5}]}`)
	if code != 200 || len(out.Taken) != 1 || len(out.Taken[0].WorkflowTasks) != 1 {
		t.Fatalf("take: %d %+v", code, out)
	}
	wt := out.Taken[0].WorkflowTasks[0]
	// Its completion beside a report with a token of nothing: the good one
	// lands, the bad one says why; the step the completion scheduled comes
	// back in the same answer.
	tok, _ := json.Marshal(wt.Token)
	body := fmt.Sprintf(`{"complete_workflow_tasks":[{"token":%s,"commands":[{"type":"ScheduleStep","seq":1,"name":"Double","payload":1}]}],
		"complete_steps":[{"token":"AAAA"}],"takes":[{"kind":"step","max":5}]}`, tok)
	code, out, _ = call(body)
	if code != 200 || len(out.CompleteWorkflowTasks) != 1 || out.CompleteWorkflowTasks[0].Err() != nil || out.CompleteWorkflowTasks[0].LastEventID == 0 {
		t.Fatalf("completion: %d %+v", code, out)
	}
	if len(out.CompleteSteps) != 1 || out.CompleteSteps[0].Err() == nil {
		t.Errorf("a report with a bad token: %+v; want its own error", out.CompleteSteps)
	}
	if len(out.Taken) != 1 || len(out.Taken[0].StepTasks) != 1 || out.Taken[0].StepTasks[0].Name != "Double" {
		t.Errorf("the step the completion scheduled: %+v; want it taken in the same answer", out.Taken)
	}
	// Nothing ready: without wait the answer comes at once, with wait after
	// the poll wait (2 s).
	if code, out, took := call(`{"takes":[{"kind":"workflow","max":1}]}`); code != 200 || len(out.Taken[0].WorkflowTasks) != 0 || took > time.Second {
		t.Errorf("no task, no wait: %d %+v after %s", code, out, took)
	}
	if code, out, took := call(`{"takes":[{"kind":"workflow","max":1}],"wait":true}`); code != 200 || len(out.Taken[0].WorkflowTasks) != 0 || took < time.Second {
		t.Errorf("no task, wait: %d %+v after %s; want the poll wait", code, out, took)
	}
	if code, _, _ := call(`{"takes":[{"kind":"timer","max":1}]}`); code != 400 {
		t.Errorf("a take of an unknown kind: %d, want 400", code)
	}
}
