package statemachine_test

import (
	"context"
	"encoding/json"
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
	w := worker.New(eng, worker.Options{Logger: testenv.Logger(), Identity: "env-worker"})
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
		t.Run("started without a memo", func(t *testing.T) { e.t = t; withoutMemo(t, e) })
		t.Run("a worker without the type's methods", func(t *testing.T) { e.t = t; workerWithoutMethods(t, e) })
	})
}

// workerWithoutMethods: a worker of the executor group that lacks a type's
// state methods is not handed their executions. With only that worker,
// the instance waits (no attempt fails) until a worker with the methods
// starts; with both, the one with the methods runs every execution.
func workerWithoutMethods(t *testing.T, e *env) {
	const group = "picky-group"
	picky := func() *sm.Definition {
		return sm.Define("picky", "runs only where its methods are").
			Start("work", "", func(sm.Context) (sm.Next, error) { return sm.MoveTo("done", "worked"), nil }).
			End("done", "").Error("error", "").
			Permit("work", "done")
	}
	lacking := worker.New(e.eng, worker.Options{Logger: testenv.Logger(), Queue: group, Identity: "lacking"})
	if err := sm.Register(e.ctx, lacking, e.eng); err != nil { // the interpreter, no definition
		t.Fatal(err)
	}
	if err := lacking.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer lacking.Stop(context.Background())
	knowing := worker.New(e.eng, worker.Options{Logger: testenv.Logger(), Queue: group, Identity: "knowing"})
	if err := sm.Register(e.ctx, knowing, e.eng, picky()); err != nil { // stores the definition; not started yet
		t.Fatal(err)
	}
	first, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "picky", ExecutorGroup: group})
	if err != nil {
		t.Fatal(err)
	}
	// The state's execution waits in the group's step queue while the
	// lacking worker polls it.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		qs, err := e.eng.ListQueues(e.ctx, "default")
		waiting := false
		for _, q := range qs.Queues {
			if q.Name == group && q.Kind == api.QueueKindStep && q.Backlog == 1 && len(q.Pollers) == 1 && q.Pollers[0].Polling {
				waiting = true
			}
		}
		if err == nil && waiting {
			break
		}
		if time.Now().After(deadline) {
			inst, _ := e.client.Get(e.ctx, first)
			t.Fatalf("the execution did not wait for a worker with the methods: %+v, %v; instance %+v", qs, err, inst)
		}
	}
	if inst, err := e.client.Get(e.ctx, first); err != nil || len(inst.Actions) != 0 || inst.State != "work" {
		t.Fatalf("while it waits: %+v, %v", inst, err)
	}
	if err := knowing.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer knowing.Stop(context.Background())
	ids := []string{first}
	for range 4 {
		id, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "picky", ExecutorGroup: group})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		inst := e.waitFor(id, "finished", finished)
		if got := actions(inst); got != "stateExecution:work" || inst.State != "done" || inst.Actions[0].Executor != "knowing" {
			t.Fatalf("%s: %s in %s: %+v", id, got, inst.State, inst.Actions)
		}
	}
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
		End("done", "").Error("error", "").
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
	// Read from the run's memo and history, it is what its interpreter
	// answers.
	q, err := e.eng.QueryWorkflow(e.ctx, api.QueryRequest{RunRef: api.RunRef{WorkflowID: id}, Name: sm.QueryInstance})
	if err != nil {
		t.Fatal(err)
	}
	var queried sm.Instance
	if err := json.Unmarshal(q, &queried); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%+v", *inst), fmt.Sprintf("%+v", queried); got != want {
		t.Fatalf("read %s\nwant what the interpreter answers: %s", got, want)
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
		Manual("review", "").End("done", "").Error("error", "").
		Permit("begin", "review").Permit("review", "done")
}

