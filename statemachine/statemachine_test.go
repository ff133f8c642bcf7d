package statemachine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	sm "github.com/strandhq/strand/statemachine"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
)

// creditApplication is nFlow's example process: an application is
// created, decided by a person, then granted (or rejected) and finished.
func creditApplication() *sm.Definition {
	return sm.Define("creditApplication", "Credit application process").
		Start("createCreditApplication", "Credit application is persisted", func(ctx sm.Context) (sm.Next, error) {
			ctx.SetVar("applicationId", "app-"+ctx.BusinessKey())
			return sm.MoveTo("acceptCreditApplication", "application created"), nil
		}).
		Manual("acceptCreditApplication", "Manual credit decision").
		Normal("grantLoan", "Loan is created in the loan system", func(ctx sm.Context) (sm.Next, error) {
			amount, _, err := sm.GetVar[int](ctx, "amount")
			if err != nil {
				return sm.Next{}, err
			}
			ctx.SetVar("loanId", fmt.Sprintf("loan-%d", amount))
			return sm.MoveTo("finishCreditApplication", "loan granted"), nil
		}).
		Normal("reject", "The application is rejected", func(ctx sm.Context) (sm.Next, error) {
			ctx.SetVar("decision", "rejected")
			return sm.MoveTo("finishCreditApplication", "rejected"), nil
		}).
		Normal("finishCreditApplication", "Credit application status is set", func(ctx sm.Context) (sm.Next, error) {
			return sm.MoveTo("done", "finished"), nil
		}).
		End("done", "Credit application process finished").
		Error("error", "Manual processing of failed applications").
		Permit("createCreditApplication", "acceptCreditApplication").
		Permit("acceptCreditApplication", "grantLoan").
		Permit("acceptCreditApplication", "reject").
		Permit("grantLoan", "finishCreditApplication").
		Permit("reject", "finishCreditApplication").
		Permit("finishCreditApplication", "done")
}

// trials exercises retries, refused moves, waiting and children.
func trials() *sm.Definition {
	return sm.Define("trials", "Retries, waits and children").
		Start("begin", "routes by the variable route", func(ctx sm.Context) (sm.Next, error) {
			route, _ := ctx.Var("route")
			return sm.MoveTo(route, "routed"), nil
		}).
		Normal("flaky", "always fails", func(ctx sm.Context) (sm.Next, error) {
			return sm.Next{}, errors.New("the bank is down")
		}).
		Normal("rogue", "moves where it may not", func(ctx sm.Context) (sm.Next, error) {
			return sm.MoveTo("done", "skipping ahead"), nil
		}).
		Wait("awaitPayment", "waits for the payment signal, polling three times", func(ctx sm.Context) (sm.Next, error) {
			if s, ok := ctx.Signal(); ok && s == 1 {
				return sm.MoveTo("done", "paid"), nil
			}
			polls, _, _ := sm.GetVar[int](ctx, "polls")
			if polls >= 2 {
				return sm.MoveTo("unpaid", "no payment after three polls"), nil
			}
			_ = sm.PutVar(ctx, "polls", polls+1)
			return sm.RetryAfter(200*time.Millisecond, "not paid yet"), nil
		}).
		Normal("spawn", "starts two children", func(ctx sm.Context) (sm.Next, error) {
			for i := range 2 {
				ctx.StartChild(sm.NewChild{Type: "trials", Vars: map[string]string{"route": "finish"}, BusinessKey: fmt.Sprintf("child-%d", i)})
			}
			return sm.MoveTo("awaitChildren", "children started"), nil
		}).
		Wait("awaitChildren", "waits for the children to finish", func(ctx sm.Context) (sm.Next, error) {
			children, err := ctx.Children()
			if err != nil {
				return sm.Next{}, err
			}
			for _, c := range children {
				if c.Status != sm.StatusFinished {
					return sm.StopInState("waiting for " + c.ID), nil
				}
			}
			return sm.MoveTo("done", fmt.Sprintf("%d children finished", len(children))), nil
		}).
		Normal("finish", "a child's work", func(ctx sm.Context) (sm.Next, error) {
			return sm.MoveTo("done", "child done"), nil
		}).
		End("done", "done").
		End("unpaid", "gave up").
		Error("error", "failed").
		Permit("begin", "flaky").Permit("begin", "rogue").Permit("begin", "awaitPayment").Permit("begin", "spawn").Permit("begin", "finish").
		Permit("awaitPayment", "done").Permit("awaitPayment", "unpaid").
		Permit("spawn", "awaitChildren").Permit("awaitChildren", "done").Permit("finish", "done").
		Retry("flaky", 2, 50*time.Millisecond, time.Second).
		Retry("rogue", 1, 50*time.Millisecond, time.Second)
}

