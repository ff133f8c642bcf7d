// Package server serves an api.Service (the embedded engine) over HTTP/JSON
// under /api/v1, and package remote's client speaks it: a worker or client
// in another process uses the same workflow and step code as an embedded
// one, with only its constructor changed.
package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/strandhq/strand/api"
)

// Options configure a handler.
type Options struct {
	// MaxBody bounds a request body (default 64 MiB: the store's 16 MiB
	// payload limit, base64-encoded, with room for the rest). A body whose
	// Content-Length is above it is refused (413) before it is read; one
	// without a Content-Length is read up to it, never further.
	MaxBody int64
	// BodyMemory bounds the request-body bytes the server holds at once,
	// from reading them until the request is answered (default 128 MiB,
	// at least MaxBody). A body waits up to BodyWait (default 5s) for room,
	// then is answered 503 unavailable with Retry-After: 1. Decoding adds
	// at most 3/4 of a body's bytes (its base64 payloads), so bodies take
	// at most about twice BodyMemory of the heap.
	BodyMemory int64
	BodyWait   time.Duration
	// BodyTimeout bounds reading a request's body, from the end of its
	// header (default 2m; negative: no limit): a body trickled slower is
	// cut off with 400. Set the http.Server's ReadHeaderTimeout and
	// IdleTimeout for the rest; its ReadTimeout would end long polls.
	BodyTimeout time.Duration
	// PollWait is how long a task poll or a result request waits before it
	// answers "nothing yet" (default 30s, at most 5m).
	PollWait time.Duration
	Logger   *slog.Logger
	// Registry, when set, gets the API's metrics and is served at /metrics
	// (register the engine's on it too: engine.Options.Metrics).
	Registry *prometheus.Registry
	// Ready answers /readyz (nil: always ready).
	Ready func() bool
	// PollRate bounds task polls per second across the server (0: no
	// limit); a poll above it gets 429 rate_limited and the worker backs off.
	PollRate float64
	// Draining, once done, ends the long polls and result waits in flight
	// (they answer 204, nothing yet) so that a graceful shutdown does not
	// wait for them; other requests finish normally.
	Draining context.Context
}

// New returns the HTTP handler of svc.
func New(svc api.Service, opts Options) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = 64 << 20
	}
	if opts.BodyMemory <= 0 {
		opts.BodyMemory = 128 << 20
	}
	opts.BodyMemory = max(opts.BodyMemory, opts.MaxBody)
	if opts.BodyWait <= 0 {
		opts.BodyWait = 5 * time.Second
	}
	if opts.BodyTimeout == 0 {
		opts.BodyTimeout = 2 * time.Minute
	}
	if opts.PollWait <= 0 {
		opts.PollWait = 30 * time.Second
	}
	opts.PollWait = min(opts.PollWait, 5*time.Minute)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &handler{svc: svc, opts: opts, budget: newBudget(opts.BodyMemory)}
	if opts.PollRate > 0 {
		h.polls = rate.NewLimiter(rate.Limit(opts.PollRate), max(1, int(opts.PollRate)))
	}
	mux := http.NewServeMux()
	var requests *prometheus.CounterVec
	var latency *prometheus.HistogramVec
	if reg := opts.Registry; reg != nil {
		requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strand_api_requests_total",
			Help: "API requests by route and status code."}, []string{"route", "code"})
		latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "strand_api_request_seconds",
			Help: "API request latency by route (polls include their wait).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"route"})
		inFlight := prometheus.NewGauge(prometheus.GaugeOpts{Name: "strand_api_body_bytes",
			Help: "Request-body bytes held by requests in flight (bounded by the server's body memory)."})
		h.budget.gauge = inFlight.Set
		reg.MustRegister(requests, latency, inFlight)
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	for _, r := range h.routes() {
		route := r.Method + " " + r.Path
		serve := r.serve
		if requests != nil {
			serve = func(w http.ResponseWriter, req *http.Request) {
				start := time.Now()
				sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
				r.serve(sw, req)
				requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
				latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
			}
		}
		mux.HandleFunc(route, func(w http.ResponseWriter, req *http.Request) {
			if req.Header.Get(api.ForwardedHeader) != "" {
				req = req.WithContext(api.WithForwarded(req.Context()))
			}
			serve(w, req)
		})
	}
	mux.HandleFunc("GET "+prefix+"/openapi.json", serveOpenAPI(OpenAPI(svc)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if opts.Ready != nil && !opts.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, Error{Code: CodeUnavailable, Message: "not ready: shards not owned"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, Error{Code: CodeNotFound, Message: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && opts.BodyTimeout > 0 {
			// Cleared once decode has the body; a body no route reads
			// keeps it while the server discards it.
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(opts.BodyTimeout))
		}
		mux.ServeHTTP(w, r)
	})
}

