// Package storetest is the conformance suite of the store contract. Every
// backend runs it unchanged:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openFreshStore(t) })
//	}
//
// open must return a store with an empty, migrated schema of its own, and
// close it when the test ends.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

// Run runs every conformance test against stores made by open.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"Migrate", testMigrate},
		{"AcquireShard", testAcquireShard},
		{"TaskIDsGrowAcrossOwners", testTaskIDsGrow},
		{"Fencing", testFencing},
		{"CreateRun", testCreateRun},
		{"UpdateRun", testUpdateRun},
		{"RaceConditionalWrite", testRaceConditionalWrite},
		{"RaceCreate", testRaceCreate},
		{"RaceAcquire", testRaceAcquire},
		{"BatchIsAtomic", testBatchAtomic},
		{"GroupCommit", testGroupCommit},
		{"CurrentReplaceAndUpdate", testCurrentModes},
		{"HistoryPaging", testHistoryPaging},
		{"HistoryInvisibleUntilCommitted", testHistoryInvisible},
		{"Compression", testCompression},
		{"TransferTasks", testTransferTasks},
		{"TimerTasks", testTimerTasks},
		{"ReplicationTasksAndDLQ", testReplicationTasks},
		{"AckLevels", testAckLevels},
		{"RequestDedup", testRequestDedup},
		{"RequestExpiry", testRequestExpiry},
		{"Documents", testDocuments},
		{"DeleteRuns", testDeleteRuns},
		{"DeleteManyRuns", testDeleteManyRuns},
		{"DeleteManyVisibility", testDeleteManyVisibility},
		{"TimerPartitions", testTimerPartitions},
		{"Namespaces", testNamespaces},
		{"UnknownNamespace", testUnknownNamespace},
		{"Nodes", testNodes},
		{"Definitions", testDefinitions},
		{"Records", testRecords},
		{"Audit", testAudit},
		{"VisibilityFilters", testVisibilityFilters},
		{"VisibilityPaging", testVisibilityPaging},
		{"VisibilityPrefixes", testVisibilityPrefixes},
		{"VisibilityVersions", testVisibilityVersions},
		{"VisibilityCounts", testVisibilityCounts},
		{"VisibilityCountsConcurrent", testVisibilityCountsConcurrent},
		{"BadInput", testBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := &suite{t: t, ctx: ctx, st: st}
			s.createNamespace("default")
			tc.fn(t, s)
		})
	}
}

type suite struct {
	t   *testing.T
	ctx context.Context
	st  store.Store
}

func (s *suite) createNamespace(name string) store.Namespace {
	s.t.Helper()
	ns, err := s.st.CreateNamespace(s.ctx, store.Namespace{Name: name, Retention: 72 * time.Hour})
	s.must(err)
	return ns
}

func (s *suite) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

// wantErr fails unless err matches target.
func (s *suite) wantErr(err, target error) {
	s.t.Helper()
	if !errors.Is(err, target) {
		s.t.Fatalf("got error %v, want %v", err, target)
	}
}

func (s *suite) acquire(shardID int32, owner string) store.Shard {
	s.t.Helper()
	sh, err := s.st.AcquireShard(s.ctx, store.AcquireShardRequest{ShardID: shardID, Owner: owner})
	s.must(err)
	return sh
}

func key(wf, run string) store.RunKey {
	return store.RunKey{Namespace: "default", WorkflowID: wf, RunID: run}
}

