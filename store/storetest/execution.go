package storetest

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

func testMigrate(t *testing.T, s *suite) {
	from, to, err := s.st.Migrate(s.ctx)
	s.must(err)
	if from != to || to < 1 {
		t.Fatalf("second migration went from %d to %d; want no change at a version >= 1", from, to)
	}
	// The data survives a migration run.
	if _, err := s.st.GetNamespace(s.ctx, "default"); err != nil {
		t.Fatal(err)
	}
}

func testAcquireShard(t *testing.T, s *suite) {
	_, err := s.st.GetShard(s.ctx, 3)
	s.wantErr(err, store.ErrShardNotFound)

	a := s.acquire(3, "node-a")
	if a.RangeID != 1 || a.Owner != "node-a" || a.ID != 3 {
		t.Fatalf("first acquire: %+v", a)
	}
	got, err := s.st.GetShard(s.ctx, 3)
	s.must(err)
	equal(t, "shard", got, a)

	// Renewing with the right range_id raises it.
	r, err := s.st.AcquireShard(s.ctx, store.AcquireShardRequest{ShardID: 3, Owner: "node-a", PrevRangeID: 1})
	s.must(err)
	if r.RangeID != 2 {
		t.Fatalf("renew: range_id %d, want 2", r.RangeID)
	}
	// Another owner takes it.
	b := s.acquire(3, "node-b")
	if b.RangeID != 3 || b.Owner != "node-b" {
		t.Fatalf("steal: %+v", b)
	}
	// The old owner's renewal fails and changes nothing.
	_, err = s.st.AcquireShard(s.ctx, store.AcquireShardRequest{ShardID: 3, Owner: "node-a", PrevRangeID: 2})
	s.wantErr(err, store.ErrShardOwnershipLost)
	var lost *store.ShardOwnershipLostError
	if !errors.As(err, &lost) || lost.ActualRangeID != 3 {
		t.Fatalf("want ShardOwnershipLostError with actual range 3, got %v", err)
	}
	got, err = s.st.GetShard(s.ctx, 3)
	s.must(err)
	if got.Owner != "node-b" || got.RangeID != 3 {
		t.Fatalf("after failed renewal: %+v", got)
	}
	// The owner releases it: the owner is empty, range_id moves on, and the
	// next owner's acquire sees who held it last was no one.
	rel, err := s.st.AcquireShard(s.ctx, store.AcquireShardRequest{ShardID: 3, PrevRangeID: 3})
	s.must(err)
	if rel.Owner != "" || rel.RangeID != 4 {
		t.Fatalf("release: %+v", rel)
	}
	got, err = s.st.GetShard(s.ctx, 3)
	s.must(err)
	if got.Owner != "" || got.RangeID != 4 {
		t.Fatalf("after release: %+v", got)
	}
	// Conditional acquire of a shard that does not exist fails.
	_, err = s.st.AcquireShard(s.ctx, store.AcquireShardRequest{ShardID: 4, Owner: "x", PrevRangeID: 1})
	s.wantErr(err, store.ErrShardOwnershipLost)
}

func testTaskIDsGrow(t *testing.T, s *suite) {
	var lastLimit int64
	for i := range 5 {
		sh := s.acquire(1, fmt.Sprint("node-", i%2))
		first, limit := sh.TaskIDBlock()
		if first < lastLimit || limit <= first {
			t.Fatalf("acquire %d: block [%d, %d) does not follow %d", i, first, limit, lastLimit)
		}
		// Use the block: the ids written under one owner stay below the
		// next owner's.
		k := key(fmt.Sprint("wf-", i), "r")
		s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Tasks: []store.Task{transfer(limit-1, k)}}))
		lastLimit = limit
	}
	ts := s.tasks(1, transferRange())
	for i := 1; i < len(ts); i++ {
		if ts[i].Key.TaskID <= ts[i-1].Key.TaskID {
			t.Fatalf("task ids not increasing: %v", ts)
		}
	}
}

