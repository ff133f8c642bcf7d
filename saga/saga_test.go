package saga_test

import (
	"context"
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
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// service is a real local HTTP service the steps call: it logs each call
// with its idempotency key, and fails the paths it is told to.
type service struct {
	*httptest.Server
	mu     sync.Mutex
	log    []string
	busy   map[string]int  // path -> 503s still to answer
	broken map[string]bool // path -> 422 (a final failure) or, for an undo, 500
}

func newService(t *testing.T) *service {
	s := &service{busy: map[string]int{}, broken: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		s.log = append(s.log, fmt.Sprintf("%s %s %s", r.URL.Path, body, r.Header.Get("Idempotency-Key")))
		switch {
		case s.busy[r.URL.Path] > 0:
			s.busy[r.URL.Path]--
			http.Error(w, "busy, try later", http.StatusServiceUnavailable)
		case s.broken[r.URL.Path] && strings.HasPrefix(r.URL.Path, "/undo-"):
			http.Error(w, "cannot undo now", http.StatusInternalServerError)
		case s.broken[r.URL.Path]:
			http.Error(w, "refused", http.StatusUnprocessableEntity)
		default:
			fmt.Fprintf(w, "%s-%s", strings.TrimPrefix(r.URL.Path, "/"), body)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// calls returns the paths called for an order, in order.
func (s *service) calls(order string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.log {
		if f := strings.Fields(l); len(f) >= 2 && f[1] == order {
			out = append(out, f[0])
		}
	}
	return out
}

// keys returns the idempotency keys path got for an order.
func (s *service) keys(path, order string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.log {
		if f := strings.Fields(l); len(f) == 3 && f[0] == path && f[1] == order {
			out = append(out, f[2])
		}
	}
	return out
}

// call is a step that posts the order to the service's path: 503 is
// retryable, any other failure final.
func (s *service) call(path string) func(context.Context, string) (string, error) {
	return func(ctx context.Context, order string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+path, strings.NewReader(order))
		req.Header.Set("Idempotency-Key", stepKey(ctx))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", saga.Retryable(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		switch {
		case resp.StatusCode == http.StatusServiceUnavailable:
			return "", saga.Retryable(fmt.Errorf("%s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(b))))
		case resp.StatusCode >= 300:
			return "", fmt.Errorf("%s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(b)))
		}
		return string(b), nil
	}
}

// undo is a compensation: it gets the forward step's result ("reserve-o1")
// and posts the order to /undo-NAME.
func (s *service) undo(name string) func(context.Context, string) (string, error) {
	call := s.call("/undo-" + name)
	return func(ctx context.Context, result string) (string, error) {
		return call(ctx, strings.TrimPrefix(result, name+"-"))
	}
}

// Plan is a saga the test workflow runs: steps in order; a step with
// commas is a parallel group.
type Plan struct {
	Order string   `json:"order"`
	Steps []string `json:"steps"`
}

var stepNames = []string{"reserve", "charge", "book", "ship", "notify"}

// Order runs a plan as a saga.
func Order(ctx workflow.Context, p Plan) (string, error) {
	s := saga.New(ctx, saga.Options{Name: "order",
		Retry:        saga.RetryPolicy{Backoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Deadline: time.Minute},
		Compensation: saga.RetryPolicy{Backoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Attempts: 3}})
	var last string
	for _, st := range p.Steps {
		if strings.Contains(st, ",") {
			s.Parallel(func(g *saga.Group) {
				for _, name := range strings.Split(st, ",") {
					g.Step(name, name, p.Order).Compensate("undo-" + name)
				}
			})
		} else {
			_ = s.Step(st, st, p.Order).Compensate("undo-" + st).Get(&last)
		}
		if s.Err() != nil {
			break
		}
	}
	return last, s.End(nil)
}

type env struct {
	t      *testing.T
	ctx    context.Context
	eng    *engine.Engine
	svc    *service
	client *saga.Client
}

func newEnv(t *testing.T, st store.Store) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	eng, err := engine.Open(ctx, st, engine.Options{Logger: testenv.Logger(), WorkflowTaskTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	svc := newService(t)
	w := worker.New(eng, worker.Options{Logger: testenv.Logger()})
	worker.RegisterWorkflow(w, Order)
	for _, n := range stepNames {
		worker.RegisterStepNamed(w, n, svc.call("/"+n))
		worker.RegisterStepNamed(w, "undo-"+n, svc.undo(n))
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return &env{t: t, ctx: ctx, eng: eng, svc: svc, client: saga.NewClient(eng, "")}
}

// run starts a plan and returns its run's outcome.
func (e *env) run(p Plan) (string, error) {
	r, err := saga.Start(e.ctx, e.client, Order, p, saga.StartOptions{ID: p.Order})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Get(e.ctx)
}

func (e *env) record(id string) *saga.Record {
	e.t.Helper()
	rec, err := e.client.Get(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// phases says each step's forward and compensation states.
func phases(rec *saga.Record) string {
	var parts []string
	for _, s := range rec.Steps {
		parts = append(parts, fmt.Sprintf("%s:%s/%s", s.Name, s.Forward.State, s.Compensation.State))
	}
	return strings.Join(parts, " ")
}

func TestSagas(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		t.Run("all steps succeed", func(t *testing.T) { e.t = t; allSucceed(t, e) })
		t.Run("a failure compensates in reverse", func(t *testing.T) { e.t = t; compensates(t, e) })
		t.Run("a retryable failure is retried later", func(t *testing.T) { e.t = t; retriedLater(t, e) })
		t.Run("a failed compensation waits for an operator", func(t *testing.T) { e.t = t; compensationFailed(t, e) })
		t.Run("parallel groups", func(t *testing.T) { e.t = t; parallel(t, e) })
		t.Run("bad steps", func(t *testing.T) { e.t = t; badSteps(t, e) })
		t.Run("an id runs once", func(t *testing.T) { e.t = t; idRunsOnce(t, e) })
		t.Run("a step lost with its worker runs again in seconds", func(t *testing.T) { e.t = t; lostWorker(t, e) })
	})
}

func allSucceed(t *testing.T, e *env) {
	out, err := e.run(Plan{Order: "o1", Steps: []string{"reserve", "charge", "book"}})
	if err != nil || out != "book-o1" {
		t.Fatalf("got %q, %v", out, err)
	}
	if got := e.svc.calls("o1"); fmt.Sprint(got) != "[/reserve /charge /book]" {
		t.Fatalf("calls %v", got)
	}
	rec := e.record("o1")
	if rec.State != saga.StateCompleted || rec.Name != "order" || phases(rec) != "reserve:completed/none charge:completed/none book:completed/none" {
		t.Fatalf("record: %s, %s", rec.State, phases(rec))
	}
	if len(rec.Tryouts) != 3 || rec.Tryouts[0].Outcome != saga.OutcomeSucceeded || string(rec.Tryouts[0].Answer.Data) != `"reserve-o1"` ||
		rec.Tryouts[0].Started.IsZero() || rec.Tryouts[0].Ended.Before(rec.Tryouts[0].Started) {
		t.Fatalf("tryouts: %+v", rec.Tryouts)
	}
	// The worker heartbeats for each step: one that dies is noticed in
	// seconds, not at the start-to-close (10 minutes).
	evs, err := client.New(e.eng, client.Options{}).AllHistory(e.ctx, "o1", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == api.EventStepScheduled && (ev.Step == nil || ev.Step.Heartbeat != saga.DefaultLostWorker || !ev.Step.AutoHeartbeat) {
			t.Fatalf("step %s scheduled with %+v; want a heartbeat of %s the worker beats for", ev.Name, ev.Step, saga.DefaultLostWorker)
		}
	}
	// Each step's key: the transaction (the saga's id) and the step.
	if k := e.svc.keys("/charge", "o1"); len(k) != 1 || k[0] != "o1/charge" || rec.TransactionID != "o1" {
		t.Fatalf("charge's key %v, the transaction %s; want o1/charge, o1", k, rec.TransactionID)
	}
}

// idRunsOnce: a saga's id sent again is refused, saying the saga's state
// and how to run it again, and calls nothing; run again on purpose, it is
// a new transaction whose keys are ID/2/STEP.
func idRunsOnce(t *testing.T, e *env) {
	for _, tc := range []struct {
		id    string
		reuse saga.Reuse
		state saga.State
		hint  string
	}{
		{"o1", "", saga.StateCompleted, "--id-reuse always"},
		{"o1", saga.ReuseFailed, saga.StateCompleted, "--id-reuse always"},
		{"o2", saga.ReuseNever, saga.StateCompensated, "--id-reuse failed"},
	} {
		before := fmt.Sprint(e.svc.calls(tc.id))
		_, err := saga.Start(e.ctx, e.client, Order, Plan{Order: tc.id, Steps: []string{"reserve", "charge", "book"}}, saga.StartOptions{ID: tc.id, Reuse: tc.reuse})
		var ran *saga.AlreadyRanError
		if !errors.As(err, &ran) || !errors.Is(err, api.ErrAlreadyStarted) || ran.State != tc.state ||
			!strings.Contains(err.Error(), fmt.Sprintf("saga %s (order) ran already and is %s", tc.id, tc.state)) || !strings.Contains(err.Error(), tc.hint) {
			t.Fatalf("%s sent again (reuse %q): %v; want it refused, %s, with %q", tc.id, tc.reuse, err, tc.state, tc.hint)
		}
		if after := fmt.Sprint(e.svc.calls(tc.id)); after != before {
			t.Fatalf("%s refused, yet called: %s, then %s", tc.id, before, after)
		}
	}
	r, err := saga.Start(e.ctx, e.client, Order, Plan{Order: "o1", Steps: []string{"reserve", "charge"}}, saga.StartOptions{ID: "o1", Reuse: saga.ReuseAlways})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := r.Get(e.ctx); err != nil || out != "charge-o1" {
		t.Fatalf("o1 run again: %q, %v", out, err)
	}
	if k := e.svc.keys("/charge", "o1"); fmt.Sprint(k) != "[o1/charge o1/2/charge]" {
		t.Fatalf("charge's keys %v; want o1/charge, then o1/2/charge", k)
	}
	if rec := e.record("o1"); rec.TransactionID != "o1/2" || rec.State != saga.StateCompleted {
		t.Fatalf("o1 run again: transaction %s, %s", rec.TransactionID, rec.State)
	}
	if _, err := saga.Start(e.ctx, e.client, Order, Plan{Order: "o7"}, saga.StartOptions{ID: "o7", Reuse: "twice"}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("a bad reuse policy: %v", err)
	}
}

func compensates(t *testing.T, e *env) {
	e.svc.mu.Lock()
	e.svc.broken["/book"] = true
	e.svc.mu.Unlock()
	defer func() { e.svc.mu.Lock(); delete(e.svc.broken, "/book"); e.svc.mu.Unlock() }()
	_, err := e.run(Plan{Order: "o2", Steps: []string{"reserve", "charge", "book", "ship"}})
	var ae *api.ApplicationError
	if err == nil || !strings.Contains(err.Error(), "saga order: step book failed (compensated)") || !errors.As(err, &ae) {
		t.Fatalf("got %v", err)
	}
	// The run's failure says which saga step failed and why, in the
	// saga's words: no engine step name, no Go type name.
	if want := "saga order: step book failed (compensated): /book: 422 refused"; ae.Message != want || ae.Type != saga.ErrorFailed {
		t.Errorf("the run's failure %q of type %q; want %q of type %s", ae.Message, ae.Type, want, saga.ErrorFailed)
	}
	if got := e.svc.calls("o2"); fmt.Sprint(got) != "[/reserve /charge /book /undo-charge /undo-reserve]" {
		t.Fatalf("calls %v: want the third step's failure, then the first two undone in reverse", got)
	}
	rec := e.record("o2")
	if rec.State != saga.StateCompensated || phases(rec) != "reserve:completed/completed charge:completed/completed book:failed/none" {
		t.Fatalf("record: %s, %s", rec.State, phases(rec))
	}
	if k := e.svc.keys("/undo-charge", "o2"); len(k) != 1 || k[0] != "o2/charge/compensation" {
		t.Fatalf("undo-charge's key %v", k)
	}
	// Compensations too are kept alive by their worker's heartbeats.
	evs, err := client.New(e.eng, client.Options{}).AllHistory(e.ctx, "o2", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == api.EventStepScheduled && ev.Step.Labels[saga.LabelPhase] == saga.PhaseCompensation &&
			(ev.Step.Heartbeat != saga.DefaultLostWorker || !ev.Step.AutoHeartbeat) {
			t.Fatalf("compensation %s scheduled with %+v", ev.Name, ev.Step)
		}
	}
	book := rec.Tryouts[2]
	if book.Step != "book" || book.Outcome != saga.OutcomeFailed || !strings.Contains(book.Error, "422 refused") || book.Attempt != 1 {
		t.Fatalf("book's tryout: %+v", book)
	}
	// A Go step's plain error (errors.New, fmt.Errorf) has the type
	// "error", not its Go type's name.
	if book.ErrorType != "error" {
		t.Errorf("book's tryout error type %q; want error", book.ErrorType)
	}
}

func retriedLater(t *testing.T, e *env) {
	e.svc.mu.Lock()
	e.svc.busy["/charge"] = 2
	e.svc.mu.Unlock()
	out, err := e.run(Plan{Order: "o3", Steps: []string{"reserve", "charge"}})
	if err != nil || out != "charge-o3" {
		t.Fatalf("got %q, %v", out, err)
	}
	if got := e.svc.calls("o3"); fmt.Sprint(got) != "[/reserve /charge /charge /charge]" {
		t.Fatalf("calls %v", got)
	}
	keys := e.svc.keys("/charge", "o3")
	if len(keys) != 3 || keys[0] != keys[1] || keys[1] != keys[2] {
		t.Fatalf("the retries' idempotency keys: %v; want one key", keys)
	}
	rec := e.record("o3")
	var outcomes []string
	for _, tr := range rec.Tryouts {
		if tr.Step == "charge" {
			outcomes = append(outcomes, fmt.Sprintf("%d:%s", tr.Attempt, tr.Outcome))
			if tr.Key != keys[0] {
				t.Errorf("tryout key %s, service saw %s", tr.Key, keys[0])
			}
		}
	}
	if fmt.Sprint(outcomes) != "[1:retrying 2:retrying 3:succeeded]" || rec.State != saga.StateCompleted {
		t.Fatalf("charge's tryouts %v, state %s", outcomes, rec.State)
	}
	if tr := rec.Tryouts[1]; tr.ErrorType != saga.RetryableType || !strings.Contains(tr.Error, "busy, try later") {
		t.Fatalf("a retried tryout: %+v", tr)
	}
}

func compensationFailed(t *testing.T, e *env) {
	e.svc.mu.Lock()
	e.svc.broken["/ship"] = true
	e.svc.broken["/undo-book"] = true
	e.svc.mu.Unlock()
	r, err := client.Start(e.ctx, client.New(e.eng, client.Options{}), Order, Plan{Order: "o4", Steps: []string{"reserve", "book", "ship"}}, client.StartOptions{ID: "o4"})
	if err != nil {
		t.Fatal(err)
	}
	var rec *saga.Record
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rec = e.record("o4")
		if rec.State == saga.StateCompensationFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not compensation_failed: %s, %s", rec.State, phases(rec))
		}
	}
	if phases(rec) != "reserve:completed/none book:completed/failed ship:failed/none" {
		t.Fatalf("record: %s", phases(rec))
	}
	// Refused: no such step; a step whose compensation did not fail.
	if err := e.client.Resolve(e.ctx, "o4", saga.Operator{Action: saga.ActionRetry, Step: "nowhere"}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("resolve an unknown step: %v", err)
	}
	if err := e.client.Resolve(e.ctx, "o4", saga.Operator{Action: saga.ActionSkip, Step: "reserve"}); !errors.Is(err, api.ErrFailedPrecondition) {
		t.Fatalf("resolve a step not failed: %v", err)
	}
	if err := e.client.Resolve(e.ctx, "o4", saga.Operator{Action: "undo", Step: "book"}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("resolve with a bad action: %v", err)
	}
	// The service is fixed; an operator retries the compensation.
	e.svc.mu.Lock()
	delete(e.svc.broken, "/undo-book")
	delete(e.svc.broken, "/ship")
	e.svc.mu.Unlock()
	if err := e.client.Resolve(e.ctx, "o4", saga.Operator{Action: saga.ActionRetry, Step: "book", Note: "stock service redeployed", Identity: "ops"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(e.ctx); err == nil || !strings.Contains(err.Error(), "(compensated)") {
		t.Fatalf("got %v", err)
	}
	rec = e.record("o4")
	if rec.State != saga.StateCompensated || phases(rec) != "reserve:completed/completed book:completed/completed ship:failed/none" {
		t.Fatalf("record: %s, %s", rec.State, phases(rec))
	}
	if len(rec.Operators) != 1 || rec.Operators[0].Identity != "ops" || rec.Operators[0].Note != "stock service redeployed" {
		t.Fatalf("operators: %+v", rec.Operators)
	}
	if got := e.svc.calls("o4"); fmt.Sprint(got) != "[/reserve /book /ship /undo-book /undo-book /undo-book /undo-book /undo-reserve]" {
		t.Fatalf("calls %v: want three failed undos, the operator's retry, then reserve undone", got)
	}
	// Listed by state.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		page, err := e.client.List(e.ctx, saga.Filter{Name: "order", State: saga.StateCompensated}, 100, nil)
		var ids []string
		for _, r := range page.Runs {
			ids = append(ids, r.WorkflowID)
		}
		slices.Sort(ids)
		if err == nil && fmt.Sprint(ids) == "[o2 o4]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("compensated sagas listed: %v, %v", ids, err)
		}
	}
}

func parallel(t *testing.T, e *env) {
	e.svc.mu.Lock()
	e.svc.broken["/ship"] = true
	e.svc.mu.Unlock()
	defer func() { e.svc.mu.Lock(); delete(e.svc.broken, "/ship"); e.svc.mu.Unlock() }()
	_, err := e.run(Plan{Order: "o5", Steps: []string{"reserve", "charge,book,ship", "notify"}})
	if err == nil || !strings.Contains(err.Error(), "step ship failed (compensated)") {
		t.Fatalf("got %v", err)
	}
	calls := e.svc.calls("o5")
	// The group ran together (any order), then its completed steps were
	// undone together, then reserve.
	if len(calls) != 7 || calls[0] != "/reserve" || calls[6] != "/undo-reserve" {
		t.Fatalf("calls %v", calls)
	}
	group, undo := slices.Sorted(slices.Values(calls[1:4])), slices.Sorted(slices.Values(calls[4:6]))
	if fmt.Sprint(group) != "[/book /charge /ship]" || fmt.Sprint(undo) != "[/undo-book /undo-charge]" {
		t.Fatalf("calls %v", calls)
	}
	rec := e.record("o5")
	if phases(rec) != "reserve:completed/completed charge:completed/completed book:completed/completed ship:failed/none" ||
		rec.Steps[1].Group != 1 || rec.Steps[0].Group != 0 {
		t.Fatalf("record: %s %+v", phases(rec), rec.Steps)
	}
}

// BadSteps runs a saga whose second step repeats the first's name.
func BadSteps(ctx workflow.Context, _ string) (string, error) {
	s := saga.New(ctx, saga.Options{})
	s.Step("reserve", "reserve", "o6").Compensate("undo-reserve")
	s.Step("reserve", "charge", "o6")
	return "", s.End(nil)
}

func badSteps(t *testing.T, e *env) {
	w := worker.New(e.eng, worker.Options{Logger: testenv.Logger(), Queue: "bad"})
	worker.RegisterWorkflow(w, BadSteps)
	for _, n := range stepNames {
		worker.RegisterStepNamed(w, n, e.svc.call("/"+n))
		worker.RegisterStepNamed(w, "undo-"+n, e.svc.undo(n))
	}
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	r, err := client.Start(e.ctx, client.New(e.eng, client.Options{}), BadSteps, "", client.StartOptions{ID: "o6", Queue: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(e.ctx); err == nil || !strings.Contains(err.Error(), `a step "reserve" already`) {
		t.Fatalf("got %v", err)
	}
	if got := e.svc.calls("o6"); fmt.Sprint(got) != "[/reserve /undo-reserve]" {
		t.Fatalf("calls %v", got)
	}
}

// stepKey is the idempotency key a step got.
func stepKey(ctx context.Context) string { return step.GetInfo(ctx).IdempotencyKey }

// Lost runs one step, hang, on its own queue, where a worker dies
// running it.
func Lost(ctx workflow.Context, order string) (string, error) {
	s := saga.New(ctx, saga.Options{Name: "lost", LostWorker: time.Second})
	var out string
	err := s.Step("hang", "hang", order).Get(&out)
	return out, s.End(err)
}

// lostWorker: the worker running a step stops dead (its function never
// returns, nothing is reported); another worker runs the step again once
// the heartbeat the dead one no longer sends is missed, with the same
// key, and the saga completes.
func lostWorker(t *testing.T, e *env) {
	started := make(chan step.Info, 4)
	release, finish := make(chan struct{}), make(chan struct{})
	defer close(release)
	var finishOnce sync.Once
	defer finishOnce.Do(func() { close(finish) })
	hang := func(ctx context.Context, order string) (string, error) {
		info := step.GetInfo(ctx)
		select {
		case started <- info:
		default: // more attempts than the test reads: it fails on them
		}
		if info.Attempt == 1 {
			<-release // the first worker is dead: no answer, no heartbeat of the step's own
			return "", ctx.Err()
		}
		// A live worker keeps a long step alive: it heartbeats for it.
		select {
		case <-finish:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "hung-" + order, nil
	}
	newWorker := func() *worker.Worker {
		w := worker.New(e.eng, worker.Options{Logger: testenv.Logger(), Queue: "lost"})
		worker.RegisterWorkflow(w, Lost)
		worker.RegisterStepNamed(w, "hang", hang)
		if err := w.Start(e.ctx); err != nil {
			t.Fatal(err)
		}
		return w
	}
	first := newWorker()
	r, err := saga.Start(e.ctx, e.client, Lost, "o8", saga.StartOptions{ID: "o8", Queue: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	var info step.Info
	select {
	case info = <-started:
	case <-e.ctx.Done():
		t.Fatal("the step never started")
	}
	// Stopped without waiting: the step's context ends, its function goes
	// on and never answers.
	dead, cancel := context.WithCancel(e.ctx)
	cancel()
	_ = first.Stop(dead)
	second := newWorker()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		second.Stop(ctx)
	}()
	ctx, cancelWait := context.WithTimeout(e.ctx, 30*time.Second) // far below the step's 10 minutes
	defer cancelWait()
	// The second attempt runs past twice the heartbeat timeout, kept
	// alive by its worker's heartbeats, before it is let finish.
	for {
		d, err := e.eng.DescribeWorkflow(ctx, api.RunRef{WorkflowID: "o8"})
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(d.Steps, func(s api.PendingStep) bool { return s.Attempt == 2 }); i >= 0 && d.Steps[i].LastHeartbeat.Sub(d.Steps[i].StartedTime) > 2*time.Second {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the second attempt was not kept alive past 2s: %+v", d.Steps)
		case <-time.After(50 * time.Millisecond):
		}
	}
	finishOnce.Do(func() { close(finish) })
	out, err := r.Get(ctx)
	if err != nil || out != "hung-o8" {
		t.Fatalf("got %q, %v; want the step run again on the second worker", out, err)
	}
	again := <-started
	if again.Attempt != 2 || again.IdempotencyKey != info.IdempotencyKey || again.IdempotencyKey != "o8/hang" {
		t.Fatalf("the second attempt: %+v; the first's key %s", again, info.IdempotencyKey)
	}
	rec := e.record("o8")
	var tries []string
	for _, tr := range rec.Tryouts {
		tries = append(tries, fmt.Sprintf("%d:%s:%s", tr.Attempt, tr.Outcome, tr.Error))
	}
	if rec.State != saga.StateCompleted || len(rec.Tryouts) != 2 || rec.Tryouts[0].Outcome != saga.OutcomeRetrying ||
		!strings.Contains(rec.Tryouts[0].Error, "heartbeat") || rec.Tryouts[1].Outcome != saga.OutcomeSucceeded {
		t.Fatalf("record %s, tryouts %v", rec.State, tries)
	}
}
