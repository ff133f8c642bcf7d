package message_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// waitIn says what Waiter waits for.
type waitIn struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	// Timeout, when set, gives up after it: the result is then empty.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Waiter waits for one message and returns it.
func Waiter(ctx workflow.Context, in waitIn) (workflow.Message, error) {
	wctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	got := workflow.ReceiveMessage(wctx, in.Name, in.Key)
	if in.Timeout == 0 {
		return got.Get(ctx)
	}
	var m workflow.Message
	var err error
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(got, func() { m, err = got.Get(ctx) })
	sel.AddFuture(workflow.NewTimer(ctx, in.Timeout), func() {})
	sel.Select(ctx)
	return m, err
}

// order is the input of a run a rule starts.
type order struct {
	Item string `json:"item"`
	// Recorder and Priority are the priority test's.
	Recorder string `json:"recorder,omitempty"`
	Priority int8   `json:"priority,omitempty"`
}

// Order is what the rule for "order-placed" starts: it returns its input's
// item and its own workflow id.
func Order(ctx workflow.Context, in order) (string, error) {
	return in.Item + "@" + workflow.GetInfo(ctx).WorkflowID, nil
}

// started records, per recorder, the priorities of the PriorityJob runs
// in the order their first workflow task ran.
var started sync.Map // string → *recorder

type recorder struct {
	mu    sync.Mutex
	order []int8
}

// PriorityJob records its priority when its code first runs.
func PriorityJob(ctx workflow.Context, in order) (struct{}, error) {
	if !workflow.IsReplaying(ctx) {
		record(&started, in.Recorder, in.Priority)
	}
	return struct{}{}, nil
}

// done records, per recorder, the priorities of the StepJob runs in the
// order they completed.
var done sync.Map // string → *recorder

func record(m *sync.Map, name string, p int8) {
	r, _ := m.LoadOrStore(name, &recorder{})
	rec := r.(*recorder)
	rec.mu.Lock()
	rec.order = append(rec.order, p)
	rec.mu.Unlock()
}

func recorded(m *sync.Map, name string) []int8 {
	r, ok := m.Load(name)
	if !ok {
		return nil
	}
	rec := r.(*recorder)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.order)
}

// Work is StepJob's step: a partner's service, on a queue of its own.
func Work(_ context.Context, in order) (string, error) { return in.Item, nil }

// StepJob hands its order to Work and records its priority when it
// completes.
func StepJob(ctx workflow.Context, in order) (struct{}, error) {
	if _, err := workflow.ExecuteStep(ctx, workflow.StepOptions{Queue: "prio-work"}, Work, in).Get(ctx); err != nil {
		return struct{}{}, err
	}
	if !workflow.IsReplaying(ctx) {
		record(&done, in.Recorder, in.Priority)
	}
	return struct{}{}, nil
}

type env struct {
	*testenv.Env
	msgs *message.Service
}

func newEnv(t *testing.T, st store.Store) *env {
	e := testenv.New(t, st, 3*time.Minute, func(w *worker.Worker) {
		worker.RegisterWorkflow(w, Waiter)
		worker.RegisterWorkflow(w, Order)
	})
	return &env{Env: e, msgs: message.NewService(e.Engine)}
}

func (e *env) send(name, key string, payload any, mod func(*api.SendMessageRequest)) api.SendMessageResponse {
	e.T.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		e.T.Fatal(err)
	}
	req := api.SendMessageRequest{Name: name, CorrelationKey: key, Payload: raw, Identity: "tester"}
	if mod != nil {
		mod(&req)
	}
	resp, err := e.msgs.SendMessage(e.Ctx, req)
	if err != nil {
		e.T.Fatalf("send %s/%s: %v", name, key, err)
	}
	return resp
}

func (e *env) wait(id string, in waitIn) client.Run[workflow.Message] {
	e.T.Helper()
	r, err := client.Start(e.Ctx, e.Client, Waiter, in, client.StartOptions{ID: id})
	if err != nil {
		e.T.Fatal(err)
	}
	return r
}

func (e *env) describe(name, key string) api.MailboxDescription {
	e.T.Helper()
	d, err := e.msgs.DescribeMailbox(e.Ctx, api.MailboxRef{Name: name, CorrelationKey: key})
	if err != nil {
		e.T.Fatalf("describe the mailbox of %s/%s: %v", name, key, err)
	}
	return d
}

