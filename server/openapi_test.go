package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/dag/resources"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/humantask"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/schedule"
	"github.com/strandhq/strand/server"
)

// exchange is one request and its answer as the test saw them.
type exchange struct {
	method, path string
	status       int
	body         []byte
}

// recorder wraps a handler and keeps every exchange.
type recorder struct {
	h   http.Handler
	mu  sync.Mutex
	log []exchange
	// streams counts the task streams opened (passed through, unrecorded:
	// a WebSocket is no JSON call).
	streams int
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/task-stream") && r.Header.Get("Upgrade") != "" {
		rec.mu.Lock()
		rec.streams++
		rec.mu.Unlock()
		rec.h.ServeHTTP(w, r)
		return
	}
	rw := httptest.NewRecorder()
	rec.h.ServeHTTP(rw, r)
	for k, v := range rw.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rw.Code)
	w.Write(rw.Body.Bytes())
	rec.mu.Lock()
	rec.log = append(rec.log, exchange{r.Method, r.URL.Path, rw.Code, rw.Body.Bytes()})
	rec.mu.Unlock()
}

// doc is the OpenAPI document with what checking needs.
type doc struct {
	raw     map[string]any
	schemas map[string]any
	ops     []op
}

type op struct {
	method, path string
	re           *regexp.Regexp
	spec         map[string]any
}

func loadDoc(t *testing.T, url string) *doc {
	resp, err := http.Get(url + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || raw["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json: %v %v", err, raw["openapi"])
	}
	d := &doc{raw: raw, schemas: raw["components"].(map[string]any)["schemas"].(map[string]any)}
	for path, item := range raw["paths"].(map[string]any) {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllString(path, "[^/]+") + "$")
		for method, spec := range item.(map[string]any) {
			d.ops = append(d.ops, op{strings.ToUpper(method), path, re, spec.(map[string]any)})
		}
	}
	sort.Slice(d.ops, func(i, j int) bool { return d.ops[i].path+d.ops[i].method < d.ops[j].path+d.ops[j].method })
	return d
}

// check validates an exchange against the document.
func (d *doc) check(e exchange) error {
	var found *op
	for i := range d.ops {
		o := &d.ops[i]
		// the most specific match: literal segments beat parameters
		if o.method == e.method && o.re.MatchString(e.path) && (found == nil || strings.Count(o.path, "{") < strings.Count(found.path, "{")) {
			found = o
		}
	}
	if found == nil {
		if e.status == 404 {
			return nil // not a route; the body is checked as an Error below by the caller
		}
		return fmt.Errorf("%s %s answered %d but is not documented", e.method, e.path, e.status)
	}
	responses := found.spec["responses"].(map[string]any)
	key := fmt.Sprint(e.status)
	if e.status >= 400 {
		key = "default"
	}
	resp, ok := responses[key].(map[string]any)
	if !ok {
		return fmt.Errorf("%s %s: status %d not documented", e.method, found.path, e.status)
	}
	content, ok := resp["content"].(map[string]any)
	if !ok {
		if len(bytes.TrimSpace(e.body)) != 0 {
			return fmt.Errorf("%s %s: %d has a body the document does not describe", e.method, found.path, e.status)
		}
		return nil
	}
	var v any
	if err := json.Unmarshal(e.body, &v); err != nil {
		return fmt.Errorf("%s %s: %d: body is not JSON: %v", e.method, found.path, e.status, err)
	}
	schema := content["application/json"].(map[string]any)["schema"].(map[string]any)
	if err := d.validate(schema, v, "body"); err != nil {
		return fmt.Errorf("%s %s: %d: %v", e.method, found.path, e.status, err)
	}
	return nil
}

