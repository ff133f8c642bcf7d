package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
)

// hardServer is an httptest server over an engine on a SQLite file.
func hardServer(t *testing.T, opts server.Options) (*engine.Engine, *httptest.Server) {
	t.Helper()
	eng := sqliteEngine(t, engine.Options{})
	srv := httptest.NewServer(server.New(eng, opts))
	t.Cleanup(srv.Close)
	return eng, srv
}

// send makes a request and returns its status and error body.
func send(t *testing.T, method, url, body string) (int, server.Error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e server.Error
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &e)
	return resp.StatusCode, e
}

// expect checks a request's status, code and (when set) field.
func expect(t *testing.T, method, url, body string, status int, code, field string) {
	t.Helper()
	got, e := send(t, method, url, body)
	if got != status || e.Code != code || (field != "" && e.Field != field) || e.Message == "" {
		t.Errorf("%s %s %.60q: %d %+v, want %d %s field %q", method, url, body, got, e, status, code, field)
	}
}

// TestPageTokens: a page token that is not one the server gave is 400
// invalid_argument (it was a 500), and history's page_token query
// parameter takes the next_page_token as the JSON gives it (base64), as
// remote sends it.
func TestPageTokens(t *testing.T) {
	ctx := context.Background()
	_, srv := hardServer(t, server.Options{})
	svc := remote.New(srv.URL, nil)
	if _, err := svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: "paged", WorkflowType: "T"}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: api.RunRef{WorkflowID: "paged"}, Name: fmt.Sprint("s", i)}); err != nil {
			t.Fatal(err)
		}
	}
	hist := srv.URL + "/api/v1/namespaces/default/workflows/paged/history"
	expect(t, "GET", hist+"?page_token=not*base64", "", 400, server.CodeInvalidArgument, "page_token")
	expect(t, "GET", hist+"?page_token="+url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("forged"))), "", 400, server.CodeInvalidArgument, "page_token")
	expect(t, "POST", srv.URL+"/api/v1/namespaces/default/workflow-search", `{"page_token":"Zm9yZ2Vk"}`, 400, server.CodeInvalidArgument, "page_token")

	// Through remote: every page, each token sent back as it came.
	var token []byte
	var events []api.Event
	pages := 0
	for {
		page, err := svc.GetHistory(ctx, api.HistoryRequest{RunRef: api.RunRef{WorkflowID: "paged"}, PageSize: 1, PageToken: token})
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		events = append(events, page.Events...)
		if token = page.NextPageToken; len(token) == 0 {
			break
		}
	}
	if pages < 3 || len(events) < 5 {
		t.Fatalf("%d pages, %d events", pages, len(events))
	}
	for i, ev := range events {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i, ev.ID)
		}
	}
	// By hand: the JSON's next_page_token, URL-escaped, is the parameter.
	resp, err := http.Get(hist + "?page_size=1")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		NextPageToken string `json:"next_page_token"`
	}
	json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if raw.NextPageToken == "" {
		t.Fatal("no next_page_token")
	}
	resp, err = http.Get(hist + "?page_size=1&page_token=" + url.QueryEscape(raw.NextPageToken))
	if err != nil {
		t.Fatal(err)
	}
	var page api.HistoryPage
	json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(page.Events) == 0 || page.Events[0].ID == 1 {
		t.Fatalf("second page by hand: %d %+v", resp.StatusCode, page)
	}
	// The store's error is an invalid argument for embedded callers too.
	_, err = svc.ListWorkflows(ctx, api.ListRequest{PageToken: []byte("forged")})
	if !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("list with a forged token: %v", err)
	}
}

