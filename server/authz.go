package server

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
)

// Scope says where a route looks for the role it needs.
type Scope int

// The scopes of routes.
const (
	// Public routes answer anyone, without credentials.
	Public Scope = iota
	// Authenticated routes answer any known caller; what they show is
	// narrowed to what the caller may see.
	Authenticated
	// InNamespace routes need the role in the path's {namespace}.
	InNamespace
	// InTaskNamespace routes need the role in the namespace of the run
	// their body's task token names.
	InTaskNamespace
	// InAnyNamespace routes need the role in some namespace: they change
	// what every namespace shares (DAG and workflow definitions).
	InAnyNamespace
	// ClusterAdmin routes manage namespaces, users and nodes.
	ClusterAdmin
	// Node routes are the calls between the nodes of a cluster.
	Node
)

// Need is what a route asks of its caller.
type Need struct {
	Scope Scope
	// Role is the role needed in the scope's namespace.
	Role access.Role
}

// String says the need as the OpenAPI document does.
func (n Need) String() string {
	switch n.Scope {
	case Public:
		return "anyone"
	case Authenticated:
		return "any authenticated caller"
	case InNamespace:
		return fmt.Sprintf("%s in the namespace", n.Role)
	case InTaskNamespace:
		return fmt.Sprintf("%s in the namespace of the task's run", n.Role)
	case InAnyNamespace:
		return fmt.Sprintf("%s in some namespace", n.Role)
	case ClusterAdmin:
		return "cluster admin"
	case Node:
		return "a node of the cluster"
	}
	return "unknown"
}

func ns(role access.Role) Need   { return Need{Scope: InNamespace, Role: role} }
func task(role access.Role) Need { return Need{Scope: InTaskNamespace, Role: role} }