type env struct {
	t      *testing.T
	ctx    context.Context
	eng    *engine.Engine
	client *sm.Client
}

func newEnv(t *testing.T, st store.Store, defs ...*sm.Definition) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	eng, err := engine.Open(ctx, st, engine.Options{Logger: testenv.Logger(), WorkflowTaskTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	w := worker.New(eng, worker.Options{Logger: testenv.Logger()})
	if err := sm.Register(ctx, w, eng, defs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return &env{t: t, ctx: ctx, eng: eng, client: sm.NewClient(eng, "")}
}

// waitFor polls an instance until cond holds.
func (e *env) waitFor(id, what string, cond func(*sm.Instance) bool) *sm.Instance {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		inst, err := e.client.Get(e.ctx, id)
		if err == nil && cond(inst) {
			return inst
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: timed out waiting for %s: %+v, %v", id, what, inst, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func finished(i *sm.Instance) bool { return i.Status == sm.StatusFinished }

func actions(inst *sm.Instance) string {
	var parts []string
	for _, a := range inst.Actions {
		parts = append(parts, fmt.Sprintf("%s:%s", a.Type, a.State))
	}
	return strings.Join(parts, " ")
}

func TestStateMachines(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st, creditApplication(), trials(), versionedV1())
		t.Run("credit application", func(t *testing.T) { e.t = t; creditFlow(t, e) })
		t.Run("retries until the error state", func(t *testing.T) { e.t = t; retriesToError(t, e) })
		t.Run("wait states", func(t *testing.T) { e.t = t; waitStates(t, e) })
		t.Run("children", func(t *testing.T) { e.t = t; children(t, e) })
		t.Run("bad input", func(t *testing.T) { e.t = t; badInput(t, e) })
		t.Run("versions", func(t *testing.T) { e.t = t; versions(t, e) })
		t.Run("statistics", func(t *testing.T) { e.t = t; statistics(t, e) })
	})
}

// statistics: counts per state and status, and of those waiting, the ones
// whose next activation has come (queued). A worker running one state
// method at a time holds one instance in its method; the next waits for
// the worker; a third waits for its activation an hour away.
func statistics(t *testing.T, e *env) {
	release := make(chan struct{})
	held := sm.Define("held", "one state that runs until released").
		Start("hold", "", func(ctx sm.Context) (sm.Next, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return sm.Next{}, ctx.Err()
			}
			return sm.MoveTo("done", "released"), nil
		}).
		End("done", "").
		Permit("hold", "done")
	w := worker.New(e.eng, worker.Options{Logger: testenv.Logger(), Queue: "one-at-a-time", MaxConcurrentSteps: 1})
	if err := sm.Register(e.ctx, w, e.eng, held); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	var ids []string
	for _, at := range []time.Time{{}, {}, time.Now().Add(time.Hour)} {
		id, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "held", ExecutorGroup: "one-at-a-time", Activation: at})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		stats, err := e.client.Stats(e.ctx, "held")
		if err == nil && fmt.Sprint(stats) == "[{hold created 3 2}]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats: %v, %v; want 3 created in hold, 2 of them queued", stats, err)
		}
	}
	close(release)
	for _, id := range ids[:2] {
		e.waitFor(id, "finished", finished)
	}
	if _, err := e.client.Stats(e.ctx, "nothing-such"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("stats of an unknown type: %v", err)
	}
}