type handler struct {
	svc    api.Service
	opts   Options
	polls  *rate.Limiter // nil: no limit
	budget *budget       // of request bodies
}

// Route is one endpoint of the API.
type Route struct {
	Method, Path string
	// Summary says what it does (the OpenAPI document uses it).
	Summary string
	endpoint
}

// endpoint is a route's handler with what the OpenAPI document says of it.
type endpoint struct {
	serve http.HandlerFunc
	// req and resp are the body types (nil: none).
	req, resp reflect.Type
	// noContent: the route may answer 204 (a long poll that got nothing).
	noContent bool
	// query are the query parameters it reads.
	query []string
}

func (e endpoint) with(query ...string) endpoint { e.query = query; return e }

// Paths under /api/v1.
const prefix = "/api/v1"

// routes lists every endpoint.
func (h *handler) routes() []Route {
	wf := prefix + "/namespaces/{namespace}/workflows"
	routes := []Route{
		{"POST", wf, "Start a workflow", call(h, func(ctx context.Context, r *http.Request, req api.StartRequest) (api.StartResponse, error) {
			req.Namespace = r.PathValue("namespace")
			return h.svc.StartWorkflow(ctx, req)
		})},
		{"POST", wf + "/{workflow_id}/signals", "Signal a workflow", call(h, func(ctx context.Context, r *http.Request, req api.SignalRequest) (struct{}, error) {
			req.RunRef = ref(r, req.RunID)
			return struct{}{}, h.svc.SignalWorkflow(ctx, req)
		})},
		{"POST", wf + "/{workflow_id}/signal-with-start", "Signal a workflow, starting it if it is not running", call(h, func(ctx context.Context, r *http.Request, req api.SignalWithStartRequest) (api.StartResponse, error) {
			req.Start.Namespace, req.Start.WorkflowID = r.PathValue("namespace"), r.PathValue("workflow_id")
			return h.svc.SignalWithStart(ctx, req)
		})},
		{"POST", wf + "/{workflow_id}/cancel", "Ask a run to cancel", call(h, func(ctx context.Context, r *http.Request, req api.CancelRequest) (struct{}, error) {
			req.RunRef = ref(r, req.RunID)
			return struct{}{}, h.svc.CancelWorkflow(ctx, req)
		})},
		{"POST", wf + "/{workflow_id}/terminate", "Terminate a run", call(h, func(ctx context.Context, r *http.Request, req api.TerminateRequest) (struct{}, error) {
			req.RunRef = ref(r, req.RunID)
			return struct{}{}, h.svc.TerminateWorkflow(ctx, req)
		})},
		{"POST", wf + "/{workflow_id}/queries", "Query a run", call(h, func(ctx context.Context, r *http.Request, req api.QueryRequest) (QueryResult, error) {
			req.RunRef = ref(r, req.RunID)
			out, err := h.svc.QueryWorkflow(ctx, req)
			return QueryResult{Result: out}, err
		})},
		{"GET", wf + "/{workflow_id}", "Describe a run", get(h, func(ctx context.Context, r *http.Request) (api.Description, error) {
			return h.svc.DescribeWorkflow(ctx, ref(r, r.URL.Query().Get("run_id")))
		}).with("run_id")},
		{"GET", wf + "/{workflow_id}/result", "Wait for a run's result (long poll: 204 when it has not closed within wait)",
			endpoint{serve: h.result, resp: reflect.TypeFor[api.Result](), noContent: true, query: []string{"run_id", "follow_runs", "wait"}}},
		{"GET", wf + "/{workflow_id}/history", "Read a run's history in pages", get(h, func(ctx context.Context, r *http.Request) (api.HistoryPage, error) {
			q := r.URL.Query()
			req := api.HistoryRequest{RunRef: ref(r, q.Get("run_id")), Resolve: q.Get("resolve") == "true"}
			var err error
			if req.PageToken, err = pageToken(q.Get("page_token")); err != nil {
				return api.HistoryPage{}, err
			}
			if req.FromEventID, err = intParam(q.Get("from_event_id"), "from_event_id"); err != nil {
				return api.HistoryPage{}, err
			}
			n, err := intParam(q.Get("page_size"), "page_size")
			req.PageSize = int(n)
			if err != nil {
				return api.HistoryPage{}, err
			}
			return h.svc.GetHistory(ctx, req)
		}).with("run_id", "from_event_id", "page_size", "page_token", "resolve")},
		{"POST", prefix + "/namespaces/{namespace}/workflow-search", "List runs matching a filter, in pages", call(h, func(ctx context.Context, r *http.Request, req api.ListRequest) (api.ListResponse, error) {
			req.Namespace = r.PathValue("namespace")
			return h.svc.ListWorkflows(ctx, req)
		})},
		{"POST", prefix + "/namespaces/{namespace}/workflow-count", "Count runs matching a filter", call(h, func(ctx context.Context, r *http.Request, req api.ListRequest) (Count, error) {
			req.Namespace = r.PathValue("namespace")
			n, err := h.svc.CountWorkflows(ctx, req)
			return Count{Count: n}, err
		})},
		{"POST", prefix + "/namespaces/{namespace}/workflow-tasks/poll", "Wait for a workflow task of a queue (204 when none came within wait)", poll(h, h.svc.PollWorkflowTask)},
		{"POST", prefix + "/workflow-tasks/complete", "Complete a workflow task with its commands", call(h, func(ctx context.Context, _ *http.Request, req api.CompleteWorkflowTaskRequest) (api.CompleteWorkflowTaskResponse, error) {
			return h.svc.CompleteWorkflowTask(ctx, req)
		})},
		{"POST", prefix + "/workflow-tasks/fail", "Report a workflow task that could not complete", call(h, func(ctx context.Context, _ *http.Request, req api.FailWorkflowTaskRequest) (struct{}, error) {
			return struct{}{}, h.svc.FailWorkflowTask(ctx, req)
		})},
		{"POST", prefix + "/queries/answer", "Answer a query task", call(h, func(ctx context.Context, _ *http.Request, req api.QueryAnswer) (struct{}, error) {
			return struct{}{}, h.svc.AnswerQuery(ctx, req)
		})},
		{"POST", prefix + "/namespaces/{namespace}/step-tasks/poll", "Wait for a step task of a queue (204 when none came within wait)", poll(h, h.svc.PollStepTask)},
		{"POST", prefix + "/step-tasks/complete", "Complete a step attempt", call(h, func(ctx context.Context, _ *http.Request, req api.CompleteStepRequest) (struct{}, error) {
			return struct{}{}, h.svc.CompleteStep(ctx, req)
		})},
		{"POST", prefix + "/step-tasks/fail", "Fail a step attempt (retried by its policy)", call(h, func(ctx context.Context, _ *http.Request, req api.FailStepRequest) (struct{}, error) {
			return struct{}{}, h.svc.FailStep(ctx, req)
		})},
		{"POST", prefix + "/step-tasks/heartbeat", "Record a running step's progress", call(h, func(ctx context.Context, _ *http.Request, req api.HeartbeatRequest) (api.HeartbeatResponse, error) {
			return h.svc.HeartbeatStep(ctx, req)
		})},
	}
	if cl, ok := h.svc.(api.Cluster); ok {
		routes = append(routes,
			Route{"GET", prefix + "/nodes", "List live nodes (all known ones with all=true)", get(h, func(ctx context.Context, r *http.Request) (NodeList, error) {
				nodes, err := cl.ListNodes(ctx, r.URL.Query().Get("all") == "true")
				return NodeList{Nodes: nodes}, err
			}).with("all")},
			Route{"GET", prefix + "/shards", "List the shards: owner and range_id as the store records them, and whether this node serves each", get(h, func(ctx context.Context, _ *http.Request) (ShardList, error) {
				shards, err := cl.ListShards(ctx)
				return ShardList{Shards: shards}, err
			})},
			Route{"POST", prefix + "/definitions", "Store a workflow definition (version 0: a new version unless unchanged)", call(h, func(ctx context.Context, _ *http.Request, req api.Definition) (api.Definition, error) {
				return cl.PutDefinition(ctx, req)
			})},
			Route{"GET", prefix + "/definitions", "List definitions (of one type with type=)", get(h, func(ctx context.Context, r *http.Request) (DefinitionList, error) {
				all, err := cl.ListDefinitions(ctx, r.URL.Query().Get("type"))
				return DefinitionList{Definitions: all}, err
			}).with("type")},
			Route{"GET", prefix + "/definitions/{type}/{version}", "Get a definition's version (latest for 0 or latest)", get(h, func(ctx context.Context, r *http.Request) (api.Definition, error) {
				v := r.PathValue("version")
				if v == "latest" {
					v = "0"
				}
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil || n < 0 {
					return api.Definition{}, api.InvalidArgument("version", "want a version number or latest, got %q", r.PathValue("version"))
				}
				return cl.GetDefinition(ctx, r.PathValue("type"), int32(n))
			})},
		)
	}
	if pe, ok := h.svc.(api.Peering); ok {
		routes = append(routes, Route{"POST", prefix + "/peer/{op}", "A call between the nodes of a cluster (forwarded polls, child starts, parent notices, tasks handed back)",
			call(h, func(ctx context.Context, r *http.Request, req json.RawMessage) (json.RawMessage, error) {
				// A forwarded poll is a long poll: it ends when the server drains.
				ctx, cancel := h.longPoll(ctx, 5*time.Minute)
				defer cancel()
				return pe.PeerCall(ctx, r.PathValue("op"), req)
			})})
	}
	ns, ok := h.svc.(api.Namespaces)
	if !ok {
		return routes
	}
	return append(routes,
		Route{"POST", prefix + "/namespaces", "Create a namespace", call(h, func(ctx context.Context, _ *http.Request, req api.Namespace) (api.Namespace, error) {
			return ns.CreateNamespace(ctx, req)
		})},
		Route{"GET", prefix + "/namespaces", "List namespaces", get(h, func(ctx context.Context, _ *http.Request) (NamespaceList, error) {
			all, err := ns.ListNamespaces(ctx)
			return NamespaceList{Namespaces: all}, err
		})},
		Route{"GET", prefix + "/namespaces/{namespace}", "Describe a namespace", get(h, func(ctx context.Context, r *http.Request) (api.Namespace, error) {
			return ns.DescribeNamespace(ctx, r.PathValue("namespace"))
		})},
		Route{"PUT", prefix + "/namespaces/{namespace}", "Update a namespace (carry the version you read)", call(h, func(ctx context.Context, r *http.Request, req api.Namespace) (api.Namespace, error) {
			req.Name = r.PathValue("namespace")
			return ns.UpdateNamespace(ctx, req)
		})},
	)
}