func testFencing(t *testing.T, s *suite) {
	old := s.acquire(7, "node-a")
	k := key("wf", "r1")
	e := s.createRun(old, k)
	cur := s.acquire(7, "node-b")

	// Every kind of write under the old range_id fails and writes nothing.
	_, err := s.updateRun(old, e, "stale")
	s.wantErr(err, store.ErrShardOwnershipLost)
	err = s.st.Commit(s.ctx, &store.Batch{ShardID: 7, RangeID: old.RangeID,
		Runs:      []store.RunWrite{{Execution: newExecution(key("wf2", "r2")), Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")}}},
		Tasks:     []store.Task{transfer(5, k)},
		AckLevels: &store.AckLevels{Transfer: 99},
	})
	s.wantErr(err, store.ErrShardOwnershipLost)
	s.wantNoRun(cur, key("wf2", "r2"))
	if ts := s.tasks(7, transferRange()); len(ts) != 0 {
		t.Fatalf("stale owner wrote tasks: %v", ts)
	}
	sh, err := s.st.GetShard(s.ctx, 7)
	s.must(err)
	if sh.AckLevels.Transfer != 0 {
		t.Fatalf("stale owner wrote ack levels: %+v", sh.AckLevels)
	}
	equal(t, "run after stale write", s.getRun(cur, k), e)

	// The new owner writes.
	if _, err := s.updateRun(cur, e, "fresh"); err != nil {
		t.Fatal(err)
	}
	equal(t, "history", eventsOf(s.history(7, k)), []string{"1-2:started", "3-3:fresh"})

	// A shard that was never acquired refuses writes.
	err = s.st.Commit(s.ctx, &store.Batch{ShardID: 99, RangeID: 1, Tasks: []store.Task{transfer(1, k)}})
	s.wantErr(err, store.ErrShardNotFound)
}

func testCreateRun(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("order-1", "run-1")
	e := s.createRun(sh, k)
	equal(t, "execution", s.getRun(sh, k), e)

	cur, err := s.st.GetCurrentExecution(s.ctx, 1, "default", "order-1")
	s.must(err)
	equal(t, "current", cur, store.CurrentExecution{Namespace: "default", WorkflowID: "order-1", RunID: "run-1",
		CreateRequestID: "req-run-1", State: store.StateRunning, Status: store.StatusRunning, StartTime: e.Info.StartTime})

	// A second run of the same workflow id is refused with the current run.
	err = s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: newExecution(key("order-1", "run-2")), Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")},
	}}})
	var exists *store.WorkflowExistsError
	if !errors.As(err, &exists) || exists.Current.RunID != "run-1" || !errors.Is(err, store.ErrWorkflowExists) {
		t.Fatalf("want WorkflowExistsError naming run-1, got %v", err)
	}
	s.wantNoRun(sh, key("order-1", "run-2"))

	// Creating the same run twice (without touching current) is refused.
	err = s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{{Execution: newExecution(k)}}})
	s.wantErr(err, store.ErrConditionFailed)

	_, err = s.st.GetCurrentExecution(s.ctx, 1, "default", "nope")
	s.wantErr(err, store.ErrNotFound)
	_, err = s.st.GetExecution(s.ctx, 1, key("order-1", "nope"))
	s.wantErr(err, store.ErrNotFound)
	_, err = s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: key("order-1", "nope")})
	s.wantErr(err, store.ErrNotFound)
}

func testUpdateRun(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("wf", "r")
	e := s.createRun(sh, k)
	e2, err := s.updateRun(sh, e, "step-completed")
	s.must(err)
	e3 := next(e2, 1)
	e3.Steps = nil
	e3.Status, e3.State = store.StatusCompleted, store.StateClosed
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: e3, ExpectedDBVersion: e2.DBVersion, Current: store.CurrentUpdate,
		History: []store.HistoryBlock{block(4, 4, "completed")},
	}}}))
	got := s.getRun(sh, k)
	equal(t, "closed run", got, e3)
	cur, err := s.st.GetCurrentExecution(s.ctx, 1, "default", "wf")
	s.must(err)
	if cur.State != store.StateClosed || cur.Status != store.StatusCompleted {
		t.Fatalf("current row not updated: %+v", cur)
	}

	// A write expecting an old version fails and writes nothing.
	_, err = s.updateRun(sh, e, "stale")
	var cf *store.ConditionFailedError
	if !errors.As(err, &cf) || cf.Run != k {
		t.Fatalf("want ConditionFailedError for %s, got %v", k, err)
	}
	equal(t, "run after failed write", s.getRun(sh, k), e3)
	equal(t, "history", eventsOf(s.history(1, k)), []string{"1-2:started", "3-3:step-completed", "4-4:completed"})

	// Updating a run that does not exist fails.
	_, err = s.updateRun(sh, newExecution(key("wf", "ghost")), "x")
	s.wantErr(err, store.ErrConditionFailed)
}

