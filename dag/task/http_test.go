package task_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/dag/task"
)

// seenRequest is what the test server got.
type seenRequest struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// testServer answers each request with the handler's answer and records
// what it got.
func testServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, func() []seenRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, seenRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(b), Header: r.Header.Clone()})
		mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), seen...)
	}
}

const apiAnswer = `{"data":{"id":12345678901234567890,"name":"job <1> & co","ratio":0.5,"ok":true,"tags":["a","b"],"meta":{"k":"v","n":null}},"items":[{"v":1},{"v":2}]}`

func TestHTTPRequestAndOutputs(t *testing.T) {
	t.Parallel()
	srv, seen := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=s3cr3t-cookie")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, apiAnswer)
	})
	var log bytes.Buffer
	res, err := task.RunHTTP(context.Background(), srv.Client(), task.HTTP{
		Method: http.MethodPost,
		URL:    srv.URL + "/jobs?name=x&access_token=qs-secret",
		Headers: map[string]string{
			"Content-Type":    "application/json",
			"Authorization":   "Bearer very-secret-1",
			"X-Auth-Token":    "very-secret-2",
			"X-Client-Secret": "very-secret-3",
			"X-Db-Password":   "very-secret-4",
			"X-Trace":         "visible-header",
		},
		Body: `{"job":"nightly"}`,
		Outputs: map[string]string{
			"id":     "$.data.id",
			"name":   "$.data.name",
			"ratio":  "$.data.ratio",
			"ok":     "$.data.ok",
			"meta":   "$.data.meta",
			"tags":   "$.data.tags",
			"first":  "$.data.tags[0]",
			"values": "$.items[*].v",
		},
	}, &log)
	if err != nil {
		t.Fatalf("RunHTTP: %v\nlog:\n%s", err, log.String())
	}
	if res.Status != http.StatusCreated {
		t.Errorf("status %d", res.Status)
	}
	want := map[string]string{
		"id":     "12345678901234567890",
		"name":   "job <1> & co",
		"ratio":  "0.5",
		"ok":     "true",
		"meta":   `{"k":"v","n":null}`,
		"tags":   `["a","b"]`,
		"first":  "a",
		"values": "[1,2]",
	}
	if fmt.Sprint(res.Outputs) != fmt.Sprint(want) {
		t.Errorf("outputs\n%q\nwant\n%q", res.Outputs, want)
	}

	reqs := seen()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/jobs" || r.Query != "name=x&access_token=qs-secret" || r.Body != `{"job":"nightly"}` {
		t.Errorf("request %+v", r)
	}
	if r.Header.Get("Authorization") != "Bearer very-secret-1" || r.Header.Get("X-Trace") != "visible-header" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request headers %v", r.Header)
	}

	l := log.String()
	for _, s := range []string{"very-secret", "qs-secret", "s3cr3t-cookie"} {
		if strings.Contains(l, s) {
			t.Errorf("the log shows the secret %q:\n%s", s, l)
		}
	}
	for _, s := range []string{
		"> POST " + srv.URL + "/jobs?name=x&access_token=***\n",
		"> Authorization: ***\n",
		"> X-Auth-Token: ***\n",
		"> X-Client-Secret: ***\n",
		"> X-Db-Password: ***\n",
		"> X-Trace: visible-header\n",
		`{"job":"nightly"}` + "\n",
		"< HTTP/1.1 201 Created",
		"< Set-Cookie: ***\n",
		"< Content-Type: application/json\n",
		apiAnswer + "\n",
	} {
		if !strings.Contains(l, s) {
			t.Errorf("log lacks %q:\n%s", s, l)
		}
	}
}

func TestHTTPMethodsAndDefaults(t *testing.T) {
	t.Parallel()
	srv, seen := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	for _, m := range []string{"", "PUT", "DELETE", "PATCH", "HEAD"} {
		var log bytes.Buffer
		res, err := task.RunHTTP(context.Background(), nil, task.HTTP{Method: m, URL: srv.URL + "/m"}, &log)
		if err != nil || res.Status != http.StatusNoContent {
			t.Errorf("%q: status %d, err %v", m, res.Status, err)
		}
		if !strings.Contains(log.String(), "(empty body)") {
			t.Errorf("%q: log:\n%s", m, log.String())
		}
	}
	var methods []string
	for _, r := range seen() {
		methods = append(methods, r.Method)
		if r.Body != "" {
			t.Errorf("%s sent the body %q", r.Method, r.Body)
		}
	}
	if got := strings.Join(methods, " "); got != "GET PUT DELETE PATCH HEAD" {
		t.Errorf("methods sent: %s", got)
	}
}