func (d *doc) validate(s map[string]any, v any, at string) error {
	if ref, ok := s["$ref"].(string); ok {
		return d.validate(d.schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any), v, at)
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			if err := d.validate(sub.(map[string]any), v, at); err != nil {
				return err
			}
		}
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		var first error
		for _, alt := range anyOf {
			err := d.validate(alt.(map[string]any), v, at)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		return first
	}
	typ := s["type"]
	if types, ok := typ.([]any); ok {
		// OpenAPI 3.1: a type and "null"
		typ = nil
		for _, t := range types {
			if t == "null" {
				if v == nil {
					return nil
				}
			} else {
				typ = t
			}
		}
	}
	if v == nil {
		if typ == nil || typ == "null" {
			return nil
		}
		return fmt.Errorf("%s: null, and the document does not admit null", at)
	}
	switch typ {
	case "null":
		return fmt.Errorf("%s: want null, got %T", at, v)
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %T", at, v)
		}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				return fmt.Errorf("%s: required field %q missing", at, r)
			}
		}
		for k, fv := range m {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if add, ok := s["additionalProperties"].(map[string]any); ok {
					ps = add
				} else {
					return fmt.Errorf("%s: field %q is not in the document", at, k)
				}
			}
			if err := d.validate(ps, fv, at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %T", at, v)
		}
		for i, x := range a {
			if err := d.validate(s["items"].(map[string]any), x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string, got %T", at, v)
		}
		switch s["format"] {
		case "byte":
			if _, err := base64.StdEncoding.DecodeString(str); err != nil {
				return fmt.Errorf("%s: not base64: %v", at, err)
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				return fmt.Errorf("%s: not a date-time: %v", at, err)
			}
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: want an integer, got %v", at, v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: want a number, got %T", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want a boolean, got %T", at, v)
		}
	}
	return nil
}

