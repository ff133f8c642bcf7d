package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

func Double(ctx context.Context, n int) (int, error) { return 2 * n, nil }

// Order doubles its input in a step, waits for an "approve" signal and
// answers a "stage" query meanwhile.
func Order(ctx workflow.Context, n int) (int, error) {
	stage := "doubling"
	workflow.SetQueryHandler(ctx, "stage", func(struct{}) (string, error) { return stage, nil })
	v, err := workflow.ExecuteStep(ctx, workflow.StepOptions{}, Double, n).Get(ctx)
	if err != nil {
		return 0, err
	}
	stage = "waiting"
	by, _ := workflow.GetSignalChannel[int](ctx, "approve").Receive(ctx)
	return v + by, nil
}

// TestRemoteWorkerAndClient runs a worker and a client over HTTP against an
// engine on each SQL backend: the same code as embedded.
func TestRemoteWorkerAndClient(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": testdb.SQLite, "postgres": testdb.Postgres} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			reg := prometheus.NewRegistry()
			eng, err := engine.Open(ctx, open(t), engine.Options{Metrics: reg})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			rec := &recorder{h: server.New(eng, server.Options{PollWait: time.Second, Registry: reg, Ready: eng.Ready})}
			srv := httptest.NewServer(rec)
			defer srv.Close()

			svc := remote.New(srv.URL, nil)
			w := worker.New(svc, worker.Options{})
			worker.RegisterWorkflow(w, Order)
			worker.RegisterStep(w, Double)
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer w.Stop(context.Background())
			c := client.New(svc, client.Options{})

			r, err := client.Start(ctx, c, Order, 20, client.StartOptions{ID: "order-1"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Start(ctx, c, Order, 20, client.StartOptions{ID: "order-1"}); !errors.Is(err, api.ErrAlreadyStarted) {
				t.Fatalf("second start: %v", err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				stage, err := client.Query[string](ctx, c, "order-1", "", "stage", struct{}{})
				if err == nil && stage == "waiting" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 20s the run's stage is %q (%v); want waiting", stage, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := c.Signal(ctx, "order-1", "", "approve", 2); err != nil {
				t.Fatal(err)
			}
			if got, err := r.Get(ctx); err != nil || got != 42 {
				t.Fatalf("got %d, %v", got, err)
			}
			d, err := c.Describe(ctx, "order-1", "")
			if err != nil || d.Status != store.StatusCompleted {
				t.Fatalf("describe: %+v, %v", d, err)
			}
			evs, err := c.AllHistory(ctx, "order-1", "")
			if err != nil || len(evs) == 0 || evs[len(evs)-1].Type != api.EventWorkflowCompleted {
				t.Fatalf("history: %d events, %v", len(evs), err)
			}
			for {
				n, err := c.Count(ctx, api.ListRequest{WorkflowID: "order-1", Statuses: []store.RunStatus{store.StatusCompleted}})
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the count of completed runs is %d; want 1 (waited until 20s after the start)", n)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := c.Signal(ctx, "no-such", "", "approve", 1); !errors.Is(err, api.ErrNotFound) {
				t.Fatalf("signal to missing workflow: %v", err)
			}
			if err := c.Terminate(ctx, "order-1", "", "again"); !errors.Is(err, api.ErrRunClosed) {
				t.Fatalf("terminate closed run: %v", err)
			}
			for path, want := range map[string][]string{
				"/healthz": {`"ok"`},
				"/readyz":  {`"ready"`},
				"/metrics": {`strand_workflows_closed_total{status="completed"} 1`, "strand_store_commit_seconds_count", "strand_store_commit_runs_bucket",
					`strand_api_requests_total{code="200",route="POST /api/v1/namespaces/{namespace}/workflows"}`, "strand_task_sync_matched_total", "strand_shards_owned"},
			} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				for _, w := range want {
					if resp.StatusCode != 200 || !strings.Contains(string(body), w) {
						t.Errorf("%s: %d, %q not in\n%s", path, resp.StatusCode, w, body)
					}
				}
			}
			_, err = svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: "x", WorkflowType: "Order", Priority: 9})
			var ia *store.InvalidArgumentError
			if !errors.As(err, &ia) || ia.Field != "priority" {
				t.Fatalf("bad priority: %v", err)
			}
			// Nodes and definitions.
			nodes, err := svc.ListNodes(ctx, false)
			if err != nil || len(nodes) != 1 || nodes[0].PID == 0 {
				t.Fatalf("nodes: %+v, %v", nodes, err)
			}
			d1, err := svc.PutDefinition(ctx, api.Definition{Type: "dag", Body: []byte(`{"steps":1}`)})
			if err != nil || d1.Version != 1 {
				t.Fatalf("put definition: %+v, %v", d1, err)
			}
			d2, err := svc.PutDefinition(ctx, api.Definition{Type: "dag", Body: []byte(`{"steps":2}`)})
			if err != nil || d2.Version != 2 {
				t.Fatalf("second version: %+v, %v", d2, err)
			}
			if got, err := svc.GetDefinition(ctx, "dag", 0); err != nil || string(got.Body) != `{"steps":2}` {
				t.Fatalf("latest: %+v, %v", got, err)
			}
			if all, err := svc.ListDefinitions(ctx, "dag"); err != nil || len(all) != 2 {
				t.Fatalf("list definitions: %d, %v", len(all), err)
			}
			if _, err := svc.PutDefinition(ctx, api.Definition{Type: "dag", Version: 1, Body: []byte(`{"other":true}`)}); !errors.Is(err, api.ErrConflict) {
				t.Fatalf("conflicting version: %v", err)
			}
			if _, err := svc.GetDefinition(ctx, "nope", 0); !errors.Is(err, api.ErrNotFound) {
				t.Fatalf("missing definition: %v", err)
			}
			// Every answer of this run fits the OpenAPI document.
			w.Stop(context.Background())
			checkExchanges(t, loadDoc(t, srv.URL), rec)
			rec.mu.Lock()
			ok := 0
			for _, e := range rec.log {
				if e.status == 200 {
					ok++
				}
			}
			rec.mu.Unlock()
			if ok < 10 {
				t.Fatalf("only %d successful exchanges checked", ok)
			}
		})
	}
}

