package storetest

import (
	"fmt"
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
	if n := len(s.list(store.RunFilter{Namespace: "ties"}, 3)); n != 10 {
		t.Fatalf("listed %d of 10 runs with one start time", n)
	}
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
}