// routeNeeds is what every route needs, by "METHOD path" under /api/v1. A
// route missing here is served to cluster admins alone, and
// TestEveryRouteHasANeed fails.
var routeNeeds = map[string]Need{
	// Runs.
	"POST /namespaces/{namespace}/workflows":                                      ns(access.Writer),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/signals":                ns(access.Writer),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/signal-with-start":      ns(access.Writer),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/queries":                ns(access.Writer),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/cancel":                 ns(access.Operator),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/terminate":              ns(access.Operator),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/pause":                  ns(access.Operator),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/resume":                 ns(access.Operator),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/reset":                  ns(access.Operator),
	"POST /namespaces/{namespace}/workflows/{workflow_id}/rerun":                  ns(access.Operator),
	"GET /namespaces/{namespace}/workflows/{workflow_id}":                         ns(access.Reader),
	"GET /namespaces/{namespace}/workflows/{workflow_id}/result":                  ns(access.Reader),
	"GET /namespaces/{namespace}/workflows/{workflow_id}/history":                 ns(access.Reader),
	"GET /namespaces/{namespace}/workflows/{workflow_id}/documents/{document_id}": ns(access.Reader),
	"POST /namespaces/{namespace}/workflow-search":                                ns(access.Reader),
	"POST /namespaces/{namespace}/workflow-count":                                 ns(access.Reader),
	"POST /namespaces/{namespace}/workflow-status-counts":                         ns(access.Reader),
	"GET /namespaces/{namespace}/overview":                                        ns(access.Reader),
	"GET /namespaces/{namespace}/queues":                                          ns(access.Reader),
	"POST /namespaces/{namespace}/messages":                                       ns(access.Writer),
	"GET /namespaces/{namespace}/tasks":                                           ns(access.Reader),
	"GET /namespaces/{namespace}/tasks/{task_id}":                                 ns(access.Reader),
	"POST /namespaces/{namespace}/tasks/{task_id}/actions":                        ns(access.Writer),
	"GET /namespaces/{namespace}/mailboxes":                                       ns(access.Reader),
	"GET /namespaces/{namespace}/mailbox":                                         ns(access.Reader),
	"GET /namespaces/{namespace}/message-rules":                                   ns(access.Reader),
	"PUT /namespaces/{namespace}/message-rules/{message}":                         ns(access.Admin),
	"DELETE /namespaces/{namespace}/message-rules/{message}":                      ns(access.Admin),
	"POST /namespaces/{namespace}/batches":                                        ns(access.Operator),
	"GET /namespaces/{namespace}/batches":                                         ns(access.Reader),
	"GET /namespaces/{namespace}/batches/{batch_id}":                              ns(access.Reader),
	"POST /namespaces/{namespace}/batches/{batch_id}/stop":                        ns(access.Operator),
	"POST /namespaces/{namespace}/workflow-tasks/poll":                            ns(access.Worker),
	"POST /namespaces/{namespace}/step-tasks/poll":                                ns(access.Worker),
	"POST /workflow-tasks/complete":                                               task(access.Worker),
	"POST /namespaces/{namespace}/task-exchange":                                  ns(access.Worker),
	"GET /namespaces/{namespace}/task-stream":                                     ns(access.Worker),
	"POST /workflow-tasks/fail":                                                   task(access.Worker),
	"POST /queries/answer":                                                        task(access.Worker),
	"POST /step-tasks/complete":                                                   task(access.Worker),
	"POST /step-tasks/fail":                                                       task(access.Worker),
	"POST /step-tasks/heartbeat":                                                  task(access.Worker),
	"POST /namespaces/{namespace}/schedules":                                      ns(access.Operator),
	"GET /namespaces/{namespace}/schedules":                                       ns(access.Reader),
	"GET /namespaces/{namespace}/schedules/{schedule_id}":                         ns(access.Reader),
	"PUT /namespaces/{namespace}/schedules/{schedule_id}":                         ns(access.Operator),
	"DELETE /namespaces/{namespace}/schedules/{schedule_id}":                      ns(access.Operator),
	"POST /namespaces/{namespace}/schedules/{schedule_id}/pause":                  ns(access.Operator),
	"POST /namespaces/{namespace}/schedules/{schedule_id}/trigger":                ns(access.Operator),
	"POST /namespaces/{namespace}/schedules/{schedule_id}/backfill":               ns(access.Operator),
	"GET /namespaces/{namespace}/dag-instances/{workflow_id}":                     ns(access.Reader),
	"GET /namespaces/{namespace}/dag-instances/{workflow_id}/tasks/{task}/log":    ns(access.Reader),
	"POST /namespaces/{namespace}/dag-instances/{workflow_id}/command":            ns(access.Operator),
	"POST /namespaces/{namespace}/dag-instances/{workflow_id}/rerun":              ns(access.Operator),
	"GET /namespaces/{namespace}/dags/{name}/instances":                           ns(access.Reader),
	"POST /namespaces/{namespace}/dags/{name}/instances":                          ns(access.Writer),
	"POST /namespaces/{namespace}/dags/{name}/backfills":                          ns(access.Writer),
	"GET /namespaces/{namespace}/dags/{name}/backfills/{backfill_id}":             ns(access.Reader),
	"GET /namespaces/{namespace}/sagas":                                           ns(access.Reader),
	"POST /namespaces/{namespace}/sagas":                                          ns(access.Writer),
	"GET /namespaces/{namespace}/sagas/{id}":                                      ns(access.Reader),
	"POST /namespaces/{namespace}/sagas/{id}/resolve":                             ns(access.Operator),
	"POST /namespaces/{namespace}/sagas/{id}/terminate":                           ns(access.Operator),
	"POST /namespaces/{namespace}/sagas/{id}/disable":                             ns(access.Operator),
	"POST /namespaces/{namespace}/sagas/{id}/enable":                              ns(access.Operator),
	"POST /namespaces/{namespace}/saga-batches":                                   ns(access.Operator),
	"GET /namespaces/{namespace}/statemachine-executors":                          ns(access.Reader),
	"GET /namespaces/{namespace}/statemachine-instances":                          ns(access.Reader),
	"POST /namespaces/{namespace}/statemachine-instances":                         ns(access.Writer),
	"GET /namespaces/{namespace}/statemachine-instances/{id}":                     ns(access.Reader),
	"PUT /namespaces/{namespace}/statemachine-instances/{id}":                     ns(access.Operator),
	"POST /namespaces/{namespace}/statemachine-instances/{id}/signal":             ns(access.Writer),
	"POST /namespaces/{namespace}/statemachine-instances/{id}/wakeup":             ns(access.Operator),
	"GET /namespaces/{namespace}/statemachines/{type}/stats":                      ns(access.Reader),
	"GET /namespaces/{namespace}":                                                 ns(access.Reader),
	"PUT /namespaces/{namespace}":                                                 ns(access.Admin),
	"GET /namespaces/{namespace}/grants":                                          ns(access.Admin),
	"PUT /namespaces/{namespace}/grants/{user}":                                   ns(access.Admin),
	"GET /namespaces/{namespace}/quotas":                                          ns(access.Reader),
	"PUT /namespaces/{namespace}/quotas":                                          {Scope: ClusterAdmin},

	// What every namespace shares: definitions are read by anyone known,
	// changed by an operator of some namespace.
	"GET /dags":                                    {Scope: Authenticated},
	"POST /dags":                                   {Scope: InAnyNamespace, Role: access.Operator},
	"POST /dag-check":                              {Scope: Authenticated},
	"GET /dags/{name}":                             {Scope: Authenticated},
	"POST /dags/{name}/release":                    {Scope: InAnyNamespace, Role: access.Operator},
	"GET /dags/{name}/versions":                    {Scope: Authenticated},
	"GET /dags/{name}/versions/{version}":          {Scope: Authenticated},
	"GET /definitions":                             {Scope: Authenticated},
	"GET /alert-groups":                            {Scope: Authenticated},
	"GET /alert-groups/{name}":                     {Scope: Authenticated},
	"PUT /alert-groups/{name}":                     {Scope: InAnyNamespace, Role: access.Operator},
	"DELETE /alert-groups/{name}":                  {Scope: InAnyNamespace, Role: access.Operator},
	"POST /alert-groups/{name}/test":               {Scope: InAnyNamespace, Role: access.Operator},
	"POST /definitions":                            {Scope: InAnyNamespace, Role: access.Operator},
	"GET /definitions/{type}/{version}":            {Scope: Authenticated},
	"GET /statemachines":                           {Scope: Authenticated},
	"GET /statemachines/{type}":                    {Scope: Authenticated},
	"GET /statemachines/{type}/versions/{version}": {Scope: Authenticated},

	// Tenants (issue 35) name the workers' OS users: changed by cluster
	// admins alone.
	"GET /tenants":           {Scope: Authenticated},
	"POST /tenants":          {Scope: ClusterAdmin},
	"GET /tenants/{name}":    {Scope: Authenticated},
	"PUT /tenants/{name}":    {Scope: ClusterAdmin},
	"DELETE /tenants/{name}": {Scope: ClusterAdmin},
	// The resource centre (DAG resources, UDFs and data sources): what
	// each caller may use is narrowed by its owner's grants; anyone who
	// may write somewhere may make new ones.
	"GET /resources":                           {Scope: Authenticated},
	"POST /resources":                          {Scope: InAnyNamespace, Role: access.Writer},
	"GET /resources/{name}":                    {Scope: Authenticated},
	"GET /resources/{name}/versions/{version}": {Scope: Authenticated},
	"DELETE /resources/{name}":                 {Scope: Authenticated},
	"POST /resources/{name}/grants":            {Scope: Authenticated},
	"GET /datasources":                         {Scope: Authenticated},
	"POST /datasources":                        {Scope: InAnyNamespace, Role: access.Writer},
	"GET /datasources/{name}":                  {Scope: Authenticated},
	"PUT /datasources/{name}":                  {Scope: Authenticated},
	"DELETE /datasources/{name}":               {Scope: Authenticated},
	"POST /datasources/{name}/grants":          {Scope: Authenticated},
	"POST /datasources/{name}/test":            {Scope: Authenticated},
	"GET /datasources/{name}/connection":       {Scope: InAnyNamespace, Role: access.Worker}, // and a service account, not a person: the centre checks
	"GET /udfs":                                {Scope: Authenticated},
	"GET /udfs/{name}":                         {Scope: Authenticated},
	"PUT /udfs/{name}":                         {Scope: InAnyNamespace, Role: access.Writer},
	"DELETE /udfs/{name}":                      {Scope: Authenticated},
	"POST /resource-checks":                    {Scope: Authenticated},

	// The cluster.
	"GET /namespaces":  {Scope: Authenticated}, // narrowed to the caller's
	"POST /namespaces": {Scope: ClusterAdmin},
	"GET /nodes":       {Scope: ClusterAdmin},
	"GET /shards":      {Scope: ClusterAdmin},
	"GET /placement":   {Scope: Authenticated}, // the nodes' addresses, which clients are given anyway
	"POST /peer/{op}":  {Scope: Node},

	// Access.
	"GET /whoami":          {Scope: Authenticated},
	"POST /login":          {Scope: Public},
	"POST /logout":         {Scope: Authenticated},
	"GET /users":           {Scope: ClusterAdmin},
	"POST /users":          {Scope: ClusterAdmin},
	"GET /users/{user}":    {Scope: ClusterAdmin},
	"PUT /users/{user}":    {Scope: ClusterAdmin},
	"DELETE /users/{user}": {Scope: ClusterAdmin},
	"GET /tokens":          {Scope: Authenticated},                      // the caller's own; every one for a cluster admin
	"POST /tokens":         {Scope: Authenticated},                      // for oneself; for anyone by a cluster admin
	"DELETE /tokens/{id}":  {Scope: Authenticated},                      // one's own; any by a cluster admin
	"GET /audit":           {Scope: InAnyNamespace, Role: access.Admin}, // a namespace's for its admins; every one's for cluster admins

	// Logins: locks of failed logins, one's own password.
	"POST /users/{user}/unlock": {Scope: ClusterAdmin},
	"PUT /whoami/password":      {Scope: Authenticated}, // the caller's own, given the current one
}

