package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

// testDeleteManyRuns: one batch deletes many runs (more than one SQL
// statement holds) with their history, documents and the current rows that
// point at them, and nothing else: not a run's successor that replaced it
// as current, not the runs left out, not a run of another namespace with
// the same ids. Deleting them again, or runs that never existed, is no
// error.
func testDeleteManyRuns(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	s.createNamespace("other")
	const n = 1100 // past the SQL backends' 1000 runs per statement
	doc := bytes.Repeat([]byte("d"), s.st.Limits().DocumentThreshold+1)
	var all []store.RunKey
	docs := map[store.RunKey]string{}
	for i := 0; i < n; i += 100 {
		var b store.Batch
		b.ShardID, b.RangeID = 1, sh.RangeID
		for j := i; j < min(i+100, n); j++ {
			k := key(fmt.Sprint("wf-", j), fmt.Sprint("run-", j))
			e := newExecution(k)
			if j%50 == 0 {
				p, err := b.AddPayload(k, append(doc, byte(j)), s.st.Limits())
				s.must(err)
				docs[k] = p.Doc.ID
				e.Variables = map[string]store.Payload{"doc": p}
			}
			// Two history blocks each.
			e.NextEventID = 4
			b.Runs = append(b.Runs, store.RunWrite{Execution: e, Current: store.CurrentCreate,
				History: []store.HistoryBlock{block(1, 2, "started"), block(3, 3, "closed")}})
			all = append(all, k)
		}
		s.must(s.st.Commit(s.ctx, &b))
	}
	// wf-0's run is replaced as current by a successor, which stays.
	succ := newExecution(key("wf-0", "run-0-next"))
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: succ, Current: store.CurrentReplace, PrevRunID: "run-0", History: []store.HistoryBlock{block(1, 2, "started")}}}}))
	// The same ids in another namespace stay.
	twin := store.RunKey{Namespace: "other", WorkflowID: "wf-1", RunID: "run-1"}
	e := newExecution(twin)
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: e, Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "started")}}}}))

	// Every run but the last 10 goes, with two that never existed, in one batch.
	gone, kept := all[:n-10], all[n-10:]
	del := append(slices.Clone(gone), key("never", "was"), key("wf-1", "other-run"))
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, DeleteRuns: del}))
	for i, k := range gone {
		if i%97 != 0 && docs[k] == "" {
			continue // a sample, and every run with a document
		}
		s.wantNoRun(sh, k)
		_, err := s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k})
		s.wantErr(err, store.ErrNotFound)
		if id := docs[k]; id != "" {
			_, _, err := s.st.GetDocument(s.ctx, 1, k, id)
			s.wantErr(err, store.ErrNotFound)
		}
		cur, err := s.st.GetCurrentExecution(s.ctx, 1, k.Namespace, k.WorkflowID)
		if k.WorkflowID == "wf-0" {
			s.must(err)
			if cur.RunID != succ.RunID {
				t.Fatalf("wf-0's current row points at %s, want its successor %s", cur.RunID, succ.RunID)
			}
		} else {
			s.wantErr(err, store.ErrNotFound)
		}
	}
	for _, k := range kept {
		if got := s.getRun(sh, k); got.RunKey != k {
			t.Fatalf("kept run %s reads as %s", k, got.RunKey)
		}
		if h := s.history(1, k); len(h) != 2 {
			t.Fatalf("kept run %s has %d history blocks, want 2", k, len(h))
		}
		cur, err := s.st.GetCurrentExecution(s.ctx, 1, k.Namespace, k.WorkflowID)
		s.must(err)
		if cur.RunID != k.RunID {
			t.Fatalf("current row of %s points at %s", k, cur.RunID)
		}
	}
	equal(t, "successor", s.getRun(sh, succ.RunKey), succ)
	equal(t, "other namespace's run", s.getRun(sh, twin), e)
	if h := s.history(1, twin); len(h) != 1 {
		t.Fatalf("other namespace's run has %d history blocks, want 1", len(h))
	}
	// Again: nothing left to delete, no error.
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, DeleteRuns: del}))
	s.getRun(sh, kept[0])
	// A stale owner deletes nothing.
	s.acquire(1, "new owner")
	err := s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, DeleteRuns: kept})
	s.wantErr(err, store.ErrShardOwnershipLost)
	s.getRun(sh, kept[0])
}

