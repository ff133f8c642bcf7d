package server

import (
	"net/http"
	"strings"
	"testing"
)

// nodeForwards are the routes one node calls on another with the cluster
// secret besides the peering route: the run calls it forwards to the node
// that serves the run (written apart from the server's nodeRoutes, from
// the api.Peer methods the engine calls).
var nodeForwards = map[string]bool{
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

// TestNodeSecretIsForNodes: the cluster secret calls the peering route and
// the run calls nodes forward, and is refused (403) on user and token
// administration, which changes nothing. Before, it was a cluster admin:
// it listed users, made a token for any of them and changed them.
func TestNodeSecretIsForNodes(t *testing.T) {
	f := newAccessFixture(t)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/users", ""},
		{"GET", "/users/acme-writer", ""},
		{"POST", "/users", `{"name":"mallory","kind":"service","cluster_admin":true}`},
		{"PUT", "/users/acme-writer", `{"cluster_admin":true}`},
		{"POST", "/tokens", `{"user":"root","name":"mine now"}`},
		{"GET", "/tokens", ""},
		{"PUT", "/namespaces/acme/grants/acme-reader", `{"roles":["admin"]}`},
		{"POST", "/namespaces", `{"name":"nodes-own"}`},
		{"POST", "/namespaces/acme/workflows", `{"workflow_id":"by-node","workflow_type":"T","queue":"q"}`},
		{"GET", "/audit", ""},
	} {
		code, _, body := f.do(t, "node", c.method, c.path, c.body)
		if code != http.StatusForbidden || !strings.Contains(body, "cluster secret is for the calls between the nodes") {
			t.Errorf("%s %s with the cluster secret: %d %s, want 403 saying what the secret is for", c.method, c.path, code, body)
		}
	}
	// Nothing changed.
	if code, _, body := f.do(t, "root", "GET", "/users/acme-writer", ""); code != 200 || strings.Contains(body, `"cluster_admin":true`) {
		t.Errorf("acme-writer after the node's PUT: %d %s", code, body)
	}
	if code, _, body := f.do(t, "root", "GET", "/tokens?user=root", ""); code != 200 || strings.Contains(body, "mine now") {
		t.Errorf("root's tokens after the node's POST /tokens: %d %s", code, body)
	}
	if code, _, _ := f.do(t, "root", "GET", "/users/mallory", ""); code != http.StatusNotFound {
		t.Errorf("the user the node made: %d, want 404", code)
	}
	// What a node needs is served.
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/peer/no-such-op", "{}"},
		{"GET", "/namespaces/acme/workflows/nope", ""},
		{"POST", "/namespaces/acme/workflows/nope/signals", `{"signal_name":"x"}`},
		{"POST", "/step-tasks/heartbeat", `{"token":"e30="}`},
	} {
		if code, _, body := f.do(t, "node", c.method, c.path, c.body); code == http.StatusUnauthorized || code == http.StatusForbidden || code >= 500 {
			t.Errorf("%s %s with the cluster secret: %d %s, want it served", c.method, c.path, code, body)
		}
	}
	if code, _, _ := f.do(t, "wrong secret", "POST", "/peer/no-such-op", "{}"); code != http.StatusUnauthorized {
		t.Errorf("a wrong secret on /peer: %d, want 401", code)
	}
}