// needOf returns a route's need; one missing from routeNeeds is a cluster
// admin's alone.
func needOf(method, path string) (Need, bool) {
	n, ok := routeNeeds[method+" "+strings.TrimPrefix(path, prefix)]
	if !ok {
		return Need{Scope: ClusterAdmin}, false
	}
	return n, true
}

// authorize checks the request's identity against the route's need; the
// identity is in ctx (authenticate put it there).
func authorize(ctx context.Context, need Need, r *http.Request) error {
	id, _ := access.FromContext(ctx)
	if id.Kind == access.KindNode {
		return authorizeNode(id, need, r)
	}
	switch need.Scope {
	case Public, Authenticated, InTaskNamespace:
		// A task route checks its token's namespace itself (allowTask).
		return nil
	case InNamespace:
		if n := r.PathValue("namespace"); !id.Can(n, need.Role) {
			return denied(id, "%s in namespace %q", need.Role, n)
		}
		return nil
	case InAnyNamespace:
		names, all := id.Namespaces()
		if all {
			return nil
		}
		for _, n := range names {
			if id.Can(n, need.Role) {
				return nil
			}
		}
		return denied(id, "%s in some namespace", need.Role)
	case ClusterAdmin:
		if !id.ClusterAdmin {
			return denied(id, "cluster admin")
		}
		return nil
	case Node:
		if id.Kind != access.KindNode && id.Kind != access.KindAnonymous {
			return denied(id, "a node of the cluster")
		}
		return nil
	}
	return denied(id, "an unknown scope")
}