// newExecution returns a run's first state with a few of every kind of
// pending item, so round trips exercise the whole encoding.
func newExecution(k store.RunKey) *store.Execution {
	start := store.Time(time.Now())
	return &store.Execution{
		RunKey:      k,
		State:       store.StateRunning,
		Status:      store.StatusRunning,
		NextEventID: 3,
		DBVersion:   1,
		Info: store.RunInfo{
			Type: "order", Queue: "default", Priority: 2, BusinessKey: "order-42",
			CreateRequestID: "req-" + k.RunID, StartTime: start, RunTimeout: time.Hour,
			SearchAttributes: map[string]string{"region": "eu"},
		},
		Steps: map[int64]store.StepInfo{2: {ScheduledEventID: 2, Name: "charge", Attempt: 1, IdempotencyKey: k.RunID + "/2",
			ScheduledTime: start, StartToClose: time.Minute, Retry: &store.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 5}}},
		Timers:             map[string]store.TimerInfo{"t1": {TimerID: "t1", StartedEventID: 1, FireTime: start.Add(time.Hour)}},
		Children:           map[int64]store.ChildInfo{5: {InitiatedEventID: 5, Namespace: "default", WorkflowID: "child", Type: "c", CreateRequestID: "r"}},
		CancelRequests:     map[int64]store.RequestCancelInfo{6: {InitiatedEventID: 6, Target: key("other", "r1"), RequestID: "c1"}},
		Signals:            map[int64]store.SignalInfo{7: {InitiatedEventID: 7, Target: key("other", "r1"), Name: "go", RequestID: "s1", Input: store.Payload{Data: []byte("x")}}},
		SignalRequestedIDs: []string{"sig-1"},
		BufferedEvents:     [][]byte{[]byte("buffered")},
		Variables:          map[string]store.Payload{"amount": {Data: []byte("42")}},
	}
}

func block(first, last int64, events string) store.HistoryBlock {
	return store.HistoryBlock{FirstEventID: first, LastEventID: last, TxnID: first, Events: []byte(events)}
}

// createRun commits a new run with history events 1..2 and returns its
// state.
func (s *suite) createRun(sh store.Shard, k store.RunKey) *store.Execution {
	s.t.Helper()
	e := newExecution(k)
	s.must(s.st.Commit(s.ctx, &store.Batch{ShardID: sh.ID, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: e, Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "started")},
	}}}))
	return e
}

// next returns a copy of e advanced by n events and one db version.
func next(e *store.Execution, n int64) *store.Execution {
	c := *e
	c.NextEventID += n
	c.DBVersion++
	return &c
}

func (s *suite) updateRun(sh store.Shard, e *store.Execution, events string) (*store.Execution, error) {
	n := next(e, 1)
	err := s.st.Commit(s.ctx, &store.Batch{ShardID: sh.ID, RangeID: sh.RangeID, Runs: []store.RunWrite{{
		Execution: n, ExpectedDBVersion: e.DBVersion,
		History: []store.HistoryBlock{block(e.NextEventID, e.NextEventID, events)},
	}}})
	return n, err
}

func (s *suite) getRun(sh store.Shard, k store.RunKey) *store.Execution {
	s.t.Helper()
	e, err := s.st.GetExecution(s.ctx, sh.ID, k)
	s.must(err)
	return e
}

func (s *suite) wantNoRun(sh store.Shard, k store.RunKey) {
	s.t.Helper()
	_, err := s.st.GetExecution(s.ctx, sh.ID, k)
	s.wantErr(err, store.ErrNotFound)
}

func (s *suite) history(shardID int32, k store.RunKey) []store.HistoryBlock {
	s.t.Helper()
	var out []store.HistoryBlock
	var token []byte
	for {
		p, err := s.st.ReadHistory(s.ctx, store.ReadHistoryRequest{ShardID: shardID, Run: k, PageSize: 7, PageToken: token})
		s.must(err)
		out = append(out, p.Blocks...)
		if p.NextPageToken == nil {
			return out
		}
		token = p.NextPageToken
	}
}

func (s *suite) tasks(shardID int32, r store.TaskRange) []store.Task {
	s.t.Helper()
	var out []store.Task
	var token []byte
	for {
		p, err := s.st.ReadTasks(s.ctx, store.ReadTasksRequest{ShardID: shardID, Range: r, PageSize: 3, PageToken: token})
		s.must(err)
		out = append(out, p.Tasks...)
		if p.NextPageToken == nil {
			return out
		}
		token = p.NextPageToken
	}
}

func transferRange() store.TaskRange { return store.TaskRange{Category: store.CategoryTransfer} }

func transfer(id int64, k store.RunKey) store.Task {
	return store.Task{Category: store.CategoryTransfer, Key: store.TaskKey{TaskID: id}, Type: 1, Run: k, Data: []byte(fmt.Sprint("task-", id))}
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func eventsOf(blocks []store.HistoryBlock) []string {
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = fmt.Sprintf("%d-%d:%s", b.FirstEventID, b.LastEventID, b.Events)
	}
	return out
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes, want %d bytes (contents differ)", what, len(got), len(want))
	}
}
