// Package remote is an api.Service that talks to a Strand server over
// HTTP: hand it to worker.New or client.New instead of the embedded engine.
package remote

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/statemachine"
)

// Service is a Strand server seen as an api.Service. It retries a call
// that failed for a reason that passes, as its RetryPolicy says.
type Service struct {
	nodes  nodes
	http   *http.Client
	policy RetryPolicy
	log    *slog.Logger
	rnd    func(int64) int64 // jitter: a number in [0, n)
	// auth is the Authorization header every request carries ("": none).
	auth string
	// resolve, when not nil, resolves the nodes' host names now and then
	// (Options.ResolveEvery).
	resolve *resolver
	// cluster: s calls several nodes, and watches the health of a node
	// whose answer is long in coming.
	cluster bool
	// probeEvery, probeTimeout: how a node whose answer is long in coming
	// is checked (probeDefaults unless a test says otherwise).
	probeEvery, probeTimeout time.Duration
	// exch carries task polls and reports in task exchanges (nil: each is
	// a call of its own); postExchanges: they are POSTed rather than sent
	// on task streams.
	exch          *exchanger
	postExchanges bool
	// place is which node owns each shard, for a cluster (placement.go).
	place placement
}

var (
	_ api.Peer         = (*Service)(nil)
	_ api.Service      = (*Service)(nil)
	_ api.Namespaces   = (*Service)(nil)
	_ api.Cluster      = (*Service)(nil)
	_ api.QuotaService = (*Service)(nil)
)

// Options configure a Service.
type Options struct {
	// HTTPClient sends the requests. Nil means one with a connection pool
	// sized for a worker. Polls and result waits hold a request open for up
	// to the server's poll wait, so a client timeout must be longer than
	// that.
	HTTPClient *http.Client
	// Retry says how a call that failed for a reason that passes is tried
	// again; the zero value retries with the defaults until the call's
	// context ends.
	Retry RetryPolicy
	// Logger gets a debug record per retry (default slog.Default()).
	Logger *slog.Logger
	// TLS configures the connections to an https:// server (which CAs to
	// trust, a client certificate) when HTTPClient is nil; nil trusts the
	// system's roots.
	TLS *tls.Config
	// Token is the API token every request carries ("strand_…", made by
	// strand login or strand token create); a server with access control
	// refuses requests without one.
	Token string
	// NodeSecret, for the nodes of a cluster, is the cluster's secret
	// their calls to each other carry instead of a token.
	NodeSecret string
	// ResolveEvery, when above zero, makes a Service of NewCluster resolve
	// the host name of each URL and call each of its addresses as a node
	// of its own, resolving again that often: an address that left the
	// name is dropped, one that joined is added. It needs HTTPClient nil
	// (each address gets connections of its own); a URL naming an IP
	// address is one node.
	ResolveEvery time.Duration
	// PlainTaskCalls sends each task poll and each report (complete, fail)
	// as a call of its own, as a worker on the plain JSON API does; by
	// default they share task exchanges (POST /api/v1/task-exchange): the
	// reports made meanwhile and the polls waiting go in one request.
	PlainTaskCalls bool
	// PostedExchanges POSTs each task exchange as a request of its own;
	// by default they go on a task stream (a WebSocket) per node and
	// namespace, many at once, and a server without task streams gets them
	// POSTed.
	PostedExchanges bool
}

// New returns the service of the server at baseURL (http://host:port),
// with the default retry policy. A nil client means one with a connection
// pool sized for a worker; polls and result waits hold a request open for
// up to the server's poll wait, so a client timeout must be longer than
// that.
func New(baseURL string, client *http.Client) *Service {
	return NewWithOptions(baseURL, Options{HTTPClient: client})
}

// NewWithOptions returns the service of the server at baseURL
// (http://host:port), configured by opts. NewCluster takes the nodes of a
// cluster.
func NewWithOptions(baseURL string, opts Options) *Service {
	return newService([]string{baseURL}, opts)
}