// TestSearchLimits: a search with more statuses or attributes than the
// stores take is refused with 400 before it reaches SQLite (32,765
// statuses and 931 attributes were 500s).
func TestSearchLimits(t *testing.T) {
	_, srv := hardServer(t, server.Options{})
	statuses := func(n int) string {
		return `{"statuses":[` + strings.TrimSuffix(strings.Repeat(`"running",`, n), ",") + `]}`
	}
	attrs := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"a%d":"v"`, i)
		}
		return `{"attributes":{` + strings.Join(parts, ",") + `}}`
	}
	for _, route := range []string{"workflow-search", "workflow-count", "workflow-status-counts"} {
		u := srv.URL + "/api/v1/namespaces/default/" + route
		// The filters of close times and excluded types are checked too.
		expect(t, "POST", u, `{"exclude_workflow_types":["`+strings.Repeat("t", 251)+`"]}`, 400, server.CodeInvalidArgument, "exclude_workflow_types[0]")
		expect(t, "POST", u, `{"closed_after":"yesterday"}`, 400, server.CodeInvalidArgument, "")
		expect(t, "POST", u, `{"order":"close_time"}`, 400, server.CodeInvalidArgument, "order")
		if route == "workflow-status-counts" {
			// Its statuses are its own; the filter's are not read, but
			// must be statuses.
			expect(t, "POST", u, `{"statuses":[0]}`, 400, server.CodeInvalidArgument, "statuses")
			if status, e := send(t, "POST", u, `{"exclude_workflow_types":["strand.Mailbox"],"closed_after":"2026-01-01T00:00:00Z"}`); status != 200 {
				t.Errorf("%s: %d %+v", route, status, e)
			}
			continue
		}
		expect(t, "POST", u, statuses(store.MaxFilterStatuses+1), 400, server.CodeInvalidArgument, "statuses")
		expect(t, "POST", u, statuses(32765), 400, server.CodeInvalidArgument, "statuses")
		expect(t, "POST", u, attrs(store.MaxFilterAttributes+1), 400, server.CodeInvalidArgument, "attributes")
		expect(t, "POST", u, attrs(931), 400, server.CodeInvalidArgument, "attributes")
		for _, ok := range []string{statuses(store.MaxFilterStatuses), attrs(store.MaxFilterAttributes)} {
			if status, e := send(t, "POST", u, ok); status != 200 {
				t.Errorf("%s at the limit: %d %+v", route, status, e)
			}
		}
	}
}

// TestPeerPollWait: a forwarded poll without a positive wait is 400 (it
// was a 504).
func TestPeerPollWait(t *testing.T) {
	_, srv := hardServer(t, server.Options{})
	u := srv.URL + "/api/v1/peer/poll"
	for _, wait := range []string{``, `,"wait":0`, `,"wait":-5`} {
		expect(t, "POST", u, `{"kind":"workflow","node":"n","namespace":"default","queue":"q"`+wait+`}`, 400, server.CodeInvalidArgument, "wait")
	}
	start := time.Now()
	if status, e := send(t, "POST", u, `{"kind":"step","node":"n","namespace":"default","queue":"q","wait":1000000}`); status != 200 || time.Since(start) > 5*time.Second {
		t.Fatalf("a 1ms forwarded poll: %d %+v after %v", status, e, time.Since(start))
	}
}

// TestFieldLimits: every class of field above its documented limit is
// refused with a typed error naming it (they were all stored).
func TestFieldLimits(t *testing.T) {
	_, srv := hardServer(t, server.Options{})
	wf := srv.URL + "/api/v1/namespaces/default/workflows"
	long := func(n int) string { return strings.Repeat("x", n) }
	entries := func(n, keyLen, valueLen int, value func(string) string) string {
		parts := make([]string, n)
		for i := range parts {
			k := fmt.Sprintf("%0*d", keyLen, i)
			parts[i] = fmt.Sprintf(`%q:%s`, k, value(long(valueLen)))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	str := func(s string) string { return `"` + s + `"` }
	b64 := func(s string) string { return `"` + base64.StdEncoding.EncodeToString([]byte(s)) + `"` }
	start := func(extra string) string { return `{"workflow_id":"w","workflow_type":"T"` + extra + `}` }
	for _, tc := range []struct {
		url, body   string
		status      int
		code, field string
	}{
		{wf, `{"workflow_id":"w","workflow_type":"` + long(1001) + `"}`, 400, server.CodeInvalidArgument, "workflow_type"},
		{wf, start(`,"queue":"` + long(1001) + `"`), 400, server.CodeInvalidArgument, "queue"},
		{wf, start(`,"business_key":"` + long(1001) + `"`), 400, server.CodeInvalidArgument, "business_key"},
		{wf, start(`,"identity":"` + long(257) + `"`), 400, server.CodeInvalidArgument, "identity"},
		{wf, start(`,"request_id":"` + long(1001) + `"`), 400, server.CodeInvalidArgument, "request_id"},
		{wf, start(`,"attributes":` + entries(65, 4, 1, str)), 400, server.CodeInvalidArgument, "attributes"},
		{wf, start(`,"attributes":` + entries(1, 129, 1, str)), 400, server.CodeInvalidArgument, ""},
		{wf, start(`,"attributes":` + entries(1, 4, 4097, str)), 400, server.CodeInvalidArgument, "attributes[0000]"},
		{wf, start(`,"memo":` + entries(65, 4, 1, b64)), 400, server.CodeInvalidArgument, "memo"},
		{wf + "/w/signals", `{"name":"` + long(1001) + `"}`, 400, server.CodeInvalidArgument, "name"},
		{wf + "/w/cancel", `{"reason":"` + long(32<<10+1) + `"}`, 400, server.CodeInvalidArgument, "reason"},
		{wf + "/w/terminate", `{"reason":"` + long(32<<10+1) + `"}`, 400, server.CodeInvalidArgument, "reason"},
		{wf + "/w/signal-with-start", `{"signal_name":"s","start":{"workflow_type":"T","identity":"` + long(257) + `"}}`, 400, server.CodeInvalidArgument, "start.identity"},
		{srv.URL + "/api/v1/namespaces", `{"name":"n","description":"` + long(4097) + `"}`, 400, server.CodeInvalidArgument, "description"},
		{srv.URL + "/api/v1/namespaces", `{"name":"` + long(256) + `"}`, 400, server.CodeInvalidArgument, "name"},
		{srv.URL + "/api/v1/namespaces", `{"name":"n","data":` + entries(65, 4, 1, str) + `}`, 400, server.CodeInvalidArgument, "data"},
		{srv.URL + "/api/v1/namespaces/default/workflow-search", `{"business_key":"` + long(1001) + `"}`, 400, server.CodeInvalidArgument, "business_key"},
		{srv.URL + "/api/v1/namespaces/default/step-tasks/poll", `{"identity":"` + long(257) + `"}`, 400, server.CodeInvalidArgument, "identity"},
		{srv.URL + "/api/v1/workflow-tasks/complete", `{"token":"e30=","commands":[{"type":"ScheduleStep","step":{"queue":"` + long(1001) + `"}}]}`, 400, server.CodeInvalidArgument, "commands[0].step.queue"},
		{srv.URL + "/api/v1/step-tasks/fail", `{"token":"e30=","failure":{"kind":"application","message":"m","cause":{"kind":"application","message":"` + long(32<<10+1) + `"}}}`, 400, server.CodeInvalidArgument, "failure.cause.message"},
		{srv.URL + "/api/v1/step-tasks/heartbeat", `{"token":` + b64(long(16<<10+1)) + `}`, 400, server.CodeInvalidArgument, "token"}, // no token the server makes is that long,
		{srv.URL + "/api/v1/definitions", `{"type":"d","body":"e30=","modified_by":"` + long(257) + `"}`, 400, server.CodeInvalidArgument, "modified_by"},
	} {
		expect(t, "POST", tc.url, tc.body, tc.status, tc.code, tc.field)
	}
	// A payload above 16 MiB is 413 naming it, over HTTP and embedded.
	ctx := context.Background()
	svc := remote.New(srv.URL, nil)
	_, err := svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: "big", WorkflowType: "T", Input: make([]byte, 16<<20+1)})
	var ia *store.InvalidArgumentError
	if !errors.Is(err, store.ErrPayloadTooLarge) {
		t.Fatalf("a 16 MiB+1 input: %v", err)
	}
	eng, _ := hardServer(t, server.Options{})
	err = eng.SignalWorkflow(ctx, api.SignalRequest{RunRef: api.RunRef{WorkflowID: "w"}, Name: "s", Identity: long(300)})
	if !errors.As(err, &ia) || ia.Field != "identity" || !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("embedded: %v", err)
	}
	// Nothing was stored.
	if status, e := send(t, "POST", srv.URL+"/api/v1/namespaces/default/workflow-count", `{}`); status != 200 {
		t.Fatalf("count: %d %+v", status, e)
	}
	if n, err := svc.CountWorkflows(ctx, api.ListRequest{}); err != nil || n != 0 {
		t.Fatalf("%d workflows after refused starts, %v", n, err)
	}
}

// TestBodyChecks: invalid UTF-8 and lone surrogate escapes are refused
// (they were stored as U+FFFD), and so is a JSON null body (it was taken
// as {}, and a null poll handed out a task).
func TestBodyChecks(t *testing.T) {
	ctx := context.Background()
	eng, srv := hardServer(t, server.Options{PollWait: 100 * time.Millisecond})
	wf := srv.URL + "/api/v1/namespaces/default/workflows"
	for _, body := range []string{
		"{\"workflow_id\":\"h-\xff\xfe\",\"workflow_type\":\"T\"}",
		`{"workflow_id":"h-\ud800","workflow_type":"T"}`,
		`{"workflow_id":"h-\udc00x","workflow_type":"T"}`,
		`{"workflow_id":"h-\ud800\u0041","workflow_type":"T"}`,
		`{"workflow_id":"h","workflow_type":"T","attributes":{"k\uDBFF":"v"}}`,
		`{"workflow_id":"h","workflow_type":"T","memo":{"k":"e30="},"attributes":{"k":"\ud800"}}`,
	} {
		expect(t, "POST", wf, body, 400, server.CodeInvalidArgument, "")
	}
	// A surrogate pair, and an escaped backslash before a u, are fine.
	for i, body := range []string{`{"workflow_id":"h-\ud83d\ude00","workflow_type":"T"}`, `{"workflow_id":"h-\\ud800","workflow_type":"T"}`} {
		if status, e := send(t, "POST", wf, body); status != 200 {
			t.Errorf("body %d: %d %+v", i, status, e)
		}
	}
	if _, err := eng.StartWorkflow(ctx, api.StartRequest{WorkflowID: "ready", WorkflowType: "T"}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/namespaces/default/workflows", "/namespaces/default/workflow-tasks/poll", "/namespaces/default/step-tasks/poll",
		"/namespaces/default/workflow-search", "/peer/poll", "/workflow-tasks/complete"} {
		for _, body := range []string{`null`, ` null `, `[]`, `"x"`, `1`, ``} {
			expect(t, "POST", srv.URL+"/api/v1"+path, body, 400, server.CodeInvalidArgument, "body")
		}
	}
	// Unknown fields are still refused, nested ones too, and keys match
	// fields as encoding/json matches them (case-insensitively).
	expect(t, "POST", wf+"/w/signal-with-start", `{"signal_name":"s","start":{"workflow_type":"T","nope":1}}`, 400, server.CodeInvalidArgument, "start.nope")
	if status, e := send(t, "POST", wf, `{"Workflow_ID":"case","WORKFLOW_TYPE":"T"}`); status != 200 {
		t.Errorf("keys in other case: %d %+v", status, e)
	}
	// JSON has one number type: an integer written 2.0 or 2e0 is an
	// integer (the API document calls it one), and strings keep their bytes.
	for i, body := range []string{`{"workflow_id":"n-5.0","workflow_type":"T","priority":2.0}`, `{"workflow_id":"n-1e0","workflow_type":"T","priority":20e-1,"run_timeout":1.0e9}`} {
		if status, e := send(t, "POST", wf, body); status != 200 {
			t.Errorf("integral number %d: %d %+v", i, status, e)
		}
	}
	for _, id := range []string{"n-5.0", "n-1e0"} {
		if _, err := eng.DescribeWorkflow(ctx, api.RunRef{Namespace: "default", WorkflowID: id}); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	for _, body := range []string{`{"workflow_id":"n","workflow_type":"T","priority":2.5}`, `{"workflow_id":"n","workflow_type":"T","priority":1e999999999}`,
		`{"workflow_id":"n","workflow_type":"T","run_timeout":1e30}`} {
		expect(t, "POST", wf, body, 400, server.CodeInvalidArgument, "")
	}
}
