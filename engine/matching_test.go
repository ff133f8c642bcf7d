package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestMatcherPriorityAndSyncMatch(t *testing.T) {
	m := newMatcher()
	k := queueKey{ns: "default", name: "q", kind: stepQueue}
	for _, p := range []int8{5, 0, 1, 4, 2} {
		m.offer(k, p, p)
	}
	ctx := context.Background()
	var got []int8
	for range 5 {
		got = append(got, m.poll(ctx, k, true, "w", nil, nil).(int8))
	}
	want := []int8{1, 2, 0, 4, 5} // 0 is normal (3)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	// A task offered while a worker polls goes straight to it.
	done := make(chan any)
	go func() { done <- m.poll(ctx, k, true, "w", nil, nil) }()
	for m.waitingPollers(k) == 0 {
		time.Sleep(time.Millisecond)
	}
	m.offer(k, 3, "direct")
	if v := <-done; v != "direct" {
		t.Fatalf("got %v", v)
	}
	if sync, backlogged := m.matched(); sync != 1 || backlogged != 5 {
		t.Fatalf("sync %d, backlogged %d", sync, backlogged)
	}
	// A poll that ends gives back nothing and leaves no poller behind.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if v := m.poll(cctx, k, true, "w", nil, func(any) { t.Fatal("nothing to give back") }); v != nil {
		t.Fatalf("got %v", v)
	}
	if m.waitingPollers(k) != 0 {
		t.Fatal("poller left behind")
	}
}

// waitingPollers counts the polls waiting on k.
func (m *matcher) waitingPollers(k queueKey) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[k]; q != nil {
		return q.pollers.Len()
	}
	return 0
}

// A task goes to a worker of this node before another node's forwarded
// poll that waited longer; with no worker waiting, the forwarded poll gets
// it (once the hold for this node's workers, who polled just before, is
// over).
func TestMatcherPrefersLocalWorkers(t *testing.T) {
	m := newMatcher()
	k := queueKey{ns: "default", name: "q", kind: stepQueue}
	ctx := context.Background()
	leg := make(chan any, 2)
	go func() { leg <- m.poll(ctx, k, false, "w", nil, nil) }()
	for m.waitingPollers(k) == 0 {
		time.Sleep(time.Millisecond)
	}
	local := make(chan any, 1)
	go func() { local <- m.poll(ctx, k, true, "w", nil, nil) }()
	for m.waitingPollers(k) < 2 {
		time.Sleep(time.Millisecond)
	}
	m.offer(k, 0, "first")
	if v := <-local; v != "first" {
		t.Fatalf("worker got %v", v)
	}
	m.offer(k, 0, "second")
	if v := <-leg; v != "second" {
		t.Fatalf("forwarded poll got %v", v)
	}
}

// setHold sets how long the matcher holds tasks for its workers.
func (m *matcher) setHold(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hold = d
}

// held counts the tasks of queue k held for the workers now.
func (m *matcher) held(k queueKey) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	now := time.Now()
	for _, l := range m.queues[k].backlog {
		for e := l.Front(); e != nil; e = e.Next() {
			if e.Value.(*queued).due.After(now) {
				n++
			}
		}
	}
	return n
}

