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
// it.
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
