package storetest

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

func record(i int, base time.Time) store.VisibilityRecord {
	r := store.VisibilityRecord{
		Namespace: "default", WorkflowID: fmt.Sprint("wf-", i), RunID: fmt.Sprintf("run-%03d", i),
		Type: []string{"order", "refund"}[i%2], Status: store.StatusRunning,
		StartTime: base.Add(time.Duration(i) * time.Second), BusinessKey: fmt.Sprint("customer-", i%3),
		Attributes: map[string]string{"region": []string{"eu", "us", "apac"}[i%3], "tier": fmt.Sprint(i % 2)},
		Version:    1,
	}
	if i%4 == 0 {
		r.Status, r.CloseTime, r.Version = store.StatusCompleted, r.StartTime.Add(time.Minute), 2
	}
	return r
}

// seedVisibility writes n records and returns them newest first.
func (s *suite) seedVisibility(n int) []store.VisibilityRecord {
	s.t.Helper()
	base := store.Time(time.Now().Add(-time.Hour))
	out := make([]store.VisibilityRecord, n)
	for i := range n {
		out[n-1-i] = record(i, base)
	}
	// One call for all: the batched path of UpsertVisibility.
	s.must(s.st.UpsertVisibility(s.ctx, out...))
	return out
}

func (s *suite) list(f store.RunFilter, pageSize int) []store.VisibilityRecord {
	s.t.Helper()
	var out []store.VisibilityRecord
	var token []byte
	for pages := 0; ; pages++ {
		if pages > 1000 {
			s.t.Fatal("paging does not end")
		}
		p, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: f, PageSize: pageSize, PageToken: token})
		s.must(err)
		out = append(out, p.Runs...)
		if p.NextPageToken == nil {
			break
		}
		token = p.NextPageToken
	}
	n, err := s.st.CountRuns(s.ctx, f)
	s.must(err)
	if n != int64(len(out)) {
		s.t.Fatalf("count %d, listed %d for %+v", n, len(out), f)
	}
	return out
}

// listOldest lists a filter's runs oldest first, in pages of pageSize.
func (s *suite) listOldest(f store.RunFilter, pageSize int) []store.VisibilityRecord {
	s.t.Helper()
	var out []store.VisibilityRecord
	var token []byte
	for pages := 0; ; pages++ {
		if pages > 1000 {
			s.t.Fatal("paging does not end")
		}
		p, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: f, PageSize: pageSize, PageToken: token, Oldest: true})
		s.must(err)
		out = append(out, p.Runs...)
		if p.NextPageToken == nil {
			return out
		}
		token = p.NextPageToken
	}
}