// waiting waits until the mailbox of name and key has n runs waiting.
func (e *env) waiting(name, key string, n int) {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("%d runs waiting for %s/%s", n, name, key), 30*time.Second, func() bool {
		return len(e.describe(name, key).Waiting) == n
	})
}

// deliveries counts the messages of name and key in a run's history.
func (e *env) deliveries(wfID, name, key string) int {
	e.T.Helper()
	evs, err := e.Client.AllHistory(e.Ctx, wfID, "")
	if err != nil {
		e.T.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == api.EventSignalReceived && ev.Name == api.MessageDeliverySignal(name, key) {
			n++
		}
	}
	return n
}

// closed waits until the mailbox of name and key has no open run.
func (e *env) closed(name, key string) {
	e.T.Helper()
	e.Eventually("the mailbox of "+name+"/"+key+" to close", 30*time.Second, func() bool {
		d, err := e.Client.Describe(e.Ctx, api.MailboxWorkflowID(name, key), "")
		return err == nil && d.Status != store.StatusRunning
	})
}

func payloadOf(t *testing.T, m workflow.Message) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(m.Payload, &s); err != nil {
		t.Fatalf("payload %s: %v", m.Payload, err)
	}
	return s
}

func TestCorrelation(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)

		t.Log("a message sent before any run waits is kept, then delivered once")
		sent := e.send("paid", "o-1", "5 EUR", nil)
		if d := e.describe("paid", "o-1"); len(d.Kept) != 1 || d.Kept[0].MessageID != sent.MessageID {
			t.Fatalf("kept before the wait: %+v", d)
		}
		m, err := e.wait("w-early", waitIn{Name: "paid", Key: "o-1"}).Get(e.Ctx)
		if err != nil || payloadOf(t, m) != "5 EUR" || m.MessageID != sent.MessageID || m.Sender != "tester" {
			t.Fatalf("early message: %+v, %v", m, err)
		}
		if n := e.deliveries("w-early", "paid", "o-1"); n != 1 {
			t.Fatalf("w-early got %d deliveries", n)
		}
		e.closed("paid", "o-1")

		t.Log("a run waiting first gets the message sent later")
		late := e.wait("w-late", waitIn{Name: "paid", Key: "o-2"})
		e.waiting("paid", "o-2", 1)
		e.send("paid", "o-2", "7 EUR", nil)
		if m, err := late.Get(e.Ctx); err != nil || payloadOf(t, m) != "7 EUR" {
			t.Fatalf("late message: %+v, %v", m, err)
		}

		t.Log("a message sent twice with one id is taken once")
		dup := e.send("paid", "o-3", "first", func(r *api.SendMessageRequest) { r.MessageID = "m-dup" })
		e.send("paid", "o-3", "again", func(r *api.SendMessageRequest) { r.MessageID = "m-dup" })
		if d := e.describe("paid", "o-3"); len(d.Kept) != 1 || d.Kept[0].MessageID != dup.MessageID {
			t.Fatalf("kept after a resend: %+v", d)
		}

		t.Log("two runs racing for one key: the first to wait gets the first message")
		first := e.wait("w-race-1", waitIn{Name: "shipped", Key: "o-4"})
		e.waiting("shipped", "o-4", 1)
		second := e.wait("w-race-2", waitIn{Name: "shipped", Key: "o-4"})
		e.waiting("shipped", "o-4", 2)
		e.send("shipped", "o-4", "parcel 1", nil)
		if m, err := first.Get(e.Ctx); err != nil || payloadOf(t, m) != "parcel 1" {
			t.Fatalf("first waiter: %+v, %v", m, err)
		}
		e.waiting("shipped", "o-4", 1)
		e.send("shipped", "o-4", "parcel 2", nil)
		if m, err := second.Get(e.Ctx); err != nil || payloadOf(t, m) != "parcel 2" {
			t.Fatalf("second waiter: %+v, %v", m, err)
		}
		for _, id := range []string{"w-race-1", "w-race-2"} {
			if n := e.deliveries(id, "shipped", "o-4"); n != 1 {
				t.Fatalf("%s got %d deliveries", id, n)
			}
		}

		t.Log("a broadcast goes to every run waiting, and to one that waits later")
		var all []client.Run[workflow.Message]
		for i := range 3 {
			all = append(all, e.wait(fmt.Sprintf("w-all-%d", i), waitIn{Name: "price", Key: "p-1"}))
		}
		e.waiting("price", "p-1", 3)
		e.send("price", "p-1", "9.99", func(r *api.SendMessageRequest) { r.Broadcast = true; r.TTL = time.Minute })
		all = append(all, e.wait("w-all-late", waitIn{Name: "price", Key: "p-1"}))
		for i, r := range all {
			if m, err := r.Get(e.Ctx); err != nil || payloadOf(t, m) != "9.99" {
				t.Fatalf("broadcast to waiter %d: %+v, %v", i, m, err)
			}
		}
		if d := e.describe("price", "p-1"); len(d.Kept) != 1 || len(d.Kept[0].DeliveredTo) != 4 {
			t.Fatalf("the broadcast as kept: %+v", d)
		}
	})
}