// newService returns the service of the servers at urls (at least one).
func newService(urls []string, opts Options) *Service {
	client := opts.HTTPClient
	var transport *http.Transport
	if client == nil {
		// A worker holds many polls open at once: keep as many connections.
		transport = http.DefaultTransport.(*http.Transport).Clone()
		transport.MaxIdleConnsPerHost = 512
		transport.TLSClientConfig = opts.TLS
		client = &http.Client{Transport: transport}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	auth := ""
	switch {
	case opts.NodeSecret != "":
		auth = "Node " + opts.NodeSecret
	case opts.Token != "":
		auth = "Bearer " + opts.Token
	}
	s := &Service{http: client, policy: opts.Retry.withDefaults(), log: log, rnd: rand.Int64N, auth: auth,
		probeEvery: probeEvery, probeTimeout: probeTimeout, postExchanges: opts.PostedExchanges}
	for _, u := range urls {
		u = strings.TrimRight(u, "/")
		s.nodes.list = append(s.nodes.list, &node{url: u, base: u + "/api/v1", source: u})
	}
	if opts.ResolveEvery > 0 && transport != nil {
		s.resolve = &resolver{every: opts.ResolveEvery, lookup: net.DefaultResolver.LookupHost, transport: transport}
	}
	s.cluster = len(urls) > 1 || s.resolve != nil
	if !opts.PlainTaskCalls && opts.NodeSecret == "" {
		// A node's calls to another are forwarded calls, each its own.
		s.exch = newExchanger(s)
	}
	return s
}

func ns(n string) string {
	if n == "" {
		n = api.DefaultNamespace
	}
	return url.PathEscape(n)
}

func wfPath(ref api.RunRef) string {
	return "/namespaces/" + ns(ref.Namespace) + "/workflows/" + url.PathEscape(ref.WorkflowID)
}

// withRequestID says whether a call that is not idempotent by itself may
// be sent again: only when it carries a request id.
func withRequestID(id string) resend {
	if id == "" {
		return sendOnce
	}
	return idempotent
}

// do sends a request and decodes the answer into out, retrying a transient
// failure as the policy says when may allows (a call forwarded between
// nodes is sent once: see RetryPolicy); it reports false for 204 (nothing
// yet).
func (s *Service) do(ctx context.Context, may resend, method, path string, in, out any) (bool, error) {
	return s.send(ctx, may, false, method, path, in, out)
}

// send is do, for a poll when poll is set: polls go to a cluster's live
// nodes in turn.
func (s *Service) send(ctx context.Context, may resend, poll bool, method, path string, in, out any) (bool, error) {
	return s.sendOn(ctx, nil, may, poll, method, path, in, out)
}

// sendOn is send whose first attempt goes to node first when it is set
// and up.
func (s *Service) sendOn(ctx context.Context, first *node, may resend, poll bool, method, path string, in, out any) (bool, error) {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return false, fmt.Errorf("remote: encode request: %w", err)
		}
		body = b
	}
	if api.Forwarded(ctx) {
		may = forwarded
	}
	return s.retryOn(ctx, may, poll, first, method+" "+path, func(n *node) attempt { return s.once(ctx, n, method, path, body, out) })
}

// once makes one attempt of a call on node n; body, when not nil, is sent
// afresh.
func (s *Service) once(ctx context.Context, n *node, method, path string, body []byte, out any) attempt {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	actx, stop := s.watch(ctx, n)
	defer stop()
	req, err := http.NewRequestWithContext(actx, method, n.base+path, rd)
	if err != nil {
		return attempt{err: fmt.Errorf("remote: %w", err)}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if api.Forwarded(ctx) {
		req.Header.Set(api.ForwardedHeader, "1")
	}
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	resp, err := s.clientOf(n).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return attempt{err: ctx.Err(), ended: true}
		}
		if a, ok := silent(actx, n); ok {
			return a
		}
		return attempt{err: fmt.Errorf("%w: %v", api.ErrUnavailable, err), transient: true, nodeDown: true, notSent: notSent(err)}
	}
	defer func() {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is kept
		resp.Body.Close()
	}()
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return attempt{}
	case resp.StatusCode >= 300:
		var e server.Error
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			e = server.Error{}
		}
		return refused(method+" "+path, resp.StatusCode, resp.Header.Get("Retry-After"), e)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			switch {
			case ctx.Err() != nil:
				return attempt{err: ctx.Err(), ended: true}
			case context.Cause(actx) == errSilent:
				a, _ := silent(actx, n)
				return a
			case transportError(err):
				// The connection failed mid-answer.
				return attempt{err: fmt.Errorf("%w: remote: read the answer of %s %s: %v", api.ErrUnavailable, method, path, err), transient: true, nodeDown: true}
			}
			return attempt{err: fmt.Errorf("remote: decode %s %s: %w", method, path, err)}
		}
	}
	return attempt{ok: true}
}