func filter(all []store.VisibilityRecord, keep func(store.VisibilityRecord) bool) []store.VisibilityRecord {
	var out []store.VisibilityRecord
	for _, r := range all {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func testVisibilityFilters(t *testing.T, s *suite) {
	all := s.seedVisibility(24)
	ns := store.RunFilter{Namespace: "default"}
	equal(t, "all", s.list(ns, 0), all)

	f := ns
	f.Statuses = []store.RunStatus{store.StatusCompleted}
	equal(t, "completed", s.list(f, 0), filter(all, func(r store.VisibilityRecord) bool { return r.Status == store.StatusCompleted }))
	f.Statuses = []store.RunStatus{store.StatusCompleted, store.StatusRunning}
	equal(t, "completed or running", s.list(f, 0), all)

	f = ns
	f.Type = "refund"
	equal(t, "type", s.list(f, 0), filter(all, func(r store.VisibilityRecord) bool { return r.Type == "refund" }))

	f = ns
	f.StartedAfter, f.StartedBefore = all[20].StartTime, all[10].StartTime
	equal(t, "time range", s.list(f, 3), all[11:21])

	f = ns
	f.BusinessKey = "customer-1"
	equal(t, "business key", s.list(f, 0), filter(all, func(r store.VisibilityRecord) bool { return r.BusinessKey == "customer-1" }))

	f = ns
	f.WorkflowID = "wf-7"
	equal(t, "workflow id", s.list(f, 0), filter(all, func(r store.VisibilityRecord) bool { return r.WorkflowID == "wf-7" }))

	f = ns
	f.Attributes = map[string]string{"region": "eu", "tier": "1"}
	equal(t, "attributes", s.list(f, 2), filter(all, func(r store.VisibilityRecord) bool {
		return r.Attributes["region"] == "eu" && r.Attributes["tier"] == "1"
	}))

	f = ns
	f.Type, f.Statuses, f.Attributes = "order", []store.RunStatus{store.StatusRunning}, map[string]string{"region": "us"}
	equal(t, "combined", s.list(f, 0), filter(all, func(r store.VisibilityRecord) bool {
		return r.Type == "order" && r.Status == store.StatusRunning && r.Attributes["region"] == "us"
	}))

	// Close times: only closed runs, in order, across pages; excluded
	// types are left out.
	f = ns
	f.ClosedAfter, f.ClosedBefore = all[19].CloseTime, all[3].CloseTime // runs 4 and 20
	closed := filter(all, func(r store.VisibilityRecord) bool {
		return !r.CloseTime.IsZero() && !r.CloseTime.Before(f.ClosedAfter) && r.CloseTime.Before(f.ClosedBefore)
	})
	if len(closed) != 4 {
		t.Fatalf("closed range: the seed has %d runs closed in it, want 4", len(closed))
	}
	equal(t, "closed range", s.list(f, 2), closed)
	f = ns
	f.ExcludeTypes = []string{"refund"}
	equal(t, "excluded type", s.list(f, 5), filter(all, func(r store.VisibilityRecord) bool { return r.Type != "refund" }))
	f.Statuses = []store.RunStatus{store.StatusCompleted, store.StatusRunning}
	equal(t, "excluded type of statuses", s.list(f, 3), filter(all, func(r store.VisibilityRecord) bool { return r.Type != "refund" }))

	oldest := slices.Clone(all)
	slices.Reverse(oldest)
	equal(t, "oldest first", s.listOldest(ns, 5), oldest)
	f = ns
	f.Statuses = []store.RunStatus{store.StatusCompleted, store.StatusRunning}
	equal(t, "oldest first of statuses", s.listOldest(f, 4), oldest)

	// Other namespaces are apart.
	s.createNamespace("other")
	if got := s.list(store.RunFilter{Namespace: "other"}, 0); len(got) != 0 {
		t.Fatalf("other namespace lists %v", got)
	}

	got, err := s.st.GetVisibility(s.ctx, "default", all[0].RunID)
	s.must(err)
	equal(t, "get", got, all[0])
	s.must(s.st.DeleteVisibility(s.ctx, "default", all[0].RunID))
	_, err = s.st.GetVisibility(s.ctx, "default", all[0].RunID)
	s.wantErr(err, store.ErrNotFound)
	equal(t, "after delete", s.list(ns, 0), all[1:])
}

// testVisibilityPaging: pages are stable while records are added (keyset
// paging): every record that existed at the start is listed exactly once.
func testVisibilityPaging(t *testing.T, s *suite) {
	all := s.seedVisibility(30)
	var got []store.VisibilityRecord
	var token []byte
	for i := 0; ; i++ {
		p, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default"}, PageSize: 7, PageToken: token})
		s.must(err)
		got = append(got, p.Runs...)
		// A newer run starts between pages.
		r := record(100+i, store.Now())
		s.must(s.st.UpsertVisibility(s.ctx, r))
		if p.NextPageToken == nil {
			break
		}
		token = p.NextPageToken
	}
	equal(t, "paged", got, all)

	// Records with the same start time are still paged without loss.
	base := store.Time(time.Now().Add(time.Hour))
	s.createNamespace("ties")
	for i := range 10 {
		r := record(i, base)
		r.Namespace, r.StartTime = "ties", base
		s.must(s.st.UpsertVisibility(s.ctx, r))
	}
	ties := s.list(store.RunFilter{Namespace: "ties"}, 3)
	if len(ties) != 10 {
		t.Fatalf("listed %d of 10 runs with one start time", len(ties))
	}
	slices.Reverse(ties)
	equal(t, "ties oldest first", s.listOldest(store.RunFilter{Namespace: "ties"}, 3), ties)
	_, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default"}, PageToken: []byte{1, 2, 3, 4, 5, 6}})
	s.wantErr(err, store.ErrInvalidPageToken)
}

func testVisibilityVersions(t *testing.T, s *suite) {
	r := record(1, store.Now())
	r.Version = 5
	s.must(s.st.UpsertVisibility(s.ctx, r))
	// An older update arriving late is ignored, attributes included.
	old := r
	old.Version, old.Status, old.Attributes = 4, store.StatusFailed, map[string]string{"region": "mars"}
	s.must(s.st.UpsertVisibility(s.ctx, old))
	got, err := s.st.GetVisibility(s.ctx, r.Namespace, r.RunID)
	s.must(err)
	equal(t, "after stale update", got, r)
	f := store.RunFilter{Namespace: "default", Attributes: map[string]string{"region": "mars"}}
	if n := len(s.list(f, 0)); n != 0 {
		t.Fatalf("stale attributes searchable")
	}
	// A newer one replaces it.
	newer := r
	newer.Version, newer.Status, newer.CloseTime, newer.Attributes = 6, store.StatusFailed, store.Now(), map[string]string{"region": "eu"}
	s.must(s.st.UpsertVisibility(s.ctx, newer))
	got, err = s.st.GetVisibility(s.ctx, r.Namespace, r.RunID)
	s.must(err)
	equal(t, "after newer update", got, newer)
	f.Attributes = map[string]string{"region": "eu"}
	equal(t, "new attributes", s.list(f, 0), []store.VisibilityRecord{newer})
	f.Attributes = map[string]string{"tier": "1"}
	if n := len(s.list(f, 0)); n != 0 {
		t.Fatalf("dropped attribute still searchable")
	}
	// A newer one that changes the indexed columns too (business key,
	// type) is found by them, and no longer by the old ones; counts agree
	// (s.list checks them).
	moved := newer
	moved.Version, moved.BusinessKey, moved.Type, moved.Status = 7, "customer-moved", "moved", store.StatusCompleted
	s.must(s.st.UpsertVisibility(s.ctx, moved))
	equal(t, "by new business key", s.list(store.RunFilter{Namespace: "default", BusinessKey: "customer-moved"}, 0), []store.VisibilityRecord{moved})
	equal(t, "by new type", s.list(store.RunFilter{Namespace: "default", Type: "moved"}, 0), []store.VisibilityRecord{moved})
	if n := len(s.list(store.RunFilter{Namespace: "default", BusinessKey: r.BusinessKey}, 0)); n != 0 {
		t.Fatalf("old business key still finds the run")
	}
}

// matchesFilter is a filter's meaning, written apart from every backend.
func matchesFilter(f store.RunFilter, r store.VisibilityRecord) bool {
	if r.Namespace != f.Namespace || f.WorkflowID != "" && r.WorkflowID != f.WorkflowID || f.Type != "" && r.Type != f.Type ||
		f.BusinessKey != "" && r.BusinessKey != f.BusinessKey ||
		len(r.WorkflowID) < len(f.WorkflowIDPrefix) || r.WorkflowID[:len(f.WorkflowIDPrefix)] != f.WorkflowIDPrefix ||
		len(r.BusinessKey) < len(f.BusinessKeyPrefix) || r.BusinessKey[:len(f.BusinessKeyPrefix)] != f.BusinessKeyPrefix ||
		len(f.Statuses) > 0 && !slices.Contains(f.Statuses, r.Status) ||
		!f.StartedAfter.IsZero() && r.StartTime.Before(f.StartedAfter) ||
		!f.StartedBefore.IsZero() && !r.StartTime.Before(f.StartedBefore) ||
		(!f.ClosedAfter.IsZero() || !f.ClosedBefore.IsZero()) && r.CloseTime.IsZero() ||
		!f.ClosedAfter.IsZero() && r.CloseTime.Before(f.ClosedAfter) ||
		!f.ClosedBefore.IsZero() && !r.CloseTime.Before(f.ClosedBefore) ||
		slices.Contains(f.ExcludeTypes, r.Type) {
		return false
	}
	for k, v := range f.Attributes {
		if got, ok := r.Attributes[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// countFilters are filters that take every way a backend may count: the
// namespace alone, statuses and types (counters), time ranges that start
// and end on an hour, inside one, across several and open at either end
// (hour counters and the runs of partial hours), one attribute (its
// counter), an attribute with a type, a business key and a workflow id
// (indexes). base is a whole hour; the records start within ten hours of
// it.
func countFilters(base time.Time) []store.RunFilter {
	ns := store.RunFilter{Namespace: "default"}
	with := func(set func(*store.RunFilter)) store.RunFilter {
		f := ns
		set(&f)
		return f
	}
	at := func(h, m int) time.Time { return base.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	fs := []store.RunFilter{ns}
	for _, st := range []store.RunStatus{store.StatusRunning, store.StatusCompleted, store.StatusFailed} {
		fs = append(fs, with(func(f *store.RunFilter) { f.Statuses = []store.RunStatus{st} }))
	}
	fs = append(fs,
		with(func(f *store.RunFilter) {
			f.Statuses = []store.RunStatus{store.StatusFailed, store.StatusCompleted, store.StatusFailed}
		}),
		with(func(f *store.RunFilter) { f.Type = "order" }),
		with(func(f *store.RunFilter) { f.Type = "refund"; f.Statuses = []store.RunStatus{store.StatusCompleted} }),
		with(func(f *store.RunFilter) { f.Type = "none-such" }),
		with(func(f *store.RunFilter) { f.StartedAfter, f.StartedBefore = at(1, 0), at(4, 0) }),
		with(func(f *store.RunFilter) { f.StartedAfter, f.StartedBefore = at(0, 30), at(5, 10) }),
		with(func(f *store.RunFilter) { f.StartedAfter, f.StartedBefore = at(2, 10), at(2, 40) }),
		with(func(f *store.RunFilter) { f.StartedAfter, f.StartedBefore = at(3, 5), at(4, 0) }),
		with(func(f *store.RunFilter) { f.StartedAfter = at(2, 30) }),
		with(func(f *store.RunFilter) { f.StartedBefore = at(4, 15) }),
		with(func(f *store.RunFilter) {
			f.StartedAfter, f.StartedBefore, f.Type, f.Statuses = at(0, 45), at(6, 20), "order", []store.RunStatus{store.StatusCompleted}
		}),
		with(func(f *store.RunFilter) {
			f.StartedBefore, f.Statuses = at(3, 50), []store.RunStatus{store.StatusRunning}
		}),
		with(func(f *store.RunFilter) { f.Attributes = map[string]string{"region": "eu"} }),
		with(func(f *store.RunFilter) { f.Attributes = map[string]string{"tier": "1"} }),
		with(func(f *store.RunFilter) { f.Attributes = map[string]string{"region": "eu"}; f.Type = "order" }),
		with(func(f *store.RunFilter) { f.Attributes = map[string]string{"region": "us"}; f.StartedAfter = at(2, 0) }),
		with(func(f *store.RunFilter) { f.BusinessKey = "customer-1" }),
		with(func(f *store.RunFilter) { f.WorkflowID = "wf-3" }),
		// Excluded types are counted as the rest less their counts;
		// close times through the rows read.
		with(func(f *store.RunFilter) { f.ExcludeTypes = []string{"refund", "none-such", "refund"} }),
		with(func(f *store.RunFilter) {
			f.ExcludeTypes, f.Statuses, f.StartedAfter = []string{"order"}, []store.RunStatus{store.StatusCompleted}, at(1, 10)
		}),
		with(func(f *store.RunFilter) { f.ExcludeTypes, f.Type = []string{"order"}, "order" }),
		with(func(f *store.RunFilter) {
			f.ExcludeTypes, f.Attributes = []string{"order"}, map[string]string{"region": "eu"}
		}),
		with(func(f *store.RunFilter) { f.ClosedAfter, f.ClosedBefore = at(1, 0), at(4, 0) }),
		with(func(f *store.RunFilter) { f.ClosedBefore, f.Type = at(3, 0), "order" }),
		with(func(f *store.RunFilter) { f.ClosedAfter, f.ExcludeTypes = at(2, 0), []string{"order"} }),
		// A range that ends before it starts matches nothing; an empty
		// type excludes nothing.
		with(func(f *store.RunFilter) { f.ClosedAfter, f.ClosedBefore = at(4, 0), at(1, 0) }),
		with(func(f *store.RunFilter) { f.ExcludeTypes = []string{""} }),
	)
	return fs
}

// checkCounts compares every count filter's count and listing with the
// records that should be stored.
func (s *suite) checkCounts(what string, base time.Time, want map[string]store.VisibilityRecord) {
	s.t.Helper()
	for _, f := range countFilters(base) {
		n := 0
		for _, r := range want {
			if matchesFilter(f, r) {
				n++
			}
		}
		got, err := s.st.CountRuns(s.ctx, f)
		s.must(err)
		if got != int64(n) {
			s.t.Fatalf("%s: count %d, want %d for %+v", what, got, n, f)
		}
		if listed := len(s.list(f, 7)); listed != n {
			s.t.Fatalf("%s: listed %d, want %d for %+v", what, listed, n, f)
		}
	}
}

// countRecord is record i of the count tests: start times 7 minutes apart
// from base, so runs spread over several hours.
func countRecord(i int, base time.Time) store.VisibilityRecord {
	r := record(i, base)
	r.StartTime = base.Add(time.Duration(i) * 7 * time.Minute)
	r.Type = []string{"order", "refund", "ship"}[i%3]
	if r.Status == store.StatusCompleted {
		r.CloseTime = r.StartTime.Add(time.Minute)
	}
	return r
}

// testVisibilityCounts: counts stay exact, through every way of counting,
// as runs are added, change status, type, start time and attributes, are
// updated late (ignored), written again with the same version, deleted and
// added again.
func testVisibilityCounts(t *testing.T, s *suite) {
	base := store.Time(time.Now().Add(-12 * time.Hour).Truncate(time.Hour))
	want := map[string]store.VisibilityRecord{}
	var recs []store.VisibilityRecord
	for i := range 60 {
		r := countRecord(i, base)
		recs, want[r.RunID] = append(recs, r), r
	}
	s.must(s.st.UpsertVisibility(s.ctx, recs...))
	s.checkCounts("after insert", base, want)
	// Oldest first, every filter lists the same runs in the other order,
	// across pages.
	for _, f := range countFilters(base) {
		newest := s.list(f, 7)
		slices.Reverse(newest)
		equal(t, fmt.Sprintf("oldest first %+v", f), s.listOldest(f, 7), newest)
	}

	// Updates: a status change (running to completed or failed), a type
	// change, an attribute changed, dropped and added, a start time moved
	// to another hour; then late updates and the same versions again.
	var updates, late []store.VisibilityRecord
	for i := 0; i < 60; i += 2 {
		r := want[countRecord(i, base).RunID]
		old := r
		r.Version += 10
		r.Attributes = maps.Clone(r.Attributes)
		switch i % 10 {
		case 0:
			r.Status, r.CloseTime = store.StatusFailed, r.StartTime.Add(time.Hour)
		case 2:
			r.Type = "refund"
		case 4:
			r.Attributes["region"] = "eu"
		case 6:
			delete(r.Attributes, "tier")
			r.Attributes["priority"] = "high"
		case 8:
			r.StartTime = r.StartTime.Add(95 * time.Minute)
			r.Status, r.CloseTime = store.StatusCompleted, r.StartTime.Add(time.Minute)
		}
		updates, want[r.RunID] = append(updates, r), r
		old.Status, old.Type, old.Attributes = store.StatusTimedOut, "stale", map[string]string{"region": "stale"}
		late = append(late, old)
	}
	s.must(s.st.UpsertVisibility(s.ctx, updates...))
	s.checkCounts("after updates", base, want)
	s.must(s.st.UpsertVisibility(s.ctx, late...))
	s.must(s.st.UpsertVisibility(s.ctx, updates...))
	s.checkCounts("after late and repeated updates", base, want)

	// Deletes, of a run that is gone too; then one comes back.
	for i := 1; i < 60; i += 5 {
		id := countRecord(i, base).RunID
		s.must(s.st.DeleteVisibility(s.ctx, "default", id))
		delete(want, id)
	}
	if err := s.st.DeleteVisibility(s.ctx, "default", "no-such-run"); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	s.checkCounts("after deletes", base, want)
	back := countRecord(1, base)
	back.Version = 30
	s.must(s.st.UpsertVisibility(s.ctx, back))
	want[back.RunID] = back
	s.checkCounts("after a deleted run came back", base, want)

	// Another namespace's runs are not counted.
	s.createNamespace("other")
	o := countRecord(2, base)
	o.Namespace = "other"
	s.must(s.st.UpsertVisibility(s.ctx, o))
	s.checkCounts("with another namespace", base, want)
}

// testVisibilityCountsConcurrent: counts are exact after writers update
// and delete runs at once (each writer its own runs, as a shard's owner
// writes its runs' records; the counters are shared), many times over.
func testVisibilityCountsConcurrent(t *testing.T, s *suite) {
	base := store.Time(time.Now().Add(-12 * time.Hour).Truncate(time.Hour))
	const writers, runs, rounds, batch = 4, 15, 30, 6
	var version atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				var recs []store.VisibilityRecord
				for range batch {
					i := w*runs + rnd.IntN(runs)
					r := countRecord(i, base)
					r.Version = version.Add(1)
					r.Status = store.RunStatus(1 + rnd.IntN(7))
					r.Type = []string{"order", "refund", "ship"}[rnd.IntN(3)]
					r.StartTime = base.Add(time.Duration(rnd.IntN(600)) * time.Minute)
					r.Attributes = map[string]string{"region": []string{"eu", "us"}[rnd.IntN(2)]}
					if rnd.IntN(2) == 0 {
						r.Attributes["tier"] = "1"
					}
					recs = append(recs, r)
				}
				if err := s.st.UpsertVisibility(s.ctx, recs...); err != nil {
					errs <- err
					return
				}
				if rnd.IntN(3) == 0 {
					id := countRecord(w*runs+rnd.IntN(runs), base).RunID
					if err := s.st.DeleteVisibility(s.ctx, "default", id); err != nil && !errors.Is(err, store.ErrNotFound) {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := map[string]store.VisibilityRecord{}
	for i := range writers * runs {
		r, err := s.st.GetVisibility(s.ctx, "default", countRecord(i, base).RunID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		s.must(err)
		want[r.RunID] = r
	}
	s.checkCounts("after concurrent writers", base, want)
}

// testVisibilityPrefixes lists and counts runs by workflow id and business
// key prefixes, alone and with every other field, across pages: prefixes
// of many runs and of few (a backend whose open sets a small prefix scan
// limit takes both of its ways; pages of 3 runs, so that a prefix listed
// through its range spans pages), of none, of multi-byte and of the
// greatest code point, whose range has no end.
func testVisibilityPrefixes(t *testing.T, s *suite) {
	families := []string{"order-", "orders-", "ord", "other-", "Order-", "order-é", "order-\U0010FFFF", "\U0010FFFF", "é-"}
	base := store.Time(time.Now().Add(-time.Hour))
	var all []store.VisibilityRecord
	for i := range 90 {
		r := record(i, base)
		// Ten runs a family, in groups of 3 or 4 ("order-0-", "order-1-",
		// ...); business keys in groups of 4 or 5 ("cust-a0", ...).
		r.WorkflowID = fmt.Sprintf("%s%d-%d", families[i%len(families)], i/len(families)%3, i)
		if r.BusinessKey = []string{"cust-a", "cust-ab", "cust-b", "", "Cust-a"}[i%5]; r.BusinessKey != "" {
			r.BusinessKey += fmt.Sprint(i / 5 % 4)
		}
		all = append(all, r)
	}
	s.must(s.st.UpsertVisibility(s.ctx, all...))
	slices.Reverse(all) // newest first, as listed
	ns := store.RunFilter{Namespace: "default"}
	var filters []store.RunFilter
	for _, p := range []string{"order-", "order-0-", "order-1", "order-1-10", "ord", "o", "order-é", "order-é2", "order-\U0010FFFF",
		"\U0010FFFF", "\U0010FFFF0", "é", "zzz", "order-3"} {
		with := func(set func(*store.RunFilter)) {
			f := ns
			f.WorkflowIDPrefix = p
			set(&f)
			filters = append(filters, f)
		}
		with(func(*store.RunFilter) {})
		with(func(f *store.RunFilter) { f.Type = "order" })
		with(func(f *store.RunFilter) { f.Statuses = []store.RunStatus{store.StatusCompleted} })
		with(func(f *store.RunFilter) {
			f.Statuses = []store.RunStatus{store.StatusRunning, store.StatusCompleted}
			f.StartedAfter, f.StartedBefore = base.Add(10*time.Second), base.Add(70*time.Second)
		})
		with(func(f *store.RunFilter) { f.BusinessKeyPrefix = "cust-a" })
		with(func(f *store.RunFilter) { f.BusinessKey = "cust-b1" })
		with(func(f *store.RunFilter) { f.Attributes = map[string]string{"region": "eu"} })
	}
	for _, p := range []string{"cust-", "cust-a", "cust-a0", "cust-ab3", "Cust", "c", "x"} {
		f := ns
		f.BusinessKeyPrefix = p
		filters = append(filters, f)
		f.Type = "refund"
		filters = append(filters, f)
		f.Type, f.WorkflowID = "", all[7].WorkflowID
		filters = append(filters, f)
	}
	for _, f := range filters {
		want := filter(all, func(r store.VisibilityRecord) bool { return matchesFilter(f, r) })
		if got := s.list(f, 3); !sameRuns(got, want) {
			t.Errorf("%+v: listed %v, want %v", f, runIDs(got), runIDs(want))
		}
	}
	// A run whose workflow id or business key changes leaves the ranges of
	// its old values.
	moved := all[0]
	moved.WorkflowID, moved.BusinessKey, moved.Version = "zzz-moved", "zzz-key", moved.Version+1
	s.must(s.st.UpsertVisibility(s.ctx, moved))
	for _, f := range []store.RunFilter{{Namespace: "default", WorkflowIDPrefix: all[0].WorkflowID}, {Namespace: "default", BusinessKeyPrefix: "zzz"}} {
		got := s.list(f, 3)
		want := filter(append([]store.VisibilityRecord{moved}, all[1:]...), func(r store.VisibilityRecord) bool { return matchesFilter(f, r) })
		if !sameRuns(got, want) {
			t.Errorf("after the move, %+v: listed %v, want %v", f, runIDs(got), runIDs(want))
		}
	}
	// An exact value and a prefix: both must match.
	for _, f := range []store.RunFilter{
		{Namespace: "default", WorkflowID: all[9].WorkflowID, WorkflowIDPrefix: all[9].WorkflowID[:3]},
		{Namespace: "default", WorkflowID: all[9].WorkflowID, WorkflowIDPrefix: "zzz"},
		{Namespace: "default", BusinessKey: "cust-a1", BusinessKeyPrefix: "cust"},
		{Namespace: "default", BusinessKey: "cust-a1", BusinessKeyPrefix: "cust-b"},
	} {
		want := filter(all[1:], func(r store.VisibilityRecord) bool { return matchesFilter(f, r) })
		if got := s.list(f, 3); !sameRuns(got, want) {
			t.Errorf("%+v: listed %v, want %v", f, runIDs(got), runIDs(want))
		}
	}
	for _, f := range []store.RunFilter{
		{Namespace: "default", WorkflowIDPrefix: "order-\xff"},
		{Namespace: "default", BusinessKeyPrefix: "a\x00"},
	} {
		if _, err := s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: f}); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("ListRuns(%+v): %v, want ErrInvalidArgument", f, err)
		}
		if _, err := s.st.CountRuns(s.ctx, f); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("CountRuns(%+v): %v, want ErrInvalidArgument", f, err)
		}
	}
}

// sameRuns reports whether two listings hold the same runs, in order.
func sameRuns(a, b []store.VisibilityRecord) bool {
	return slices.Equal(runIDs(a), runIDs(b))
}

func runIDs(rs []store.VisibilityRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.RunID
	}
	return out
}
