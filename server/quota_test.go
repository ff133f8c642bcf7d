package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
)

// TestQuotas: starts over a namespace's rate get 429 with Retry-After and
// write nothing, starts under it are all taken; open runs and payloads are
// bounded too.
func TestQuotas(t *testing.T) {
	f := newAccessFixture(t)
	ctx := context.Background()
	do := func(who, method, path, body string) (int, http.Header, string) {
		t.Helper()
		return f.do(t, who, method, path, body)
	}
	setQuotas := func(ns, q string) {
		t.Helper()
		if code, _, body := do("root", "PUT", "/namespaces/"+ns+"/quotas", q); code != 200 {
			t.Fatalf("set quotas %s: %d %s", q, code, body)
		}
		// No wait: a node believes the quotas it read for a second, but
		// SetQuotas drops what this node had read, so its next start
		// reads the new ones. (The test made no call in the background
		// that could read the old ones meanwhile.)
	}
	start := func(ns, id, input string) (int, http.Header, string) {
		body := fmt.Sprintf(`{"workflow_id":%q,"workflow_type":"T","queue":"q"`, id)
		if input != "" {
			body += `,"input":` + input
		}
		return do("root", "POST", "/namespaces/"+ns+"/workflows", body+"}")
	}

	if code, _, body := do("acme-admin", "PUT", "/namespaces/acme/quotas", `{"starts_per_second":1000}`); code != 403 {
		t.Fatalf("a namespace's admin raising its quotas: %d %s", code, body)
	}
	// Half a start a second: the 10 starts below may take up to 6 s on a
	// busy machine before a fifth is taken (at 2/s it was 1.5 s).
	setQuotas("acme", `{"starts_per_second":0.5,"start_burst":2}`)
	if code, _, body := do("acme-reader", "GET", "/namespaces/acme/quotas", ""); code != 200 || !strings.Contains(body, `"starts_per_second":0.5`) {
		t.Fatalf("quotas as acme's reader: %d %s", code, body)
	}
	var taken, refused []string
	for i := range 10 {
		id := fmt.Sprintf("burst-%d", i)
		code, h, body := start("acme", id, "")
		switch code {
		case 200:
			taken = append(taken, id)
		case 429:
			if s, _ := strconv.Atoi(h.Get("Retry-After")); s < 1 || !strings.Contains(body, "quota_exceeded") {
				t.Fatalf("a refused start: Retry-After %q, %s", h.Get("Retry-After"), body)
			}
			refused = append(refused, id)
		default:
			t.Fatalf("start %s: %d %s", id, code, body)
		}
	}
	if len(taken) < 2 || len(taken) > 4 || len(refused) < 6 {
		t.Fatalf("10 starts at once at 0.5/s with a burst of 2: %d taken, %d refused", len(taken), len(refused))
	}
	for _, id := range refused {
		if _, err := f.eng.DescribeWorkflow(ctx, api.RunRef{Namespace: "acme", WorkflowID: id}); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("refused start %s wrote a run: %v", id, err)
		}
	}

	// Under the rate nothing is refused: a start every 10 ms or more
	// (a busy machine only spaces them more) under 200/s, a token every 5
	// ms, with a burst of 1.
	setQuotas("acme", `{"starts_per_second":200,"start_burst":1}`)
	for i := range 8 {
		if code, _, body := start("acme", fmt.Sprintf("paced-%d", i), ""); code != 200 {
			t.Fatalf("start %d at most 100/s under a quota of 200/s: %d %s", i, code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Open runs.
	setQuotas("other", `{"open_runs":3}`)
	for i := range 3 {
		if code, _, body := start("other", fmt.Sprintf("open-%d", i), ""); code != 200 {
			t.Fatalf("open run %d of 3: %d %s", i, code, body)
		}
	}
	if code, _, body := start("other", "open-3", ""); code != 429 || !strings.Contains(body, "open_runs") {
		t.Fatalf("a 4th open run: %d %s", code, body)
	}
	if err := f.eng.TerminateWorkflow(ctx, api.TerminateRequest{RunRef: api.RunRef{Namespace: "other", WorkflowID: "open-0"}, Reason: "make room"}); err != nil {
		t.Fatal(err)
	}
	// The node counts the open runs again once its count is a second
	// old.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, body := start("other", "open-3", "")
		if code == 200 {
			break
		}
		if code != 429 || time.Now().After(deadline) {
			t.Fatalf("a start once a run closed: %d %s (the last after 30s of tries)", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Payloads.
	setQuotas("other", `{"max_payload":10}`)
	if code, _, body := start("other", "big", `"more than ten bytes"`); code != 413 {
		t.Fatalf("an input over the payload quota: %d %s", code, body)
	}
	if code, _, body := start("other", "small", `"tiny"`); code != 200 {
		t.Fatalf("an input under the payload quota: %d %s", code, body)
	}
	if code, _, body := do("root", "POST", "/namespaces/other/workflows/small/signals", `{"name":"s","input":"more than ten bytes"}`); code != 413 {
		t.Fatalf("a signal over the payload quota: %d %s", code, body)
	}
	if code, _, body := do("root", "PUT", "/namespaces/other/quotas", `{"open_runs":-1}`); code != 400 {
		t.Fatalf("a negative quota: %d %s", code, body)
	}
}