// refused is the attempt of a call what answered with status (300 or
// more), its Retry-After header and its body e (zero: not the server's
// own error).
func refused(what string, status int, after string, e server.Error) attempt {
	a := attempt{transient: transientStatus(status), nodeDown: status == http.StatusServiceUnavailable}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		a.retryAfter = retryAfter(after, time.Now())
	}
	switch {
	case e.Code != "":
		a.err = e.Err()
		a.timedOut = e.Code == server.CodeTimeout
	case a.transient:
		// Not the server's own answer (a proxy's, or cut short).
		a.err = fmt.Errorf("%w: remote: %s: status %d", api.ErrUnavailable, what, status)
	default:
		a.err = fmt.Errorf("remote: %s: status %d", what, status)
	}
	return a
}

// StartWorkflow implements api.Service. Like signal, signal-with-start,
// cancel and terminate, it is retried only when it carries a request id.
func (s *Service) StartWorkflow(ctx context.Context, req api.StartRequest) (api.StartResponse, error) {
	var out api.StartResponse
	_, err := s.doAbout(ctx, req.Namespace, req.WorkflowID, withRequestID(req.RequestID), "POST", "/namespaces/"+ns(req.Namespace)+"/workflows", req, &out)
	return out, err
}

// SignalWorkflow implements api.Service.
func (s *Service) SignalWorkflow(ctx context.Context, req api.SignalRequest) error {
	_, err := s.doAbout(ctx, req.Namespace, req.WorkflowID, withRequestID(req.RequestID), "POST", wfPath(req.RunRef)+"/signals", req, nil)
	return err
}

// SignalWithStart implements api.Service.
func (s *Service) SignalWithStart(ctx context.Context, req api.SignalWithStartRequest) (api.StartResponse, error) {
	var out api.StartResponse
	_, err := s.doAbout(ctx, req.Start.Namespace, req.Start.WorkflowID, withRequestID(req.Start.RequestID), "POST", wfPath(api.RunRef{Namespace: req.Start.Namespace, WorkflowID: req.Start.WorkflowID})+"/signal-with-start", req, &out)
	return out, err
}

// CancelWorkflow implements api.Service.
func (s *Service) CancelWorkflow(ctx context.Context, req api.CancelRequest) error {
	_, err := s.doAbout(ctx, req.Namespace, req.WorkflowID, withRequestID(req.RequestID), "POST", wfPath(req.RunRef)+"/cancel", req, nil)
	return err
}

// TerminateWorkflow implements api.Service.
func (s *Service) TerminateWorkflow(ctx context.Context, req api.TerminateRequest) error {
	_, err := s.doAbout(ctx, req.Namespace, req.WorkflowID, withRequestID(req.RequestID), "POST", wfPath(req.RunRef)+"/terminate", req, nil)
	return err
}

// QueryWorkflow implements api.Service.
func (s *Service) QueryWorkflow(ctx context.Context, req api.QueryRequest) ([]byte, error) {
	var out server.QueryResult
	_, err := s.doAbout(ctx, req.Namespace, req.WorkflowID, exceptTimeouts, "POST", wfPath(req.RunRef)+"/queries", req, &out)
	return out.Result, err
}

// DescribeWorkflow implements api.Service.
func (s *Service) DescribeWorkflow(ctx context.Context, ref api.RunRef) (api.Description, error) {
	var out api.Description
	_, err := s.doAbout(ctx, ref.Namespace, ref.WorkflowID, idempotent, "GET", wfPath(ref)+"?run_id="+url.QueryEscape(ref.RunID), nil, &out)
	return out, err
}

// WaitResult implements api.Service: it long-polls until the run closes or
// ctx ends.
func (s *Service) WaitResult(ctx context.Context, req api.ResultRequest) (api.Result, error) {
	q := url.Values{"run_id": {req.RunID}, "follow_runs": {strconv.FormatBool(req.FollowRuns)}}
	for {
		var out api.Result
		ok, err := s.doAbout(ctx, req.Namespace, req.WorkflowID, idempotent, "GET", wfPath(req.RunRef)+"/result?"+q.Encode(), nil, &out)
		if err != nil || ok {
			return out, err
		}
	}
}

