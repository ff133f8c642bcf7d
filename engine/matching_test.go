package engine

import (
	"context"
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
		got = append(got, m.poll(ctx, k, true, nil, nil).(int8))
	}
	want := []int8{1, 2, 0, 4, 5} // 0 is normal (3)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	// A task offered while a worker polls goes straight to it.
	done := make(chan any)
	go func() { done <- m.poll(ctx, k, true, nil, nil) }()
	for m.waitingPollers(k) == 0 {
		time.Sleep(time.Millisecond)
	}
	m.offer(k, 3, "direct")
	if v := <-done; v != "direct" {
		t.Fatalf("got %v", v)
	}
	if m.syncMatched != 1 || m.backlogged != 5 {
		t.Fatalf("sync %d, backlogged %d", m.syncMatched, m.backlogged)
	}
	// A poll that ends gives back nothing and leaves no poller behind.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if v := m.poll(cctx, k, true, nil, func(any) { t.Fatal("nothing to give back") }); v != nil {
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
	go func() { leg <- m.poll(ctx, k, false, nil, nil) }()
	for m.waitingPollers(k) == 0 {
		time.Sleep(time.Millisecond)
	}
	local := make(chan any, 1)
	go func() { local <- m.poll(ctx, k, true, nil, nil) }()
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