// nodeRoutes are the routes of the API a node calls on another with the
// cluster secret: the calls it forwards to the node that serves a run's
// shard (engine.Options.Dial; api.Peer's methods the engine calls), beside
// the peering route itself.
var nodeRoutes = map[string]bool{
	"POST /namespaces/{namespace}/workflows/{workflow_id}/signals":           true,
	"POST /namespaces/{namespace}/workflows/{workflow_id}/signal-with-start": true,
	"POST /namespaces/{namespace}/workflows/{workflow_id}/cancel":            true,
	"POST /namespaces/{namespace}/workflows/{workflow_id}/terminate":         true,
	"POST /namespaces/{namespace}/workflows/{workflow_id}/queries":           true,
	"GET /namespaces/{namespace}/workflows/{workflow_id}":                    true,
	"GET /namespaces/{namespace}/workflows/{workflow_id}/result":             true,
	"POST /workflow-tasks/complete":                                          true,
	"POST /workflow-tasks/fail":                                              true,
	"POST /queries/answer":                                                   true,
	"POST /step-tasks/complete":                                              true,
	"POST /step-tasks/fail":                                                  true,
	"POST /step-tasks/heartbeat":                                             true,
}

// authorizeNode lets a caller with the cluster secret call what a node
// needs of another: the peering route and the calls nodes forward to each
// other. Everything else (users, tokens, grants, namespaces) needs a user
// with the role: the secret is no cluster admin.
func authorizeNode(id access.Identity, need Need, r *http.Request) error {
	_, path, _ := strings.Cut(r.Pattern, " ")
	if need.Scope == Node || need.Scope == Public || nodeRoutes[r.Method+" "+strings.TrimPrefix(path, prefix)] {
		return nil
	}
	return fmt.Errorf("%w: the cluster secret is for the calls between the nodes of a cluster; %s %s needs a user's token (%s)",
		api.ErrPermissionDenied, r.Method, r.URL.Path, need)
}

func denied(id access.Identity, format string, args ...any) error {
	return fmt.Errorf("%w: %s %q lacks %s", api.ErrPermissionDenied, id.Kind, id.Name, fmt.Sprintf(format, args...))
}