// testRaceConditionalWrite races goroutines on the same conditional write:
// exactly one wins each round.
func testRaceConditionalWrite(t *testing.T, s *suite) {
	sh := s.acquire(2, "n")
	k := key("contended", "r")
	e := s.createRun(sh, k)
	const racers = 8
	for round := range 5 {
		var wg sync.WaitGroup
		errs := make([]error, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.updateRun(sh, e, fmt.Sprintf("round-%d-racer-%d", round, i))
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrConditionFailed):
				t.Fatalf("racer failed with %v, want ErrConditionFailed", err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, wins)
		}
		e = s.getRun(sh, k)
	}
	h := s.history(2, k)
	if len(h) != 6 || h[5].LastEventID != e.NextEventID-1 {
		t.Fatalf("history after races: %v", eventsOf(h))
	}
}

func testRaceCreate(t *testing.T, s *suite) {
	sh := s.acquire(2, "n")
	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.st.Commit(s.ctx, &store.Batch{ShardID: 2, RangeID: sh.RangeID, Runs: []store.RunWrite{{
				Execution: newExecution(key("same-id", fmt.Sprint("run-", i))), Current: store.CurrentCreate,
				History: []store.HistoryBlock{block(1, 2, "x")},
			}}})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, store.ErrWorkflowExists):
			t.Fatalf("racer failed with %v, want ErrWorkflowExists", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d runs created for one workflow id, want 1", wins)
	}
}

// testRaceAcquire races owners for one shard: every one gets a distinct
// range_id, and only the last one can write.
func testRaceAcquire(t *testing.T, s *suite) {
	const racers = 6
	var wg sync.WaitGroup
	shards := make([]store.Shard, racers)
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shards[i], errs[i] = s.st.AcquireShard(s.ctx, store.AcquireShardRequest{ShardID: 5, Owner: fmt.Sprint("node-", i)})
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	var top store.Shard
	for i, err := range errs {
		if err != nil {
			// Two first acquisitions may collide on creating the row; the
			// loser is told it lost.
			s.wantErr(err, store.ErrShardOwnershipLost)
			continue
		}
		if seen[shards[i].RangeID] {
			t.Fatalf("range_id %d granted twice", shards[i].RangeID)
		}
		seen[shards[i].RangeID] = true
		if shards[i].RangeID > top.RangeID {
			top = shards[i]
		}
	}
	for i, err := range errs {
		if err != nil {
			continue
		}
		err := s.st.Commit(s.ctx, &store.Batch{ShardID: 5, RangeID: shards[i].RangeID, Tasks: []store.Task{transfer(int64(i+1), key("w", "r"))}})
		if shards[i].RangeID == top.RangeID {
			s.must(err)
		} else {
			s.wantErr(err, store.ErrShardOwnershipLost)
		}
	}
}