// versionedV2 is version 2 of "versioned", with begin's method.
func versionedV2(begin sm.Method) *sm.Definition {
	return sm.Define("versioned", "v2 adds an audit").
		Start("begin", "", begin).
		Manual("review", "").Manual("audit", "").End("done", "").Error("error", "").
		Permit("begin", "review").Permit("begin", "audit").Permit("review", "audit").Permit("audit", "done")
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
	v2 := versionedV2(func(sm.Context) (sm.Next, error) { return sm.MoveTo("review", ""), nil })
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

	// Version 2's code runs instances of version 1 (pinned): the method
	// asks which version it runs; a move version 1 does not permit fails
	// the execution, in the user's words.
	w2 := worker.New(e.eng, worker.Options{Logger: testenv.Logger(), Queue: "v2-code", Identity: "v2-worker"})
	if err := sm.Register(e.ctx, w2, e.eng, versionedV2(func(ctx sm.Context) (sm.Next, error) {
		if _, force := ctx.Var("force"); !force && ctx.Version() < 2 {
			return sm.MoveTo("review", fmt.Sprintf("version %d has no audit", ctx.Version())), nil
		}
		return sm.MoveTo("audit", "audited"), nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := w2.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w2.Stop(context.Background())
	asked, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "versioned", Version: 1, ExecutorGroup: "v2-code"})
	if err != nil {
		t.Fatal(err)
	}
	forced, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "versioned", Version: 1, ExecutorGroup: "v2-code", Vars: map[string]string{"force": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	if inst := e.waitFor(asked, "review", func(i *sm.Instance) bool { return i.Status == sm.StatusManual }); inst.State != "review" ||
		inst.Actions[0].Text != "version 1 has no audit" {
		t.Fatalf("the method that asked its version: %s: %+v", inst.State, inst.Actions)
	}
	inst := e.waitFor(forced, "a failed execution", func(i *sm.Instance) bool { return len(i.Actions) > 0 })
	if a := inst.Actions[0]; a.Type != sm.ActionStateExecutionFailed || inst.State != "begin" ||
		a.Text != `the method moved to "audit", which is not a state of versioned version 1 (the instance's version)` || a.Executor != "v2-worker" {
		t.Fatalf("a move version 1 does not have: %s: %+v", inst.State, a)
	}

	// Code rolled back to version 1's content is version 1 again, not a
	// new version, and new instances get it.
	if err := sm.Register(e.ctx, worker.New(e.eng, worker.Options{Logger: testenv.Logger()}), e.eng, versionedV1()); err != nil {
		t.Fatal(err)
	}
	if all, err := e.eng.ListDefinitions(e.ctx, sm.DefinitionType("versioned")); err != nil || len(all) != 2 {
		t.Fatalf("versions stored after the rollback: %d, %v; want 2", len(all), err)
	}
	if defs, err := e.client.Definitions(e.ctx, "versioned"); err != nil || len(defs) != 1 || defs[0].Version != 1 {
		t.Fatalf("the current definition after the rollback: %+v, %v; want version 1", defs, err)
	}
	rolled, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "versioned"})
	if err != nil {
		t.Fatal(err)
	}
	if inst := e.waitFor(rolled, "review", func(i *sm.Instance) bool { return i.Status == sm.StatusManual }); inst.Version != 1 {
		t.Fatalf("an instance created after the rollback runs version %d; want 1", inst.Version)
	}
}

// retriesToError: a method that keeps failing is retried with back-off,
// then the instance moves to the error state; a move the definition does
// not permit counts as a failure.
func retriesToError(t *testing.T, e *env) {
	id, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "trials", Vars: map[string]string{"route": "flaky"}})
	if err != nil {
		t.Fatal(err)
	}
	inErrorState := func(i *sm.Instance) bool { return i.State == "error" && i.Status == sm.StatusManual }
	inst := e.waitFor(id, "the error state", inErrorState)
	want := "stateExecution:begin stateExecutionFailed:flaky stateExecutionFailed:flaky stateExecutionFailed:flaky"
	if got := actions(inst); got != want || inst.State != "error" {
		t.Fatalf("actions %s in %s; want %s in error", got, inst.State, want)
	}
	for i, a := range inst.Actions[1:] {
		if a.RetryNo != i || a.Text != "the bank is down" || a.Executor != "env-worker" {
			t.Errorf("failed action %d: %+v", i, a)
		}
		// The action's text is the method's own error, as nFlow's is the
		// exception's message: not the engine's step name and sequence.
		if strings.Contains(a.Text, "strand.sm") || strings.Contains(a.Text, "#") {
			t.Errorf("failed action %d's text %q speaks of the engine", i, a.Text)
		}
	}
	if inst.Actions[0].Executor != "env-worker" {
		t.Errorf("the executor of a state execution: %+v", inst.Actions[0])
	}
	// The error state waits for an operator, who moves it on.
	if err := e.client.Update(e.ctx, id, sm.Update{State: "begin", Vars: map[string]string{"route": "finish"}, Reason: "the bank is back", Identity: "ops"}); err != nil {
		t.Fatalf("moving an instance out of its error state: %v", err)
	}
	inst = e.waitFor(id, "finished", finished)
	if got := actions(inst); inst.State != "done" || !strings.HasSuffix(got, "externalChange:begin stateExecution:begin stateExecution:finish") {
		t.Fatalf("after the update out of the error state: %s in %s", got, inst.State)
	}

	id, err = e.client.Create(e.ctx, sm.CreateRequest{Type: "trials", Vars: map[string]string{"route": "rogue"}})
	if err != nil {
		t.Fatal(err)
	}
	inst = e.waitFor(id, "the error state", inErrorState)
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
	// The signal is an action, as in nFlow.
	if a := inst.Actions[0]; a.Type != sm.ActionExternalChange || a.Text != "signal set to 1: paid" || a.Executor != "test" || a.State != "begin" {
		t.Fatalf("the signal's action: %s: %+v", actions(inst), inst.Actions)
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
	// Created only in a start state (nFlow's rule).
	for _, state := range []string{"done", "acceptCreditApplication"} {
		if _, err := e.client.Create(e.ctx, sm.CreateRequest{Type: "creditApplication", State: state}); !errors.Is(err, api.ErrInvalidArgument) ||
			!strings.Contains(err.Error(), `an instance begins in a start state ("createCreditApplication")`) {
			t.Fatalf("created in %s: %v", state, err)
		}
	}
	// Not woken from a state it is not in; told why.
	if err := e.client.Wakeup(e.ctx, id, []string{"grantLoan"}, "test"); !errors.Is(err, api.ErrFailedPrecondition) ||
		!strings.Contains(err.Error(), `is not woken: it is in "acceptCreditApplication", not in "grantLoan"`) {
		t.Fatalf("woken from another state: %v", err)
	}
	// Lists do not tell executing apart: refused with the valid statuses.
	if _, err := e.client.List(e.ctx, sm.Filter{Status: sm.StatusExecuting}, 10, nil); !errors.Is(err, api.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "created, inProgress, manual, finished") {
		t.Fatalf("listing executing instances: %v", err)
	}
	if inst, _ := e.client.Get(e.ctx, id); len(inst.Actions) != 1 || inst.State != "acceptCreditApplication" {
		t.Fatalf("the refused update changed the instance: %s in %s", actions(inst), inst.State)
	}
}