// ListWorkflows implements api.Service.
func (s *Service) ListWorkflows(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	var out api.ListResponse
	_, err := s.do(ctx, idempotent, "POST", "/namespaces/"+ns(req.Namespace)+"/workflow-search", req, &out)
	return out, err
}

// CountWorkflows implements api.Service.
func (s *Service) CountWorkflows(ctx context.Context, req api.ListRequest) (int64, error) {
	var out server.Count
	_, err := s.do(ctx, idempotent, "POST", "/namespaces/"+ns(req.Namespace)+"/workflow-count", req, &out)
	return out.Count, err
}

// GetHistory implements api.Service.
func (s *Service) GetHistory(ctx context.Context, req api.HistoryRequest) (api.HistoryPage, error) {
	q := url.Values{"run_id": {req.RunID}, "page_token": {base64.StdEncoding.EncodeToString(req.PageToken)}, "resolve": {strconv.FormatBool(req.Resolve)},
		"resolve_details": {strconv.FormatBool(req.ResolveDetails)}, "from_event_id": {strconv.FormatInt(req.FromEventID, 10)}, "page_size": {strconv.Itoa(req.PageSize)}}
	var out api.HistoryPage
	_, err := s.doAbout(ctx, req.Namespace, req.WorkflowID, idempotent, "GET", wfPath(req.RunRef)+"/history?"+q.Encode(), nil, &out)
	return out, err
}

// GetDocument implements api.Service.
func (s *Service) GetDocument(ctx context.Context, req api.DocumentRequest) (api.Value, error) {
	var out struct {
		Value api.Value `json:"value"`
	}
	_, err := s.do(ctx, idempotent, "GET", wfPath(req.RunRef)+"/documents/"+url.PathEscape(req.ID)+"?"+url.Values{"run_id": {req.RunID}}.Encode(), nil, &out)
	return out.Value, err
}

// PollWorkflowTask implements api.Service.
func (s *Service) PollWorkflowTask(ctx context.Context, req api.PollRequest) (*api.WorkflowTask, error) {
	if s.exch.usable(ctx) && !req.NoWait {
		t, err := s.exch.poll(ctx, server.TakeWorkflowTasks, req)
		if !errors.Is(err, errNoExchange) {
			if wt, ok := t.(*api.WorkflowTask); ok {
				return wt, nil
			}
			return nil, ignoreEnded(ctx, err)
		}
	}
	var out api.WorkflowTask
	ok, err := s.send(ctx, idempotent, true, "POST", "/namespaces/"+ns(req.Namespace)+"/workflow-tasks/poll", req, &out)
	if err != nil || !ok {
		return nil, ignoreEnded(ctx, err)
	}
	return &out, nil
}

// CompleteWorkflowTask implements api.Service. It is retried like every
// call that carries a task token: a second delivery of one that landed
// answers api.ErrTaskNotFound and changes nothing.
func (s *Service) CompleteWorkflowTask(ctx context.Context, req api.CompleteWorkflowTaskRequest) (api.CompleteWorkflowTaskResponse, error) {
	if s.exch.usable(ctx) {
		o, err := s.exch.report(ctx, &pendingReport{token: req.Token, completeWT: &req})
		if !errors.Is(err, errNoExchange) {
			return api.CompleteWorkflowTaskResponse{LastEventID: o.LastEventID}, cmp.Or(err, o.Err())
		}
	}
	var out api.CompleteWorkflowTaskResponse
	_, err := s.do(ctx, idempotent, "POST", "/workflow-tasks/complete", req, &out)
	return out, err
}

// FailWorkflowTask implements api.Service.
func (s *Service) FailWorkflowTask(ctx context.Context, req api.FailWorkflowTaskRequest) error {
	if s.exch.usable(ctx) {
		o, err := s.exch.report(ctx, &pendingReport{token: req.Token, failWT: &req})
		if !errors.Is(err, errNoExchange) {
			return cmp.Or(err, o.Err())
		}
	}
	_, err := s.do(ctx, idempotent, "POST", "/workflow-tasks/fail", req, nil)
	return err
}