// TestOpenAPIMatchesEveryRoute calls every documented operation (with an
// empty body and placeholder parameters) and checks each answer against
// the document: the status is documented and the body fits its schema.
// TestRemoteWorkerAndClient checks the answers of a real workflow's run.
func TestOpenAPIMatchesEveryRoute(t *testing.T) {
	st := testdb.SQLite(t)
	eng, err := engine.Open(context.Background(), st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	centre, _ := resources.New(st, resources.Options{Key: make([]byte, 32)})
	rec := &recorder{h: server.New(eng, server.Options{PollWait: 50 * time.Millisecond, Resources: centre})}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	d := loadDoc(t, srv.URL)
	if len(d.ops) < 20 {
		t.Fatalf("%d operations documented", len(d.ops))
	}
	for _, o := range d.ops {
		path := regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllStringFunc(o.path, func(p string) string {
			if p == "{namespace}" {
				return "default"
			}
			return "x"
		})
		var body io.Reader
		if o.spec["requestBody"] != nil {
			body = strings.NewReader(`{}`)
		}
		req, _ := http.NewRequest(o.method, srv.URL+path, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode >= 500 {
			t.Errorf("%s %s: %d", o.method, o.path, resp.StatusCode)
		}
	}
	checkExchanges(t, d, rec)
}

func checkExchanges(t *testing.T, d *doc, rec *recorder) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.log {
		if e.path == "/api/v1/openapi.json" || e.path == "/metrics" || e.path == "/healthz" || e.path == "/readyz" {
			continue
		}
		if err := d.check(e); err != nil {
			t.Error(err)
		}
	}
}

// openAPIServer is a server over a fresh SQLite engine and its document.
func openAPIServer(t *testing.T) (*httptest.Server, *doc) {
	t.Helper()
	eng := sqliteEngine(t, engine.Options{})
	srv := httptest.NewServer(server.New(eng, server.Options{PollWait: 50 * time.Millisecond}))
	t.Cleanup(srv.Close)
	return srv, loadDoc(t, srv.URL)
}

// body is a request body schema with its components resolved.
func (d *doc) body(o op) map[string]any {
	rb, ok := o.spec["requestBody"].(map[string]any)
	if !ok {
		return nil
	}
	return d.resolve(rb["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any))
}

func (d *doc) resolve(s map[string]any) map[string]any {
	if all, ok := s["allOf"].([]any); ok && len(all) == 1 && all[0].(map[string]any)["$ref"] != nil {
		return d.resolve(all[0].(map[string]any))
	}
	if ref, ok := s["$ref"].(string); ok {
		return d.resolve(d.schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any))
	}
	return s
}

// minimal is a request body that the document accepts with every required
// field set (recursively), from the schema alone.
func (d *doc) minimal(s map[string]any) any {
	s = d.resolve(s)
	if alts, ok := s["anyOf"].([]any); ok {
		return d.minimal(alts[0].(map[string]any))
	}
	if e, ok := s["enum"].([]any); ok {
		return e[0]
	}
	switch s["type"] {
	case "object":
		out := map[string]any{}
		req, _ := s["required"].([]any)
		for _, r := range req {
			out[r.(string)] = d.minimal(s["properties"].(map[string]any)[r.(string)].(map[string]any))
		}
		return out
	case "string":
		if s["format"] == "byte" {
			return base64.StdEncoding.EncodeToString([]byte(`{"x":1}`))
		}
		return "x"
	case "integer":
		return 0
	case "array":
		return []any{}
	}
	return nil
}

func post(t *testing.T, url, method string, body any) (int, server.Error) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e server.Error
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e
}

func concrete(o op) string {
	return regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllStringFunc(o.path, func(p string) string {
		if p == "{namespace}" {
			return "default"
		}
		return "x"
	})
}

// TestOpenAPIRequiredFieldsRefused: every field the document marks required
// is refused with 400 invalid_argument naming it when it is missing, null
// or empty, while the body with all of them set is not refused for its
// shape. The document lists the ones the issue named.
func TestOpenAPIRequiredFieldsRefused(t *testing.T) {
	srv, d := openAPIServer(t)
	want := map[string]bool{
		"POST /api/v1/namespaces/{namespace}/workflows workflow_id":                                 true,
		"POST /api/v1/namespaces/{namespace}/workflows workflow_type":                               true,
		"POST /api/v1/namespaces/{namespace}/workflows/{workflow_id}/signals name":                  true,
		"POST /api/v1/namespaces/{namespace}/workflows/{workflow_id}/signal-with-start signal_name": true,
		"POST /api/v1/step-tasks/complete token":                                                    true,
		"POST /api/v1/step-tasks/fail failure":                                                      true,
		"POST /api/v1/workflow-tasks/fail failure":                                                  true,
		"POST /api/v1/namespaces name":                                                              true,
		"POST /api/v1/definitions type":                                                             true,
	}
	checked := 0
	for _, o := range d.ops {
		s := d.body(o)
		if s == nil {
			continue
		}
		full := d.minimal(s).(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			name := r.(string)
			delete(want, o.method+" "+o.path+" "+name)
			for _, bad := range []any{"missing", nil, ""} {
				body := map[string]any{}
				for k, v := range full {
					body[k] = v
				}
				switch bad {
				case "missing":
					delete(body, name)
				case "":
					if _, isString := body[name].(string); !isString {
						continue
					}
					body[name] = ""
				default:
					body[name] = nil
				}
				status, e := post(t, srv.URL+concrete(o), o.method, body)
				if status != http.StatusBadRequest || e.Code != server.CodeInvalidArgument {
					t.Errorf("%s %s without %s (%v): %d %+v, want 400 invalid_argument", o.method, o.path, name, bad, status, e)
				}
				checked++
			}
		}
	}
	for k := range want {
		t.Errorf("%s: not required in the document", k)
	}
	if checked < 20 {
		t.Fatalf("only %d refusals checked", checked)
	}
}

// TestOpenAPIRangesRefused: values outside the ranges the document states
// are refused with 400, and the bounds themselves are not.
func TestOpenAPIRangesRefused(t *testing.T) {
	srv, d := openAPIServer(t)
	start := srv.URL + "/api/v1/namespaces/default/workflows"
	s := d.resolve(d.body(op{method: "POST", spec: d.find(t, "POST", "/api/v1/namespaces/{namespace}/workflows").spec}))
	props := s["properties"].(map[string]any)
	for field, bounds := range map[string][2]float64{"priority": {0, 5}, "start_delay": {0, 0}, "run_timeout": {0, 0}} {
		p := d.resolve(props[field].(map[string]any))
		if p["minimum"] != bounds[0] || (bounds[1] != 0 && p["maximum"] != bounds[1]) {
			t.Errorf("%s: document says %v..%v, want %v..%v", field, p["minimum"], p["maximum"], bounds[0], bounds[1])
		}
	}
	if e := d.resolve(props["id_reuse_policy"].(map[string]any))["enum"]; fmt.Sprint(e) != "[0 1 2 3 <nil>]" {
		t.Errorf("id_reuse_policy: enum %v", e)
	}
	for i, tc := range []struct {
		field string
		value any
		ok    bool
	}{
		{"priority", 5, true}, {"priority", 6, false}, {"priority", -1, false},
		{"id_reuse_policy", 3, true}, {"id_reuse_policy", 4, false},
		{"start_delay", -1, false}, {"run_timeout", -1, false},
	} {
		body := map[string]any{"workflow_id": fmt.Sprintf("r%d", i), "workflow_type": "T", tc.field: tc.value}
		status, e := post(t, start, "POST", body)
		if tc.ok != (status == http.StatusOK) || (!tc.ok && (status != 400 || e.Field != tc.field)) {
			t.Errorf("%s=%v: %d %+v", tc.field, tc.value, status, e)
		}
	}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/history?page_size=10000", true}, {"/history?page_size=10001", false}, {"/history?page_size=-1", false},
		{"/history?page_size=", false}, {"/history?from_event_id=x", false}, {"/history?resolve=yes", false},
		{"/history?resolve=true", true}, {"/history?page_token=%25", false},
		{"/result?wait=0", true}, {"/result?wait=-1s", false}, {"/result?wait=1", false}, {"/result?follow_runs=1", false},
	} {
		resp, err := http.Get(start + "/r0" + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ok := resp.StatusCode < 300; ok != tc.ok {
			t.Errorf("%s: %d", tc.path, resp.StatusCode)
		}
	}
	status, _ := post(t, srv.URL+"/api/v1/namespaces/default/workflow-search", "POST", map[string]any{"page_size": 10001})
	if status != http.StatusBadRequest {
		t.Errorf("search page_size 10001: %d", status)
	}
	for v, want := range map[string]int{"latest": 404, "0": 404, "2147483647": 404, "2147483648": 400, "-1": 400, "+1": 400, "x": 400} {
		resp, err := http.Get(srv.URL + "/api/v1/definitions/T/" + v)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("definition version %s: %d, want %d", v, resp.StatusCode, want)
		}
	}
}

