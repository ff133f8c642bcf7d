package cassandra_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/cassandra"
)

// TestVisibilityMatchesSQL writes the same random visibility updates,
// stale ones and deletions included, to this store and to SQLite, and
// compares what random filters list, page by page, and count.
//
// It runs with the default bucket size, and with buckets so small that a
// day, an hour and a minute is full after a run or two, so runs are in
// buckets of every level. Halfway, it drops the rows of workflow id and
// business key values and migrates again, as a store written before them
// is: the migration writes them again.
func TestVisibilityMatchesSQL(t *testing.T) {
	// A prefix scan limit of 4: prefixes take both ways of listing them.
	t.Run("buckets of 32 MiB", func(t *testing.T) { matchesSQL(t, cassandra.Options{PrefixScanLimit: 4}) })
	t.Run("buckets of 100 bytes", func(t *testing.T) {
		matchesSQL(t, cassandra.Options{VisibilityBucketBytes: 100, PrefixScanLimit: 4})
	})
}

func matchesSQL(t *testing.T, opts cassandra.Options) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, sq := testdb.CassandraWith(t, opts), testdb.SQLite(t)
	for _, st := range []store.Store{cs, sq} {
		if _, err := st.CreateNamespace(ctx, store.Namespace{Name: "ns"}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Starts over four days around midnights, on whole seconds so that
	// runs share start times.
	base := store.Time(time.Now().Add(-72 * time.Hour)).Truncate(24 * time.Hour).Add(-time.Hour)
	statuses := []store.RunStatus{store.StatusRunning, store.StatusCompleted, store.StatusFailed, store.StatusCanceled}
	random := func(run int, version int64) store.VisibilityRecord {
		r := store.VisibilityRecord{
			Namespace: "ns", RunID: fmt.Sprintf("run-%02d", run), WorkflowID: fmt.Sprint("wf-", run%7),
			Type: []string{"order", "refund", ""}[rng.IntN(3)], Status: statuses[rng.IntN(len(statuses))],
			StartTime:   base.Add(time.Duration(rng.IntN(4*26)) * time.Hour).Add(time.Duration(run%3) * time.Second),
			BusinessKey: []string{"", "k1", "k2"}[rng.IntN(3)], Version: version,
		}
		if rng.IntN(4) > 0 {
			r.Attributes = map[string]string{}
			for _, name := range []string{"region", "tier", "a=b"} {
				if rng.IntN(2) == 0 {
					r.Attributes[name] = []string{"eu", "us", "c"}[rng.IntN(3)]
				}
			}
		}
		if r.Status != store.StatusRunning {
			r.CloseTime = r.StartTime.Add(time.Minute)
		}
		return r
	}
	both := func(what string, fn func(store.Store) error) {
		t.Helper()
		for _, st := range []store.Store{cs, sq} {
			if err := fn(st); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	versions := map[int]int64{}
	for range 300 {
		run := rng.IntN(60)
		switch n := rng.IntN(20); {
		case n == 0:
			both("delete", func(st store.Store) error { return st.DeleteVisibility(ctx, "ns", fmt.Sprintf("run-%02d", run)) })
		default:
			// Mostly newer versions, some repeats and some stale ones.
			v := versions[run] + int64(rng.IntN(4)) - 1
			versions[run] = max(versions[run], v)
			r := random(run, v)
			both("upsert", func(st store.Store) error { return st.UpsertVisibility(ctx, r) })
		}
	}

	// Concurrent writers of the same runs: the highest version wins and
	// leaves no other index rows behind.
	var wg sync.WaitGroup
	var updates []store.VisibilityRecord
	for run := 60; run < 66; run++ {
		for v := range int64(8) {
			updates = append(updates, random(run, v+1))
		}
	}
	rng.Shuffle(len(updates), func(i, j int) { updates[i], updates[j] = updates[j], updates[i] })
	for _, r := range updates {
		if err := sq.UpsertVisibility(ctx, r); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cs.UpsertVisibility(ctx, r); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	// Every record has its index rows (all, status, workflow id, type and
	// business key if set, one per attribute) and there are no others.
	var indexRows, valueRows int64
	for run := range 66 {
		id := fmt.Sprintf("run-%02d", run)
		want, werr := sq.GetVisibility(ctx, "ns", id)
		got, gerr := cs.GetVisibility(ctx, "ns", id)
		if !reflect.DeepEqual(got, want) || (werr == nil) != (gerr == nil) {
			t.Fatalf("get %s: got %+v, %v; want %+v, %v", id, got, gerr, want, werr)
		}
		if werr == nil {
			indexRows += 3 + int64(len(want.Attributes))
			if want.Type != "" {
				indexRows++
			}
			if want.BusinessKey != "" {
				indexRows++
			}
			valueRows++
			if want.BusinessKey != "" {
				valueRows++
			}
		}
	}
	c := cs.(*cassandra.Store)
	rows := func(table string) int64 {
		t.Helper()
		var n int64
		if err := c.Session().Query(`SELECT COUNT(*) FROM ` + c.Keyspace() + `.` + table).WithContext(ctx).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows("visibility_index"); n != indexRows {
		t.Fatalf("%d index rows, want %d", n, indexRows)
	}
	if n := rows("visibility_values"); n != valueRows {
		t.Fatalf("%d value rows, want %d", n, valueRows)
	}
	// Back to version 2: Migrate applies 3 (and the versions after it,
	// whose statements are idempotent) again.
	stmts := []string{`TRUNCATE %s.visibility_values`}
	applied := c.Session().Query(`SELECT version FROM ` + c.Keyspace() + `.schema_version`).WithContext(ctx).Iter()
	var version int
	for applied.Scan(&version) {
		if version >= 3 {
			stmts = append(stmts, `DELETE FROM %s.schema_version WHERE version = `+strconv.Itoa(version))
		}
	}
	if err := applied.Close(); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range stmts {
		if err := c.Session().Query(fmt.Sprintf(stmt, c.Keyspace())).WithContext(ctx).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	if from, to, err := c.Migrate(ctx); err != nil || from != 2 || to < 3 {
		t.Fatalf("migrate: from %d to %d, %v", from, to, err)
	}
	if n := rows("visibility_values"); n != valueRows {
		t.Fatalf("after the migration, %d value rows, want %d", n, valueRows)
	}

	// Small buckets split: finer buckets of every level hold runs.
	levels := map[int64]int{}
	iter := c.Session().Query(`SELECT bucket FROM ` + c.Keyspace() + `.visibility_buckets`).WithContext(ctx).Iter()
	var id int64
	for iter.Scan(&id) {
		levels[(id+5e14)/1e15]++
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if split := opts.VisibilityBucketBytes > 0; split != (levels[1] > 0 && levels[2] > 0 && levels[3] > 0) {
		t.Fatalf("finer buckets by level: %v", levels)
	}
	t.Logf("finer buckets by level: %v", levels)

	filters := []store.RunFilter{{}, {Statuses: statuses[:2]}, {Statuses: statuses[1:2]}, {Type: "order"}, {BusinessKey: "k1"},
		{WorkflowID: "wf-3"}, {Attributes: map[string]string{"region": "eu"}}, {Attributes: map[string]string{"a=b": "c", "tier": "us"}},
		{WorkflowIDPrefix: "wf-"}, {WorkflowIDPrefix: "wf-3"}, {WorkflowIDPrefix: "x"}, {BusinessKeyPrefix: "k"},
		{WorkflowIDPrefix: "wf-1", BusinessKeyPrefix: "k2"}, {WorkflowIDPrefix: "w", Attributes: map[string]string{"region": "eu"}}}
	checks := 150
	if opts.VisibilityBucketBytes > 0 {
		checks = 60 // each reads many small buckets
	}
	for range checks {
		f := filters[rng.IntN(len(filters))]
		f.Namespace = "ns"
		if rng.IntN(2) == 0 {
			f.Type = []string{"order", "refund"}[rng.IntN(2)]
		}
		if rng.IntN(3) == 0 {
			f.Statuses = append(f.Statuses, statuses[rng.IntN(len(statuses))])
		}
		if rng.IntN(2) == 0 {
			f.StartedAfter = base.Add(time.Duration(rng.IntN(4*26*60)) * time.Minute)
		}
		if rng.IntN(2) == 0 {
			f.StartedBefore = base.Add(time.Duration(rng.IntN(4*26*60)) * time.Minute)
		}
		size := 1 + rng.IntN(9)
		want, wantN := listAll(ctx, t, sq, f, size)
		got, gotN := listAll(ctx, t, cs, f, size)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("filter %+v, pages of %d:\n got %v\nwant %v", f, size, runIDs(got), runIDs(want))
		}
		if gotN != wantN {
			t.Fatalf("filter %+v: count %d, want %d", f, gotN, wantN)
		}
	}
}

func listAll(ctx context.Context, t *testing.T, st store.Store, f store.RunFilter, size int) ([]store.VisibilityRecord, int64) {
	t.Helper()
	var out []store.VisibilityRecord
	var token []byte
	for {
		p, err := st.ListRuns(ctx, store.ListRunsRequest{RunFilter: f, PageSize: size, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Runs...)
		if p.NextPageToken == nil {
			break
		}
		token = p.NextPageToken
	}
	n, err := st.CountRuns(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	return out, n
}

func runIDs(rs []store.VisibilityRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s@%d/v%d", r.RunID, r.StartTime.UnixMilli(), r.Version)
	}
	return out
}

// TestVisibilityDropsEmptyDays: a listing that finds a day empty drops it
// from the days it visits, unless its marker is recent or the listing did
// not read the whole day.
func TestVisibilityDropsEmptyDays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := testdb.Cassandra(t).(*cassandra.Store)
	if _, err := st.CreateNamespace(ctx, store.Namespace{Name: "ns"}); err != nil {
		t.Fatal(err)
	}
	const day = 24 * time.Hour
	old := time.Now().Add(-2 * time.Hour).UnixMicro()
	for _, m := range []struct {
		day int64
		ts  int64
	}{{100, old}, {101, time.Now().UnixMicro()}, {102, old}} {
		err := st.Session().Query(`INSERT INTO `+st.Keyspace()+`.visibility_days (namespace, day, seen) VALUES ('ns', ?, true)`, m.day).
			WithTimestamp(m.ts).WithContext(ctx).Exec()
		if err != nil {
			t.Fatal(err)
		}
	}
	days := func() []int64 {
		t.Helper()
		iter := st.Session().Query(`SELECT day FROM ` + st.Keyspace() + `.visibility_days WHERE namespace = 'ns'`).WithContext(ctx).Iter()
		var out []int64
		var d int64
		for iter.Scan(&d) {
			out = append(out, d)
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Half of day 102 and a filter that does not read the all partitions
	// drop nothing.
	f := store.RunFilter{Namespace: "ns", StartedAfter: time.UnixMilli(0).Add(102*day + time.Hour)}
	if _, err := st.ListRuns(ctx, store.ListRunsRequest{RunFilter: f}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CountRuns(ctx, store.RunFilter{Namespace: "ns", Type: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := days(); !reflect.DeepEqual(got, []int64{102, 101, 100}) {
		t.Fatalf("days %v", got)
	}
	if n, err := st.CountRuns(ctx, store.RunFilter{Namespace: "ns"}); err != nil || n != 0 {
		t.Fatalf("count %d, %v", n, err)
	}
	if got := days(); !reflect.DeepEqual(got, []int64{101}) {
		t.Fatalf("days %v, want the recent one only", got)
	}
}
