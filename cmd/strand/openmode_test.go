package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenModeAnswersOnlyLocalTools starts `strand server` as the README's
// first command does (no user, loopback) and calls it as a web page of
// another site could from the user's browser: a cross-site form post, a
// text/plain post (one that would make a cluster admin of the page's
// choosing), requests whose Host is the page's own name (DNS rebinding).
// Each is refused (403, saying why) and changes nothing, and the refusals
// are in the audit log; the CLI, same-origin calls, calls by a name given
// with --host-name and a body-less change are still served. Before, every
// one of them was served.
func TestOpenModeAnswersOnlyLocalTools(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	t.Parallel()
	bin := binaries(t, "strand")
	addr := freePort(t)
	url := "http://" + addr
	_, port, _ := strings.Cut(addr, ":")
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"),
		"--listen", addr, "--host-name", "strand.test")

	call := func(method, path, host string, header map[string]string, body string) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(t.Context(), method, url+"/api/v1"+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	jsonType := map[string]string{"Content-Type": "application/json"}
	start := func(id string) string {
		return `{"workflow_id":"` + id + `","workflow_type":"Approval","queue":"nobody-polls"}`
	}
	const refusal = "answers only requests from this machine's own tools"

	for _, c := range []struct {
		what, method, path, host string
		header                   map[string]string
		body, says               string
	}{
		{"a cross-site form post", "POST", "/namespaces/default/workflows", "",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"},
			"workflow_id=by-form&workflow_type=Approval", "the web page of"},
		{"a form post without Origin (an older browser)", "POST", "/namespaces/default/workflows", "",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "workflow_id=by-form", "Content-Type"},
		{"a text/plain post of JSON", "POST", "/namespaces/default/workflows", "",
			map[string]string{"Content-Type": "text/plain"}, start("by-text"), "Content-Type"},
		{"a text/plain post making a cluster admin", "POST", "/users", "",
			map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Origin": "null"},
			`{"name":"mallory","password":"a password of mallory","cluster_admin":true}`, "the web page of"},
		{"a JSON post from another site's page", "POST", "/namespaces/default/workflows", "",
			map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, start("by-page"), "the web page of"},
		{"a body-less cancel from another site's page", "POST", "/namespaces/default/workflows/served-1/cancel", "",
			map[string]string{"Origin": "https://evil.example"}, "", "the web page of"},
		{"a start by a rebound name", "POST", "/namespaces/default/workflows", "evil.example:" + port, jsonType, start("by-rebinding"), "Host"},
		{"a history read by a rebound name", "GET", "/namespaces/default/workflows/served-1/history", "evil.example:" + port, nil, "", "Host"},
		{"a user list read by a rebound name", "GET", "/users", "evil.example", nil, "", "Host"},
	} {
		code, body := call(c.method, c.path, c.host, c.header, c.body)
		if code != http.StatusForbidden || !strings.Contains(body, refusal) || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s, want 403 saying it %s (%s)", c.what, code, body, refusal, c.says)
		}
	}
	// The console is no API route: refused to a rebound name too.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url+"/", nil)
	req.Host = "evil.example:" + port
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("the console by a rebound name: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// This machine's own tools are served.
	if out, code := run(t, "workflow", "start", "served-1", "--type", "Approval", "--queue", "nobody-polls", "--server", url); code != 0 {
		t.Fatalf("strand workflow start: exit %d: %s", code, out)
	}
	for _, c := range []struct {
		what, method, path, host string
		header                   map[string]string
		body                     string
	}{
		{"a same-origin start (the console)", "POST", "/namespaces/default/workflows", "",
			map[string]string{"Content-Type": "application/json; charset=utf-8", "Origin": url, "X-Strand-Console": "1"}, start("served-2")},
		{"a start by the --host-name name", "POST", "/namespaces/default/workflows", "strand.test:" + port,
			map[string]string{"Content-Type": "application/json", "Origin": "http://strand.test:" + port}, start("served-3")},
		{"a start by localhost", "POST", "/namespaces/default/workflows", "localhost:" + port, jsonType, start("served-4")},
		{"a history read", "GET", "/namespaces/default/workflows/served-1/history", "", nil, ""},
	} {
		if code, body := call(c.method, c.path, c.host, c.header, c.body); code != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", c.what, code, body)
		}
	}
	// A change without a body, a Content-Type or an Origin is no browser's:
	// the API answers it (here that a cancel takes a JSON object).
	if code, body := call("POST", "/namespaces/default/workflows/served-2/cancel", "", nil, ""); code == http.StatusForbidden || strings.Contains(body, refusal) {
		t.Errorf("a body-less cancel (no Content-Type, no Origin): %d %s, want the API's own answer", code, body)
	}
	if out, code := run(t, "workflow", "cancel", "served-1", "--reason", "done", "--server", url); code != 0 {
		t.Errorf("strand workflow cancel: exit %d: %s", code, out)
	}

	// The refused changed nothing: no run of theirs, no user.
	for _, id := range []string{"by-form", "by-text", "by-page", "by-rebinding"} {
		if code, body := call("GET", "/namespaces/default/workflows/"+id, "", nil, ""); code != http.StatusNotFound {
			t.Errorf("the run %s of a refused start: %d %s, want 404", id, code, body)
		}
	}
	if code, body := call("GET", "/users", "", nil, ""); code != http.StatusOK || strings.Contains(body, "mallory") {
		t.Errorf("users after the refused post: %d %s", code, body)
	}

	// The refusals are in the audit log, with why.
	eventually(t, "the refusals in the audit log", func() bool {
		out, code := run(t, "audit", "list", "--all-namespaces", "-o", "json", "--server", url)
		return code == 0 && strings.Count(out, refusal) >= 5 && strings.Contains(out, `"POST /users"`)
	})
}