func (d *doc) find(t *testing.T, method, path string) op {
	t.Helper()
	for _, o := range d.ops {
		if o.method == method && o.path == path {
			return o
		}
	}
	t.Fatalf("%s %s is not documented", method, path)
	return op{}
}

// TestOpenAPIMethodNotAllowed: a documented path called with another
// method answers 405 with the path's methods in Allow, as the document says.
func TestOpenAPIMethodNotAllowed(t *testing.T) {
	srv, d := openAPIServer(t)
	methods := map[string][]string{}
	for _, o := range d.ops {
		methods[o.path] = append(methods[o.path], o.method)
		if _, ok := o.spec["responses"].(map[string]any)["405"]; !ok {
			t.Errorf("%s %s: no 405 documented", o.method, o.path)
		}
	}
	for path, ms := range methods {
		sort.Strings(ms)
		probe := "DELETE" // a method no path of this server takes, but those that delete
		if slices.Contains(ms, "DELETE") {
			probe = "PATCH"
		}
		req, _ := http.NewRequest(probe, srv.URL+concrete(op{path: path}), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e server.Error
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		allow := strings.Split(resp.Header.Get("Allow"), ", ")
		for _, m := range ms {
			if !slices.Contains(allow, m) {
				t.Errorf("%s %s: Allow %v lacks %s", probe, path, allow, m)
			}
		}
		if resp.StatusCode != http.StatusMethodNotAllowed || e.Code != server.CodeMethodNotAllowed {
			t.Errorf("%s %s: %d %+v, want 405", probe, path, resp.StatusCode, e)
		}
	}
	resp, err := http.Get(srv.URL + "/api/v1/no-such-thing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown path: %d", resp.StatusCode)
	}
}