func testBatchAtomic(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	a := s.createRun(sh, key("a", "r"))
	// The second run's condition fails: the first run's write, the tasks,
	// the documents, the requests and the new run are all discarded.
	var b store.Batch
	b.ShardID, b.RangeID = 1, sh.RangeID
	big := bytes.Repeat([]byte("doc"), 200_000)
	p, err := b.AddPayload(key("new", "r"), big, s.st.Limits())
	s.must(err)
	if p.Doc == nil {
		t.Fatal("large payload not offloaded")
	}
	b.Runs = []store.RunWrite{
		{Execution: next(a, 1), ExpectedDBVersion: a.DBVersion, History: []store.HistoryBlock{block(3, 3, "ok")}},
		{Execution: newExecution(key("new", "r")), Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")}},
		{Execution: next(a, 1), ExpectedDBVersion: 42}, // a run that does not exist
	}
	b.Runs[2].Execution.RunKey = key("missing", "r")
	b.Runs[2].Execution.DBVersion = 43
	b.Tasks = []store.Task{transfer(10, a.RunKey), {Category: store.CategoryTimer, Key: store.TaskKey{FireTime: time.Now(), TaskID: 11}, Run: a.RunKey}}
	b.Requests = []store.Request{{Kind: store.RequestStart, Namespace: "default", WorkflowID: "new", RequestID: "q", RunID: "r", CreatedAt: store.Now(), ExpiresAt: store.Now().Add(time.Hour)}}
	err = s.st.Commit(s.ctx, &b)
	s.wantErr(err, store.ErrConditionFailed)

	equal(t, "run a", s.getRun(sh, a.RunKey), a)
	equal(t, "history of a", eventsOf(s.history(1, a.RunKey)), []string{"1-2:started"})
	s.wantNoRun(sh, key("new", "r"))
	_, err = s.st.GetCurrentExecution(s.ctx, 1, "default", "new")
	s.wantErr(err, store.ErrNotFound)
	if ts := s.tasks(1, transferRange()); len(ts) != 0 {
		t.Fatalf("tasks written by a failed batch: %v", ts)
	}
	if ts := s.tasks(1, store.TaskRange{Category: store.CategoryTimer}); len(ts) != 0 {
		t.Fatalf("timers written by a failed batch: %v", ts)
	}
	_, err = s.st.GetRequest(s.ctx, 1, b.Requests[0].Key())
	s.wantErr(err, store.ErrNotFound)
	_, _, err = s.st.GetDocument(s.ctx, 1, key("new", "r"), p.Doc.ID)
	s.wantErr(err, store.ErrNotFound)
}

// testGroupCommit writes the transitions of many runs of a shard in one
// batch, as the engine's group commit does.
func testGroupCommit(t *testing.T, s *suite) {
	sh := s.acquire(4, "n")
	const runs = 50
	b := store.Batch{ShardID: 4, RangeID: sh.RangeID}
	first, _ := sh.TaskIDBlock()
	for i := range runs {
		k := key(fmt.Sprint("wf-", i), "r")
		b.Runs = append(b.Runs, store.RunWrite{Execution: newExecution(k), Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")}})
		b.Tasks = append(b.Tasks, transfer(first+int64(2*i), k), transfer(first+int64(2*i+1), k))
	}
	s.must(s.st.Commit(s.ctx, &b))
	for i := range runs {
		s.getRun(sh, key(fmt.Sprint("wf-", i), "r"))
	}
	if n := len(s.tasks(4, transferRange())); n != 2*runs {
		t.Fatalf("%d tasks, want %d", n, 2*runs)
	}
}

func testCurrentModes(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	e1 := s.createRun(sh, key("wf", "r1"))
	// Replacing with the wrong previous run fails.
	e2 := newExecution(key("wf", "r2"))
	err := s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: e2, Current: store.CurrentReplace, PrevRunID: "r0", History: []store.HistoryBlock{block(1, 2, "x")},
	}}})
	s.wantErr(err, store.ErrConditionFailed)
	// Continue-as-new: close r1 and start r2 in one batch.
	closed := next(e1, 1)
	closed.State, closed.Status = store.StateClosed, store.StatusContinuedAsNew
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{
		{Execution: closed, ExpectedDBVersion: e1.DBVersion, History: []store.HistoryBlock{block(3, 3, "continued")}},
		{Execution: e2, Current: store.CurrentReplace, PrevRunID: "r1", History: []store.HistoryBlock{block(1, 2, "x")}},
	}}))
	cur, err := s.st.GetCurrentExecution(s.ctx, 1, "default", "wf")
	s.must(err)
	if cur.RunID != "r2" || cur.CreateRequestID != "req-r2" {
		t.Fatalf("current after replace: %+v", cur)
	}
	// The old run is no longer current: CurrentUpdate on it fails.
	_, err = s.updateRunCurrent(sh, closed)
	s.wantErr(err, store.ErrConditionFailed)
	equal(t, "old run", s.getRun(sh, key("wf", "r1")), closed)

	// A run created and continued as new in the same batch.
	first, second := newExecution(key("wf2", "r1")), newExecution(key("wf2", "r2"))
	first.State, first.Status = store.StateClosed, store.StatusContinuedAsNew
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{
		{Execution: first, Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")}},
		{Execution: second, Current: store.CurrentReplace, PrevRunID: "r1", History: []store.HistoryBlock{block(1, 2, "x")}},
	}}))
	cur, err = s.st.GetCurrentExecution(s.ctx, 1, "default", "wf2")
	s.must(err)
	if cur.RunID != "r2" {
		t.Fatalf("current after create and continue: %+v", cur)
	}
	equal(t, "first run", s.getRun(sh, key("wf2", "r1")), first)
}

