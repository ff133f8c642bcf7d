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
	"math"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/dag/resources"
	"github.com/strandhq/strand/statemachine"
	"github.com/strandhq/strand/store"
)

// Options configure a handler.
type Options struct {
	// MaxBody bounds a request body (default 64 MiB: the store's 16 MiB
	// payload limit, base64-encoded if it is not JSON, with room for the
	// rest). A body whose Content-Length is above it is refused (413)
	// before it is read; one without a Content-Length is read up to it,
	// never further.
	MaxBody int64
	// Console, when set, serves the GET and HEAD requests outside /api/
	// that no other route takes (the web console, package console).
	Console http.Handler
	// BodyMemory bounds the request-body bytes the server holds at once,
	// from reading them until the request is answered (default 128 MiB,
	// at least MaxBody). A body waits up to BodyWait (default 5s) for room,
	// then is answered 503 unavailable with Retry-After: 1. Decoding adds
	// at most a body's bytes again (its payloads, copied out of it), so
	// bodies take at most about twice BodyMemory of the heap.
	BodyMemory int64
	BodyWait   time.Duration
	// BodyTimeout bounds reading a request's body, from the end of its
	// header (default 2m; negative: no limit): a body trickled slower is
	// cut off with 408 request_timeout. Set the http.Server's ReadHeaderTimeout and
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
	// Access, when set, serves the routes of users, tokens and grants, and
	// unless Open authenticates every request (an API token as
	// "Authorization: Bearer strand_…", or the console's session cookie)
	// and authorizes it by its route's need (routeNeeds).
	Access *access.Service
	// Open (or a nil Access) serves every caller as access.Anonymous, who
	// may do everything: a server on loopback with no user yet.
	Open bool
	// Audit, when set, records the changes made through the API (every
	// call but reads and the workers' task traffic, refused ones too) and
	// serves GET /api/v1/audit.
	Audit *AuditLog
	// Resources, when set, serves the resource centre of DAG pipelines
	// (resources, UDFs, data sources) and checks at dag apply that the
	// applying user may use what a definition names.
	Resources *resources.Centre
	// ClusterSecret, when set, is what the nodes of a cluster call each
	// other with ("Authorization: Node SECRET"); the peering route refuses
	// every other caller once Access is set.
	ClusterSecret string
	// Alerts delivers the DAGs' alerts for the alert groups' test route
	// (nil: webhooks only, and users found through Access).
	Alerts *dag.Alerter

	// Open mode's guard (issue 36). A server told it runs open (Open; a nil
	// Access without Open is not guarded) answers only what this machine's
	// own tools send: a request whose Host header is not a loopback name
	// or address (localhost, 127.0.0.0/8, ::1, with any port) nor one of
	// HostNames is refused (DNS rebinding), and so is a change (not GET,
	// HEAD or OPTIONS) a web page could send: one whose Origin is not the
	// server's own, or whose body is not application/json. With access
	// control on neither applies: every call needs a token or a session.
	HostNames []string
	// AnyAddressHost also takes a Host that is an IP address: an open
	// server that other machines reach (--insecure). An address cannot be
	// rebound to another server as a name can.
	AnyAddressHost bool
	// Slow clients (a request body trickled to hold a connection).
	// MinBodyRate is the slowest a request body may arrive, in bytes a
	// second (default 500; negative: no minimum): a body that falls behind
	// it by more than BodyRateWindow (default 10s; also the grace its first
	// bytes get) is cut off with 408 request_timeout. Only the body's
	// arrival is paced: a long poll waits for its answer as long as it
	// takes. See IdleConns for idle keep-alive connections.
	MinBodyRate    int64
	BodyRateWindow time.Duration
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
		h.streamed = streamedCounter(reg)
		if opts.Audit != nil {
			reg.MustRegister(opts.Audit.Dropped())
		}
		metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			// The metrics name namespaces and queues: a cluster admin's
			// (a scraper calls with a service account's token).
			id, err := h.authenticate(r, Need{Scope: ClusterAdmin})
			if err == nil && !id.ClusterAdmin {
				err = denied(id, "cluster admin")
			}
			if err != nil {
				h.recordRefused(r, Route{Method: http.MethodGet, Path: "/metrics"}, err)
				writeError(w, err)
				return
			}
			metrics.ServeHTTP(w, r)
		})
	}
	// routePatterns are the API's routes: a request the open-mode guard
	// refuses on one of them is refused there, where it is audited.
	routePatterns := map[string]bool{}
	for _, r := range h.routes() {
		route := r.Method + " " + r.Path
		serve := h.auditing(r, r.serve)
		if requests != nil {
			inner := serve
			serve = func(w http.ResponseWriter, req *http.Request) {
				start := time.Now()
				sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
				inner(sw, req)
				requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
				latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
			}
		}
		need, _ := needOf(r.Method, r.Path)
		routePatterns[route] = true
		mux.HandleFunc(route, func(w http.ResponseWriter, req *http.Request) {
			if err, refused := req.Context().Value(refusedKey{}).(error); refused {
				h.recordRefused(req, r, err)
				writeError(w, err)
				return
			}
			id, err := h.authenticate(req, need)
			if err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="strand"`)
				h.recordRefused(req, r, err)
				writeError(w, err)
				return
			}
			ctx := access.WithIdentity(req.Context(), id)
			if err := authorize(ctx, need, req); err != nil {
				h.recordRefused(req.WithContext(ctx), r, err)
				writeError(w, err)
				return
			}
			if req.Header.Get(api.ForwardedHeader) != "" {
				ctx = api.WithForwarded(ctx)
			}
			serve(w, req.WithContext(ctx))
		})
	}
	mux.HandleFunc("GET "+prefix+"/openapi.json", serveOpenAPI(openAPI(h)))
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
	patterns := []string{"GET " + prefix + "/openapi.json", "GET /healthz", "GET /readyz"}
	if opts.Registry != nil {
		patterns = append(patterns, "GET /metrics")
	}
	for _, r := range h.routes() {
		patterns = append(patterns, r.Method+" "+r.Path)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if opts.Console != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) && !isAPIPath(r.URL.Path) {
			opts.Console.ServeHTTP(w, r)
			return
		}
		if allow := allowed(patterns, r.URL.EscapedPath()); allow != nil {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, Error{Code: CodeMethodNotAllowed,
				Message: fmt.Sprintf("%s %s: the path takes %s", r.Method, r.URL.Path, strings.Join(allow, ", "))})
			return
		}
		writeJSON(w, http.StatusNotFound, Error{Code: CodeNotFound, Message: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.guardOpen(r); err != nil {
			if _, pattern := mux.Handler(r); !routePatterns[pattern] {
				writeError(w, err)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), refusedKey{}, err))
		}
		if r.ContentLength != 0 && opts.BodyTimeout > 0 {
			// Cleared once decode has the body; a body no route reads
			// keeps it while the server discards it.
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(opts.BodyTimeout))
		}
		mux.ServeHTTP(w, r)
	})
}

// CodeMethodNotAllowed is the error code of a 405: the path exists, the
// method does not (the Allow header lists the path's methods).
const CodeMethodNotAllowed = "method_not_allowed"

// allowed returns the methods of the patterns ("METHOD /a/{b}") whose path
// matches an escaped request path, with HEAD for GET as the mux serves it;
// nil when none does.
func allowed(patterns []string, path string) []string {
	segs := strings.Split(path, "/")
	var methods []string
	for _, p := range patterns {
		method, pat, _ := strings.Cut(p, " ")
		psegs := strings.Split(pat, "/")
		if len(psegs) != len(segs) {
			continue
		}
		match := true
		for i, ps := range psegs {
			if strings.HasPrefix(ps, "{") && strings.HasSuffix(ps, "}") {
				match = segs[i] != ""
			} else {
				match = ps == segs[i]
			}
			if !match {
				break
			}
		}
		if match && !slices.Contains(methods, method) {
			methods = append(methods, method)
			if method == http.MethodGet {
				methods = append(methods, http.MethodHead)
			}
		}
	}
	sort.Strings(methods)
	return methods
}

type handler struct {
	svc    api.Service
	opts   Options
	polls  *rate.Limiter // nil: no limit
	budget *budget       // of request bodies
	// streamed counts the exchanges served on task streams (nil: no
	// registry).
	streamed prometheus.Counter
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
	query []param
	// fromPath are the body's fields (dotted JSON names) that the handler
	// fills from the path: the document does not require them.
	fromPath []string
	// links lead from the route's answer to other routes.
	links []link
	// internal routes (calls between nodes) are not in the document.
	internal bool
}

func (e endpoint) with(query ...param) endpoint { e.query = query; return e }

func (e endpoint) pathFields(fields ...string) endpoint { e.fromPath = fields; return e }

func (e endpoint) linked(links ...link) endpoint { e.links = links; return e }

// Paths under /api/v1.
const prefix = "/api/v1"

// routes lists every endpoint.
func (h *handler) routes() []Route {
	wf := prefix + "/namespaces/{namespace}/workflows"
	run := wf + "/{workflow_id}"
	// runLinks lead from an answer naming a run to the calls about it.
	runLinks := func(workflowID string) []link {
		params := map[string]any{"path.namespace": "$request.path.namespace", "path.workflow_id": workflowID}
		withRun := map[string]any{"query.run_id": "$response.body#/run_id"}
		for k, v := range params {
			withRun[k] = v
		}
		return []link{
			{name: "describe", target: "GET " + run, desc: "the run started", params: withRun},
			{name: "result", target: "GET " + run + "/result", desc: "the run's result", params: withRun},
			{name: "history", target: "GET " + run + "/history", desc: "the run's history", params: withRun},
			// No links to signal, cancel and terminate: they take the run in
			// their bodies, which a link sets only now and then (Schemathesis
			// explores), so a link would lead them to runs that do not exist.
		}
	}
	token := func(names ...string) []link {
		var out []link
		for _, n := range names {
			out = append(out, link{name: n[strings.LastIndex(n, "/")+1:], target: "POST " + prefix + n, desc: "the task handed out",
				body: map[string]any{"token": "$response.body#/token"}})
		}
		return out
	}
	runID := idParam("run_id", "a run of the workflow (default: its current run)")
	routes := []Route{
		{"POST", wf, "Start a workflow", call(h, func(ctx context.Context, r *http.Request, req api.StartRequest) (api.StartResponse, error) {
			req.Namespace = r.PathValue("namespace")
			return h.svc.StartWorkflow(ctx, req)
		}).pathFields("namespace").linked(runLinks("$request.body#/workflow_id")...)},
		{"POST", run + "/signals", "Signal a workflow", call(h, func(ctx context.Context, r *http.Request, req api.SignalRequest) (struct{}, error) {
			req.RunRef = ref(r, req.RunID)
			return struct{}{}, h.svc.SignalWorkflow(ctx, req)
		}).pathFields("namespace", "workflow_id")},
		{"POST", run + "/signal-with-start", "Signal a workflow, starting it if it is not running", call(h, func(ctx context.Context, r *http.Request, req api.SignalWithStartRequest) (api.StartResponse, error) {
			req.Start.Namespace, req.Start.WorkflowID = r.PathValue("namespace"), r.PathValue("workflow_id")
			return h.svc.SignalWithStart(ctx, req)
		}).pathFields("start.namespace", "start.workflow_id").linked(runLinks("$request.path.workflow_id")...)},
		{"POST", run + "/cancel", "Ask a run to cancel", call(h, func(ctx context.Context, r *http.Request, req api.CancelRequest) (struct{}, error) {
			req.RunRef = ref(r, req.RunID)
			return struct{}{}, h.svc.CancelWorkflow(ctx, req)
		}).pathFields("namespace", "workflow_id")},
		{"POST", run + "/terminate", "Terminate a run", call(h, func(ctx context.Context, r *http.Request, req api.TerminateRequest) (struct{}, error) {
			req.RunRef = ref(r, req.RunID)
			return struct{}{}, h.svc.TerminateWorkflow(ctx, req)
		}).pathFields("namespace", "workflow_id")},
		{"POST", run + "/queries", "Query a run", call(h, func(ctx context.Context, r *http.Request, req api.QueryRequest) (QueryResult, error) {
			req.RunRef = ref(r, req.RunID)
			out, err := h.svc.QueryWorkflow(ctx, req)
			return QueryResult{Result: out}, err
		}).pathFields("namespace", "workflow_id")},
		{"GET", run, "Describe a run", get(h, func(ctx context.Context, r *http.Request) (api.Description, error) {
			return h.svc.DescribeWorkflow(ctx, ref(r, r.URL.Query().Get("run_id")))
		}).with(runID)},
		{"GET", run + "/result", "Wait for a run's result (long poll: 204 when it has not closed within wait)",
			endpoint{serve: h.result, resp: reflect.TypeFor[api.Result](), noContent: true, query: []param{runID,
				boolQuery("follow_runs", "follow continue-as-new to the last run"),
				durationQuery("wait", "how long to wait (default and at most the server's poll wait)")}}},
		{"GET", run + "/documents/{document_id}", "Read a payload of a run stored as a document (an event's {\"$document\": {\"id\": ...}})", get(h, func(ctx context.Context, r *http.Request) (DocumentValue, error) {
			v, err := h.svc.GetDocument(ctx, api.DocumentRequest{RunRef: ref(r, r.URL.Query().Get("run_id")), ID: r.PathValue("document_id")})
			return DocumentValue{Value: v}, err
		}).with(runID)},
		{"GET", run + "/history", "Read a run's history in pages", get(h, func(ctx context.Context, r *http.Request) (api.HistoryPage, error) {
			q := r.URL.Query()
			req := api.HistoryRequest{RunRef: ref(r, q.Get("run_id"))}
			var err error
			if req.PageToken, err = bytesParam(q, "page_token"); err != nil {
				return api.HistoryPage{}, err
			}
			if req.Resolve, err = boolParam(q, "resolve"); err != nil {
				return api.HistoryPage{}, err
			}
			if req.ResolveDetails, err = boolParam(q, "resolve_details"); err != nil {
				return api.HistoryPage{}, err
			}
			if req.FromEventID, err = intParam(q, "from_event_id", math.MaxInt64); err != nil {
				return api.HistoryPage{}, err
			}
			n, err := intParam(q, "page_size", store.MaxPageSize)
			req.PageSize = int(n)
			if err != nil {
				return api.HistoryPage{}, err
			}
			return h.svc.GetHistory(ctx, req)
		}).with(runID, intQuery("from_event_id", 0, math.MaxInt64, "the first event wanted"),
			intQuery("page_size", 0, store.MaxPageSize, "events per page, roughly (0: 1000)"),
			bytesQuery("page_token", "next_page_token of the page before"),
			boolQuery("resolve", "replace the payloads' document references by the documents' bytes"),
			boolQuery("resolve_details", "replace the audit details' document references by the documents' bytes")).
			linked(link{name: "next", target: "GET " + run + "/history", desc: "the next page",
				params: map[string]any{"path.namespace": "$request.path.namespace", "path.workflow_id": "$request.path.workflow_id",
					"query.run_id": "$request.query.run_id", "query.page_token": "$response.body#/next_page_token"}})},
		{"POST", prefix + "/namespaces/{namespace}/workflow-search", "List runs matching a filter, in pages", call(h, func(ctx context.Context, r *http.Request, req api.ListRequest) (api.ListResponse, error) {
			req.Namespace = r.PathValue("namespace")
			return h.svc.ListWorkflows(ctx, req)
		}).pathFields("namespace").linked(link{name: "next", target: "POST " + prefix + "/namespaces/{namespace}/workflow-search", desc: "the next page",
			params: map[string]any{"path.namespace": "$request.path.namespace"}, body: map[string]any{"page_token": "$response.body#/next_page_token"}})},
		{"POST", prefix + "/namespaces/{namespace}/workflow-count", "Count runs matching a filter", call(h, func(ctx context.Context, r *http.Request, req api.ListRequest) (Count, error) {
			req.Namespace = r.PathValue("namespace")
			n, err := h.svc.CountWorkflows(ctx, req)
			return Count{Count: n}, err
		}).pathFields("namespace")},
		{"POST", prefix + "/namespaces/{namespace}/workflow-status-counts", "Count runs matching a filter in each status, in one request (the filter's statuses are ignored)",
			call(h, func(ctx context.Context, r *http.Request, req api.ListRequest) (StatusCounts, error) {
				req.Namespace = r.PathValue("namespace")
				return statusCounts(ctx, h.svc, req)
			}).pathFields("namespace")},
		{"POST", prefix + "/namespaces/{namespace}/workflow-tasks/poll", "Wait for a workflow task of a queue (204 when none came within wait)",
			poll(h, h.svc.PollWorkflowTask).linked(token("/workflow-tasks/complete", "/workflow-tasks/fail", "/queries/answer")...)},
		{"POST", prefix + "/workflow-tasks/complete", "Complete a workflow task with its commands", call(h, func(ctx context.Context, _ *http.Request, req api.CompleteWorkflowTaskRequest) (api.CompleteWorkflowTaskResponse, error) {
			if err := h.allowTask(ctx, req.Token); err != nil {
				return api.CompleteWorkflowTaskResponse{}, err
			}
			return h.svc.CompleteWorkflowTask(ctx, req)
		})},
		{"POST", prefix + "/workflow-tasks/fail", "Report a workflow task that could not complete", call(h, func(ctx context.Context, _ *http.Request, req api.FailWorkflowTaskRequest) (struct{}, error) {
			if err := h.allowTask(ctx, req.Token); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, h.svc.FailWorkflowTask(ctx, req)
		})},
		{"POST", prefix + "/queries/answer", "Answer a query task", call(h, func(ctx context.Context, _ *http.Request, req api.QueryAnswer) (struct{}, error) {
			if err := h.allowTask(ctx, req.Token); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, h.svc.AnswerQuery(ctx, req)
		})},
		{"POST", prefix + "/namespaces/{namespace}/step-tasks/poll", "Wait for a step task of a queue (204 when none came within wait)",
			poll(h, h.svc.PollStepTask).linked(token("/step-tasks/complete", "/step-tasks/fail", "/step-tasks/heartbeat")...)},
		{"POST", prefix + "/step-tasks/complete", "Complete a step attempt", call(h, func(ctx context.Context, _ *http.Request, req api.CompleteStepRequest) (struct{}, error) {
			if err := h.allowTask(ctx, req.Token); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, h.svc.CompleteStep(ctx, req)
		})},
		{"POST", prefix + "/step-tasks/fail", "Fail a step attempt (retried by its policy)", call(h, func(ctx context.Context, _ *http.Request, req api.FailStepRequest) (struct{}, error) {
			if err := h.allowTask(ctx, req.Token); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, h.svc.FailStep(ctx, req)
		})},
		{"POST", prefix + "/step-tasks/heartbeat", "Record a running step's progress", call(h, func(ctx context.Context, _ *http.Request, req api.HeartbeatRequest) (api.HeartbeatResponse, error) {
			if err := h.allowTask(ctx, req.Token); err != nil {
				return api.HeartbeatResponse{}, err
			}
			return h.svc.HeartbeatStep(ctx, req)
		})},
		exchangeRoute(h),
		taskStreamRoute(h),
	}
	if cl, ok := h.svc.(api.Cluster); ok {
		routes = append(routes,
			Route{"GET", prefix + "/nodes", "List live nodes (all known ones with all=true)", get(h, func(ctx context.Context, r *http.Request) (NodeList, error) {
				all, err := boolParam(r.URL.Query(), "all")
				if err != nil {
					return NodeList{}, err
				}
				nodes, err := cl.ListNodes(ctx, all)
				return NodeList{Nodes: nodes}, err
			}).with(boolQuery("all", "every known node, not only the live ones"))},
			Route{"GET", prefix + "/shards", "List the shards: owner and range_id as the store records them, and whether this node serves each", get(h, func(ctx context.Context, _ *http.Request) (ShardList, error) {
				shards, err := cl.ListShards(ctx)
				return ShardList{Shards: shards}, err
			})},
			Route{"GET", prefix + "/placement", "The address of the live node that owns each shard, so that a client calls a workflow's owner directly (api.ShardOf gives a workflow's shard)", get(h, func(ctx context.Context, _ *http.Request) (Placement, error) {
				return placementOf(ctx, cl)
			})},
			Route{"POST", prefix + "/definitions", "Store a workflow definition (version 0: a new version unless unchanged)", call(h, func(ctx context.Context, _ *http.Request, req api.Definition) (api.Definition, error) {
				// A DAG stored this way names only what its user may use,
				// and a tenant is a cluster admin's to change.
				var uses dag.UseChecker
				if h.opts.Resources != nil {
					uses = h.opts.Resources
				}
				if err := dag.CheckStored(ctx, req.Type, req.Body, uses); err != nil {
					return api.Definition{}, err
				}
				return cl.PutDefinition(ctx, req)
			}).linked(link{name: "get", target: "GET " + prefix + "/definitions/{type}/{version}", desc: "the version stored",
				params: map[string]any{"path.type": "$response.body#/type", "path.version": "$response.body#/version"}})},
			Route{"GET", prefix + "/definitions", "List definitions (of one type with type=)", get(h, func(ctx context.Context, r *http.Request) (DefinitionList, error) {
				all, err := cl.ListDefinitions(ctx, r.URL.Query().Get("type"))
				return DefinitionList{Definitions: all}, err
			}).with(stringParam("type", "only this type's versions"))},
			Route{"GET", prefix + "/definitions/{type}/{version}", "Get a definition's version (latest for 0 or latest)", get(h, func(ctx context.Context, r *http.Request) (api.Definition, error) {
				v := r.PathValue("version")
				if v == "latest" {
					v = "0"
				}
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil || !digits.MatchString(v) {
					return api.Definition{}, api.InvalidArgument("version", "want a version number (0 to %d) or latest, got %q", math.MaxInt32, r.PathValue("version"))
				}
				return cl.GetDefinition(ctx, r.PathValue("type"), int32(n))
			})},
		)
	}
	if mon, ok := h.svc.(api.Monitoring); ok {
		routes = append(routes,
			Route{"GET", prefix + "/namespaces/{namespace}/queues", "List a namespace's task queues: backlog, the workers polling them, how tasks met workers (over every live node)",
				get(h, func(ctx context.Context, r *http.Request) (api.QueueList, error) {
					return mon.ListQueues(ctx, r.PathValue("namespace"))
				})},
			Route{"GET", prefix + "/namespaces/{namespace}/overview", "Runs started and closed per minute over the last hour, and per workflow type (the engine's own counters, over every live node)",
				get(h, func(ctx context.Context, r *http.Request) (api.Overview, error) {
					return mon.Overview(ctx, r.PathValue("namespace"))
				})},
		)
	}
	if op, ok := h.svc.(api.Operator); ok {
		routes = append(routes,
			Route{"POST", run + "/pause", "Pause a run: no workflow task or step is dispatched until it is resumed", call(h, func(ctx context.Context, r *http.Request, req api.PauseRequest) (struct{}, error) {
				req.RunRef = ref(r, req.RunID)
				return struct{}{}, op.PauseWorkflow(ctx, req)
			}).pathFields("namespace", "workflow_id")},
			Route{"POST", run + "/resume", "Resume a paused run", call(h, func(ctx context.Context, r *http.Request, req api.PauseRequest) (struct{}, error) {
				req.RunRef = ref(r, req.RunID)
				return struct{}{}, op.ResumeWorkflow(ctx, req)
			}).pathFields("namespace", "workflow_id")},
			Route{"POST", run + "/reset", "Reset a run: a new run continues from a point of its history (the old run, if open, is terminated)", call(h, func(ctx context.Context, r *http.Request, req api.ResetRequest) (api.StartResponse, error) {
				req.RunRef = ref(r, req.RunID)
				return op.ResetWorkflow(ctx, req)
			}).pathFields("namespace", "workflow_id").linked(runLinks("$request.path.workflow_id")...)},
			Route{"POST", run + "/rerun", "Start a closed run again, with its type, input and options", call(h, func(ctx context.Context, r *http.Request, req api.RerunRequest) (api.StartResponse, error) {
				req.RunRef = ref(r, req.RunID)
				return op.RerunWorkflow(ctx, req)
			}).pathFields("namespace", "workflow_id").linked(runLinks("$request.path.workflow_id")...)},
		)
	}
	if sc, ok := h.svc.(api.Schedules); ok {
		routes = append(routes, scheduleRoutes(h, sc)...)
	}
	if b, ok := h.svc.(api.Batches); ok {
		routes = append(routes, batchRoutes(h, b)...)
	}
	if m, ok := h.svc.(api.Messages); ok {
		routes = append(routes, messageRoutes(h, m)...)
	}
	if ht, ok := h.svc.(api.HumanTasks); ok {
		routes = append(routes, taskRoutes(h, ht)...)
	}
	if d, ok := h.svc.(dag.Service); ok {
		routes = append(routes, dagRoutes(h, d)...)
		routes = append(routes, tenantRoutes(h, d)...)
		routes = append(routes, alertRoutes(h, d)...)
	}
	if sm, ok := h.svc.(statemachine.Service); ok {
		routes = append(routes, stateMachineRoutes(h, sm)...)
	}
	routes = append(routes, sagaRoutes(h)...)
	if h.opts.Access != nil {
		routes = append(routes, accessRoutes(h, h.opts.Access)...)
	}
	if h.opts.Resources != nil {
		routes = append(routes, resourceRoutes(h, h.opts.Resources)...)
	}
	if h.opts.Audit != nil {
		routes = append(routes, auditRoutes(h, h.opts.Audit)...)
	}
	if pe, ok := h.svc.(api.Peering); ok {
		peer := call(h, func(ctx context.Context, r *http.Request, req json.RawMessage) (json.RawMessage, error) {
			// A forwarded poll is a long poll: it ends when the server drains.
			ctx, cancel := h.longPoll(ctx, 5*time.Minute)
			defer cancel()
			return pe.PeerCall(ctx, r.PathValue("op"), req)
		})
		peer.internal = true
		routes = append(routes, Route{"POST", prefix + "/peer/{op}", "A call between the nodes of a cluster (forwarded polls, child starts, parent notices, tasks handed back)", peer})
	}
	ns, ok := h.svc.(api.Namespaces)
	if !ok {
		return routes
	}
	nsLinks := []link{
		{name: "describe", target: "GET " + prefix + "/namespaces/{namespace}", desc: "the namespace", params: map[string]any{"path.namespace": "$response.body#/name"}},
		{name: "update", target: "PUT " + prefix + "/namespaces/{namespace}", desc: "update the namespace", params: map[string]any{"path.namespace": "$response.body#/name"},
			body: map[string]any{"version": "$response.body#/version"}},
		{name: "start", target: "POST " + wf, desc: "start a workflow in the namespace", params: map[string]any{"path.namespace": "$response.body#/name"}},
	}
	routes = append(routes,
		Route{"POST", prefix + "/namespaces", "Create a namespace", call(h, func(ctx context.Context, _ *http.Request, req api.Namespace) (api.Namespace, error) {
			return ns.CreateNamespace(ctx, req)
		}).linked(nsLinks...)},
		Route{"GET", prefix + "/namespaces", "List namespaces", get(h, func(ctx context.Context, _ *http.Request) (NamespaceList, error) {
			all, err := ns.ListNamespaces(ctx)
			return NamespaceList{Namespaces: visibleNamespaces(ctx, all)}, err
		})},
		Route{"GET", prefix + "/namespaces/{namespace}", "Describe a namespace", get(h, func(ctx context.Context, r *http.Request) (api.Namespace, error) {
			return ns.DescribeNamespace(ctx, r.PathValue("namespace"))
		}).linked(nsLinks[1:]...)},
		Route{"PUT", prefix + "/namespaces/{namespace}", "Update a namespace (carry the version you read)", call(h, func(ctx context.Context, r *http.Request, req api.Namespace) (api.Namespace, error) {
			req.Name = r.PathValue("namespace")
			return ns.UpdateNamespace(ctx, req)
		}).pathFields("name").linked(nsLinks[0], nsLinks[2])},
	)
	if qs, ok := h.svc.(api.QuotaService); ok {
		routes = append(routes,
			Route{"GET", prefix + "/namespaces/{namespace}/quotas", "A namespace's quotas (zero fields: no bound)", get(h, func(ctx context.Context, r *http.Request) (api.Quotas, error) {
				return qs.GetQuotas(ctx, r.PathValue("namespace"))
			})},
			Route{"PUT", prefix + "/namespaces/{namespace}/quotas", "Set a namespace's quotas: starts per second, open runs, payload size", call(h, func(ctx context.Context, r *http.Request, q api.Quotas) (api.Quotas, error) {
				return qs.SetQuotas(ctx, r.PathValue("namespace"), q)
			})},
		)
	}
	return routes
}

// pageParams reads the page_size (0 to 1000) and page_token of a GET list.
func pageParams(r *http.Request) (int, []byte, error) {
	q := r.URL.Query()
	token, err := bytesParam(q, "page_token")
	if err != nil {
		return 0, nil, err
	}
	n, err := intParam(q, "page_size", 1000)
	return int(n), token, err
}

// scheduleRoutes are the routes of schedules.
func scheduleRoutes(h *handler, sc api.Schedules) []Route {
	list := prefix + "/namespaces/{namespace}/schedules"
	one := list + "/{schedule_id}"
	sref := func(r *http.Request) api.ScheduleRef {
		return api.ScheduleRef{Namespace: r.PathValue("namespace"), ScheduleID: r.PathValue("schedule_id")}
	}
	describe := link{name: "describe", target: "GET " + one, desc: "the schedule",
		params: map[string]any{"path.namespace": "$request.path.namespace", "path.schedule_id": "$request.path.schedule_id"}}
	return []Route{
		{"POST", list, "Create a schedule", call(h, func(ctx context.Context, r *http.Request, req api.CreateScheduleRequest) (struct{}, error) {
			req.Namespace = r.PathValue("namespace")
			return struct{}{}, sc.CreateSchedule(ctx, req)
		}).pathFields("namespace").linked(link{name: "describe", target: "GET " + one, desc: "the schedule created",
			params: map[string]any{"path.namespace": "$request.path.namespace", "path.schedule_id": "$request.body#/schedule_id"}})},
		{"GET", list, "List a namespace's schedules, in pages", get(h, func(ctx context.Context, r *http.Request) (api.ListSchedulesResponse, error) {
			size, token, err := pageParams(r)
			if err != nil {
				return api.ListSchedulesResponse{}, err
			}
			return sc.ListSchedules(ctx, api.ListSchedulesRequest{Namespace: r.PathValue("namespace"), PageSize: size, PageToken: token})
		}).with(intQuery("page_size", 0, 1000, "schedules per page (0: 100)"), bytesQuery("page_token", "next_page_token of the page before"))},
		{"GET", one, "Describe a schedule: its spec, next fire times, recent actions", get(h, func(ctx context.Context, r *http.Request) (api.ScheduleDescription, error) {
			return sc.DescribeSchedule(ctx, sref(r))
		})},
		{"PUT", one, "Update a schedule's spec, action and policies", call(h, func(ctx context.Context, r *http.Request, req api.UpdateScheduleRequest) (struct{}, error) {
			req.ScheduleRef = sref(r)
			return struct{}{}, sc.UpdateSchedule(ctx, req)
		}).pathFields("namespace", "schedule_id").linked(describe)},
		{"POST", one + "/pause", "Pause (paused: true) or unpause a schedule, with a note", call(h, func(ctx context.Context, r *http.Request, req api.PauseScheduleRequest) (struct{}, error) {
			req.ScheduleRef = sref(r)
			return struct{}{}, sc.PauseSchedule(ctx, req)
		}).pathFields("namespace", "schedule_id").linked(describe)},
		{"POST", one + "/trigger", "Take a schedule's action now", call(h, func(ctx context.Context, r *http.Request, req api.TriggerScheduleRequest) (struct{}, error) {
			req.ScheduleRef = sref(r)
			return struct{}{}, sc.TriggerSchedule(ctx, req)
		}).pathFields("namespace", "schedule_id").linked(describe)},
		{"POST", one + "/backfill", "Take a schedule's action for every fire time of a past range", call(h, func(ctx context.Context, r *http.Request, req api.BackfillScheduleRequest) (struct{}, error) {
			req.ScheduleRef = sref(r)
			return struct{}{}, sc.BackfillSchedule(ctx, req)
		}).pathFields("namespace", "schedule_id").linked(describe)},
		{"DELETE", one, "Delete a schedule (the runs it started go on)", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			return struct{}{}, sc.DeleteSchedule(ctx, api.DeleteScheduleRequest{ScheduleRef: sref(r), Identity: r.URL.Query().Get("identity")})
		}).with(param{"identity", map[string]any{"type": "string", "maxLength": store.MaxIdentity}, "who deletes it, for the record"})},
	}
}

// batchRoutes are the routes of batch operations.
func batchRoutes(h *handler, b api.Batches) []Route {
	list := prefix + "/namespaces/{namespace}/batches"
	one := list + "/{batch_id}"
	bref := func(r *http.Request) api.BatchRef {
		return api.BatchRef{Namespace: r.PathValue("namespace"), BatchID: r.PathValue("batch_id")}
	}
	return []Route{
		{"POST", list, "Start a batch operation on every run a filter matches", call(h, func(ctx context.Context, r *http.Request, req api.StartBatchRequest) (api.BatchRef, error) {
			req.Namespace = r.PathValue("namespace")
			return b.StartBatch(ctx, req)
		}).pathFields("namespace").linked(link{name: "describe", target: "GET " + one, desc: "the batch started",
			params: map[string]any{"path.namespace": "$request.path.namespace", "path.batch_id": "$response.body#/batch_id"}})},
		{"GET", list, "List a namespace's batches, in pages", get(h, func(ctx context.Context, r *http.Request) (api.ListBatchesResponse, error) {
			size, token, err := pageParams(r)
			if err != nil {
				return api.ListBatchesResponse{}, err
			}
			return b.ListBatches(ctx, api.ListBatchesRequest{Namespace: r.PathValue("namespace"), PageSize: size, PageToken: token})
		}).with(intQuery("page_size", 0, 1000, "batches per page (0: 100)"), bytesQuery("page_token", "next_page_token of the page before"))},
		{"GET", one, "Describe a batch: its progress and a result per run", get(h, func(ctx context.Context, r *http.Request) (api.BatchDescription, error) {
			return b.DescribeBatch(ctx, bref(r))
		})},
		{"POST", one + "/stop", "Stop a batch", call(h, func(ctx context.Context, r *http.Request, req api.StopBatchRequest) (struct{}, error) {
			req.BatchRef = bref(r)
			return struct{}{}, b.StopBatch(ctx, req)
		}).pathFields("namespace", "batch_id")},
	}
}

// messageRoutes are the routes of messages, mailboxes and message rules.
func messageRoutes(h *handler, m api.Messages) []Route {
	nsPath := prefix + "/namespaces/{namespace}"
	rules := nsPath + "/message-rules"
	mailboxParams := []param{messageNameParam("name", "the message name", true), textParam("correlation_key", "the correlation key", 200)}
	return []Route{
		{"POST", nsPath + "/messages", "Send a message: the mailbox of its name and correlation key delivers it to a run waiting for it, keeps it until one waits, or starts a run under the name's rule",
			call(h, func(ctx context.Context, r *http.Request, req api.SendMessageRequest) (api.SendMessageResponse, error) {
				req.Namespace = r.PathValue("namespace")
				return m.SendMessage(ctx, req)
			}).pathFields("namespace").linked(link{name: "mailbox", target: "GET " + nsPath + "/mailbox", desc: "the mailbox that took it",
				params: map[string]any{"path.namespace": "$request.path.namespace", "query.name": "$request.body#/name", "query.correlation_key": "$request.body#/correlation_key"}})},
		{"GET", nsPath + "/mailboxes", "List the mailboxes that keep messages or have runs waiting, in pages", get(h, func(ctx context.Context, r *http.Request) (api.ListMailboxesResponse, error) {
			size, token, err := pageParams(r)
			if err != nil {
				return api.ListMailboxesResponse{}, err
			}
			return m.ListMailboxes(ctx, api.ListMailboxesRequest{Namespace: r.PathValue("namespace"), Name: r.URL.Query().Get("name"), PageSize: size, PageToken: token})
		}).with(messageNameParam("name", "only the mailboxes of this message name", false), intQuery("page_size", 0, 1000, "mailboxes per page (0: 100)"),
			bytesQuery("page_token", "next_page_token of the page before"))},
		{"GET", nsPath + "/mailbox", "Describe the mailbox of a message name and correlation key: the messages it keeps, the runs waiting, its last deliveries", get(h, func(ctx context.Context, r *http.Request) (api.MailboxDescription, error) {
			q := r.URL.Query()
			return m.DescribeMailbox(ctx, api.MailboxRef{Namespace: r.PathValue("namespace"), Name: q.Get("name"), CorrelationKey: q.Get("correlation_key")})
		}).with(mailboxParams...)},
		{"GET", rules, "List the namespace's message rules", get(h, func(ctx context.Context, r *http.Request) (MessageRuleList, error) {
			all, err := m.ListMessageRules(ctx, r.PathValue("namespace"))
			if all == nil {
				all = []api.MessageRule{}
			}
			return MessageRuleList{Rules: all}, err
		})},
		{"PUT", rules + "/{message}", "Make messages of a name that no run waits for start a workflow", call(h, func(ctx context.Context, r *http.Request, rule api.MessageRule) (struct{}, error) {
			rule.Namespace, rule.Name = r.PathValue("namespace"), r.PathValue("message")
			return struct{}{}, m.PutMessageRule(ctx, rule)
		}).pathFields("namespace", "name")},
		{"DELETE", rules + "/{message}", "Delete the rule of a message name", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			return struct{}{}, m.DeleteMessageRule(ctx, api.MessageRuleRef{Namespace: r.PathValue("namespace"), Name: r.PathValue("message")})
		})},
	}
}

// messageNameParam is a query parameter holding a message name; a
// required one may not be empty.
func messageNameParam(name, desc string, required bool) param {
	p := textParam(name, desc, 200)
	if required {
		p.schema["minLength"] = 1
	}
	return p
}

// noNULParam is a query parameter of any length without NUL.
func noNULParam(name, desc string) param {
	return param{name, map[string]any{"type": "string", "pattern": noNUL}, desc}
}

// textParam is a query parameter of at most max characters without NUL.
func textParam(name, desc string, max int) param {
	return param{name, map[string]any{"type": "string", "maxLength": max, "pattern": noNUL}, desc}
}

// MessageRuleList is a namespace's message rules.
type MessageRuleList struct {
	Rules []api.MessageRule `json:"rules"`
}

// ShardList is the shards.
type ShardList struct {
	Shards []api.ShardInfo `json:"shards"`
}

// Placement is where a cluster's workflows live: by shard id, the address
// of the live node that owns the shard ("" when none does now).
type Placement struct {
	Owners []string `json:"owners"`
}

// placementOf reads the placement of cl's shards.
func placementOf(ctx context.Context, cl api.Cluster) (Placement, error) {
	shards, err := cl.ListShards(ctx)
	if err != nil {
		return Placement{}, err
	}
	nodes, err := cl.ListNodes(ctx, false)
	if err != nil {
		return Placement{}, err
	}
	addr := make(map[string]string, len(nodes))
	for _, n := range nodes {
		addr[n.ID] = n.Address
	}
	p := Placement{Owners: make([]string, len(shards))}
	for _, sh := range shards {
		if sh.ID >= 0 && int(sh.ID) < len(p.Owners) {
			p.Owners[sh.ID] = addr[sh.Owner]
		}
	}
	return p, nil
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

// isAPIPath reports a path of the API (under /api/), which the console
// never answers.
func isAPIPath(p string) bool { return p == "/api" || strings.HasPrefix(p, "/api/") }

// QueryResult is a query's answer.
type QueryResult struct {
	Result api.Value `json:"result,omitempty"`
}

// DocumentValue is a document's payload.
type DocumentValue struct {
	Value api.Value `json:"value"`
}

// Count is a count of runs.
type Count struct {
	Count int64 `json:"count"`
}

// StatusCounts is the number of runs matching a filter in each status, by
// the status's name.
type StatusCounts struct {
	Counts map[string]int64 `json:"counts"`
}

// statusCounts counts req's runs in each status.
func statusCounts(ctx context.Context, svc api.Service, req api.ListRequest) (StatusCounts, error) {
	out := StatusCounts{Counts: map[string]int64{}}
	// The filter's statuses are ignored, but must be statuses: a request
	// the API document refuses is refused.
	for _, st := range req.Statuses {
		if !st.Valid() {
			return StatusCounts{}, api.InvalidArgument("statuses", "unknown status %d", st)
		}
	}
	for st := store.StatusRunning; st.Valid(); st++ {
		req.Statuses = []store.RunStatus{st}
		n, err := svc.CountWorkflows(ctx, req)
		if err != nil {
			// The filter's own error (a bad field) as it is: the same
			// for every status.
			return StatusCounts{}, err
		}
		out.Counts[st.String()] = n
	}
	return out, nil
}

func ref(r *http.Request, runID string) api.RunRef {
	return api.RunRef{Namespace: r.PathValue("namespace"), WorkflowID: r.PathValue("workflow_id"), RunID: runID}
}

// digits is an unsigned decimal number, as integer query parameters take.
var digits = regexp.MustCompile(`^[0-9]+$`)

// intParam reads an integer query parameter of 0 to max (absent: 0).
func intParam(q url.Values, name string, max int64) (int64, error) {
	if !q.Has(name) {
		return 0, nil
	}
	v := q.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || !digits.MatchString(v) || n > max {
		return 0, api.InvalidArgument(name, "want an integer of 0 to %d, got %q", max, v)
	}
	return n, nil
}

// boolParam reads a boolean query parameter: true or false (absent: false).
func boolParam(q url.Values, name string) (bool, error) {
	switch v := q.Get(name); {
	case !q.Has(name) || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	default:
		return false, api.InvalidArgument(name, "want true or false, got %q", v)
	}
}

// bytesParam reads a base64 query parameter (absent: nil), as the JSON
// bodies carry bytes, so that a page token goes back as it came.
func bytesParam(q url.Values, name string) ([]byte, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, api.InvalidArgument(name, "want base64: %v", err)
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

// errTooManyPolls refuses a task poll past Options.PollRate (429).
var errTooManyPolls = errors.New("too many task polls; retry after a back-off")

// poll serves a task poll: it waits up to PollWait and answers 204 when no
// task came.
func poll[T any](h *handler, f func(context.Context, api.PollRequest) (*T, error)) endpoint {
	return endpoint{req: reflect.TypeFor[api.PollRequest](), resp: reflect.TypeFor[T](), noContent: true, serve: func(w http.ResponseWriter, r *http.Request) {
		if h.polls != nil && !h.polls.Allow() {
			writeError(w, errTooManyPolls)
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
	if q.Has("wait") {
		v := q.Get("wait")
		if !durationRE.MatchString(v) {
			writeError(w, api.InvalidArgument("wait", "want a duration such as 30s, got %q", v))
			return
		}
		// What the pattern admits parses, or overflows: longer than the most.
		if d, err := time.ParseDuration(v); err == nil {
			wait = min(d, h.opts.PollWait)
		}
	}
	follow, err := boolParam(q, "follow_runs")
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := h.longPoll(r.Context(), wait)
	defer cancel()
	res, err := h.svc.WaitResult(ctx, api.ResultRequest{RunRef: ref(r, q.Get("run_id")), FollowRuns: follow})
	if err != nil && ctx.Err() != nil && r.Context().Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		// The wait ran out, perhaps before the run was even looked up (wait=0):
		// a run that does not exist is an error, one that runs is 204.
		if _, err := h.svc.DescribeWorkflow(r.Context(), ref(r, q.Get("run_id"))); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	switch {
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

// retryAfterOf is the Retry-After an answer of err carries ("": none).
func retryAfterOf(err error) string {
	var qe *api.QuotaError
	var te *access.LoginThrottledError
	switch {
	case errors.Is(err, errBusy):
		return "1"
	case errors.As(err, &qe):
		return retryAfter(qe.RetryAfter)
	case errors.As(err, &te):
		return retryAfter(te.RetryAfter)
	}
	return ""
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
	// err is the error writeError answered (the audit log says why a call
	// was refused).
	err error
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

// retryAfter is a Retry-After header's whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

func writeError(w http.ResponseWriter, err error) {
	if after := retryAfterOf(err); after != "" {
		w.Header().Set("Retry-After", after)
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.err = err
	}
	status, body := errorOf(err)
	writeJSON(w, status, body)
}