// AnswerQuery implements api.Service.
func (s *Service) AnswerQuery(ctx context.Context, ans api.QueryAnswer) error {
	_, err := s.do(ctx, idempotent, "POST", "/queries/answer", ans, nil)
	return err
}

// PollStepTask implements api.Service.
func (s *Service) PollStepTask(ctx context.Context, req api.PollRequest) (*api.StepTask, error) {
	if s.exch.usable(ctx) && !req.NoWait {
		t, err := s.exch.poll(ctx, server.TakeSteps, req)
		if !errors.Is(err, errNoExchange) {
			if st, ok := t.(*api.StepTask); ok {
				return st, nil
			}
			return nil, ignoreEnded(ctx, err)
		}
	}
	var out api.StepTask
	ok, err := s.send(ctx, idempotent, true, "POST", "/namespaces/"+ns(req.Namespace)+"/step-tasks/poll", req, &out)
	if err != nil || !ok {
		return nil, ignoreEnded(ctx, err)
	}
	return &out, nil
}

// CompleteStep implements api.Service.
func (s *Service) CompleteStep(ctx context.Context, req api.CompleteStepRequest) error {
	if s.exch.usable(ctx) {
		o, err := s.exch.report(ctx, &pendingReport{token: req.Token, completeSt: &req})
		if !errors.Is(err, errNoExchange) {
			return cmp.Or(err, o.Err())
		}
	}
	_, err := s.do(ctx, idempotent, "POST", "/step-tasks/complete", req, nil)
	return err
}

// FailStep implements api.Service.
func (s *Service) FailStep(ctx context.Context, req api.FailStepRequest) error {
	if s.exch.usable(ctx) {
		o, err := s.exch.report(ctx, &pendingReport{token: req.Token, failSt: &req})
		if !errors.Is(err, errNoExchange) {
			return cmp.Or(err, o.Err())
		}
	}
	_, err := s.do(ctx, idempotent, "POST", "/step-tasks/fail", req, nil)
	return err
}

// HeartbeatStep implements api.Service.
func (s *Service) HeartbeatStep(ctx context.Context, req api.HeartbeatRequest) (api.HeartbeatResponse, error) {
	var out api.HeartbeatResponse
	_, err := s.do(ctx, idempotent, "POST", "/step-tasks/heartbeat", req, &out)
	return out, err
}

// ignoreEnded turns a poll cut short by ctx into "no task", as the embedded
// engine answers.
func ignoreEnded(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// CreateNamespace implements api.Namespaces.
func (s *Service) CreateNamespace(ctx context.Context, n api.Namespace) (api.Namespace, error) {
	var out api.Namespace
	_, err := s.do(ctx, sendOnce, "POST", "/namespaces", n, &out)
	return out, err
}

// DescribeNamespace implements api.Namespaces.
func (s *Service) DescribeNamespace(ctx context.Context, name string) (api.Namespace, error) {
	var out api.Namespace
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+url.PathEscape(name), nil, &out)
	return out, err
}

// UpdateNamespace implements api.Namespaces.
func (s *Service) UpdateNamespace(ctx context.Context, n api.Namespace) (api.Namespace, error) {
	var out api.Namespace
	_, err := s.do(ctx, sendOnce, "PUT", "/namespaces/"+url.PathEscape(n.Name), n, &out)
	return out, err
}

// ListNamespaces implements api.Namespaces.
func (s *Service) ListNamespaces(ctx context.Context) ([]api.Namespace, error) {
	var out server.NamespaceList
	_, err := s.do(ctx, idempotent, "GET", "/namespaces", nil, &out)
	return out.Namespaces, err
}

// ListNodes implements api.Cluster.
func (s *Service) ListNodes(ctx context.Context, all bool) ([]api.Node, error) {
	var out server.NodeList
	_, err := s.do(ctx, idempotent, "GET", "/nodes?all="+strconv.FormatBool(all), nil, &out)
	return out.Nodes, err
}

// StateMachineExecutors returns the executors of a namespace's state
// machines: the live nodes, and per executor group the workers that polled
// it lately.
func (s *Service) StateMachineExecutors(ctx context.Context, namespace string) (statemachine.Executors, error) {
	var out statemachine.Executors
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(namespace)+"/statemachine-executors", nil, &out)
	return out, err
}