// testDeleteManyVisibility: one call deletes the records (and attributes)
// of many runs of one namespace and nothing else; records that do not exist
// are no error, so the call may be repeated.
func testDeleteManyVisibility(t *testing.T, s *suite) {
	all := s.seedVisibility(40)
	s.createNamespace("other")
	twin := all[0] // its run id goes in "default"
	twin.Namespace = "other"
	s.must(s.st.UpsertVisibility(s.ctx, twin))
	var ids []string
	for _, r := range all[:30] {
		ids = append(ids, r.RunID)
	}
	ids = append(ids, "no-such-run")
	s.must(s.st.DeleteVisibility(s.ctx, "default", ids...))
	s.must(s.st.DeleteVisibility(s.ctx, "default", ids...))
	s.must(s.st.DeleteVisibility(s.ctx, "default"))
	for _, r := range all[:30] {
		_, err := s.st.GetVisibility(s.ctx, r.Namespace, r.RunID)
		s.wantErr(err, store.ErrNotFound)
	}
	equal(t, "left", s.list(store.RunFilter{Namespace: "default"}, 7), all[30:])
	// Their attributes are gone from searches too.
	f := store.RunFilter{Namespace: "default", Attributes: map[string]string{"region": "eu"}}
	equal(t, "left by attribute", s.list(f, 0), filter(all[30:], func(r store.VisibilityRecord) bool { return r.Attributes["region"] == "eu" }))
	got, err := s.st.GetVisibility(s.ctx, "other", twin.RunID)
	s.must(err)
	equal(t, "other namespace's record", got, twin)
	s.wantErr(s.st.DeleteVisibility(s.ctx, "default", "ok", ""), store.ErrInvalidArgument)
	s.wantErr(s.st.DeleteVisibility(s.ctx, "", "ok"), store.ErrInvalidArgument)
}

// testTimerPartitions: timer tasks of a partition are a queue of their
// own: reads and completions of one partition leave the other alone.
func testTimerPartitions(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	first, _ := sh.TaskIDBlock()
	base := store.Time(time.Now())
	k := key("wf", "r")
	timer := func(partition string, offset time.Duration, id int64) store.Task {
		return store.Task{Category: store.CategoryTimer, Partition: partition, Key: store.TaskKey{FireTime: base.Add(offset), TaskID: first + id}, Type: 6, Run: k}
	}
	in := []store.Task{timer("", time.Second, 1), timer("retention", time.Second, 2), timer("retention", -time.Second, 3),
		timer("", -time.Second, 4), timer("retention", time.Hour, 5)}
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Tasks: in}))
	main := store.TaskRange{Category: store.CategoryTimer}
	ret := store.TaskRange{Category: store.CategoryTimer, Partition: "retention"}
	equal(t, "main timers", s.tasks(1, main), []store.Task{in[3], in[0]})
	equal(t, "retention timers", s.tasks(1, ret), []store.Task{in[2], in[1], in[4]})
	due := ret
	due.Max = store.TaskKey{FireTime: base.Add(time.Minute)}
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, CompleteTasks: []store.TaskRange{due}}))
	equal(t, "retention timers after complete", s.tasks(1, ret), []store.Task{in[4]})
	equal(t, "main timers after the other's complete", s.tasks(1, main), []store.Task{in[3], in[0]})
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, CompleteTasks: []store.TaskRange{main}}))
	equal(t, "retention timers after the other's complete", s.tasks(1, ret), []store.Task{in[4]})
	if got := s.tasks(1, main); len(got) != 0 {
		t.Fatalf("main timers left: %v", got)
	}
}