// ShardList is the shards.
type ShardList struct {
	Shards []api.ShardInfo `json:"shards"`
}

// NodeList is the nodes.
type NodeList struct {
	Nodes []api.Node `json:"nodes"`
}

// DefinitionList is definitions.
type DefinitionList struct {
	Definitions []api.Definition `json:"definitions"`
}

// NamespaceList is the namespaces.
type NamespaceList struct {
	Namespaces []api.Namespace `json:"namespaces"`
}

// QueryResult is a query's answer.
type QueryResult struct {
	Result []byte `json:"result,omitempty"`
}

// Count is a count of runs.
type Count struct {
	Count int64 `json:"count"`
}

func ref(r *http.Request, runID string) api.RunRef {
	return api.RunRef{Namespace: r.PathValue("namespace"), WorkflowID: r.PathValue("workflow_id"), RunID: runID}
}

func intParam(v, name string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, api.InvalidArgument(name, "want a non-negative integer, got %q", v)
	}
	return n, nil
}

// pageToken decodes a page_token query parameter: the next_page_token of
// the previous page as its JSON gave it (standard base64, padded).
func pageToken(v string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, api.InvalidArgument("page_token", "want the next_page_token of the previous page (base64): %v", err)
	}
	return b, nil
}

// call serves a POST whose JSON body decodes into Req.
func call[Req, Resp any](h *handler, f func(ctx context.Context, r *http.Request, req Req) (Resp, error)) endpoint {
	return endpoint{req: reflect.TypeFor[Req](), resp: reflect.TypeFor[Resp](), serve: func(w http.ResponseWriter, r *http.Request) {
		var req Req
		release, err := h.decode(w, r, &req)
		defer release()
		if err != nil {
			writeError(w, err)
			return
		}
		resp, err := f(r.Context(), r, req)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}}
}