// PutDefinition implements api.Cluster.
func (s *Service) PutDefinition(ctx context.Context, d api.Definition) (api.Definition, error) {
	var out api.Definition
	_, err := s.do(ctx, idempotent, "POST", "/definitions", d, &out)
	return out, err
}

// GetDefinition implements api.Cluster.
func (s *Service) GetDefinition(ctx context.Context, typ string, version int32) (api.Definition, error) {
	var out api.Definition
	_, err := s.do(ctx, idempotent, "GET", "/definitions/"+url.PathEscape(typ)+"/"+strconv.Itoa(int(version)), nil, &out)
	return out, err
}

// ListDefinitions implements api.Cluster.
func (s *Service) ListDefinitions(ctx context.Context, typ string) ([]api.Definition, error) {
	var out server.DefinitionList
	_, err := s.do(ctx, idempotent, "GET", "/definitions?type="+url.QueryEscape(typ), nil, &out)
	return out.Definitions, err
}

// ListShards implements api.Cluster.
func (s *Service) ListShards(ctx context.Context) ([]api.ShardInfo, error) {
	var out server.ShardList
	_, err := s.do(ctx, idempotent, "GET", "/shards", nil, &out)
	return out.Shards, err
}

// PeerCall implements api.Peering: a node calling another. Every peering
// op may be delivered twice (a poll's task that is lost times out and is
// offered again, a start carries a request id, a release and a parent's
// notice find the task or the child gone), but a peering call is marked
// forwarded and so sent once: the engine retries it itself.
func (s *Service) PeerCall(ctx context.Context, op string, in json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	_, err := s.do(ctx, idempotent, "POST", "/peer/"+url.PathEscape(op), in, &out)
	return out, err
}

// pageQuery is the query of a GET list's page.
func pageQuery(size int, token []byte) string {
	q := url.Values{}
	if size > 0 {
		q.Set("page_size", strconv.Itoa(size))
	}
	if len(token) > 0 {
		q.Set("page_token", base64.StdEncoding.EncodeToString(token))
	}
	return q.Encode()
}

func schedulePath(ref api.ScheduleRef) string {
	return "/namespaces/" + ns(ref.Namespace) + "/schedules/" + url.PathEscape(ref.ScheduleID)
}

// CreateSchedule implements api.Schedules.
func (s *Service) CreateSchedule(ctx context.Context, req api.CreateScheduleRequest) error {
	_, err := s.do(ctx, sendOnce, "POST", "/namespaces/"+ns(req.Namespace)+"/schedules", req, nil)
	return err
}

// DescribeSchedule implements api.Schedules.
func (s *Service) DescribeSchedule(ctx context.Context, ref api.ScheduleRef) (api.ScheduleDescription, error) {
	var out api.ScheduleDescription
	_, err := s.do(ctx, idempotent, "GET", schedulePath(ref), nil, &out)
	return out, err
}

// ListSchedules implements api.Schedules.
func (s *Service) ListSchedules(ctx context.Context, req api.ListSchedulesRequest) (api.ListSchedulesResponse, error) {
	var out api.ListSchedulesResponse
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(req.Namespace)+"/schedules?"+pageQuery(req.PageSize, req.PageToken), nil, &out)
	return out, err
}

// UpdateSchedule implements api.Schedules.
func (s *Service) UpdateSchedule(ctx context.Context, req api.UpdateScheduleRequest) error {
	_, err := s.do(ctx, idempotent, "PUT", schedulePath(req.ScheduleRef), req, nil)
	return err
}

// PauseSchedule implements api.Schedules.
func (s *Service) PauseSchedule(ctx context.Context, req api.PauseScheduleRequest) error {
	_, err := s.do(ctx, idempotent, "POST", schedulePath(req.ScheduleRef)+"/pause", req, nil)
	return err
}

// TriggerSchedule implements api.Schedules.
func (s *Service) TriggerSchedule(ctx context.Context, req api.TriggerScheduleRequest) error {
	_, err := s.do(ctx, sendOnce, "POST", schedulePath(req.ScheduleRef)+"/trigger", req, nil)
	return err
}

