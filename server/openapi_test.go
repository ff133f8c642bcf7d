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
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
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
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || raw["openapi"] != "3.0.3" {
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
	if v == nil {
		return nil // omitted or null
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %T", at, v)
		}
		props, _ := s["properties"].(map[string]any)
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
	eng, err := engine.Open(context.Background(), testdb.SQLite(t), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rec := &recorder{h: server.New(eng, server.Options{PollWait: 50 * time.Millisecond})}
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
