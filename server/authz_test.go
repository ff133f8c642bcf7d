package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/dag/resources"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/humantask"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/schedule"
)

// served is what strand server serves, as the tests need all the routes.
type served struct {
	*engine.Engine
	*schedules
	*batches
	*messages
	*humanTasks
}

type (
	schedules  = schedule.Service
	batches    = batch.Service
	messages   = message.Service
	humanTasks = humantask.Service
)

// accessFixture is a server with access control over an engine on SQLite,
// a namespace "acme" and one caller per role.
type accessFixture struct {
	srv     *httptest.Server
	eng     *engine.Engine
	ac      *access.Service
	h       *handler
	callers []caller
	secret  string
}

// caller is one identity the tests call as: its credentials and, written
// apart from the access package, what it holds.
type caller struct {
	name   string
	auth   string // the Authorization header ("": none)
	admin  bool   // cluster admin
	node   bool
	grants map[string][]access.Role
}

func newAccessFixture(t *testing.T) *accessFixture {
	t.Helper()
	ctx := context.Background()
	st := testdb.SQLite(t)
	eng, err := engine.Open(ctx, st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	for _, ns := range []string{"acme", "other"} {
		if _, err := eng.CreateNamespace(ctx, api.Namespace{Name: ns}); err != nil {
			t.Fatal(err)
		}
	}
	ac := access.New(st, access.Options{BcryptCost: 4})
	f := &accessFixture{eng: eng, ac: ac, secret: "a-cluster-secret-for-the-test"}
	// Refusals alike are counted for a second, then written as one entry.
	audit := NewAuditLog(st, AuditOptions{RefusalWindow: time.Second})
	audit.Start()
	t.Cleanup(audit.Close)
	centre, err := resources.New(st, resources.Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Access: ac, Audit: audit, ClusterSecret: f.secret, PollWait: 50 * time.Millisecond, Resources: centre}
	svc := served{eng, schedule.NewService(eng), batch.NewService(eng), message.NewService(eng), humantask.NewService(eng)}
	f.h = &handler{svc: svc, opts: opts}
	f.srv = httptest.NewServer(New(svc, opts))
	t.Cleanup(f.srv.Close)

	add := func(name string, admin bool, grants map[string][]access.Role) {
		if _, err := ac.CreateUser(ctx, access.NewUser{Name: name, Kind: access.KindService, ClusterAdmin: admin}); err != nil {
			t.Fatal(err)
		}
		for ns, roles := range grants {
			if _, err := ac.Grant(ctx, name, ns, roles...); err != nil {
				t.Fatal(err)
			}
		}
		secret, _, err := ac.CreateToken(ctx, access.NewToken{User: name})
		if err != nil {
			t.Fatal(err)
		}
		f.callers = append(f.callers, caller{name: name, auth: "Bearer " + secret, admin: admin, grants: grants})
	}
	add("root", true, nil)
	add("acme-admin", false, map[string][]access.Role{"acme": {access.Admin}})
	add("acme-operator", false, map[string][]access.Role{"acme": {access.Operator}})
	add("acme-writer", false, map[string][]access.Role{"acme": {access.Writer}})
	add("acme-reader", false, map[string][]access.Role{"acme": {access.Reader}})
	add("acme-worker", false, map[string][]access.Role{"acme": {access.Worker}})
	add("other-operator", false, map[string][]access.Role{"other": {access.Operator}})
	f.callers = append(f.callers, caller{name: "node", auth: "Node " + f.secret, node: true},
		caller{name: "no one"}, caller{name: "wrong secret", auth: "Node not-the-secret"}, caller{name: "bad token", auth: "Bearer strand_0123456789abcdef_" + strings.Repeat("ab", 32)})
	return f
}

// auth returns the Authorization header of the caller named who ("" for
// no one).
func (f *accessFixture) auth(t *testing.T, who string) string {
	t.Helper()
	if who == "" {
		return ""
	}
	for _, c := range f.callers {
		if c.name == who {
			return c.auth
		}
	}
	t.Fatalf("no caller %s", who)
	return ""
}

// do calls the API as who and returns the answer's status, header and
// body.
func (f *accessFixture) do(t *testing.T, who, method, path, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+prefix+path, strings.NewReader(body))
	if auth := f.auth(t, who); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// includedBy says which held roles allow what a role is needed for: the
// tests' own reading of the role table in the package doc.
var includedBy = map[access.Role][]access.Role{
	access.Reader:   {access.Reader, access.Writer, access.Operator, access.Admin, access.Worker},
	access.Writer:   {access.Writer, access.Operator, access.Admin},
	access.Operator: {access.Operator, access.Admin},
	access.Admin:    {access.Admin},
	access.Worker:   {access.Worker, access.Admin},
}

// allowed says whether the server takes the caller's credentials (401 if
// not) and whether it lets them call a route of need (403 if not);
// forwarded: the route is one a node forwards to another.
func (c caller) allowed(need Need, forwarded bool) (authenticated, allowed bool) {
	if c.auth == "" {
		return false, need.Scope == Public
	}
	if !c.node && !c.admin && c.grants == nil {
		return false, false // credentials the server does not accept
	}
	holds := func(ns string, need access.Role) bool {
		for _, r := range c.grants[ns] {
			if slices.Contains(includedBy[need], r) {
				return true
			}
		}
		return false
	}
	switch need.Scope {
	case Public:
		return true, true
	case Node:
		return true, c.node
	}
	if c.node {
		// The cluster secret is for the calls between nodes alone: the
		// peering route and the run calls nodes forward to each other.
		return true, forwarded
	}
	switch need.Scope {
	case Authenticated:
		return true, true
	case ClusterAdmin:
		return true, c.admin
	case InNamespace, InTaskNamespace:
		return true, c.admin || holds("acme", need.Role)
	case InAnyNamespace:
		if c.admin {
			return true, true
		}
		for ns := range c.grants {
			if holds(ns, need.Role) {
				return true, true
			}
		}
		return true, false
	}
	return true, false
}

// TestEveryRouteHasANeed: each route is in routeNeeds and each entry there
// is a route, so a new route cannot be served without a decision.
func TestEveryRouteHasANeed(t *testing.T) {
	f := newAccessFixture(t)
	seen := map[string]bool{}
	for _, r := range f.h.routes() {
		key := r.Method + " " + strings.TrimPrefix(r.Path, prefix)
		seen[key] = true
		if _, ok := needOf(r.Method, r.Path); !ok {
			t.Errorf("%s has no entry in routeNeeds", key)
		}
	}
	for key := range routeNeeds {
		if !seen[key] {
			t.Errorf("routeNeeds has %s, which is no route", key)
		}
	}
}

// TestRoutesByRole calls every route as every caller and checks 401, 403 or
// neither against routeNeeds.
func TestRoutesByRole(t *testing.T) {
	f := newAccessFixture(t)
	ctx := context.Background()
	// A real task token of a run in acme, for the routes that answer
	// tasks: the refused get 403 before the token is looked at, the
	// allowed get past it (to task_not_found once the first one failed
	// the task).
	if _, err := f.eng.StartWorkflow(ctx, api.StartRequest{Namespace: "acme", WorkflowID: "wf-1", WorkflowType: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	task, err := f.eng.PollWorkflowTask(ctx, api.PollRequest{Namespace: "acme", Queue: "q"})
	if err != nil || task == nil {
		t.Fatalf("poll: %v %v", task, err)
	}
	tokenBody, _ := json.Marshal(map[string]any{"token": task.Token})

	for _, r := range f.h.routes() {
		if r.Path == prefix+"/logout" {
			continue // revokes the caller's token: TestLogout
		}
		need, _ := needOf(r.Method, r.Path)
		path := strings.NewReplacer("{namespace}", "acme", "{workflow_id}", "wf-1", "{op}", "no-such-op").Replace(r.Path)
		for _, p := range []string{"{version}", "{type}", "{name}", "{id}", "{schedule_id}", "{batch_id}", "{document_id}", "{task}", "{user}"} {
			path = strings.ReplaceAll(path, p, "x")
		}
		body := "{}"
		if need.Scope == InTaskNamespace {
			body = string(tokenBody)
		}
		for _, c := range f.callers {
			var rd io.Reader
			if r.Method == http.MethodPost || r.Method == http.MethodPut {
				rd = strings.NewReader(body)
			}
			req, _ := http.NewRequestWithContext(ctx, r.Method, f.srv.URL+path, rd)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			authn, allowed := c.allowed(need, nodeForwards[r.Method+" "+strings.TrimPrefix(r.Path, prefix)])
			got := resp.StatusCode
			switch {
			case !authn && !allowed && got != http.StatusUnauthorized:
				t.Errorf("%s %s as %s: %d, want 401 (%s)", r.Method, path, c.name, got, msg)
			case authn && !allowed && got != http.StatusForbidden:
				t.Errorf("%s %s as %s: %d, want 403 (%s)", r.Method, path, c.name, got, msg)
			case allowed && (got == http.StatusUnauthorized || got == http.StatusForbidden):
				t.Errorf("%s %s as %s: %d, want it allowed (%s)", r.Method, path, c.name, got, msg)
			}
			if got >= 500 && got != http.StatusServiceUnavailable {
				t.Errorf("%s %s as %s: %d (%s)", r.Method, path, c.name, got, msg)
			}
		}
	}
}

// TestRolesDoWhatTheySay makes real calls that succeed for one role and
// are refused for the one below it, and checks a caller's lists show only
// their namespaces.
func TestRolesDoWhatTheySay(t *testing.T) {
	f := newAccessFixture(t)
	do := func(who, method, path, body string) (int, string) {
		t.Helper()
		code, _, b := f.do(t, who, method, path, body)
		return code, b
	}
	start := `{"workflow_id":"order-1","workflow_type":"Order","queue":"q"}`
	for _, step := range []struct {
		who, method, path, body string
		want                    int
	}{
		{"acme-reader", "POST", "/namespaces/acme/workflows", start, 403},
		{"other-operator", "POST", "/namespaces/acme/workflows", start, 403},
		{"acme-writer", "POST", "/namespaces/acme/workflows", start, 200},
		{"acme-reader", "GET", "/namespaces/acme/workflows/order-1", "", 200},
		{"other-operator", "GET", "/namespaces/acme/workflows/order-1", "", 403},
		{"acme-writer", "POST", "/namespaces/acme/workflows/order-1/terminate", `{"reason":"no"}`, 403},
		{"acme-operator", "POST", "/namespaces/acme/workflows/order-1/terminate", `{"reason":"done with it"}`, 200},
		{"acme-operator", "PUT", "/namespaces/acme/grants/acme-reader", `{"roles":["writer"]}`, 403},
		{"acme-admin", "PUT", "/namespaces/acme/grants/acme-reader", `{"roles":["reader","writer"]}`, 200},
		{"acme-reader", "POST", "/namespaces/acme/workflows", `{"workflow_id":"order-2","workflow_type":"Order","queue":"q"}`, 200},
		{"acme-admin", "POST", "/namespaces", `{"name":"mine"}`, 403},
		{"root", "POST", "/namespaces", `{"name":"mine"}`, 200},
		// A tenant names the OS user DAG tasks run as: an operator may
		// store definitions, but not a tenant's, by this route either.
		{"acme-operator", "POST", "/definitions", `{"type":"dag-tenant/etl","body":"eyJ1c2VyIjoicm9vdCJ9"}`, 403},
		{"acme-operator", "POST", "/definitions", `{"type":"Order","body":"e30="}`, 200},
		{"root", "POST", "/definitions", `{"type":"dag-tenant/etl","body":"eyJ1c2VyIjoicm9vdCJ9"}`, 200},
	} {
		if got, body := do(step.who, step.method, step.path, step.body); got != step.want {
			t.Fatalf("%s %s as %s: %d, want %d (%s)", step.method, step.path, step.who, got, step.want, body)
		}
	}
	// Taking every role away answers an empty list, never null.
	if got, body := do("acme-admin", "PUT", "/namespaces/acme/grants/acme-writer", `{}`); got != 200 || !strings.Contains(body, `"roles":[]`) {
		t.Errorf("PUT grants with no roles: %d %s, want 200 with \"roles\":[]", got, body)
	}
	for who, want := range map[string]string{"other-operator": `["other"]`, "acme-worker": `["acme"]`, "root": `["acme","default","mine","other"]`} {
		_, body := do(who, "GET", "/namespaces", "")
		var list NamespaceList
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range list.Namespaces {
			names = append(names, n.Name)
		}
		if got, _ := json.Marshal(names); string(got) != want {
			t.Errorf("%s lists namespaces %s, want %s", who, got, want)
		}
	}
}

// TestLogout: a session cookie or token is refused once logged out.
func TestLogout(t *testing.T) {
	f := newAccessFixture(t)
	ctx := context.Background()
	if _, err := f.ac.CreateUser(ctx, access.NewUser{Name: "alice", Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ac.Grant(ctx, "alice", "acme", access.Reader); err != nil {
		t.Fatal(err)
	}
	post := func(path, body string, cookie *http.Cookie, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", f.srv.URL+prefix+path, strings.NewReader(body))
		if cookie != nil {
			req.AddCookie(cookie)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post("/login", `{"name":"alice","password":"wrong password"}`, nil, nil); resp.StatusCode != 401 {
		t.Fatalf("wrong password: %d", resp.StatusCode)
	}
	resp := post("/login", `{"name":"alice","password":"correct horse battery","session":true}`, nil, nil)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			session = c
		}
	}
	if resp.StatusCode != 200 || session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d, cookie %+v", resp.StatusCode, session)
	}
	console := map[string]string{csrfHeader: "1"}
	search := "/namespaces/acme/workflow-count"
	if resp := post(search, `{}`, session, nil); resp.StatusCode != 403 {
		t.Fatalf("a POST with the cookie and no %s header: %d, want 403", csrfHeader, resp.StatusCode)
	}
	if resp := post(search, `{}`, session, console); resp.StatusCode != 200 {
		t.Fatalf("count with the session: %d", resp.StatusCode)
	}
	if resp := post("/logout", `{}`, session, console); resp.StatusCode != 200 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if resp := post(search, `{}`, session, console); resp.StatusCode != 401 {
		t.Fatalf("count with the cookie after logout: %d, want 401", resp.StatusCode)
	}
}

// TestAuditLog: changes, refused ones too, are recorded with who, what and
// how it ended; reads are not; secrets never are; a namespace's admin
// reads its entries alone.
func TestAuditLog(t *testing.T) {
	f := newAccessFixture(t)
	ctx := context.Background()
	do := func(who, method, path, body string) (int, string) {
		t.Helper()
		code, _, b := f.do(t, who, method, path, body)
		return code, b
	}
	const password = "the password of alice"
	if _, err := f.ac.CreateUser(ctx, access.NewUser{Name: "alice", Password: password}); err != nil {
		t.Fatal(err)
	}
	do("acme-writer", "POST", "/namespaces/acme/workflows", `{"workflow_id":"order-1","workflow_type":"Order","queue":"q"}`)
	do("acme-reader", "POST", "/namespaces/acme/workflows/order-1/terminate", `{"reason":"mine"}`)
	do("acme-reader", "GET", "/namespaces/acme/workflows/order-1", "")
	do("", "POST", "/namespaces/acme/workflows/order-1/signals", `{"signal_name":"x"}`)
	_, login := do("", "POST", "/login", `{"name":"alice","password":"`+password+`"}`)
	_, made := do("root", "POST", "/tokens", `{"user":"acme-writer","name":"more"}`)
	var tok CreateTokenResponse
	json.Unmarshal([]byte(made), &tok)
	var loggedIn LoginResponse
	json.Unmarshal([]byte(login), &loggedIn)
	if tok.Token == "" || loggedIn.Token == "" {
		t.Fatalf("token %s, login %s", made, login)
	}

	var list AuditList
	var raw string
	deadline := time.Now().Add(10 * time.Second)
	for len(list.Entries) < 5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		_, raw = do("root", "GET", "/audit", "")
		list = AuditList{}
		json.Unmarshal([]byte(raw), &list)
	}
	type seen struct {
		actor, action, target string
		status                int32
	}
	var got []seen
	for _, e := range list.Entries {
		got = append(got, seen{e.Actor, e.Action, e.Target, e.Status})
	}
	want := []seen{ // newest first
		{"root (service)", "POST /tokens", "acme-writer", 200},
		{"(unauthenticated)", "POST /login", "alice", 200},
		{"(unauthenticated)", "POST /namespaces/{namespace}/workflows/{workflow_id}/signals", "order-1", 401},
		{"acme-reader (service)", "POST /namespaces/{namespace}/workflows/{workflow_id}/terminate", "order-1", 403},
		{"acme-writer (service)", "POST /namespaces/{namespace}/workflows", "order-1", 200},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit log:\n%v\nwant\n%v", got, want)
	}
	for what, secret := range map[string]string{"a password": password, "a made token": tok.Token[len(tok.Token)-64:],
		"a login's token": loggedIn.Token[len(loggedIn.Token)-64:], "a caller's token": f.auth(t, "root")[len(f.auth(t, "root"))-64:]} {
		if strings.Contains(raw, secret) {
			t.Errorf("the audit log holds %s: %s", what, raw)
		}
	}
	if !strings.Contains(raw, `[removed]`) {
		t.Errorf("the login's password was not marked removed: %s", raw)
	}

	if code, _ := do("acme-admin", "GET", "/audit?namespace=acme", ""); code != 200 {
		t.Errorf("acme's admin reading acme's entries: %d", code)
	}
	if code, body := do("acme-admin", "GET", "/audit", ""); code != 200 || strings.Contains(body, "/login") || !strings.Contains(body, "order-1") {
		t.Errorf("acme's admin reading the audit log without a namespace (acme's): %d %s", code, body)
	}
	if code, _ := do("acme-admin", "GET", "/audit?namespace=other", ""); code != 403 {
		t.Errorf("acme's admin reading other's audit log: %d, want 403", code)
	}
	if code, _ := do("acme-reader", "GET", "/audit?namespace=acme", ""); code != 403 {
		t.Errorf("acme's reader reading its audit: %d, want 403", code)
	}
	// A time range that ends before it begins holds no entry (Schemathesis
	// sent one and got 400).
	if code, body := do("root", "GET", "/audit?since=2026-11-27T17:58:33Z&until=2026-11-27T17:58:04Z", ""); code != 200 || !strings.Contains(body, `"entries":[]`) {
		t.Errorf("an inverted time range: %d %s, want 200 and no entries", code, body)
	}
}

// TestAuditEntriesOfBadBytes: a request that names its target with bytes no
// store keeps (a NUL, bad UTF-8, more characters than an entry holds) is
// recorded with them replaced, and the entries written beside it are kept.
// Before, the store refused the whole batch for that one entry.
func TestAuditEntriesOfBadBytes(t *testing.T) {
	f := newAccessFixture(t)
	bad := "/namespaces/acme/workflows/order-%00%ff/terminate?run_id=" + strings.Repeat("r", 100) + "%00"
	// An operator's terminates of runs that do not exist: entries of their
	// own (refusals alike would be counted into one).
	for i := range 3 {
		f.do(t, "acme-operator", "POST", fmt.Sprintf("/namespaces/acme/workflows/fine-%d/terminate", i), `{"reason":"x"}`)
		f.do(t, "acme-operator", "POST", bad, `{"reason":"x"}`)
	}
	var list AuditList
	deadline := time.Now().Add(10 * time.Second)
	for len(list.Entries) < 6 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		_, _, raw := f.do(t, "root", "GET", "/audit", "")
		list = AuditList{}
		json.Unmarshal([]byte(raw), &list)
	}
	var fine, replaced int
	for _, e := range list.Entries {
		switch {
		case strings.HasPrefix(e.Target, "fine-"):
			fine++
		case e.Target == "order-\uFFFD\uFFFD" && len(e.RunID) == 64 && !strings.Contains(e.RunID, "\x00"):
			replaced++
		}
	}
	if fine != 3 || replaced != 3 {
		t.Fatalf("audit log has %d entries of the fine requests and %d of the bad ones with their bytes replaced; want 3 and 3: %+v", fine, replaced, list.Entries)
	}
}