func TestHTTPConditions(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/"), &code)
		w.WriteHeader(code)
		io.WriteString(w, `{"state":"FAILED","message":"disk full"}`)
	})
	tests := []struct {
		name   string
		h      task.HTTP
		status int // 0: success expected
		reason string
	}{
		{name: "2xx", h: task.HTTP{URL: "/200"}},
		{name: "299", h: task.HTTP{URL: "/299"}},
		{name: "500 not 2xx", h: task.HTTP{URL: "/500"}, status: 500, reason: "not 2xx"},
		{name: "304 not 2xx", h: task.HTTP{URL: "/304"}, status: 304, reason: "not 2xx"},
		{name: "expected 404", h: task.HTTP{URL: "/404", ExpectStatus: []int{404, 410}}},
		{name: "200 not expected", h: task.HTTP{URL: "/200", ExpectStatus: []int{202}}, status: 200, reason: "not one of [202]"},
		{name: "contains", h: task.HTTP{URL: "/200", BodyContains: `"state":"FAILED"`}},
		{name: "does not contain", h: task.HTTP{URL: "/200", BodyContains: `"state":"SUCCESS"`}, status: 200, reason: `does not contain "\"state\":\"SUCCESS\""`},
		{name: "not contains", h: task.HTTP{URL: "/200", BodyNotContains: "error"}},
		{name: "contains forbidden", h: task.HTTP{URL: "/200", BodyNotContains: "disk full"}, status: 200, reason: `contains "disk full"`},
		{name: "status before body", h: task.HTTP{URL: "/503", BodyContains: "FAILED"}, status: 503, reason: "not 2xx"},
		{name: "no outputs on failure", h: task.HTTP{URL: "/500", Outputs: map[string]string{"x": "$.nothing"}}, status: 500, reason: "not 2xx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.h.URL = srv.URL + tt.h.URL
			var log bytes.Buffer
			res, err := task.RunHTTP(context.Background(), srv.Client(), tt.h, &log)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("RunHTTP: %v\nlog:\n%s", err, log.String())
				}
				return
			}
			var ce *task.ConditionError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConditionError", err)
			}
			if ce.Status != tt.status || res.Status != tt.status || !strings.Contains(ce.Reason, tt.reason) {
				t.Errorf("ConditionError %+v, result status %d; want status %d and a reason with %q", ce, res.Status, tt.status, tt.reason)
			}
			if !strings.Contains(log.String(), "condition failed: ") {
				t.Errorf("log:\n%s", log.String())
			}
		})
	}
}

func TestHTTPOutputErrors(t *testing.T) {
	t.Parallel()
	srv, seen := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/text" {
			io.WriteString(w, "plain text")
			return
		}
		io.WriteString(w, `{"data":{"id":1}}`)
	})
	ctx := context.Background()
	var log bytes.Buffer

	_, err := task.RunHTTP(ctx, srv.Client(), task.HTTP{URL: srv.URL, Outputs: map[string]string{"id": "$.data.id", "job": "$.data.job"}}, &log)
	if err == nil || !strings.Contains(err.Error(), `output "job"`) || !strings.Contains(err.Error(), "selects nothing") {
		t.Errorf("missing path: err = %v", err)
	}

	_, err = task.RunHTTP(ctx, srv.Client(), task.HTTP{URL: srv.URL + "/text", Outputs: map[string]string{"id": "$.id"}}, &log)
	if err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("a body that is no JSON: err = %v", err)
	}

	n := len(seen())
	_, err = task.RunHTTP(ctx, srv.Client(), task.HTTP{URL: srv.URL, Outputs: map[string]string{"bad": "$.data[?"}}, &log)
	if err == nil || !strings.Contains(err.Error(), `output "bad"`) {
		t.Errorf("a bad JSONPath: err = %v", err)
	}
	if len(seen()) != n {
		t.Error("a task with a bad JSONPath sent its request")
	}

	for _, expr := range []string{"$.data.id", "$..id", "$.items[?@.v > 1]", "$['a b'][0:2]"} {
		if err := task.CheckJSONPath(expr); err != nil {
			t.Errorf("CheckJSONPath(%q): %v", expr, err)
		}
	}
	for _, expr := range []string{"", "data.id", "$.data[?", "$.x[", "$..", "$.a.length()"} {
		if err := task.CheckJSONPath(expr); err == nil {
			t.Errorf("CheckJSONPath(%q) accepted it", expr)
		}
	}
}

func TestHTTPLogCapsBodies(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 5000) // 80,000 bytes
	srv, seen := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, big+"ANSWER-END")
	})
	var log bytes.Buffer
	_, err := task.RunHTTP(context.Background(), srv.Client(), task.HTTP{Method: "POST", URL: srv.URL, Body: big + "REQUEST-END", BodyContains: "ANSWER-END"}, &log)
	if err != nil {
		t.Fatalf("RunHTTP: %v", err)
	}
	if r := seen(); len(r) != 1 || r[0].Body != big+"REQUEST-END" {
		t.Fatal("the request body was not sent whole")
	}
	l := log.String()
	if strings.Contains(l, "REQUEST-END") || strings.Contains(l, "ANSWER-END") {
		t.Error("the log holds a body's end past 64 KiB")
	}
	if want := fmt.Sprintf("(%d more bytes of the body not logged)", len(big)+len("REQUEST-END")-64<<10); !strings.Contains(l, want) {
		t.Errorf("log lacks %q", want)
	}
	if want := fmt.Sprintf("(%d more bytes of the body not logged)", len(big)+len("ANSWER-END")-64<<10); !strings.Contains(l, want) {
		t.Errorf("log lacks %q", want)
	}
	if len(l) > 2*64<<10+4096 {
		t.Errorf("the log has %d bytes", len(l))
	}
}

func TestHTTPTimeoutAndTransportError(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	var log bytes.Buffer
	start := time.Now()
	_, err := task.RunHTTP(context.Background(), srv.Client(), task.HTTP{URL: srv.URL + "/slow", Timeout: 200 * time.Millisecond}, &log)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the request took %v", d)
	}
	if !strings.Contains(log.String(), "request failed") {
		t.Errorf("log:\n%s", log.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = task.RunHTTP(ctx, srv.Client(), task.HTTP{URL: srv.URL}, &log)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled context: err = %v", err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	res, err := task.RunHTTP(context.Background(), nil, task.HTTP{URL: url}, &log)
	var ce *task.ConditionError
	if err == nil || errors.As(err, &ce) || res.Status != 0 || !strings.Contains(err.Error(), "GET "+url) {
		t.Errorf("a closed server: status %d, err %v", res.Status, err)
	}
}
