package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
)

// TestMatcherStepsAWorkerRuns: a poller that names the steps it runs is
// handed only those; a task of another step waits in the backlog, in
// order, for a poller that runs it (or one that names none).
func TestMatcherStepsAWorkerRuns(t *testing.T) {
	m := newMatcher()
	k := queueKey{ns: "default", name: "q", kind: stepQueue}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	onlyA := servesOf([]string{"a"})
	m.offer(k, 0, &stepItem{name: "b", seq: 1})
	m.offer(k, 0, &stepItem{name: "a", seq: 2})
	if it := m.pollFor(ctx, k, true, "wa", "", onlyA, true, nil, nil).(*stepItem); it.seq != 2 {
		t.Fatalf("the worker of a took %+v", it)
	}
	// Waiting, it is not handed b; a worker of b that comes is.
	got := make(chan any, 1)
	short, stop := context.WithCancel(ctx)
	go func() { got <- m.pollFor(short, k, true, "wa", "", onlyA, true, nil, func(any) {}) }()
	for m.waitingPollers(k) == 0 {
		time.Sleep(time.Millisecond)
	}
	m.offer(k, 0, &stepItem{name: "b", seq: 3})
	if it := m.pollFor(ctx, k, true, "wb", "", servesOf([]string{"b"}), true, nil, nil).(*stepItem); it.seq != 1 {
		t.Fatalf("the worker of b took %+v first; want the older b", it)
	}
	if it := m.poll(ctx, k, true, "any", nil, nil).(*stepItem); it.seq != 3 {
		t.Fatalf("a worker that names no steps took %+v", it)
	}
	stop()
	if v := <-got; v != nil {
		t.Fatalf("the worker of a was handed %+v", v)
	}
	if d := m.depth(k); d != 0 {
		t.Fatalf("backlog %d", d)
	}
}

// TestMatcherLegsAskForTheStepsWorkersRun: what a node's legs ask other
// nodes for is the union of the steps its waiting workers run, or every
// step when one of them names none.
func TestMatcherLegsAskForTheStepsWorkersRun(t *testing.T) {
	m := newMatcher()
	k := queueKey{ns: "default", name: "q", kind: stepQueue}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := func(n int, serves map[string]bool) {
		go m.pollFor(ctx, k, true, "w", "", serves, true, nil, func(any) {})
		for m.waitingPollers(k) != n {
			time.Sleep(time.Millisecond)
		}
	}
	wait(1, servesOf([]string{"b", "a"}))
	wait(2, servesOf([]string{"c"}))
	if got := fmt.Sprint(m.served(k)); got != "[a b c]" {
		t.Fatalf("served %s", got)
	}
	if m.runsItem(k, &api.StepTask{Name: "d"}) || !m.runsItem(k, &api.StepTask{Name: "c"}) {
		t.Fatal("runsItem")
	}
	wait(3, nil)
	if got := m.served(k); got != nil || !m.runsItem(k, &api.StepTask{Name: "d"}) {
		t.Fatalf("with a worker of every step: served %v", got)
	}
}
