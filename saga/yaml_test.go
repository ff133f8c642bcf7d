package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
)

// shop is a real local HTTP service the defined sagas call: it logs each
// call with its idempotency key and transaction, and answers 503 or
// refuses on the paths it is told to.
type shop struct {
	*httptest.Server
	mu     sync.Mutex
	log    []shopCall
	busy   map[string]int // path -> 503s still to answer
	refuse map[string]int // path -> the status of a refusal
}

type shopCall struct {
	Method, Path, Body, Key, Tx, Auth string
}

func newShop(t *testing.T) *shop {
	s := &shop{busy: map[string]int{}, refuse: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.log = append(s.log, shopCall{r.Method, r.URL.Path, string(body), r.Header.Get("Idempotency-Key"), r.Header.Get("X-Strand-Transaction"), r.Header.Get("Authorization")})
		busy := s.busy[r.URL.Path] > 0
		if busy {
			s.busy[r.URL.Path]--
		}
		refuse := s.refuse[r.URL.Path]
		s.mu.Unlock()
		var in struct{ Order, SKU string }
		json.Unmarshal(body, &in)
		reply := func(status int, v any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(v)
		}
		switch {
		case busy:
			http.Error(w, "busy, try later", http.StatusServiceUnavailable)
		case refuse != 0:
			reply(refuse, map[string]string{"error": "refused"})
		case r.Method == "POST" && r.URL.Path == "/reservations":
			reply(http.StatusCreated, map[string]any{"id": "res-" + in.Order, "sku": in.SKU})
		case r.Method == "DELETE" && strings.HasPrefix(r.URL.Path, "/reservations/"):
			w.WriteHeader(http.StatusNoContent)
		case r.Method == "POST" && r.URL.Path == "/payments":
			w.Header().Set("Location", "/payments/pay-"+in.Order)
			reply(http.StatusCreated, map[string]any{"id": "pay-" + in.Order})
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/refund"):
			reply(http.StatusOK, map[string]any{"refunded": true})
		case r.Method == "POST" && r.URL.Path == "/shipments":
			reply(http.StatusCreated, map[string]any{"tracking": "tr-" + in.Order})
		case r.Method == "POST" && r.URL.Path == "/notifications":
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "queued")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *shop) set(m map[string]int, path string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		delete(m, path)
	} else {
		m[path] = n
	}
}

// calls returns the calls of a saga (by its transaction: its workflow
// id), in order, as "METHOD PATH".
func (s *shop) calls(id string) []string {
	var out []string
	for _, c := range s.of(id) {
		out = append(out, c.Method+" "+c.Path)
	}
	return out
}

func (s *shop) of(id string) []shopCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []shopCall
	for _, c := range s.log {
		if c.Tx == id {
			out = append(out, c)
		}
	}
	return out
}

// orderSaga reserves, pays and ships; fanout pays and notifies at the
// same time. Both read the service's URL from their input.
const orderSaga = `name: order
description: reserve, pay, ship
options:
  retry: {backoff: 20ms, max_backoff: 100ms, deadline: 1m}
  compensation_retry: {backoff: 20ms, max_backoff: 100ms, attempts: 3}
  timeout: 5s
steps:
  - name: reserve
    call:
      method: POST
      url: ${input.shop}/reservations
      body: {order: '${input.order}', sku: '${input.sku}', quantity: '${input.quantity}'}
    compensate:
      method: DELETE
      url: ${input.shop}/reservations/${result.body.id}
  - name: pay
    call:
      method: POST
      url: ${input.shop}/payments
      headers: {Authorization: 'Bearer ${input.token}'}
      body: '{"order": "${input.order}", "reservation": "${steps.reserve.body.id}"}'
      success: [201]
    compensate:
      method: POST
      url: ${input.shop}${result.headers.location}/refund
      headers: {Authorization: 'Bearer ${input.token}'}
  - name: ship
    call:
      method: POST
      url: ${input.shop}/shipments
      body: {order: '${input.order}', payment: '${steps.pay.headers.location}', reserved: '${steps.reserve.status}'}
`