func (s *suite) updateRunCurrent(sh store.Shard, e *store.Execution) (*store.Execution, error) {
	n := next(e, 1)
	return n, s.st.Commit(s.ctx, &store.Batch{ShardID: sh.ID, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: n, ExpectedDBVersion: e.DBVersion, Current: store.CurrentUpdate,
		History: []store.HistoryBlock{block(e.NextEventID, e.NextEventID, "x")},
	}}})
}

func testHistoryPaging(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("long", "r")
	e := s.createRun(sh, k)
	want := []string{"1-2:started"}
	for i := range 24 {
		var err error
		e, err = s.updateRun(sh, e, fmt.Sprint("e", i))
		s.must(err)
		want = append(want, fmt.Sprintf("%d-%d:e%d", e.NextEventID-1, e.NextEventID-1, i))
	}
	equal(t, "history", eventsOf(s.history(1, k)), want)

	// Pages: 25 blocks in pages of 10 are 10, 10, 5.
	var sizes []int
	var token []byte
	for {
		p, err := s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k, PageSize: 10, PageToken: token})
		s.must(err)
		sizes = append(sizes, len(p.Blocks))
		if p.NextPageToken == nil {
			break
		}
		token = p.NextPageToken
	}
	equal(t, "page sizes", sizes, []int{10, 10, 5})

	// From an event in the middle: the block holding it comes first.
	p, err := s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k, FromEventID: 20, PageSize: 2})
	s.must(err)
	equal(t, "from 20", eventsOf(p.Blocks), want[18:20])
	// A token of another query, or garbage, is refused.
	tok, err := s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k, PageSize: 1})
	s.must(err)
	_, err = s.st.ReadTasks(s.ctx, store.ReadTasksRequest{ShardID: 1, Range: transferRange(), PageToken: tok.NextPageToken})
	s.wantErr(err, store.ErrInvalidPageToken)
	_, err = s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k, PageToken: []byte("garbage")})
	s.wantErr(err, store.ErrInvalidPageToken)
}

// testHistoryInvisible: a block from a failed write is never visible, and a
// retry of the same transition replaces it.
func testHistoryInvisible(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("wf", "r")
	e := s.createRun(sh, k)
	// A write that fails its condition.
	bad := next(e, 1)
	bad.DBVersion = e.DBVersion + 6
	err := s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: bad, ExpectedDBVersion: e.DBVersion + 5, History: []store.HistoryBlock{block(3, 3, "lost")},
	}}})
	s.wantErr(err, store.ErrConditionFailed)
	equal(t, "history after failed write", eventsOf(s.history(1, k)), []string{"1-2:started"})
	p, err := s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k, FromEventID: 3})
	s.must(err)
	if len(p.Blocks) != 0 {
		t.Fatalf("uncommitted block visible: %v", eventsOf(p.Blocks))
	}
	// The retry with the same event ids wins.
	_, err = s.updateRun(sh, e, "retried")
	s.must(err)
	equal(t, "history after retry", eventsOf(s.history(1, k)), []string{"1-2:started", "3-3:retried"})
}

func testCompression(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("big", "r")
	e := newExecution(k)
	compressible := bytes.Repeat([]byte("event payload that repeats "), 40_000) // ~1 MiB
	random := make([]byte, 300_000)
	_, _ = rand.Read(random)
	e.Variables["blob"] = store.Payload{Data: random[:100_000]}
	e.NextEventID = 4
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: e, Current: store.CurrentCreate,
		History: []store.HistoryBlock{
			{FirstEventID: 1, LastEventID: 2, TxnID: 1, Events: compressible},
			{FirstEventID: 3, LastEventID: 3, TxnID: 1, Events: random},
		},
	}}}))
	h := s.history(1, k)
	if len(h) != 2 {
		t.Fatalf("%d blocks", len(h))
	}
	sameBytes(t, "compressible block", h[0].Events, compressible)
	sameBytes(t, "random block", h[1].Events, random)
	equal(t, "state with a large variable", s.getRun(sh, k), e)
}