func TestExpiryAndWithdrawal(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)

		t.Log("a kept message expires: the mailbox closes and a later wait gets nothing")
		e.send("quote", "q-1", "old", func(r *api.SendMessageRequest) { r.TTL = 200 * time.Millisecond })
		e.closed("quote", "q-1")
		if d := e.describe("quote", "q-1"); len(d.Kept) != 0 {
			t.Fatalf("kept after expiry: %+v", d)
		}
		m, err := e.wait("w-expired", waitIn{Name: "quote", Key: "q-1", Timeout: time.Second}).Get(e.Ctx)
		if err != nil || m.MessageID != "" {
			t.Fatalf("a wait after expiry got %+v, %v", m, err)
		}

		t.Log("a wait that timed out is withdrawn, and the message stays for the next")
		e.closed("quote", "q-1")
		e.send("quote", "q-1", "new", nil)
		if d := e.describe("quote", "q-1"); len(d.Kept) != 1 || len(d.Waiting) != 0 {
			t.Fatalf("after the withdrawn wait: %+v", d)
		}
		if n := e.deliveries("w-expired", "quote", "q-1"); n != 0 {
			t.Fatalf("the timed-out run got %d deliveries", n)
		}

		t.Log("the wait of a run terminated while it waited goes at the next check")
		stale := e.wait("w-stale", waitIn{Name: "quote", Key: "q-3"})
		e.waiting("quote", "q-3", 1)
		if err := e.Client.Terminate(e.Ctx, "w-stale", "", "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := stale.Get(e.Ctx); !errors.Is(err, api.ErrTerminated) {
			t.Fatalf("terminated waiter: %v", err)
		}
		e.closed("quote", "q-3")

		t.Log("a run that closed while waiting gives its message back")
		gone := e.wait("w-gone", waitIn{Name: "quote", Key: "q-2"})
		e.waiting("quote", "q-2", 1)
		if err := e.Client.Terminate(e.Ctx, "w-gone", "", "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := gone.Get(e.Ctx); !errors.Is(err, api.ErrTerminated) {
			t.Fatalf("terminated waiter: %v", err)
		}
		e.send("quote", "q-2", "for someone", nil)
		e.Eventually("the message given back", 30*time.Second, func() bool {
			d := e.describe("quote", "q-2")
			return len(d.Kept) == 1 && len(d.Waiting) == 0
		})
		if m, err := e.wait("w-next", waitIn{Name: "quote", Key: "q-2"}).Get(e.Ctx); err != nil || payloadOf(t, m) != "for someone" {
			t.Fatalf("the next waiter: %+v, %v", m, err)
		}
	})
}