// TestBadRequests: malformed bodies and unknown routes get a 4xx with a
// JSON error code, and change nothing.
func TestBadRequests(t *testing.T) {
	ctx := context.Background()
	eng := sqliteEngine(t, engine.Options{})
	srv := httptest.NewServer(server.New(eng, server.Options{MaxBody: 1 << 10}))
	defer srv.Close()
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/api/v1/namespaces/default/workflows", `{"workflow_id": "a"`, 400, server.CodeInvalidArgument},
		{"POST", "/api/v1/namespaces/default/workflows", `{"workflow_id": "a", "nope": 1}`, 400, server.CodeInvalidArgument},
		{"POST", "/api/v1/namespaces/default/workflows", `{"workflow_id": "a", "workflow_type": "T"} {}`, 400, server.CodeInvalidArgument},
		{"POST", "/api/v1/namespaces/default/workflows", ``, 400, server.CodeInvalidArgument},
		{"POST", "/api/v1/namespaces/default/workflows", `{"workflow_id": "` + strings.Repeat("x", 2000) + `"}`, 413, server.CodePayloadTooLarge},
		{"POST", "/api/v1/namespaces/nope/workflows", `{"workflow_id": "a", "workflow_type": "T"}`, 404, server.CodeNamespaceNotFound},
		{"GET", "/api/v1/namespaces/default/workflows/missing", ``, 404, server.CodeNotFound},
		{"POST", "/api/v1/namespaces/default/workflows", `{"workflow_id": "a", "workflow_type": "T", "priority": 9}`, 400, server.CodeInvalidArgument},
		{"GET", "/api/v1/namespaces/default/workflows/missing/history?page_size=-1", ``, 400, server.CodeInvalidArgument},
		{"GET", "/api/v1/namespaces/default/workflows/missing/result?wait=soon", ``, 400, server.CodeInvalidArgument},
		{"POST", "/api/v1/workflow-tasks/complete", `{"token": "bm9wZQ=="}`, 404, server.CodeTaskNotFound}, // a token not handed out names no task
		{"POST", "/api/v1/step-tasks/complete", `{"token": "e30="}`, 404, server.CodeTaskNotFound},
		{"POST", "/api/v1/step-tasks/complete", `{}`, 400, server.CodeInvalidArgument},
		{"POST", "/api/v1/namespaces/default/workflow-tasks/poll", `null`, 400, server.CodeInvalidArgument},
		{"POST", "/api/v1/step-tasks/complete", `{"token": "` + base64.StdEncoding.EncodeToString([]byte(`{"run":{"ns":"default","wf":"w","run":"r"},"seq":1,"attempt":1}`)) + `"}`, 404, server.CodeTaskNotFound},
		{"GET", "/api/v1/nothing-here", ``, 404, server.CodeNotFound},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e server.Error
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || e.Code != tc.code || e.Message == "" {
			t.Errorf("%s %s %.40q: %d %+v, want %d %s", tc.method, tc.path, tc.body, resp.StatusCode, e, tc.status, tc.code)
		}
		// The message speaks of the request, not of the engine's
		// packages: no "store:" prefix, no "workflow not found" for
		// something that is not a workflow.
		if strings.Contains(e.Message, "store:") || strings.Contains(e.Message, "workflow not found") {
			t.Errorf("%s %s %.40q: message %q", tc.method, tc.path, tc.body, e.Message)
		}
	}
	if n, _ := eng.CountWorkflows(ctx, api.ListRequest{}); n != 0 {
		t.Fatalf("%d workflows after bad requests", n)
	}
}