func testTransferTasks(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	first, _ := sh.TaskIDBlock()
	k := key("wf", "r")
	var want []store.Task
	for i := range 10 {
		want = append(want, transfer(first+int64(i), k))
	}
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Tasks: want}))
	equal(t, "all tasks", s.tasks(1, transferRange()), want)
	// A bounded range [first+2, first+5).
	r := store.TaskRange{Category: store.CategoryTransfer, Min: store.TaskKey{TaskID: first + 2}, Max: store.TaskKey{TaskID: first + 5}}
	equal(t, "range", s.tasks(1, r), want[2:5])
	// Other categories and shards are apart.
	if ts := s.tasks(1, store.TaskRange{Category: store.CategoryReplication}); len(ts) != 0 {
		t.Fatalf("replication queue holds %v", ts)
	}
	if ts := s.tasks(2, transferRange()); len(ts) != 0 {
		t.Fatalf("shard 2 holds %v", ts)
	}
	// Completing a range deletes exactly it.
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, CompleteTasks: []store.TaskRange{
		{Category: store.CategoryTransfer, Max: store.TaskKey{TaskID: first + 4}},
	}}))
	equal(t, "after complete", s.tasks(1, transferRange()), want[4:])
}

func testTimerTasks(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	first, _ := sh.TaskIDBlock()
	base := store.Time(time.Now())
	k := key("wf", "r")
	timer := func(offset time.Duration, id int64) store.Task {
		return store.Task{Category: store.CategoryTimer, Key: store.TaskKey{FireTime: base.Add(offset), TaskID: first + id}, Type: 2, Run: k}
	}
	// Written out of order; read back by fire time, then id.
	in := []store.Task{timer(3*time.Second, 1), timer(time.Second, 2), timer(2*time.Second, 3), timer(time.Second, 0), timer(-time.Second, 4)}
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Tasks: in}))
	want := []store.Task{in[4], in[3], in[1], in[2], in[0]}
	equal(t, "timers", s.tasks(1, store.TaskRange{Category: store.CategoryTimer}), want)
	// Due timers: everything firing before base+1.5s.
	due := store.TaskRange{Category: store.CategoryTimer, Max: store.TaskKey{FireTime: base.Add(1500 * time.Millisecond)}}
	equal(t, "due", s.tasks(1, due), want[:3])
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, CompleteTasks: []store.TaskRange{due}}))
	equal(t, "after complete", s.tasks(1, store.TaskRange{Category: store.CategoryTimer}), want[3:])
	// Times round-trip at the store's precision.
	got := s.tasks(1, store.TaskRange{Category: store.CategoryTimer})
	if !got[0].Key.FireTime.Equal(base.Add(2 * time.Second)) {
		t.Fatalf("fire time %v, want %v", got[0].Key.FireTime, base.Add(2*time.Second))
	}
}

func testReplicationTasks(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("wf", "r")
	repl := store.Task{Category: store.CategoryReplication, Key: store.TaskKey{TaskID: 100}, Type: 3, Run: k, Data: []byte("r")}
	dlqA := store.Task{Category: store.CategoryReplicationDLQ, Partition: "cluster-a", Key: store.TaskKey{TaskID: 5}, Run: k, Data: []byte("a")}
	dlqB := store.Task{Category: store.CategoryReplicationDLQ, Partition: "cluster-b", Key: store.TaskKey{TaskID: 5}, Run: k, Data: []byte("b")}
	cross := store.Task{Category: store.CategoryCrossCluster, Partition: "cluster-b", Key: store.TaskKey{TaskID: 6}, Run: k, Data: []byte("c")}
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Tasks: []store.Task{repl, dlqA, dlqB, cross}}))
	equal(t, "replication", s.tasks(1, store.TaskRange{Category: store.CategoryReplication}), []store.Task{repl})
	equal(t, "dlq a", s.tasks(1, store.TaskRange{Category: store.CategoryReplicationDLQ, Partition: "cluster-a"}), []store.Task{dlqA})
	equal(t, "dlq b", s.tasks(1, store.TaskRange{Category: store.CategoryReplicationDLQ, Partition: "cluster-b"}), []store.Task{dlqB})
	equal(t, "cross-cluster", s.tasks(1, store.TaskRange{Category: store.CategoryCrossCluster, Partition: "cluster-b"}), []store.Task{cross})
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, CompleteTasks: []store.TaskRange{
		{Category: store.CategoryReplicationDLQ, Partition: "cluster-a", Max: store.TaskKey{TaskID: 6}},
	}}))
	if ts := s.tasks(1, store.TaskRange{Category: store.CategoryReplicationDLQ, Partition: "cluster-a"}); len(ts) != 0 {
		t.Fatalf("dlq a after purge: %v", ts)
	}
	equal(t, "dlq b after purge of a", s.tasks(1, store.TaskRange{Category: store.CategoryReplicationDLQ, Partition: "cluster-b"}), []store.Task{dlqB})
}

