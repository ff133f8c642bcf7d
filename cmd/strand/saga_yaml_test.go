package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/remote"
)

// yamlShop is a real local HTTP service the YAML sagas of these tests
// call (and the example of the sagas guide): it reserves stock, takes
// payments, ships (not to "nowhere": 422) and sends e-mails, and logs
// each call with the saga's transaction.
type yamlShop struct {
	*httptest.Server
	mu  sync.Mutex
	log []struct{ call, tx, key string }
}

func newYAMLShop(t *testing.T) *yamlShop {
	s := &yamlShop{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.log = append(s.log, struct{ call, tx, key string }{r.Method + " " + r.URL.Path, r.Header.Get("X-Strand-Transaction"), r.Header.Get("Idempotency-Key")})
		s.mu.Unlock()
		var in struct{ Order, Address string }
		json.Unmarshal(body, &in)
		reply := func(status int, v any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(v)
		}
		switch p := r.URL.Path; {
		case r.Method == "POST" && p == "/reservations":
			reply(http.StatusCreated, map[string]string{"id": "res-" + in.Order})
		case r.Method == "POST" && p == "/payments":
			reply(http.StatusCreated, map[string]string{"id": "pay-" + in.Order})
		case r.Method == "POST" && strings.HasPrefix(p, "/payments/") && strings.HasSuffix(p, "/refund"):
			reply(http.StatusOK, map[string]bool{"refunded": true})
		case r.Method == "POST" && p == "/shipments" && in.Address == "nowhere":
			reply(http.StatusUnprocessableEntity, map[string]string{"error": "cannot ship to nowhere"})
		case r.Method == "POST" && p == "/shipments":
			reply(http.StatusCreated, map[string]string{"tracking": "tr-" + in.Order})
		case r.Method == "POST" && p == "/emails":
			w.WriteHeader(http.StatusAccepted)
		case r.Method == "DELETE" && (strings.HasPrefix(p, "/reservations/") || strings.HasPrefix(p, "/shipments/")):
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// calls returns the calls of a saga's transaction (its id, or ID/N for
// a run again), in order; the calls of a parallel group, made at the
// same time, are sorted between from and to.
func (s *yamlShop) calls(tx string, from, to int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.log {
		if c.tx == tx {
			out = append(out, c.call)
		}
	}
	if to <= len(out) {
		slices.Sort(out[from:to])
	}
	return out
}

// keys returns the idempotency keys of a saga's transaction's calls,
// sorted.
func (s *yamlShop) keys(tx string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.log {
		if c.tx == tx {
			out = append(out, c.key)
		}
	}
	slices.Sort(out)
	return out
}

// sagaCLI runs strand saga ARGS in process: through the root command
// once it has the definition commands, through them alone until then.
func sagaCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return run(t, append([]string{"saga"}, args...)...)
}

// checkoutSaga reserves, pays, then ships and e-mails at once; the shop's
// URL is in the input.
const checkoutSaga = `name: checkout
description: Reserve the stock, take the payment, then ship and e-mail at once
options:
  retry: {backoff: 100ms, max_backoff: 1s, deadline: 1m}
  compensation_retry: {backoff: 100ms, attempts: 3}
  timeout: 10s
steps:
  - name: reserve
    call:
      method: POST
      url: ${input.shop}/reservations
      body: {order: '${input.order}', sku: '${input.sku}'}
    compensate:
      method: DELETE
      url: ${input.shop}/reservations/${result.body.id}
  - name: pay
    call:
      method: POST
      url: ${input.shop}/payments
      body: {order: '${input.order}', reservation: '${steps.reserve.body.id}'}
      success: [201]
    compensate: {method: POST, url: '${input.shop}/payments/${result.body.id}/refund'}
  - parallel:
      - name: ship
        call: {method: POST, url: '${input.shop}/shipments', body: {order: '${input.order}', address: '${input.address}'}}
        compensate: {method: DELETE, url: '${input.shop}/shipments/${result.body.tracking}'}
      - name: email
        call: {method: POST, url: '${input.shop}/emails', body: 'Order ${input.order} is paid (${steps.pay.body.id}).'}
`

// TestYAMLSagaVerbs: a YAML saga applied and run with the CLI against a
// strand server makes its calls through a strand worker process, in
// order, and is undone in reverse when a call fails for good; bad
// definitions and inputs are refused, with the place of what is wrong,
// and change nothing. strand server --worker-groups runs them alone.
func TestYAMLSagaVerbs(t *testing.T) {
	bin := binaries(t, "strand")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"), "--listen", addr)
	url := "http://" + addr
	process(t, "running the groups", filepath.Join(bin, "strand"), "worker", "--server", url, "--group", "default")
	shop := newYAMLShop(t)
	cli := func(args ...string) (string, int) {
		t.Helper()
		return sagaCLI(t, append(args, "--server", url)...)
	}
	input := func(order, address string) string {
		return fmt.Sprintf(`{"shop": %q, "order": %q, "sku": "book", "address": %q}`, shop.URL, order, address)
	}
	dir := t.TempDir()

	// A bad definition is refused with its place, and stores nothing.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(checkoutSaga, "${steps.reserve.body.id}", "${steps.ship.body.id}", 1)), 0o644)
	if out, code := cli("apply", "-f", bad); code != 2 ||
		!strings.Contains(out, `bad.yaml: invalid saga definition: line 20, column 53: steps[1].call.body.reservation: ${steps.ship.body.id}: step "ship" runs after "pay"`) {
		t.Fatalf("bad definition: exit %d: %s", code, out)
	}
	if out, code := cli("definitions"); code != 0 || strings.Contains(out, "checkout") {
		t.Fatalf("a refused definition was stored: exit %d: %s", code, out)
	}
	good := filepath.Join(dir, "checkout.yaml")
	os.WriteFile(good, []byte(checkoutSaga), 0o644)
	if out, code := cli("apply", "-f", good); code != 0 || !strings.Contains(out, "checkout version 1 stored") {
		t.Fatalf("apply: exit %d: %s", code, out)
	}
	if out, code := cli("apply", "-f", good); code != 0 || !strings.Contains(out, "checkout version 1 unchanged") {
		t.Fatalf("apply again: exit %d: %s", code, out)
	}
	if out, _ := cli("definitions"); !strings.Contains(out, "checkout") || !strings.Contains(out, "Reserve the stock") {
		t.Fatalf("definitions: %s", out)
	}
	if out, _ := cli("definitions", "checkout"); !strings.Contains(out, "checkout version 1") || !strings.Contains(out, "POST ${input.shop}/shipments") {
		t.Fatalf("definitions checkout: %s", out)
	}

	// Bad inputs start nothing.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "checkout", "--id", "refused", "--input", `{"order": `}, 2, "input: not JSON"},
		{[]string{"run", "checkout", "--id", "refused", "--input", `{"order": "o-9"}`}, 2, `step reserve's call reads ${input.shop}: input has no field "shop"`},
		{[]string{"run", "nowhere", "--id", "refused"}, 1, "no saga definition nowhere"},
		{[]string{"run", "checkout", "--id", "refused", "--version", "7", "--input", input("o-9", "x")}, 1, "no saga definition checkout version 7"},
		{[]string{"run", "checkout", "--id", "refused", "--version", "-1"}, 2, "--version -1"},
	} {
		if out, code := cli(tc.args...); code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d: %s; want exit %d with %q", tc.args, code, out, tc.code, tc.want)
		}
	}
	if _, err := remote.New(url, nil).DescribeWorkflow(context.Background(), api.RunRef{WorkflowID: "refused"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a refused run was started: %v", err)
	}

	// A saga runs through.
	out, code := cli("run", "checkout", "--id", "order-1", "--input", input("o-1", "1 Main St"), "--wait")
	if code != 0 || !strings.Contains(out, "started saga order-1 (checkout version 1)") || !strings.Contains(out, "saga order-1 (checkout): completed") {
		t.Fatalf("run: exit %d: %s", code, out)
	}
	if got := shop.calls("order-1", 2, 4); fmt.Sprint(got) != "[POST /reservations POST /payments POST /emails POST /shipments]" {
		t.Fatalf("order-1's calls %v", got)
	}
	// The order id is the transaction's key: sent again, it is refused,
	// with the saga's state and how to run it again, and nothing is
	// called; each call's key is the same for every submission.
	for _, reuse := range []string{"never", "failed"} {
		out, code = cli("run", "checkout", "--id", "order-1", "--id-reuse", reuse, "--input", input("o-1", "1 Main St"))
		if code != 1 || !strings.Contains(out, "saga order-1 (checkout) ran already and is completed") || !strings.Contains(out, "--id-reuse always") {
			t.Fatalf("order-1 sent again (--id-reuse %s): exit %d: %s", reuse, code, out)
		}
	}
	if got := shop.keys("order-1"); len(shop.calls("order-1", 0, 0)) != 4 || fmt.Sprint(got) != "[order-1/email order-1/pay order-1/reserve order-1/ship]" {
		t.Fatalf("order-1 was called again, or with other keys: %v", got)
	}
	if out, code := cli("run", "checkout", "--id", "order-1", "--id-reuse", "twice"); code != 2 || !strings.Contains(out, "--id-reuse") {
		t.Fatalf("a bad --id-reuse: exit %d: %s", code, out)
	}
	// The same over HTTP: a saga is run, and its id sent again refused.
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(url+"/api/v1/namespaces/default/sagas", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, out := post(`{"name": "checkout", "id": "order-1", "input": ` + input("o-1", "1 Main St") + `}`); code != http.StatusConflict ||
		!strings.Contains(out, "saga order-1 (checkout) ran already and is completed") {
		t.Fatalf("POST order-1 again: %d %s", code, out)
	}
	if code, out := post(`{"name": "checkout", "id": "order-1", "id_reuse": "twice", "input": ` + input("o-1", "1 Main St") + `}`); code != http.StatusBadRequest ||
		!strings.Contains(out, "id_reuse") {
		t.Fatalf("POST a bad id_reuse: %d %s", code, out)
	}
	if code, out := post(`{"name": "checkout", "id": "order-4", "input": ` + input("o-4", "4 Main St") + `}`); code != http.StatusOK || !strings.Contains(out, `"workflow_id":"order-4"`) {
		t.Fatalf("POST order-4: %d %s", code, out)
	}
	if code, out := post(`{"name": "checkout", "id": "order-4", "input": ` + input("o-4", "4 Main St") + `}`); code != http.StatusConflict {
		t.Fatalf("POST order-4 again: %d %s", code, out)
	}
	// Run again on purpose, it is a new transaction: order-1/2.
	out, code = cli("run", "checkout", "--id", "order-1", "--id-reuse", "always", "--input", input("o-1", "1 Main St"), "--wait")
	if code != 0 || !strings.Contains(out, "saga order-1 (checkout): completed") {
		t.Fatalf("order-1 run again: exit %d: %s", code, out)
	}
	if got := shop.keys("order-1/2"); fmt.Sprint(got) != "[order-1/2/email order-1/2/pay order-1/2/reserve order-1/2/ship]" {
		t.Fatalf("order-1 run again: keys %v", got)
	}
	// A call fails for good: the completed steps are undone in reverse
	// (the e-mail has nothing to undo).
	out, code = cli("run", "checkout", "--id", "order-2", "--input", input("o-2", "nowhere"), "--wait")
	if code != 1 || !strings.Contains(out, "saga order-2 (checkout): compensated") || !strings.Contains(out, "422 Unprocessable Entity: {\"error\":\"cannot ship to nowhere\"}") ||
		!strings.Contains(out, "saga order-2 ended compensated: saga checkout: step ship failed (compensated)") {
		t.Fatalf("run order-2: exit %d: %s", code, out)
	}
	if got := shop.calls("order-2", 2, 4); fmt.Sprint(got) != "[POST /reservations POST /payments POST /emails POST /shipments POST /payments/pay-o-2/refund DELETE /reservations/res-o-2]" {
		t.Fatalf("order-2's calls %v", got)
	}

	// strand server --worker-groups runs the sagas in its own process.
	addr2 := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"),
		"--listen", addr2, "--worker-groups", "default")
	if out, code := sagaCLI(t, "apply", "-f", good, "--server", "http://"+addr2); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, out)
	}
	if out, code := sagaCLI(t, "run", "checkout", "--id", "order-3", "--input", input("o-3", "2 Main St"), "--wait", "--server", "http://"+addr2); code != 0 ||
		!strings.Contains(out, "completed") {
		t.Fatalf("run on the server's workers: exit %d: %s", code, out)
	}
	if got := shop.calls("order-3", 2, 4); fmt.Sprint(got) != "[POST /reservations POST /payments POST /emails POST /shipments]" {
		t.Fatalf("order-3's calls %v", got)
	}
}

// TestYAMLSagasGuideExample runs the HTTP saga example of the sagas
// guide (docs/sagas.md) as written, with the strand binary against a real server and the shop: the
// example starts its own strand worker.
func TestYAMLSagasGuideExample(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	script := fencedBlock(t, filepath.Join("..", "..", "docs", "sagas.md"), "### Example: an HTTP saga")
	bin := binaries(t, "strand")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"), "--listen", addr)
	shop := newYAMLShop(t)

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(script, "http://127.0.0.1:8080", shop.URL))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STRAND_SERVER=http://"+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	t.Logf("the example printed:\n%s", out)
	for _, want := range []string{"checkout version 1 stored", "saga order-1 (checkout): completed", "step ship failed (compensated)", "order-2 was undone"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the example printed no %q:\n%s", want, out)
		}
	}
	if got := shop.calls("order-2", 2, 4); fmt.Sprint(got) != "[POST /reservations POST /payments POST /emails POST /shipments POST /payments/pay-o-2/refund DELETE /reservations/res-o-2]" {
		t.Fatalf("order-2's calls %v", got)
	}
}