// TestPollRate: polls above the configured rate get 429 rate_limited.
func TestPollRate(t *testing.T) {
	eng := sqliteEngine(t, engine.Options{})
	srv := httptest.NewServer(server.New(eng, server.Options{PollRate: 1, PollWait: 10 * time.Millisecond}))
	defer srv.Close()
	limited := 0
	for range 3 {
		resp, err := http.Post(srv.URL+"/api/v1/namespaces/default/step-tasks/poll", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var e server.Error
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && e.Code == server.CodeRateLimited {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("no poll was limited")
	}
}

// TestPayloadLimits: a value above the store's document threshold is
// stored apart; above its hard limit the request is refused with 413.
func TestPayloadLimits(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: t.TempDir() + "/limits.db", Limits: store.Limits{DocumentThreshold: 1 << 10, MaxPayload: 4 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(ctx, st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(server.New(eng, server.Options{}))
	defer srv.Close()
	svc := remote.New(srv.URL, nil)
	input := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n) + `"`) }
	if _, err := svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: "big", WorkflowType: "T", Input: input(2 << 10)}); err != nil {
		t.Fatalf("above the threshold: %v", err)
	}
	page, err := svc.GetHistory(ctx, api.HistoryRequest{RunRef: api.RunRef{WorkflowID: "big"}})
	if err != nil || len(page.Events) == 0 || page.Events[0].Payload.Doc == nil {
		t.Fatalf("the input is not a document: %+v, %v", page.Events, err)
	}
	// The document reads on its own, as the JSON value it holds.
	doc, err := svc.GetDocument(ctx, api.DocumentRequest{RunRef: api.RunRef{WorkflowID: "big"}, ID: page.Events[0].Payload.Doc.ID})
	if err != nil || string(doc) != string(input(2<<10)) {
		t.Fatalf("document: %d bytes, %v", len(doc), err)
	}
	if _, err := svc.GetDocument(ctx, api.DocumentRequest{RunRef: api.RunRef{WorkflowID: "big"}, ID: strings.Repeat("0", 64)}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a document that does not exist: %v", err)
	}
	_, err = svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: "huge", WorkflowType: "T", Input: input(5 << 10)})
	if !errors.Is(err, store.ErrPayloadTooLarge) {
		t.Fatalf("above the limit: %v", err)
	}
	if _, err := svc.DescribeWorkflow(ctx, api.RunRef{WorkflowID: "huge"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a refused start left a run: %v", err)
	}
}

// TestConsoleRoutes: the console takes the GET and HEAD requests outside
// /api/ that no route takes; the API's paths, and other methods, keep the
// API's JSON answers.
func TestConsoleRoutes(t *testing.T) {
	eng := sqliteEngine(t, engine.Options{})
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console "+r.URL.Path) })
	srv := httptest.NewServer(server.New(eng, server.Options{Console: console}))
	defer srv.Close()
	for _, c := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/", 200, "console /"},
		{"GET", "/namespaces/default/runs", 200, "console /namespaces/default/runs"},
		{"GET", "/healthz", 200, `"ok"`},
		{"GET", "/api/v1/nope", 404, `"not_found"`},
		{"GET", "/api", 404, `"not_found"`},
		{"GET", "/api/v1/namespaces", 200, `"namespaces"`},
		{"POST", "/namespaces/default/runs", 404, `"not_found"`},
		{"POST", "/healthz", 405, `"method_not_allowed"`},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.body) {
			t.Errorf("%s %s: %d %s, want %d with %s", c.method, c.path, resp.StatusCode, body, c.status, c.body)
		}
	}
}

// sqliteEngine opens an engine over a new SQLite file, closed when the test
// ends.
func sqliteEngine(t testing.TB, opts engine.Options) *engine.Engine {
	t.Helper()
	eng, err := engine.Open(context.Background(), testdb.SQLite(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}