func TestRules(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		if err := e.msgs.PutMessageRule(e.Ctx, api.MessageRule{MessageRuleRef: api.MessageRuleRef{Name: "order-placed"}, WorkflowType: "Order"}); err != nil {
			t.Fatal(err)
		}
		rules, err := e.msgs.ListMessageRules(e.Ctx, "")
		if err != nil || len(rules) != 1 || rules[0].WorkflowType != "Order" {
			t.Fatalf("rules: %+v, %v", rules, err)
		}

		t.Log("a message no run waits for starts a run under its name's rule")
		e.send("order-placed", "o-9", order{Item: "book"}, nil)
		e.Eventually("the order's run", 30*time.Second, func() bool {
			_, err := e.Client.Describe(e.Ctx, "o-9", "")
			return err == nil
		})
		got, err := client.GetRun[string](e.Client, "o-9", "").Get(e.Ctx)
		if err != nil || got != "book@o-9" {
			t.Fatalf("the started order: %q, %v", got, err)
		}
		e.closed("order-placed", "o-9")
		d := e.describe("order-placed", "o-9")
		if len(d.Kept) != 0 {
			t.Fatalf("kept after the start: %+v", d)
		}

		t.Log("a burst of invocation messages starts runs highest priority first")
		rec := fmt.Sprintf("prio-%s-%d", t.Name(), time.Now().UnixNano()) // apart from other runs of the test (-count)
		prios := []int8{5, 3, 1, 4, 2}
		if err := e.msgs.PutMessageRule(e.Ctx, api.MessageRule{MessageRuleRef: api.MessageRuleRef{Name: "job"}, WorkflowType: "PriorityJob", Queue: "prio"}); err != nil {
			t.Fatal(err)
		}
		const n = 25
		for i := range n {
			p := prios[i%len(prios)]
			e.send("job", fmt.Sprintf("job-%02d", i), order{Recorder: rec, Priority: p}, func(r *api.SendMessageRequest) { r.Priority = p })
		}
		e.Eventually("every job's run to be created", time.Minute, func() bool {
			c, err := e.Client.Count(e.Ctx, api.ListRequest{WorkflowType: "PriorityJob"})
			return err == nil && c == n
		})
		w := worker.New(e.Engine, worker.Options{Queue: "prio", Logger: testenv.Logger(), WorkflowPollers: 1, MaxConcurrentWorkflowTasks: 1})
		worker.RegisterWorkflow(w, PriorityJob)
		if err := w.Start(e.Ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(e.Ctx)
		e.Eventually("every job to run", time.Minute, func() bool { return len(recorded(&started, rec)) >= n })
		if o := recorded(&started, rec); !slices.IsSorted(o) {
			t.Fatalf("jobs ran in the priority order %v; want highest (1) first", o)
		}

		t.Log("with the partner's worker down, 6 messages at priority 5 then 6 at priority 1: once it starts, one step at a time, every priority-1 run completes before any priority-5 one")
		// The runs' steps carry their run's priority: before, they all
		// waited at normal priority, first come first served, and the
		// priority-5 runs, which came first, completed first.
		rec = fmt.Sprintf("done-%s-%d", t.Name(), time.Now().UnixNano())
		if err := e.msgs.PutMessageRule(e.Ctx, api.MessageRule{MessageRuleRef: api.MessageRuleRef{Name: "step-job"}, WorkflowType: "StepJob", Queue: "prio-wf"}); err != nil {
			t.Fatal(err)
		}
		wf := worker.New(e.Engine, worker.Options{Queue: "prio-wf", Logger: testenv.Logger(), WorkflowPollers: 1, MaxConcurrentWorkflowTasks: 1})
		worker.RegisterWorkflow(wf, StepJob)
		if err := wf.Start(e.Ctx); err != nil {
			t.Fatal(err)
		}
		defer wf.Stop(e.Ctx)
		for _, p := range []int8{5, 1} {
			for i := range 6 {
				e.send("step-job", fmt.Sprintf("step-job-%d-%d", p, i), order{Recorder: rec, Priority: p}, func(r *api.SendMessageRequest) { r.Priority = p })
			}
		}
		e.Eventually("every step waiting for the partner's worker", time.Minute, func() bool {
			qs, err := e.Engine.ListQueues(e.Ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range qs.Queues {
				if q.Name == "prio-work" && q.Kind == api.QueueKindStep {
					return q.Backlog == 12
				}
			}
			return false
		})
		partner := worker.New(e.Engine, worker.Options{Queue: "prio-work", Logger: testenv.Logger(), StepPollers: 1, MaxConcurrentSteps: 1})
		worker.RegisterStep(partner, Work)
		if err := partner.Start(e.Ctx); err != nil {
			t.Fatal(err)
		}
		defer partner.Stop(e.Ctx)
		e.Eventually("every step job to complete", time.Minute, func() bool { return len(recorded(&done, rec)) >= 12 })
		if o := recorded(&done, rec); !slices.IsSorted(o) {
			t.Fatalf("step jobs completed in the priority order %v; want every 1 before any 5", o)
		}
	})
}

