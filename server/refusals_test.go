package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
)

// auditEntries polls the audit log (as root) until have holds of its
// entries, failing t at the deadline.
func (f *accessFixture) auditEntries(t *testing.T, what string, have func([]AuditEntry) bool) []AuditEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		_, _, raw := f.do(t, "root", "GET", "/audit?page_size=1000", "")
		var list AuditList
		if err := json.Unmarshal([]byte(raw), &list); err != nil {
			t.Fatalf("audit: %v %s", err, raw)
		}
		if have(list.Entries) {
			return list.Entries
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the audit log has no %s: %+v", what, list.Entries)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// entryDetail is what a refusal's entry says in its detail.
type entryDetail struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

func detailOf(e AuditEntry) entryDetail {
	var d entryDetail
	json.Unmarshal(e.Detail, &d)
	return d
}

// TestRefusedCallsAreAudited: refused peer calls (a wrong secret, a user's
// token), refused worker-task calls (a task of another namespace) and a
// refused read each leave an audit entry that says why. Before, the peer
// and task routes, and reads, were left out of the audit log refused or
// not.
func TestRefusedCallsAreAudited(t *testing.T) {
	f := newAccessFixture(t)
	ctx := t.Context()
	if _, err := f.eng.StartWorkflow(ctx, api.StartRequest{Namespace: "acme", WorkflowID: "wf-1", WorkflowType: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	task, err := f.eng.PollWorkflowTask(ctx, api.PollRequest{Namespace: "acme", Queue: "q"})
	if err != nil || task == nil {
		t.Fatalf("poll: %v %v", task, err)
	}
	tokenBody, _ := json.Marshal(map[string]any{"token": task.Token})
	for _, c := range []struct {
		who, method, path, body string
		want                    int
	}{
		{"wrong secret", "POST", "/peer/poll", "{}", http.StatusUnauthorized},
		{"acme-worker", "POST", "/peer/poll", "{}", http.StatusForbidden},
		{"other-operator", "POST", "/workflow-tasks/complete", string(tokenBody), http.StatusForbidden},
		{"other-operator", "GET", "/namespaces/acme/workflows/wf-1/history", "", http.StatusForbidden},
	} {
		if code, _, body := f.do(t, c.who, c.method, c.path, c.body); code != c.want {
			t.Fatalf("%s %s as %s: %d %s, want %d", c.method, c.path, c.who, code, body, c.want)
		}
	}
	type seen struct {
		actor, action string
		status        int32
	}
	want := map[seen]bool{
		{"(unauthenticated)", "POST /peer/{op}", 401}:                                                    true,
		{"acme-worker (service)", "POST /peer/{op}", 403}:                                                true,
		{"other-operator (service)", "POST /workflow-tasks/complete", 403}:                               true,
		{"other-operator (service)", "GET /namespaces/{namespace}/workflows/{workflow_id}/history", 403}: true,
	}
	f.auditEntries(t, "entry for each refusal, with its reason", func(entries []AuditEntry) bool {
		found := 0
		for _, e := range entries {
			if want[seen{e.Actor, e.Action, e.Status}] && detailOf(e).Reason != "" {
				found++
			}
		}
		return found == len(want)
	})
}

// TestRefusalsAreFolded: 50 refusals alike (one address, caller, route and
// status) make two entries: the first, written at once, and one that counts
// the other 49 when the window (a second in the fixture) closes. Before,
// each was an entry of its own.
func TestRefusalsAreFolded(t *testing.T) {
	f := newAccessFixture(t)
	const window = time.Second // newAccessFixture's RefusalWindow
	start := time.Now()
	for range 50 {
		if code, _, body := f.do(t, "acme-reader", "POST", "/namespaces/acme/workflows/wf-1/terminate", `{"reason":"not mine"}`); code != http.StatusForbidden {
			t.Fatalf("the reader's terminate: %d %s", code, body)
		}
	}
	took := time.Since(start)
	const action = "POST /namespaces/{namespace}/workflows/{workflow_id}/terminate"
	mine := func(entries []AuditEntry) (out []AuditEntry, refusals int) {
		for _, e := range entries {
			if e.Actor == "acme-reader (service)" && e.Action == action && e.Status == http.StatusForbidden {
				out = append(out, e)
				refusals += max(1, detailOf(e).Count)
			}
		}
		return out, refusals
	}
	entries, _ := mine(f.auditEntries(t, "entries counting the 50 refusals", func(entries []AuditEntry) bool {
		_, n := mine(entries)
		return n == 50
	}))
	// Within one window: the first and the count of the rest. A machine so
	// slow that the 50 took longer may close a window or two between them.
	if most := 2 * (int(took/window) + 1); len(entries) > most || (took < window && len(entries) != 2) {
		t.Fatalf("50 refusals in %v made %d entries, want 2 (at most %d): %+v", took, len(entries), most, entries)
	}
	if took < window {
		counted, first := entries[0], entries[1] // newest first
		if d := detailOf(counted); d.Count != 49 || counted.Repeats() != 49 || d.Reason == "" || counted.Target != "wf-1" || counted.Namespace != "acme" {
			t.Errorf("the entry of the repeats: %+v (%s), want count 49 with the reason, target and namespace", counted, counted.Detail)
		}
		if d := detailOf(first); d.Count != 0 || d.Reason == "" {
			t.Errorf("the first refusal's entry: %+v (%s)", first, first.Detail)
		}
	}
}