// TestOpenAPIListsAreNeverNull: every list an answer holds is [] when
// empty, as the document's required arrays say.
func TestOpenAPIListsAreNeverNull(t *testing.T) {
	srv, _ := openAPIServer(t)
	if status, e := post(t, srv.URL+"/api/v1/namespaces/default/workflows", "POST", map[string]any{"workflow_id": "l", "workflow_type": "T"}); status != 200 {
		t.Fatalf("start: %d %+v", status, e)
	}
	for _, tc := range []struct{ method, path, body, field string }{
		{"GET", "/api/v1/definitions", "", "definitions"},
		{"GET", "/api/v1/definitions?type=none", "", "definitions"},
		{"GET", "/api/v1/nodes?all=false", "", "nodes"},
		{"GET", "/api/v1/shards", "", "shards"},
		{"GET", "/api/v1/namespaces", "", "namespaces"},
		{"POST", "/api/v1/namespaces/default/workflow-search", `{"workflow_type": "none"}`, "runs"},
		{"GET", "/api/v1/namespaces/default/workflows/l/history?from_event_id=1000", "", "events"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]json.RawMessage
		json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.HasPrefix(got[tc.field], []byte("[")) {
			t.Errorf("%s %s: %d %s=%s, want a list", tc.method, tc.path, resp.StatusCode, tc.field, got[tc.field])
		}
	}
}

// allServed is what strand server serves: every group of routes.
type allServed struct {
	*engine.Engine
	*scheduleService
	*batchService
	*messageService
	*humanTaskService
}

type (
	scheduleService  = schedule.Service
	batchService     = batch.Service
	messageService   = message.Service
	humanTaskService = humantask.Service
)