func testAckLevels(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	acks := store.AckLevels{Transfer: 1 << 20, Timer: store.TaskKey{FireTime: store.Now(), TaskID: 7}, Replication: 3,
		Retention: store.TaskKey{FireTime: store.Now().Add(-time.Hour), TaskID: 9}}
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, AckLevels: &acks}))
	got, err := s.st.GetShard(s.ctx, 1)
	s.must(err)
	equal(t, "ack levels", got.AckLevels, acks)
	// They survive an owner change.
	again := s.acquire(1, "other")
	equal(t, "ack levels after acquire", again.AckLevels, acks)
}

func request(kind store.RequestKind, wf, id, run string, ttl time.Duration) store.Request {
	now := store.Now()
	return store.Request{Kind: kind, Namespace: "default", WorkflowID: wf, RequestID: id, RunID: run, CreatedAt: now, ExpiresAt: now.Add(ttl)}
}

func testRequestDedup(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("wf", "r1")
	req := request(store.RequestStart, "wf", "start-1", "r1", time.Hour)
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID,
		Runs:     []store.RunWrite{{Execution: newExecution(k), Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")}}},
		Requests: []store.Request{req},
	}))
	got, err := s.st.GetRequest(s.ctx, 1, req.Key())
	s.must(err)
	equal(t, "request", got, req)

	// The same request id again: the whole batch is refused, naming the run.
	dup := request(store.RequestStart, "wf", "start-1", "r2", time.Hour)
	err = s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID,
		Tasks: []store.Task{transfer(1, k)}, Requests: []store.Request{dup}})
	var de *store.DuplicateRequestError
	if !errors.As(err, &de) || de.Existing.RunID != "r1" || !errors.Is(err, store.ErrDuplicateRequest) {
		t.Fatalf("want DuplicateRequestError naming r1, got %v", err)
	}
	if ts := s.tasks(1, transferRange()); len(ts) != 0 {
		t.Fatalf("tasks of a refused batch: %v", ts)
	}
	// Other kinds, workflow ids and request ids are distinct rows.
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Requests: []store.Request{
		request(store.RequestSignal, "wf", "start-1", "r1", time.Hour),
		request(store.RequestCancel, "wf", "start-1", "r1", time.Hour),
		request(store.RequestReset, "wf", "start-1", "r1", time.Hour),
		request(store.RequestTerminate, "wf", "start-1", "r1", time.Hour),
		request(store.RequestStart, "wf-other", "start-1", "r9", time.Hour),
		request(store.RequestStart, "wf", "start-2", "r1", time.Hour),
	}}))
}

func testRequestExpiry(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	// before is taken ahead of the request's own clock reading, and the
	// stores keep expiry in whole milliseconds, hence the margin below.
	before := time.Now()
	short := request(store.RequestSignal, "wf", "sig", "r1", 50*time.Millisecond)
	long := request(store.RequestSignal, "wf", "sig-long", "r1", time.Hour)
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Requests: []store.Request{short, long}}))
	// Found while it lives (a loaded machine may take longer than its
	// 50 ms to commit and read it back: then it may be gone already).
	if _, err := s.st.GetRequest(s.ctx, 1, short.Key()); err != nil && time.Since(before) < 45*time.Millisecond {
		t.Fatal(err)
	}
	time.Sleep(time.Until(before.Add(120 * time.Millisecond)))
	_, err := s.st.GetRequest(s.ctx, 1, short.Key())
	s.wantErr(err, store.ErrNotFound)
	// An expired request id may be used again.
	again := request(store.RequestSignal, "wf", "sig", "r2", time.Hour)
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Requests: []store.Request{again}}))
	got, err := s.st.GetRequest(s.ctx, 1, again.Key())
	s.must(err)
	if got.RunID != "r2" {
		t.Fatalf("reused request id points at %s, want r2", got.RunID)
	}
	// Purge removes expired rows only.
	expired := request(store.RequestCancel, "wf", "c", "r1", 10*time.Millisecond)
	expiredTerm := request(store.RequestTerminate, "wf", "t", "r1", 10*time.Millisecond)
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Requests: []store.Request{expired, expiredTerm}}))
	time.Sleep(60 * time.Millisecond)
	n, err := s.st.PurgeExpiredRequests(s.ctx, 1, store.Now())
	s.must(err)
	if n != 2 {
		t.Fatalf("purged %d rows, want 2 (a cancel and a terminate)", n)
	}
	if _, err := s.st.GetRequest(s.ctx, 1, long.Key()); err != nil {
		t.Fatalf("unexpired row purged: %v", err)
	}
}

