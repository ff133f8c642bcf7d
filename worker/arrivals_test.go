package worker

import (
	"testing"

	"github.com/strandhq/strand/store"
)

// TestArrivals: of a run's workflow tasks in hand, only the last to come
// is live; another run's tasks do not count, and a task handled forgets
// nothing a later one needs.
func TestArrivals(t *testing.T) {
	a := arrivals{latest: map[store.RunKey]uint64{}}
	r1, r2 := store.RunKey{Namespace: "n", WorkflowID: "w", RunID: "1"}, store.RunKey{Namespace: "n", WorkflowID: "w", RunID: "2"}
	first := a.arrive(r1)
	other := a.arrive(r2)
	if a.superseded(r1, first) || a.superseded(r2, other) {
		t.Fatal("a run's only task is superseded")
	}
	second := a.arrive(r1)
	if !a.superseded(r1, first) || a.superseded(r1, second) {
		t.Fatalf("after a second task of the run: first superseded %v, second %v", a.superseded(r1, first), a.superseded(r1, second))
	}
	a.leave(r1, first) // the dead one ends: the live one stays live
	if a.superseded(r1, second) {
		t.Fatal("the live task was forgotten when the dead one ended")
	}
	a.leave(r1, second)
	a.leave(r2, other)
	if len(a.latest) != 0 {
		t.Fatalf("%d runs still held after their tasks ended", len(a.latest))
	}
}