// TestOpenAPIDocumentIsValid loads the document a server with every group
// of routes serves (access control and the resource centre included) with
// an OpenAPI 3.x validator, which checks it is valid for the version it
// declares: its structure, and every schema and example under that
// version's JSON Schema dialect. Then it sends bodies the server refuses
// for a rule JSON Schema can state, and checks the document refuses them
// too (and takes the bodies the server takes).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	ctx := context.Background()
	st := testdb.SQLite(t)
	eng, err := engine.Open(ctx, st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	centre, err := resources.New(st, resources.Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	svc := allServed{eng, schedule.NewService(eng), batch.NewService(eng), message.NewService(eng), humantask.NewService(eng)}
	audit := server.NewAuditLog(st, server.AuditOptions{})
	audit.Start()
	defer audit.Close()
	srv := httptest.NewServer(server.New(svc, server.Options{Access: access.New(st, access.Options{BcryptCost: 4}), Audit: audit, Open: true, Resources: centre}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	spec, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("the document does not load as OpenAPI: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Fatalf("the document declares OpenAPI %q", spec.OpenAPI)
	}
	// The document's patterns are ECMA-262's, as JSON Schema has them (Go's
	// regexp lacks lookahead).
	ecma := openapi3.SetRegexCompiler(func(expr string) (openapi3.RegexMatcher, error) {
		re, err := regexp2.Compile(expr, regexp2.ECMAScript)
		if err != nil {
			return nil, err
		}
		return ecmaRegexp{re}, nil
	})
	if err := spec.Validate(ctx, ecma); err != nil {
		t.Fatalf("the document is not valid OpenAPI %s: %v", spec.OpenAPI, err)
	}
	if n := len(spec.Paths.Map()); n < 100 {
		t.Errorf("%d paths validated; the document should have them all", n)
	}

	// The request bodies' schemas, by JSON Schema 2020-12 (OpenAPI 3.1's
	// dialect).
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseRegexpEngine(func(expr string) (jsonschema.Regexp, error) {
		re, err := regexp2.Compile(expr, regexp2.ECMAScript)
		if err != nil {
			return nil, err
		}
		return ecmaRegexp{re}, nil
	})
	whole, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("openapi.json", whole); err != nil {
		t.Fatal(err)
	}
	var paths map[string]map[string]struct {
		RequestBody struct {
			Content map[string]struct{ Schema json.RawMessage }
		}
	}
	if err := json.Unmarshal(must(json.Marshal(whole.(map[string]any)["paths"])), &paths); err != nil {
		t.Fatal(err)
	}
	bodySchema := func(method, path string) *jsonschema.Schema {
		t.Helper()
		raw := paths[path][strings.ToLower(method)].RequestBody.Content["application/json"].Schema
		// its own resource, whose references are to the document's components
		raw = bytes.ReplaceAll(raw, []byte(`"#/components/`), []byte(`"openapi.json#/components/`))
		body, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		url := "body-" + strings.ToLower(method) + strings.NewReplacer("{", "", "}", "", "/", "-").Replace(path) + ".json"
		if err := c.AddResource(url, body); err != nil && !strings.Contains(err.Error(), "already") {
			t.Fatal(err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return sch
	}
	// A query parameter the server reads from a list of values says so.
	t.Run("a state machine list by a status lists do not have", func(t *testing.T) {
		var status any
		get := whole.(map[string]any)["paths"].(map[string]any)["/api/v1/namespaces/{namespace}/statemachine-instances"].(map[string]any)["get"].(map[string]any)
		for _, p := range get["parameters"].([]any) {
			if p := p.(map[string]any); p["name"] == "status" {
				status = p["schema"]
			}
		}
		if err := c.AddResource("param-sm-status.json", status); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile("param-sm-status.json")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/statemachine-instances?status=executing")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("status=executing: %d, want 400", resp.StatusCode)
		}
		if sch.Validate("executing") == nil {
			t.Errorf("the server refuses status=executing, the document takes it")
		}
		if err := sch.Validate("inProgress"); err != nil {
			t.Errorf("the document refuses status=inProgress: %v", err)
		}
	})
	for _, tc := range []struct {
		name, method, path, body string
		// status is the server's answer; the document takes the body when
		// it is 200
		status int
	}{
		{"a user without a password", "POST", "/api/v1/users", `{"name":"no-password"}`, 400},
		{"a user with a short password", "POST", "/api/v1/users", `{"name":"short","password":"1234567"}`, 400},
		{"a service account with a password", "POST", "/api/v1/users", `{"name":"svc","kind":"service","password":"correct-horse-battery"}`, 400},
		{"a user of kind node", "POST", "/api/v1/users", `{"name":"n","kind":"node","password":"correct-horse-battery"}`, 400},
		{"a user name with a space", "POST", "/api/v1/users", `{"name":"a b","password":"correct-horse-battery"}`, 400},
		{"a null group", "POST", "/api/v1/users", `{"name":"g","password":"correct-horse-battery","groups":[null]}`, 400},
		{"a group twice", "POST", "/api/v1/users", `{"name":"g","password":"correct-horse-battery","groups":["ops","ops"]}`, 400},
		{"an email without @", "POST", "/api/v1/users", `{"name":"e","password":"correct-horse-battery","email":"nobody"}`, 400},
		{"a user", "POST", "/api/v1/users", `{"name":"alice","password":"correct-horse-battery","groups":["ops"],"email":"a@example.com"}`, 200},
		{"a service account", "POST", "/api/v1/users", `{"name":"robot","kind":"service","password":null}`, 200},
		{"a short new password", "PUT", "/api/v1/users/{user}", `{"password":"short"}`, 400},
		{"a null group in a change", "PUT", "/api/v1/users/{user}", `{"groups":[null]}`, 400},
		{"a login name with NUL", "POST", "/api/v1/login", `{"name":"a\u0000b","password":"correct-horse-battery"}`, 400},
		{"an empty cron expression", "POST", "/api/v1/namespaces/{namespace}/schedules",
			`{"schedule_id":"nightly","schedule":{"spec":{"cron":[""]},"action":{"workflow_type":"w"}}}`, 400},
		{"a null cron expression", "POST", "/api/v1/namespaces/{namespace}/schedules",
			`{"schedule_id":"nightly","schedule":{"spec":{"cron":[null]},"action":{"workflow_type":"w"}}}`, 400},
		{"a saga decision for started sagas", "POST", "/api/v1/namespaces/{namespace}/saga-batches", `{"action":"done","state":"started"}`, 400},
		{"a saga batch of disabled sagas", "POST", "/api/v1/namespaces/{namespace}/saga-batches", `{"action":"terminate","state":"disabled"}`, 400},
		{"a saga terminate of everything", "POST", "/api/v1/namespaces/{namespace}/saga-batches", `{"action":"terminate"}`, 400},
		{"a saga terminate of terminated sagas", "POST", "/api/v1/namespaces/{namespace}/saga-batches", `{"action":"terminate","state":"terminated"}`, 400},
		{"a schedule that sets its runs' schedule attribute", "POST", "/api/v1/namespaces/{namespace}/schedules",
			`{"schedule_id":"nightly","schedule":{"spec":{"cron":["@hourly"]},"action":{"workflow_type":"w","attributes":{"strand.schedule":"x"}}}}`, 400},
		{"a schedule jitter over a day", "POST", "/api/v1/namespaces/{namespace}/schedules",
			`{"schedule_id":"nightly","schedule":{"spec":{"cron":["@hourly"],"jitter":86400000000001},"action":{"workflow_type":"w"}}}`, 400},
		{"a schedule", "POST", "/api/v1/namespaces/{namespace}/schedules",
			`{"schedule_id":"nightly","schedule":{"spec":{"cron":["@hourly"],"jitter":86400000000000},"action":{"workflow_type":"w","attributes":{"team":"x"}}}}`, 200},
		{"a DAG backfill of a range and dates", "POST", "/api/v1/namespaces/{namespace}/dags/{name}/backfills", `{"from":"2026-01-01","to":"2026-01-02","dates":["2026-01-05"]}`, 400},
		{"a DAG backfill of nothing", "POST", "/api/v1/namespaces/{namespace}/dags/{name}/backfills", `{"parallelism":1}`, 400},
		{"a signal batch without its signal", "POST", "/api/v1/namespaces/{namespace}/batches", `{"operation":"signal","filter":{}}`, 400},
		{"a batch reset before no event", "POST", "/api/v1/namespaces/{namespace}/batches", `{"operation":"reset","reset_point":"before_event","filter":{}}`, 400},
		{"a reset before no event", "POST", "/api/v1/namespaces/{namespace}/workflows/{workflow_id}/reset", `{"point":"before_event","event_id":0}`, 400},
		{"a saga decision", "POST", "/api/v1/namespaces/{namespace}/saga-batches", `{"action":"done"}`, 200},
		{"a saga terminate by name", "POST", "/api/v1/namespaces/{namespace}/saga-batches", `{"action":"terminate","name":"order"}`, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			docErr := bodySchema(tc.method, tc.path).Validate(inst)
			path := strings.NewReplacer("{namespace}", "default", "{user}", "alice", "{workflow_id}", "w", "{name}", "etl").Replace(tc.path)
			status, e := post(t, srv.URL+path, tc.method, json.RawMessage(tc.body))
			if status != tc.status {
				t.Fatalf("%s %s %s: %d %+v, want %d", tc.method, path, tc.body, status, e, tc.status)
			}
			if tc.status == 200 && docErr != nil {
				t.Errorf("the server takes %s, the document refuses it: %v", tc.body, docErr)
			}
			if tc.status != 200 && docErr == nil {
				t.Errorf("the server refuses %s (%s), the document takes it", tc.body, e.Message)
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// ecmaRegexp is an ECMA-262 regular expression as the validators take one.
type ecmaRegexp struct{ re *regexp2.Regexp }

// String is the expression.
func (e ecmaRegexp) String() string { return e.re.String() }

// MatchString reports whether s matches (a match that runs out of time
// does not).
func (e ecmaRegexp) MatchString(s string) bool {
	ok, err := e.re.MatchString(s)
	return ok && err == nil
}