// creditFlow: created, moved on from the manual state by an external
// change, granted and finished; every action's variables read back.
func creditFlow(t *testing.T, e *env) {
	id, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "creditApplication", BusinessKey: "c-1", ExternalID: "c-1",
		Vars: map[string]string{"amount": "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := e.waitFor(id, "the manual state", func(i *sm.Instance) bool { return i.Status == sm.StatusManual })
	if inst.State != "acceptCreditApplication" || inst.Vars["applicationId"] != "app-c-1" || inst.Version != 1 {
		t.Fatalf("in the manual state: %+v", inst)
	}
	// Listed by state once the lists caught up.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		page, err := e.client.List(e.ctx, sm.Filter{Type: "creditApplication", State: "acceptCreditApplication", Status: sm.StatusManual}, 10, nil)
		if err == nil && len(page.Runs) == 1 && page.Runs[0].WorkflowID == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listed in its state: %+v, %v", page, err)
		}
	}
	if err := e.client.Update(e.ctx, id, sm.Update{State: "grantLoan", Vars: map[string]string{"approvedBy": "alice"}, Reason: "approved", Identity: "alice"}); err != nil {
		t.Fatal(err)
	}
	inst = e.waitFor(id, "finished", finished)
	want := "stateExecution:createCreditApplication externalChange:grantLoan stateExecution:grantLoan stateExecution:finishCreditApplication"
	if got := actions(inst); got != want || inst.State != "done" {
		t.Fatalf("actions %s in %s; want %s", got, inst.State, want)
	}
	// Each action's variables, as they were after it.
	if u := inst.Actions[0].Updated; u["applicationId"] != "app-c-1" {
		t.Errorf("action 1 set %+v", u)
	}
	if u := inst.Actions[1].Updated; u["approvedBy"] != "alice" || inst.Actions[1].Executor != "alice" || inst.Actions[1].Text != "approved" {
		t.Errorf("action 2: %+v", inst.Actions[1])
	}
	if u := inst.Actions[2].Updated; u["loanId"] != "loan-1000" {
		t.Errorf("action 3 set %+v", u)
	}
	if inst.Vars["loanId"] != "loan-1000" || inst.Vars["amount"] != "1000" {
		t.Errorf("variables at the end: %+v", inst.Vars)
	}
	after := func(id int) string { return fmt.Sprint(inst.VarsAfter(id)) }
	if got := after(1); got != "map[amount:1000 applicationId:app-c-1]" {
		t.Errorf("after action 1: %s", got)
	}
	if got := after(2); got != "map[amount:1000 applicationId:app-c-1 approvedBy:alice]" {
		t.Errorf("after action 2: %s", got)
	}
	if got := after(4); got != "map[amount:1000 applicationId:app-c-1 approvedBy:alice loanId:loan-1000]" {
		t.Errorf("after action 4: %s", got)
	}
}

func versionedV1() *sm.Definition {
	return sm.Define("versioned", "v1").
		Start("begin", "", func(sm.Context) (sm.Next, error) { return sm.MoveTo("review", ""), nil }).
		Manual("review", "").End("done", "").
		Permit("begin", "review").Permit("review", "done")
}

// versions: a changed definition is a new version; instances keep the one
// they started with.
func versions(t *testing.T, e *env) {
	// The env's worker registered version 1; registering it again stores
	// nothing new.
	if err := sm.Register(e.ctx, worker.New(e.eng, worker.Options{Logger: testenv.Logger()}), e.eng, versionedV1()); err != nil {
		t.Fatal(err)
	}
	if all, err := e.eng.ListDefinitions(e.ctx, sm.DefinitionType("versioned")); err != nil || len(all) != 1 {
		t.Fatalf("versions stored: %d, %v", len(all), err)
	}
	v2 := sm.Define("versioned", "v2 adds an audit").
		Start("begin", "", func(sm.Context) (sm.Next, error) { return sm.MoveTo("review", ""), nil }).
		Manual("review", "").Manual("audit", "").End("done", "").
		Permit("begin", "review").Permit("review", "audit").Permit("audit", "done")
	old, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "versioned"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sm.Register(e.ctx, worker.New(e.eng, worker.Options{Logger: testenv.Logger()}), e.eng, v2); err != nil {
		t.Fatal(err)
	}
	fresh, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "versioned"})
	if err != nil {
		t.Fatal(err)
	}
	a := e.waitFor(old, "review", func(i *sm.Instance) bool { return i.Status == sm.StatusManual })
	b := e.waitFor(fresh, "review", func(i *sm.Instance) bool { return i.Status == sm.StatusManual })
	if a.Version != 1 || b.Version != 2 {
		t.Fatalf("versions %d and %d; want 1 and 2", a.Version, b.Version)
	}
	if err := e.client.Update(e.ctx, old, sm.Update{State: "audit"}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("the old instance moved to a state only version 2 has: %v", err)
	}
	if err := e.client.Update(e.ctx, fresh, sm.Update{State: "audit"}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(fresh, "audit", func(i *sm.Instance) bool { return i.State == "audit" })
}