// get serves a GET.
func get[Resp any](h *handler, f func(ctx context.Context, r *http.Request) (Resp, error)) endpoint {
	return endpoint{resp: reflect.TypeFor[Resp](), serve: func(w http.ResponseWriter, r *http.Request) {
		resp, err := f(r.Context(), r)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}}
}

// poll serves a task poll: it waits up to PollWait and answers 204 when no
// task came.
func poll[T any](h *handler, f func(context.Context, api.PollRequest) (*T, error)) endpoint {
	return endpoint{req: reflect.TypeFor[api.PollRequest](), resp: reflect.TypeFor[T](), noContent: true, serve: func(w http.ResponseWriter, r *http.Request) {
		if h.polls != nil && !h.polls.Allow() {
			writeJSON(w, http.StatusTooManyRequests, Error{Code: CodeRateLimited, Message: "too many task polls; retry after a back-off"})
			return
		}
		var req api.PollRequest
		release, err := h.decode(w, r, &req)
		defer release()
		if err != nil {
			writeError(w, err)
			return
		}
		req.Namespace = r.PathValue("namespace")
		ctx, cancel := h.longPoll(r.Context(), h.opts.PollWait)
		defer cancel()
		t, err := f(ctx, req)
		switch {
		case err != nil:
			writeError(w, err)
		case t == nil:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, http.StatusOK, t)
		}
	}}
}

// result waits for a run to close, up to wait (default PollWait).
func (h *handler) result(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	wait := h.opts.PollWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			writeError(w, api.InvalidArgument("wait", "want a duration such as 30s, got %q", v))
			return
		}
		wait = min(d, h.opts.PollWait)
	}
	ctx, cancel := h.longPoll(r.Context(), wait)
	defer cancel()
	res, err := h.svc.WaitResult(ctx, api.ResultRequest{RunRef: ref(r, q.Get("run_id")), FollowRuns: q.Get("follow_runs") == "true"})
	switch {
	case err != nil && ctx.Err() != nil && r.Context().Err() == nil:
		w.WriteHeader(http.StatusNoContent)
	case err != nil:
		writeError(w, err)
	default:
		writeJSON(w, http.StatusOK, res)
	}
}

// longPoll is the context of a long poll: it ends after wait, or when the
// server starts draining.
func (h *handler) longPoll(parent context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, wait)
	if d := h.opts.Draining; d != nil {
		stop := context.AfterFunc(d, cancel)
		return ctx, func() { stop(); cancel() }
	}
	return ctx, cancel
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets an http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBusy) {
		w.Header().Set("Retry-After", "1")
	}
	status, body := errorOf(err)
	writeJSON(w, status, body)
}