// BackfillSchedule implements api.Schedules.
func (s *Service) BackfillSchedule(ctx context.Context, req api.BackfillScheduleRequest) error {
	_, err := s.do(ctx, sendOnce, "POST", schedulePath(req.ScheduleRef)+"/backfill", req, nil)
	return err
}

// DeleteSchedule implements api.Schedules.
func (s *Service) DeleteSchedule(ctx context.Context, req api.DeleteScheduleRequest) error {
	_, err := s.do(ctx, sendOnce, "DELETE", schedulePath(req.ScheduleRef)+"?identity="+url.QueryEscape(req.Identity), nil, nil)
	return err
}

// SendMessage implements api.Messages. A message without an id gets one
// here, so that a send retried after a lost answer is taken once.
func (s *Service) SendMessage(ctx context.Context, req api.SendMessageRequest) (api.SendMessageResponse, error) {
	if req.MessageID == "" {
		req.MessageID = uuid.NewString()
	}
	var out api.SendMessageResponse
	_, err := s.do(ctx, idempotent, "POST", "/namespaces/"+ns(req.Namespace)+"/messages", req, &out)
	return out, err
}

// ListMailboxes implements api.Messages.
func (s *Service) ListMailboxes(ctx context.Context, req api.ListMailboxesRequest) (api.ListMailboxesResponse, error) {
	q := pageQuery(req.PageSize, req.PageToken)
	if req.Name != "" {
		q += "&name=" + url.QueryEscape(req.Name)
	}
	var out api.ListMailboxesResponse
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(req.Namespace)+"/mailboxes?"+q, nil, &out)
	return out, err
}

// DescribeMailbox implements api.Messages.
func (s *Service) DescribeMailbox(ctx context.Context, ref api.MailboxRef) (api.MailboxDescription, error) {
	q := url.Values{"name": {ref.Name}, "correlation_key": {ref.CorrelationKey}}
	var out api.MailboxDescription
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(ref.Namespace)+"/mailbox?"+q.Encode(), nil, &out)
	return out, err
}

func rulePath(ref api.MessageRuleRef) string {
	return "/namespaces/" + ns(ref.Namespace) + "/message-rules/" + url.PathEscape(ref.Name)
}

// PutMessageRule implements api.Messages.
func (s *Service) PutMessageRule(ctx context.Context, rule api.MessageRule) error {
	_, err := s.do(ctx, idempotent, "PUT", rulePath(rule.MessageRuleRef), rule, nil)
	return err
}

// ListMessageRules implements api.Messages.
func (s *Service) ListMessageRules(ctx context.Context, namespace string) ([]api.MessageRule, error) {
	var out struct {
		Rules []api.MessageRule `json:"rules"`
	}
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(namespace)+"/message-rules", nil, &out)
	return out.Rules, err
}

// DeleteMessageRule implements api.Messages.
func (s *Service) DeleteMessageRule(ctx context.Context, ref api.MessageRuleRef) error {
	_, err := s.do(ctx, sendOnce, "DELETE", rulePath(ref), nil, nil)
	return err
}

func taskPath(ref api.TaskRef) string {
	return "/namespaces/" + ns(ref.Namespace) + "/tasks/" + url.PathEscape(ref.TaskID)
}

// callerQuery is the caller a request names, for a server without access
// control (one with it goes by the caller's identity).
func callerQuery(q url.Values, c api.TaskCaller) url.Values {
	if c.User != "" {
		q.Set("user", c.User)
	}
	if len(c.Groups) > 0 {
		q.Set("groups", strings.Join(c.Groups, ","))
	}
	return q
}

// ListTasks implements api.HumanTasks.
func (s *Service) ListTasks(ctx context.Context, req api.ListTasksRequest) (api.ListTasksResponse, error) {
	q := callerQuery(url.Values{}, req.TaskCaller)
	for k, v := range map[string]string{"status": req.Status, "parent_workflow_type": req.ParentWorkflowType} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if req.Mine {
		q.Set("mine", "true")
	}
	if req.Priority != 0 {
		q.Set("priority", strconv.Itoa(int(req.Priority)))
	}
	if !req.DueBefore.IsZero() {
		q.Set("due_before", req.DueBefore.Format(time.RFC3339Nano))
	}
	var out api.ListTasksResponse
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(req.Namespace)+"/tasks?"+q.Encode(), nil, &out)
	return out, err
}