const fanoutSaga = `name: fanout
options:
  retry: {backoff: 20ms, max_backoff: 100ms, deadline: 1m}
  compensation_retry: {backoff: 20ms, attempts: 3}
steps:
  - name: reserve
    call: {method: POST, url: '${input.shop}/reservations', body: {order: '${input.order}'}}
    compensate: {method: DELETE, url: '${input.shop}/reservations/${result.body.id}'}
  - parallel:
      - name: pay
        call: {method: POST, url: '${input.shop}/payments', body: {order: '${input.order}'}}
        compensate: {method: POST, url: '${input.shop}/payments/${result.body.id}/refund'}
      - name: notify
        call: {method: POST, url: '${input.shop}/notifications', body: 'reserved ${steps.reserve.body.id}'}
  - name: ship
    call: {method: POST, url: '${input.shop}/shipments', body: {order: '${input.order}', notified: '${steps.notify.body}'}}
`

// brokenSaga's second call reads a field the first answer lacks; its
// first compensation reads one the answer lacks.
const brokenSaga = `name: broken
options:
  compensation_retry: {backoff: 20ms, attempts: 2}
steps:
  - name: reserve
    call: {method: POST, url: '${input.shop}/reservations', body: {order: '${input.order}'}}
    compensate: {method: DELETE, url: '${input.shop}/reservations/${result.body.number}'}
  - name: ship
    call: {method: POST, url: '${input.shop}/shipments/${steps.reserve.body.number}', body: {order: '${input.order}'}}
`

type yamlEnv struct {
	t       *testing.T
	ctx     context.Context
	eng     *engine.Engine
	shop    *shop
	catalog *saga.Catalog
	client  *saga.Client
}