func testDocuments(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	l := s.st.Limits()
	k := key("docs", "r")
	var b store.Batch
	b.ShardID, b.RangeID = 1, sh.RangeID
	small := []byte("small input")
	large := bytes.Repeat([]byte("large document "), l.DocumentThreshold/10)
	ps, err := b.AddPayload(k, small, l)
	s.must(err)
	pl, err := b.AddPayload(k, large, l)
	s.must(err)
	pl2, err := b.AddPayload(k, large, l) // the same bytes again
	s.must(err)
	if ps.Doc != nil || !bytes.Equal(ps.Data, small) {
		t.Fatalf("small payload offloaded: %+v", ps)
	}
	if pl.Doc == nil || pl.Data != nil || pl.Doc.Size != int64(len(large)) || pl.Size() != int64(len(large)) {
		t.Fatalf("large payload not offloaded: %+v", pl.Doc)
	}
	equal(t, "same content, same document", pl2, pl)
	if len(b.Documents) != 1 {
		t.Fatalf("%d documents for one content", len(b.Documents))
	}
	e := newExecution(k)
	e.Variables = map[string]store.Payload{"small": ps, "large": pl}
	b.Runs = []store.RunWrite{{Execution: e, Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")}}}
	s.must(s.st.Commit(s.ctx, &b))

	got := s.getRun(sh, k)
	ref := got.Variables["large"].Doc
	data, info, err := s.st.GetDocument(s.ctx, 1, k, ref.ID)
	s.must(err)
	sameBytes(t, "document", data, large)
	if info.Size != int64(len(large)) || info.StoredSize <= 0 || info.StoredSize >= info.Size || info.CreatedAt.IsZero() {
		t.Fatalf("document info: %+v (compressible data should be stored smaller)", info)
	}
	// Writing the same document again in a later batch is a no-op.
	var b2 store.Batch
	b2.ShardID, b2.RangeID = 1, sh.RangeID
	_, err = b2.AddPayload(k, large, l)
	s.must(err)
	s.must(s.st.Commit(s.ctx, &b2))

	// Above the hard limit: refused.
	_, err = b2.AddPayload(k, make([]byte, l.MaxPayload+1), l)
	s.wantErr(err, store.ErrPayloadTooLarge)
	// A document whose id is not its hash is refused.
	err = s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, Documents: []store.Document{{Run: k, ID: "nope", Data: large}}})
	s.wantErr(err, store.ErrInvalidArgument)
	_, _, err = s.st.GetDocument(s.ctx, 1, k, "missing")
	s.wantErr(err, store.ErrNotFound)
}

func testDeleteRuns(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := key("old", "r")
	var b store.Batch
	b.ShardID, b.RangeID = 1, sh.RangeID
	p, err := b.AddPayload(k, bytes.Repeat([]byte("x"), s.st.Limits().DocumentThreshold+1), s.st.Limits())
	s.must(err)
	b.Runs = []store.RunWrite{{Execution: newExecution(k), Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")}}}
	s.must(s.st.Commit(s.ctx, &b))
	keep := s.createRun(sh, key("keep", "r"))
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID, DeleteRuns: []store.RunKey{k}}))
	s.wantNoRun(sh, k)
	_, err = s.st.GetCurrentExecution(s.ctx, 1, "default", "old")
	s.wantErr(err, store.ErrNotFound)
	_, err = s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: 1, Run: k})
	s.wantErr(err, store.ErrNotFound)
	_, _, err = s.st.GetDocument(s.ctx, 1, k, p.Doc.ID)
	s.wantErr(err, store.ErrNotFound)
	equal(t, "other run", s.getRun(sh, keep.RunKey), keep)
}
