package engine

import (
	"strconv"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

// TestVisibilityQueueGathersBySecond checks that the visibility writer
// takes a run's updates only once the first is old enough (so a run that
// starts and closes within visibilityDelay is written once), everything
// when asked to sync, and the oldest at once past visibilityMaxQueued.
func TestVisibilityQueueGathersBySecond(t *testing.T) {
	var q visibilityQueue
	q.init()
	t0 := time.Now()
	runs := []store.RunKey{{Namespace: "n", WorkflowID: "a", RunID: "1"}, {Namespace: "n", WorkflowID: "b", RunID: "2"}, {Namespace: "n", WorkflowID: "c", RunID: "3"}}
	for i, k := range runs {
		q.add(k, store.TaskKey{TaskID: int64(i)}, nil)
		q.pending[k].queued = t0.Add(time.Duration(i) * time.Second)
	}
	// A second update of the first run joins its first.
	q.add(runs[0], store.TaskKey{TaskID: 9}, nil)

	if got, next := q.take(visibilityBatch, t0); got != nil || !next.Equal(t0) {
		t.Fatalf("nothing is old enough yet: took %d, next %v, want none and %v", len(got), next, t0)
	}
	got, _ := q.take(visibilityBatch, t0.Add(1500*time.Millisecond))
	if len(got) != 2 || got[runs[0]] == nil || got[runs[1]] == nil || len(got[runs[0]].keys) != 2 {
		t.Fatalf("took %v, want runs a (both updates) and b", got)
	}
	got, _ = q.take(visibilityBatch, time.Time{})
	if len(got) != 1 || got[runs[2]] == nil {
		t.Fatalf("a sync took %v, want run c", got)
	}

	for i := range visibilityMaxQueued + 1 {
		q.add(store.RunKey{Namespace: "n", WorkflowID: "w", RunID: strconv.Itoa(i)}, store.TaskKey{TaskID: int64(i)}, nil)
	}
	if got, _ := q.take(visibilityBatch, t0); len(got) != visibilityBatch {
		t.Fatalf("past %d runs waiting took %d, want a full batch of the oldest", visibilityMaxQueued, len(got))
	}
}