// TestMailboxTakesNoCancel: a cancel request sent to a mailbox (anyone may
// send one through the API) changes nothing: it keeps its messages and
// delivers them. Before, its canceled context made every timer fire at
// once and its loop spun in one workflow task, holding memory without end
// (Schemathesis found it).
func TestMailboxTakesNoCancel(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		e.send("invoice", "i-1", "first", func(r *api.SendMessageRequest) { r.TTL = time.Hour })
		if err := e.Client.Cancel(e.Ctx, api.MailboxWorkflowID("invoice", "i-1"), "", "not for mailboxes"); err != nil {
			t.Fatal(err)
		}
		e.send("invoice", "i-1", "second", func(r *api.SendMessageRequest) { r.TTL = time.Hour })
		e.Eventually("the mailbox to keep both messages after a cancel request", 30*time.Second, func() bool {
			return len(e.describe("invoice", "i-1").Kept) == 2
		})
		m, err := e.wait("w-after-cancel", waitIn{Name: "invoice", Key: "i-1", Timeout: time.Minute}).Get(e.Ctx)
		if err != nil || m.MessageID == "" {
			t.Fatalf("a wait after the cancel request got %+v, %v", m, err)
		}
	})
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t))
	for name, req := range map[string]api.SendMessageRequest{
		"no name":      {CorrelationKey: "k"},
		"negative ttl": {Name: "n", TTL: -time.Second},
		"ttl too long": {Name: "n", TTL: api.MaxMessageTTL + time.Hour},
		"priority 7":   {Name: "n", Priority: 7},
	} {
		if _, err := e.msgs.SendMessage(e.Ctx, req); !errors.Is(err, api.ErrInvalidArgument) {
			t.Errorf("%s: got %v, want an invalid argument", name, err)
		}
	}
	if err := e.msgs.PutMessageRule(e.Ctx, api.MessageRule{MessageRuleRef: api.MessageRuleRef{Name: "x"}}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("a rule with no workflow type: %v", err)
	}
	if err := e.msgs.DeleteMessageRule(e.Ctx, api.MessageRuleRef{Name: "none"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("deleting a rule there is not: %v", err)
	}
	// A name too long for a key of the namespace's data still has a rule.
	long := strings.Repeat("é", 150)
	if err := e.msgs.PutMessageRule(e.Ctx, api.MessageRule{MessageRuleRef: api.MessageRuleRef{Name: long}, WorkflowType: "Order"}); err != nil {
		t.Fatalf("a rule of a long name: %v", err)
	}
	if rules, err := e.msgs.ListMessageRules(e.Ctx, ""); err != nil || len(rules) != 1 || rules[0].Name != long {
		t.Fatalf("rules: %+v, %v", rules, err)
	}
	if err := e.msgs.DeleteMessageRule(e.Ctx, api.MessageRuleRef{Name: long}); err != nil {
		t.Fatal(err)
	}
	page, err := e.msgs.ListMailboxes(e.Ctx, api.ListMailboxesRequest{})
	if err != nil || len(page.Mailboxes) != 0 {
		t.Fatalf("mailboxes after bad input: %+v, %v", page, err)
	}
	// A name and a key too long for a workflow id together: the mailbox's
	// id is a hash, and the list names it by its attributes.
	name, key := strings.Repeat("n", 200), strings.Repeat("k", 200)
	e.send(name, key, "long", nil)
	e.Eventually("the long mailbox in the list", 30*time.Second, func() bool {
		page, err := e.msgs.ListMailboxes(e.Ctx, api.ListMailboxesRequest{Name: name})
		return err == nil && len(page.Mailboxes) == 1 && page.Mailboxes[0].CorrelationKey == key
	})
	if m, err := e.wait("w-long", waitIn{Name: name, Key: key}).Get(e.Ctx); err != nil || payloadOf(t, m) != "long" {
		t.Fatalf("the long message: %+v, %v", m, err)
	}
	e.closed(name, key)

}