func newYAMLEnv(t *testing.T, st store.Store) *yamlEnv {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	eng, err := engine.Open(ctx, st, engine.Options{Logger: testenv.Logger(), WorkflowTaskTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	// The interpreter keeps no run in memory: each workflow task replays
	// the run's history, so every saga here also proves the interpreter
	// deterministic.
	interp := worker.New(eng, worker.Options{Logger: testenv.Logger(), Queue: saga.Queue, CacheMemory: 1, JournalMemory: -1})
	saga.Register(interp, eng)
	calls := worker.New(eng, worker.Options{Logger: testenv.Logger(), Queue: saga.GroupQueue(saga.DefaultGroup)})
	saga.RegisterHTTPSteps(calls, &saga.HTTPRunner{Logger: testenv.Logger()})
	for _, w := range []*worker.Worker{interp, calls} {
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(context.Background()) })
	}
	e := &yamlEnv{t: t, ctx: ctx, eng: eng, shop: newShop(t), catalog: saga.NewCatalog(eng, ""), client: saga.NewClient(eng, "")}
	for _, text := range []string{orderSaga, fanoutSaga, brokenSaga} {
		if _, err := e.catalog.Apply(ctx, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// input is an order's input.
func (e *yamlEnv) input(order string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"shop": e.shop.URL, "order": order, "sku": "book", "quantity": 2, "token": "t0k"})
	return b
}

// run runs a saga and returns its outcome.
func (e *yamlEnv) run(name, id string) (*saga.Outcome, error) {
	e.t.Helper()
	started, err := e.catalog.Run(e.ctx, name, 0, e.input(id), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.result(id, started.RunID)
}

func (e *yamlEnv) result(id, runID string) (*saga.Outcome, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	res, err := e.eng.WaitResult(ctx, api.ResultRequest{RunRef: api.RunRef{WorkflowID: id, RunID: runID}})
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Failure != nil {
		return nil, res.Failure
	}
	var out saga.Outcome
	if err := json.Unmarshal(res.Output, &out); err != nil {
		e.t.Fatal(err)
	}
	return &out, nil
}

func (e *yamlEnv) record(id string) *saga.Record {
	e.t.Helper()
	rec, err := e.client.Get(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

func TestYAMLSagas(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newYAMLEnv(t, st)
		t.Run("all calls succeed", func(t *testing.T) { e.t = t; yamlAllSucceed(t, e) })
		t.Run("a final failure compensates in reverse", func(t *testing.T) { e.t = t; yamlCompensates(t, e) })
		t.Run("a retryable status is retried with the same key", func(t *testing.T) { e.t = t; yamlRetried(t, e) })
		t.Run("parallel groups", func(t *testing.T) { e.t = t; yamlParallel(t, e) })
		t.Run("a call that cannot be rendered", func(t *testing.T) { e.t = t; yamlUnrendered(t, e) })
		t.Run("bad definitions and inputs start nothing", func(t *testing.T) { e.t = t; yamlRefused(t, e) })
	})
}

func yamlAllSucceed(t *testing.T, e *yamlEnv) {
	out, err := e.run("order", "o1")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.shop.calls("o1"); fmt.Sprint(got) != "[POST /reservations POST /payments POST /shipments]" {
		t.Fatalf("calls %v", got)
	}
	calls := e.shop.of("o1")
	rec := e.record("o1")
	// Templates: the input (a number stays a number in a JSON body), an
	// earlier answer's body, headers and status.
	if calls[0].Body != `{"order":"o1","quantity":2,"sku":"book"}` {
		t.Fatalf("reserve's body %s", calls[0].Body)
	}
	if calls[1].Body != `{"order": "o1", "reservation": "res-o1"}` || calls[1].Auth != "Bearer t0k" {
		t.Fatalf("pay's body %s, authorization %q", calls[1].Body, calls[1].Auth)
	}
	if calls[2].Body != `{"order":"o1","payment":"/payments/pay-o1","reserved":201}` {
		t.Fatalf("ship's body %s", calls[2].Body)
	}
	// Each call's key: the transaction and the step; the transaction in
	// its own header.
	for i, step := range []string{"reserve", "pay", "ship"} {
		if calls[i].Key != rec.TransactionID+"/"+step || calls[i].Tx != rec.TransactionID {
			t.Fatalf("%s's key %q, transaction %q; want %s/%s", step, calls[i].Key, calls[i].Tx, rec.TransactionID, step)
		}
	}
	// The output: every answer.
	if out.Saga != "order" || out.Version != 1 || out.TransactionID != rec.TransactionID || out.Steps["pay"].Status != 201 ||
		out.Steps["pay"].Headers["location"] != "/payments/pay-o1" || string(out.Steps["ship"].Body) != `{"tracking":"tr-o1"}` {
		t.Fatalf("outcome %+v", out)
	}
	if rec.State != saga.StateCompleted || rec.Name != "order" || phases(rec) != "reserve:completed/none pay:completed/none ship:completed/none" {
		t.Fatalf("record: %s, %s", rec.State, phases(rec))
	}
	// A tryout's answer holds the compensation, rendered with it.
	var res saga.HTTPResult
	if err := json.Unmarshal(rec.Tryouts[0].Answer.Data, &res); err != nil {
		t.Fatal(err)
	}
	if c := res.Compensation; c == nil || c.Request.Method != "DELETE" || c.Request.URL != e.shop.URL+"/reservations/res-o1" {
		t.Fatalf("reserve's rendered compensation: %+v", c)
	}
}

func yamlCompensates(t *testing.T, e *yamlEnv) {
	e.shop.set(e.shop.refuse, "/shipments", http.StatusUnprocessableEntity)
	defer e.shop.set(e.shop.refuse, "/shipments", 0)
	_, err := e.run("order", "o2")
	if err == nil || !strings.Contains(err.Error(), "saga order: step ship failed (compensated)") || !strings.Contains(err.Error(), "422 Unprocessable Entity") {
		t.Fatalf("got %v", err)
	}
	if got := e.shop.calls("o2"); fmt.Sprint(got) != "[POST /reservations POST /payments POST /shipments POST /payments/pay-o2/refund DELETE /reservations/res-o2]" {
		t.Fatalf("calls %v: want the third call's failure, then the first two undone in reverse", got)
	}
	rec := e.record("o2")
	if rec.State != saga.StateCompensated || phases(rec) != "reserve:completed/completed pay:completed/completed ship:failed/none" {
		t.Fatalf("record: %s, %s", rec.State, phases(rec))
	}
	refund := e.shop.of("o2")[3]
	if refund.Key != rec.TransactionID+"/pay/compensation" || refund.Auth != "Bearer t0k" {
		t.Fatalf("the refund's key %q, authorization %q", refund.Key, refund.Auth)
	}
	i := slices.IndexFunc(rec.Tryouts, func(tr saga.Tryout) bool { return tr.Step == "ship" })
	ship := rec.Tryouts[i]
	if ship.Outcome != saga.OutcomeFailed || ship.Attempt != 1 || ship.ErrorType != saga.ErrorHTTP || !strings.Contains(string(ship.Answer.Data), `"status":422`) {
		t.Fatalf("ship's tryout: %+v %s", ship, ship.Answer.Data)
	}
}

func yamlRetried(t *testing.T, e *yamlEnv) {
	e.shop.set(e.shop.busy, "/payments", 2)
	if _, err := e.run("order", "o3"); err != nil {
		t.Fatal(err)
	}
	if got := e.shop.calls("o3"); fmt.Sprint(got) != "[POST /reservations POST /payments POST /payments POST /payments POST /shipments]" {
		t.Fatalf("calls %v", got)
	}
	var keys []string
	for _, c := range e.shop.of("o3") {
		if c.Path == "/payments" {
			keys = append(keys, c.Key)
		}
	}
	rec := e.record("o3")
	if len(keys) != 3 || keys[0] != rec.TransactionID+"/pay" || keys[1] != keys[0] || keys[2] != keys[0] {
		t.Fatalf("the retries' idempotency keys: %v; want one key", keys)
	}
	var outcomes []string
	for _, tr := range rec.Tryouts {
		if tr.Step == "pay" {
			outcomes = append(outcomes, fmt.Sprintf("%d:%s", tr.Attempt, tr.Outcome))
		}
	}
	if fmt.Sprint(outcomes) != "[1:retrying 2:retrying 3:succeeded]" || rec.State != saga.StateCompleted {
		t.Fatalf("pay's tryouts %v, state %s", outcomes, rec.State)
	}
	if tr := rec.Tryouts[1]; tr.ErrorType != saga.RetryableType || !strings.Contains(tr.Error, "503 Service Unavailable: busy, try later") {
		t.Fatalf("a retried tryout: %+v", tr)
	}
}

func yamlParallel(t *testing.T, e *yamlEnv) {
	out, err := e.run("fanout", "o4")
	if err != nil {
		t.Fatal(err)
	}
	calls := e.shop.calls("o4")
	if len(calls) != 4 || calls[0] != "POST /reservations" || calls[3] != "POST /shipments" ||
		fmt.Sprint(slices.Sorted(slices.Values(calls[1:3]))) != "[POST /notifications POST /payments]" {
		t.Fatalf("calls %v", calls)
	}
	// A text answer is kept as text; a later step reads it.
	if string(out.Steps["notify"].Body) != `"queued"` || e.shop.of("o4")[3].Body != `{"notified":"queued","order":"o4"}` {
		t.Fatalf("notify's answer %s; ship's body %s", out.Steps["notify"].Body, e.shop.of("o4")[3].Body)
	}
	if n := e.shop.of("o4"); n[slices.IndexFunc(n, func(c shopCall) bool { return c.Path == "/notifications" })].Body != "reserved res-o4" {
		t.Fatalf("notify's body: %+v", n)
	}
	rec := e.record("o4")
	if rec.Steps[0].Group != 0 || rec.Steps[1].Group != 1 || rec.Steps[2].Group != 1 || rec.Steps[3].Group != 0 {
		t.Fatalf("groups: %+v", rec.Steps)
	}

	// One of the group fails for good: the other is undone, then the step
	// before the group.
	e.shop.set(e.shop.refuse, "/notifications", http.StatusBadRequest)
	defer e.shop.set(e.shop.refuse, "/notifications", 0)
	if _, err := e.run("fanout", "o5"); err == nil || !strings.Contains(err.Error(), "step notify failed (compensated)") {
		t.Fatalf("got %v", err)
	}
	calls = e.shop.calls("o5")
	if len(calls) != 5 || calls[0] != "POST /reservations" || calls[3] != "POST /payments/pay-o5/refund" || calls[4] != "DELETE /reservations/res-o5" {
		t.Fatalf("calls %v", calls)
	}
	if rec := e.record("o5"); phases(rec) != "reserve:completed/completed pay:completed/completed notify:failed/none" {
		t.Fatalf("record: %s", phases(rec))
	}
}

func yamlUnrendered(t *testing.T, e *yamlEnv) {
	// The second call reads a field the first answer lacks: the saga fails
	// like the workflow's own error, and the first step is undone; its
	// compensation reads a field the answer lacks too, so it cannot be
	// made: the saga waits for an operator.
	started, err := e.catalog.Run(e.ctx, "broken", 0, e.input("o6"), "o6")
	if err != nil {
		t.Fatal(err)
	}
	var rec *saga.Record
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rec = e.record("o6")
		if rec.State == saga.StateCompensationFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not compensation_failed: %s, %s", rec.State, phases(rec))
		}
	}
	if phases(rec) != "reserve:completed/failed" || !strings.Contains(rec.Steps[0].Compensation.Error, "${result.body.number}: result.body has no field \"number\"") {
		t.Fatalf("record: %s %+v", phases(rec), rec.Steps[0].Compensation)
	}
	if err := e.client.Resolve(e.ctx, "o6", saga.Operator{Action: saga.ActionDone, Step: "reserve", Note: "released by hand"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.result("o6", started.RunID)
	if err == nil || !strings.Contains(err.Error(), "saga broken: failed (compensated): step ship: url: ${steps.reserve.body.number}: steps.reserve.body has no field \"number\"") {
		t.Fatalf("got %v", err)
	}
	if got := e.shop.calls("o6"); fmt.Sprint(got) != "[POST /reservations]" {
		t.Fatalf("calls %v", got)
	}
	if rec := e.record("o6"); rec.State != saga.StateCompensated || phases(rec) != "reserve:completed/done" {
		t.Fatalf("record: %s, %s", rec.State, phases(rec))
	}
}

func yamlRefused(t *testing.T, e *yamlEnv) {
	// A bad definition stores nothing.
	bad := strings.Replace(orderSaga, "${steps.reserve.body.id}", "${steps.ship.body.id}", 1)
	_, err := e.catalog.Apply(e.ctx, []byte(bad))
	var de *saga.DefinitionError
	if !errors.As(err, &de) || !errors.Is(err, api.ErrInvalidArgument) || !strings.Contains(err.Error(), "line 21, column 58: steps[1].call.body: ${steps.ship.body.id}: step \"ship\" runs after \"pay\"") {
		t.Fatalf("apply a bad definition: %v", err)
	}
	if _, err := e.catalog.Apply(e.ctx, []byte(strings.Replace(bad, "name: order", "name: other", 1))); err == nil {
		t.Fatal("a bad definition was applied")
	}
	list, err := e.catalog.Definitions(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list {
		names = append(names, fmt.Sprintf("%s:%d:%d", s.Name, s.Version, s.Steps))
	}
	if fmt.Sprint(names) != "[broken:1:2 fanout:1:4 order:1:3]" {
		t.Fatalf("definitions %v", names)
	}
	// The same text again stores nothing; a change is version 2, and a
	// run may pin version 1.
	if a, err := e.catalog.Apply(e.ctx, []byte(orderSaga)); err != nil || a.Changed || a.Version != 1 {
		t.Fatalf("apply again: %+v, %v", a, err)
	}
	v2 := strings.Replace(orderSaga, "description: reserve, pay, ship", "description: version two", 1)
	if a, err := e.catalog.Apply(e.ctx, []byte(v2)); err != nil || !a.Changed || a.Version != 2 {
		t.Fatalf("apply a change: %+v, %v", a, err)
	}
	if d, err := e.catalog.Definition(e.ctx, "order", 0); err != nil || d.Version != 2 || d.Definition.Description != "version two" {
		t.Fatalf("the latest: %+v, %v", d, err)
	}
	started, err := e.catalog.Run(e.ctx, "order", 1, e.input("o7"), "o7")
	if err != nil || started.Version != 1 {
		t.Fatalf("run version 1: %+v, %v", started, err)
	}
	if out, err := e.result("o7", started.RunID); err != nil || out.Version != 1 {
		t.Fatalf("version 1 ran: %+v, %v", out, err)
	}

	// Bad input starts nothing.
	for _, tc := range []struct {
		name, input string
		version     int32
		want        error
		msg         string
	}{
		{"order", `{"order": `, 0, api.ErrInvalidArgument, "input: not JSON"},
		{"order", `{"order": "o8", "shop": "http://x.local"}`, 0, api.ErrInvalidArgument, `step pay's call reads ${input.token}: input has no field "token"`},
		{"order", `[1, 2]`, 0, api.ErrInvalidArgument, `input is a list of 2: no element "order"`},
		{"nowhere", `{}`, 0, api.ErrNotFound, "no saga definition nowhere"},
		{"order", `{}`, 9, api.ErrNotFound, "no saga definition order version 9"},
		{"no good", `{}`, 0, api.ErrInvalidArgument, "is not a saga name"},
	} {
		_, err := e.catalog.Run(e.ctx, tc.name, tc.version, json.RawMessage(tc.input), "o8")
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("run %s %s: got %v; want %v with %q", tc.name, tc.input, err, tc.want, tc.msg)
		}
	}
	if _, err := e.eng.DescribeWorkflow(e.ctx, api.RunRef{WorkflowID: "o8"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a refused run was started: %v", err)
	}
}