// withoutMemo: an instance whose run started without the memo (as a
// release before the memo created them) keeps none, so that its history
// replays as it was recorded, and is read from its interpreter.
func withoutMemo(t *testing.T, e *env) {
	in, _ := json.Marshal(sm.Input{Type: "creditApplication", BusinessKey: "old-1", Vars: map[string]string{"amount": "7"}})
	id := "creditApplication/old-1"
	if _, err := e.eng.StartWorkflow(e.ctx, api.StartRequest{WorkflowID: id, WorkflowType: sm.WorkflowType, Input: in}); err != nil {
		t.Fatal(err)
	}
	inst := e.waitFor(id, "the manual state", func(i *sm.Instance) bool { return i.Status == sm.StatusManual })
	if inst.Vars["applicationId"] != "app-old-1" || actions(inst) != "stateExecution:createCreditApplication" {
		t.Fatalf("read from its interpreter: %+v", inst)
	}
	d, err := e.eng.DescribeWorkflow(e.ctx, api.RunRef{WorkflowID: id})
	if err != nil || len(d.Memo) != 0 {
		t.Fatalf("memo of a run started without one: %v, %v", d.Memo, err)
	}
}

// TestDefinitionChecks: definitions nFlow would refuse are refused by
// Register with a typed error that says what is wrong.
func TestDefinitionChecks(t *testing.T) {
	work := func(sm.Context) (sm.Next, error) { return sm.MoveTo("done", ""), nil }
	good := func(typ string) *sm.Definition {
		return sm.Define(typ, "").Start("begin", "", work).End("done", "").Error("error", "").Permit("begin", "done")
	}
	if err := good("fine-1.x_y").Check(); err != nil {
		t.Fatalf("a good definition: %v", err)
	}
	if err := sm.Define("ends", "").Start("begin", "", work).End("done", "").ErrorEnd("failed", "").Permit("begin", "done").Check(); err != nil {
		t.Fatalf("an end state as the error state: %v", err)
	}
	for _, c := range []struct {
		name string
		def  *sm.Definition
		want string
	}{
		{"no error state", sm.Define("noError", "").Start("begin", "", work).End("done", "").Permit("begin", "done"),
			`state machine "noError": no error state, where failed executions go`},
		{"an unreachable state", good("lost").Normal("island", "", work).Permit("island", "done"),
			`state machine "lost": no start state leads to "island"`},
		{"a move out of an end state", good("zombie").Permit("done", "begin"),
			`state machine "zombie": permits a move out of "done", an end state`},
		{"a type name with a space and a slash", good("bad 7/x"),
			`state machine "bad 7/x": a type name is a letter, then letters, digits`},
	} {
		err := c.def.Check()
		var de *sm.DefinitionError
		if !errors.Is(err, api.ErrInvalidArgument) || !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an invalid argument: %s", c.name, err, c.want)
		}
	}
}