// TestMatcherHoldsTasksForLocalWorkers: while this node's workers are
// taking a queue's tasks (one polled within the hold), a task that comes
// when none of them waits is kept for them, not handed to another node's
// forwarded poll (leg) that waits, nor given to it by the eager path; a
// worker that polls next takes it. A task held that no worker takes goes
// to a leg once the hold is over, to one that waited already and to one
// that comes later. With no worker polling lately, a leg gets a task at
// once.
func TestMatcherHoldsTasksForLocalWorkers(t *testing.T) {
	k := queueKey{ns: "default", name: "q", kind: workflowQueue}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	legPoll := func(m *matcher) chan any {
		ch := make(chan any, 1)
		go func() { ch <- m.poll(ctx, k, false, "a worker of node b", nil, func(any) {}) }()
		return ch
	}
	waitPollers := func(m *matcher, n int) {
		for m.waitingPollers(k) != n {
			if ctx.Err() != nil {
				t.Fatalf("%d polls waiting; want %d", m.waitingPollers(k), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// A worker's poll that found nothing (as a worker's task exchange
	// takes what is ready, without waiting).
	workerPolled := func(m *matcher) {
		if v := m.pollFor(ctx, k, true, "w", "", nil, false, nil, nil); v != nil {
			t.Fatalf("the worker took %v", v)
		}
	}

	// No worker polled here: a leg gets the task at once.
	m := newMatcher()
	m.setHold(time.Hour)
	leg := legPoll(m)
	waitPollers(m, 1)
	m.offer(k, 0, "free")
	if v := <-leg; v != "free" {
		t.Fatalf("the leg got %v", v)
	}

	// A worker polled within the hold: held for the workers.
	leg = legPoll(m)
	waitPollers(m, 1)
	workerPolled(m)
	if p := m.takeWaitingPoller(k, ""); p != nil {
		t.Fatal("the eager path took the leg while the workers were taking the tasks")
	}
	m.offer(k, 0, "held")
	if d := m.depth(k); d != 1 || m.waitingPollers(k) != 1 {
		t.Fatalf("backlog %d, %d polls waiting; want the task held, the leg waiting", d, m.waitingPollers(k))
	}
	if v := m.poll(ctx, k, true, "w", nil, nil); v != "held" {
		t.Fatalf("the worker got %v", v)
	}

	// Held, and no worker takes it: the waiting leg gets it once the hold
	// is over. (If the machine stalls for the whole hold between the
	// worker's poll and the offer, the task is not held; try again.)
	m.setHold(20 * time.Millisecond)
	for tries := 0; ; tries++ {
		workerPolled(m)
		m.offer(k, 0, "due")
		if m.depth(k) == 1 {
			break // held
		}
		if v := <-leg; v != "due" || tries == 20 {
			t.Fatalf("the leg got %v (try %d)", v, tries)
		}
		leg = legPoll(m)
		waitPollers(m, 1)
	}
	if v := <-leg; v != "due" {
		t.Fatalf("the leg got %v", v)
	}
	if d := m.depth(k); d != 0 {
		t.Fatalf("backlog %d", d)
	}

	// Held, and a leg comes while it is: it waits for the end of the hold.
	for tries := 0; ; tries++ {
		workerPolled(m)
		m.offer(k, 0, "later")
		if m.held(k) == 1 {
			break
		}
		if v := m.poll(ctx, k, true, "w", nil, nil); v != "later" || tries == 20 {
			t.Fatalf("the worker got %v (try %d)", v, tries)
		}
	}
	if v := <-legPoll(m); v != "later" {
		t.Fatalf("the leg got %v", v)
	}
}

// Queries and the other tasks take turns while both wait; either alone is
// served back to back.
func TestMatcherQueriesTakeTurns(t *testing.T) {
	m := newMatcher()
	k := queueKey{ns: "default", name: "q", kind: workflowQueue}
	for i := range 4 {
		m.offerQuery(k, fmt.Sprintf("q%d", i))
	}
	m.offer(k, 3, "w0")
	m.offer(k, 1, "w1") // the highest priority: first of the others
	ctx := context.Background()
	var got []string
	for range 6 {
		got = append(got, m.poll(ctx, k, true, "w", nil, nil).(string))
	}
	m.offer(k, 3, "w2")
	m.offer(k, 3, "w3")
	for range 2 {
		got = append(got, m.poll(ctx, k, true, "w", nil, nil).(string))
	}
	want := []string{"q0", "w1", "q1", "w0", "q2", "q3", "w2", "w3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if m.depth(k) != 0 {
		t.Fatalf("depth %d after all were taken", m.depth(k))
	}
}

// TestMatcherStickyWorker: a workflow task offered with a worker's sticky
// id goes to that worker's waiting poll, though another waited longer, and
// so does an eager hand-off; one whose worker has no poll waiting is held
// for it for StickyHold, then goes to another; without one, the oldest
// poll takes it.
func TestMatcherStickyWorker(t *testing.T) {
	m := newMatcher()
	k := queueKey{ns: "default", name: "q", kind: workflowQueue}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	polls := map[string]chan any{}
	for _, id := range []string{"a", "b"} {
		polls[id] = make(chan any, 3)
		waiting := make(chan struct{})
		go func() {
			for range 3 {
				polls[id] <- m.pollFor(ctx, k, true, "w-"+id, id, nil, true, func() {
					select {
					case waiting <- struct{}{}:
					default:
					}
				}, func(any) {})
			}
		}()
		<-waiting // a waits longest
	}
	waitFor := func(n int) {
		for m.workersWaiting(k) < n {
			time.Sleep(time.Millisecond)
		}
	}
	offer := &wtOffer{sticky: "b"}
	m.offer(k, 3, offer)
	if got := <-polls["b"]; got != offer {
		t.Fatalf("b's poll got %v, want the offer made for b", got)
	}
	waitFor(2) // b polls again
	if p := m.takeWaitingPoller(k, "c"); p != nil {
		t.Fatal("an eager hand-off for c, who does not poll, took another's poll")
	}
	if p := m.takeWaitingPoller(k, "b"); p == nil || p.sticky != "b" {
		t.Fatalf("an eager hand-off for b took %+v", p)
	} else {
		p.ch <- "eager"
	}
	if got := <-polls["b"]; got != "eager" {
		t.Fatalf("b's second poll got %v", got)
	}
	waitFor(2)
	// For c, who does not poll: held, then the oldest poll (a's) takes it.
	offered := time.Now()
	forC := &wtOffer{sticky: "c"}
	m.offer(k, 3, forC)
	if got := <-polls["a"]; got != forC || time.Since(offered) < StickyHold {
		t.Fatalf("a's poll got %v after %s; want the offer for c after %s", got, time.Since(offered), StickyHold)
	}
	waitFor(2)
	m.offer(k, 3, &wtOffer{})
	if got := <-polls["b"]; got == nil { // b's poll is older than a's third
		t.Fatal("an offer for no one in particular did not go to the oldest poll")
	}
}
