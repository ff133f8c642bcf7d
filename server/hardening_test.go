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
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
)

// hardServer is an httptest server over an engine on a SQLite file.
func hardServer(t *testing.T, opts server.Options) (*engine.Engine, *httptest.Server) {
	t.Helper()
	eng, err := engine.Open(context.Background(), testdb.SQLite(t), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
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
	for _, route := range []string{"workflow-search", "workflow-count"} {
		u := srv.URL + "/api/v1/namespaces/default/" + route
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