// DescribeTask implements api.HumanTasks.
func (s *Service) DescribeTask(ctx context.Context, req api.DescribeTaskRequest) (api.HumanTask, error) {
	var out api.HumanTask
	_, err := s.do(ctx, idempotent, "GET", taskPath(req.TaskRef)+"?"+callerQuery(url.Values{}, req.TaskCaller).Encode(), nil, &out)
	return out, err
}

// ActOnTask implements api.HumanTasks.
func (s *Service) ActOnTask(ctx context.Context, req api.TaskActionRequest) (api.HumanTask, error) {
	var out api.HumanTask
	_, err := s.do(ctx, sendOnce, "POST", taskPath(req.TaskRef)+"/actions", req, &out)
	return out, err
}

func batchPath(ref api.BatchRef) string {
	return "/namespaces/" + ns(ref.Namespace) + "/batches/" + url.PathEscape(ref.BatchID)
}

// StartBatch implements api.Batches.
func (s *Service) StartBatch(ctx context.Context, req api.StartBatchRequest) (api.BatchRef, error) {
	var out api.BatchRef
	may := sendOnce
	if req.BatchID != "" {
		may = idempotent // a second start of the id is refused, not doubled
	}
	_, err := s.do(ctx, may, "POST", "/namespaces/"+ns(req.Namespace)+"/batches", req, &out)
	return out, err
}

// DescribeBatch implements api.Batches.
func (s *Service) DescribeBatch(ctx context.Context, ref api.BatchRef) (api.BatchDescription, error) {
	var out api.BatchDescription
	_, err := s.do(ctx, idempotent, "GET", batchPath(ref), nil, &out)
	return out, err
}

// ListBatches implements api.Batches.
func (s *Service) ListBatches(ctx context.Context, req api.ListBatchesRequest) (api.ListBatchesResponse, error) {
	var out api.ListBatchesResponse
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(req.Namespace)+"/batches?"+pageQuery(req.PageSize, req.PageToken), nil, &out)
	return out, err
}

// StopBatch implements api.Batches.
func (s *Service) StopBatch(ctx context.Context, req api.StopBatchRequest) error {
	_, err := s.do(ctx, idempotent, "POST", batchPath(req.BatchRef)+"/stop", req, nil)
	return err
}

var (
	_ api.Batches   = (*Service)(nil)
	_ api.Schedules = (*Service)(nil)
	_ api.Operator  = (*Service)(nil)
)

// PauseWorkflow implements api.Operator.
func (s *Service) PauseWorkflow(ctx context.Context, req api.PauseRequest) error {
	_, err := s.do(ctx, idempotent, "POST", wfPath(req.RunRef)+"/pause", req, nil)
	return err
}

// ResetWorkflow implements api.Operator.
func (s *Service) ResetWorkflow(ctx context.Context, req api.ResetRequest) (api.StartResponse, error) {
	var out api.StartResponse
	_, err := s.do(ctx, sendOnce, "POST", wfPath(req.RunRef)+"/reset", req, &out)
	return out, err
}

// RerunWorkflow implements api.Operator.
func (s *Service) RerunWorkflow(ctx context.Context, req api.RerunRequest) (api.StartResponse, error) {
	var out api.StartResponse
	_, err := s.do(ctx, withRequestID(req.RequestID), "POST", wfPath(req.RunRef)+"/rerun", req, &out)
	return out, err
}

// ResumeWorkflow implements api.Operator.
func (s *Service) ResumeWorkflow(ctx context.Context, req api.PauseRequest) error {
	_, err := s.do(ctx, idempotent, "POST", wfPath(req.RunRef)+"/resume", req, nil)
	return err
}

// ListQueues implements api.Monitoring: a namespace's task queues, with
// their backlogs and the workers that polled them lately.
func (s *Service) ListQueues(ctx context.Context, namespace string) (api.QueueList, error) {
	var out api.QueueList
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(namespace)+"/queues", nil, &out)
	return out, err
}

// Overview implements api.Monitoring: what the engine did in a namespace
// lately.
func (s *Service) Overview(ctx context.Context, namespace string) (api.Overview, error) {
	var out api.Overview
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(namespace)+"/overview", nil, &out)
	return out, err
}