// allowTask checks that the caller may work the tasks of the namespace a
// task token names.
func (h *handler) allowTask(ctx context.Context, token []byte) error {
	id, ok := access.FromContext(ctx)
	if !ok || id.ClusterAdmin || id.Kind == access.KindNode {
		return nil
	}
	tn, ok := h.svc.(interface {
		TaskNamespace([]byte) (string, error)
	})
	if !ok {
		return denied(id, "a way to read the task's namespace")
	}
	n, err := tn.TaskNamespace(token)
	if err != nil {
		return err
	}
	if !id.Can(n, access.Worker) {
		return denied(id, "worker in namespace %q", n)
	}
	return nil
}

// SessionCookie is the cookie the console's login sets: a session token.
const SessionCookie = "strand_session"

// nodeIdentity is another node of the cluster: it may call the routes a
// node needs (authorizeNode) and no other.
var nodeIdentity = access.Identity{Name: "node", Kind: access.KindNode}

// authenticate returns who the request comes from: the cluster's node
// secret, an API token, or the console's session cookie. Without access
// control every caller is access.Anonymous.
func (h *handler) authenticate(r *http.Request, need Need) (access.Identity, error) {
	scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if strings.EqualFold(scheme, "Node") {
		if h.opts.ClusterSecret != "" && subtle.ConstantTimeCompare([]byte(cred), []byte(h.opts.ClusterSecret)) == 1 {
			return nodeIdentity, nil
		}
		return access.Identity{}, fmt.Errorf("%w: wrong cluster secret", api.ErrUnauthenticated)
	}
	if h.opts.Access == nil || h.opts.Open {
		return access.Anonymous, nil
	}
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		return h.opts.Access.Authenticate(r.Context(), strings.TrimSpace(cred))
	case scheme != "":
		return access.Identity{}, fmt.Errorf("%w: the Authorization header takes Bearer TOKEN", api.ErrUnauthenticated)
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get(csrfHeader) == "" {
			// A cross-site form can send the cookie but not a header.
			return access.Identity{}, fmt.Errorf("%w: a request with the session cookie needs the %s header", api.ErrPermissionDenied, csrfHeader)
		}
		return h.opts.Access.Authenticate(r.Context(), c.Value)
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		// A client certificate the server's client CA signed: its common
		// name is a user's or service account's.
		return h.opts.Access.UserIdentity(r.Context(), r.TLS.VerifiedChains[0][0].Subject.CommonName)
	}
	if need.Scope == Public {
		return access.Identity{}, nil
	}
	return access.Identity{}, fmt.Errorf("%w: no credentials: send Authorization: Bearer TOKEN (strand login makes one)", api.ErrUnauthenticated)
}

// refusedKey holds, in a request's context, why the open-mode guard refused
// it (guardOpen), for its route to record and answer.
type refusedKey struct{}

// csrfHeader must come with every change a session cookie authenticates:
// the console sends it; a cross-site form cannot.
const csrfHeader = "X-Strand-Console"

// visibleNamespaces keeps the namespaces the caller holds a role in.
func visibleNamespaces(ctx context.Context, all []api.Namespace) []api.Namespace {
	id, ok := access.FromContext(ctx)
	if !ok || id.ClusterAdmin {
		return all
	}
	out := []api.Namespace{}
	for _, n := range all {
		if len(id.Roles(n.Name)) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// maxStampedIdentity bounds the identity stampIdentity writes, within the
// limit of every request's Identity field.
const maxStampedIdentity = 250

// stampIdentity writes who asked into a request's Identity field (what a
// run's history records as the one who started, signaled or terminated
// it): the authenticated caller's name, with what the request claimed
// after it. Without access control the claim stands alone.
func stampIdentity(ctx context.Context, v any) {
	id, ok := access.FromContext(ctx)
	if !ok || id.Name == "" || id.Kind == access.KindAnonymous || id.Kind == access.KindNode {
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return
	}
	f := rv.Elem().FieldByName("Identity")
	if !f.IsValid() || f.Kind() != reflect.String || !f.CanSet() {
		return
	}
	stamped := id.Name
	if claimed := f.String(); claimed != "" && claimed != id.Name {
		stamped += " (" + claimed + ")"
	}
	if len(stamped) > maxStampedIdentity {
		stamped = strings.ToValidUTF8(stamped[:maxStampedIdentity], "")
	}
	f.SetString(stamped)
}