// retriesToError: a method that keeps failing is retried with back-off,
// then the instance moves to the error state; a move the definition does
// not permit counts as a failure.
func retriesToError(t *testing.T, e *env) {
	id, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "trials", Vars: map[string]string{"route": "flaky"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := e.waitFor(id, "the error state", finished)
	want := "stateExecution:begin stateExecutionFailed:flaky stateExecutionFailed:flaky stateExecutionFailed:flaky"
	if got := actions(inst); got != want || inst.State != "error" {
		t.Fatalf("actions %s in %s; want %s in error", got, inst.State, want)
	}
	for i, a := range inst.Actions[1:] {
		if a.RetryNo != i || !strings.Contains(a.Text, "the bank is down") {
			t.Errorf("failed action %d: %+v", i, a)
		}
		// The failure speaks of the state, the type and the instance, not
		// of the engine's step name and sequence number.
		if want := "state flaky of instance " + id + " failed after 1 attempt: the bank is down"; a.Text != want ||
			strings.Contains(a.Text, "strand.sm") || strings.Contains(a.Text, "#") {
			t.Errorf("failed action %d's text %q; want %q", i, a.Text, want)
		}
	}

	id, err = e.client.Create(e.ctx, sm.CreateRequest{Type: "trials", Vars: map[string]string{"route": "rogue"}})
	if err != nil {
		t.Fatal(err)
	}
	inst = e.waitFor(id, "the error state", finished)
	if got := actions(inst); got != "stateExecution:begin stateExecutionFailed:rogue stateExecutionFailed:rogue" || inst.State != "error" ||
		!strings.Contains(inst.Actions[1].Text, `does not permit a move from "rogue" to "done"`) {
		t.Fatalf("refused move: %s in %s: %+v", got, inst.State, inst.Actions)
	}
}

// waitStates: a wait state's method runs when a signal wakes it, and at
// its next activation time.
func waitStates(t *testing.T, e *env) {
	polled, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "trials", Vars: map[string]string{"route": "awaitPayment"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := e.waitFor(polled, "three polls", finished)
	if inst.State != "unpaid" || inst.Vars["polls"] != "2" {
		t.Fatalf("polled: %s, %+v: %s", inst.State, inst.Vars, actions(inst))
	}

	signaled, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "trials", Vars: map[string]string{"route": "awaitPayment"},
		Activation: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor(signaled, "it to wait", func(i *sm.Instance) bool { return i.Status == sm.StatusCreated || i.Status == sm.StatusInProgress })
	one := 1
	if err := e.client.Signal(e.ctx, signaled, &one, "paid", "test"); err != nil {
		t.Fatal(err)
	}
	inst = e.waitFor(signaled, "the signal's effect", finished)
	if inst.State != "done" {
		t.Fatalf("signaled: %s: %s", inst.State, actions(inst))
	}
}

// children: a state starts child instances and waits until they finish.
func children(t *testing.T, e *env) {
	id, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "trials", Vars: map[string]string{"route": "spawn"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := e.waitFor(id, "finished", finished)
	if inst.State != "done" || len(inst.Children) != 2 {
		t.Fatalf("parent: %s, children %v: %s", inst.State, inst.Children, actions(inst))
	}
	for _, c := range inst.Children {
		child, err := e.client.Get(e.ctx, c)
		if err != nil || child.Parent != id || child.Root != id || child.State != "done" {
			t.Fatalf("child %s: %+v, %v", c, child, err)
		}
	}
}

// badInput: refused with a clear error, nothing changed.
func badInput(t *testing.T, e *env) {
	_, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "creditApplication", State: "nowhere"})
	if !errors.Is(err, api.ErrInvalidArgument) || !strings.Contains(err.Error(), `no state "nowhere"`) {
		t.Fatalf("unknown state: %v", err)
	}
	if _, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "noSuchType"}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("unknown type: %v", err)
	}
	id, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "creditApplication", ExternalID: "dup-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "creditApplication", ExternalID: "dup-1"}); !errors.Is(err, api.ErrAlreadyStarted) ||
		!strings.Contains(err.Error(), `external id "dup-1"`) {
		t.Fatalf("duplicate external id: %v", err)
	}
	e.waitFor(id, "the manual state", func(i *sm.Instance) bool { return i.Status == sm.StatusManual })
	if err := e.client.Update(e.ctx, id, sm.Update{State: "nowhere"}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Fatalf("update to an unknown state: %v", err)
	}
	if inst, _ := e.client.Get(e.ctx, id); len(inst.Actions) != 1 || inst.State != "acceptCreditApplication" {
		t.Fatalf("the refused update changed the instance: %s in %s", actions(inst), inst.State)
	}
}
