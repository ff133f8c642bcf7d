package cassandra

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

func TestDayOf(t *testing.T) {
	for _, c := range []struct{ ms, day int64 }{
		{0, 0}, {dayMillis - 1, 0}, {dayMillis, 1}, {-1, -1}, {-dayMillis, -1}, {-dayMillis - 1, -2},
	} {
		if got := dayOf(c.ms); got != c.day {
			t.Errorf("dayOf(%d) = %d, want %d", c.ms, got, c.day)
		}
	}
}

func TestBuckets(t *testing.T) {
	const hour, minute = 3600000, 60000
	for _, c := range []struct {
		level      int
		ms         int64
		id         int64
		start, end int64
	}{
		{0, 3*dayMillis + 5, 3, 3 * dayMillis, 4 * dayMillis},
		{0, -1, -1, -dayMillis, 0},
		{1, 3*dayMillis + 5, levelStride + 72, 72 * hour, 73 * hour},
		{1, -1, levelStride - 1, -hour, 0},
		{2, 90*minute + 1, 2*levelStride + 90, 90 * minute, 91 * minute},
		{3, 1_700_000_000_123, 3*levelStride + 1_700_000_000, 1_700_000_000_000, 1_700_000_001_000},
		{3, -1500, 3*levelStride - 2, -2000, -1000},
	} {
		id := bucketID(c.level, c.ms)
		level, start, end := bucketSpan(id)
		if id != c.id || level != c.level || start != c.start || end != c.end || c.ms < start || c.ms >= end {
			t.Errorf("level %d at %d: bucket %d (%d, %d to %d); want %d (%d to %d)", c.level, c.ms, id, level, start, end, c.id, c.start, c.end)
		}
	}
}

func TestTerm(t *testing.T) {
	if got, raw := term("order"); got != "order" || !raw {
		t.Errorf("term(order) = %q, %v", got, raw)
	}
	for _, v := range []string{strings.Repeat("x", maxTerm+1), "\xff", "\x00abc"} {
		got, raw := term(v)
		if raw || !strings.HasPrefix(got, "\x00") || len(got) != 65 {
			t.Errorf("term(%q) = %q, %v: want a hash", v, got, raw)
		}
	}
	// Attribute terms do not collide when names contain the separator.
	a, _ := attrTerm("a=b", "c")
	b, _ := attrTerm("a", "b=c")
	if a == b {
		t.Errorf("attrTerm collides: %q", a)
	}
}

func TestPlanFor(t *testing.T) {
	ns := store.RunFilter{Namespace: "n"}
	for _, c := range []struct {
		name string
		f    func(*store.RunFilter)
		want plan
	}{
		{"all", func(*store.RunFilter) {}, plan{kind: kindAll, terms: []string{""}, exact: true}},
		{"time range", func(f *store.RunFilter) { f.StartedAfter = time.Unix(1, 0) }, plan{kind: kindAll, terms: []string{""}, exact: true}},
		{"statuses", func(f *store.RunFilter) {
			f.Statuses = []store.RunStatus{store.StatusCompleted, store.StatusRunning, store.StatusCompleted}
		}, plan{kind: kindStatus, terms: []string{"completed", "running"}, exact: true}},
		{"type and status", func(f *store.RunFilter) {
			f.Type, f.Statuses = "order", []store.RunStatus{store.StatusRunning}
		}, plan{kind: kindType, terms: []string{"order"}, exact: false}},
		{"attributes", func(f *store.RunFilter) {
			f.Type, f.Attributes = "order", map[string]string{"tier": "1", "region": "eu"}
		}, plan{kind: kindAttr, terms: []string{"6:region=eu"}, exact: false}},
		{"one attribute", func(f *store.RunFilter) { f.Attributes = map[string]string{"region": "eu"} }, plan{kind: kindAttr, terms: []string{"6:region=eu"}, exact: true}},
		{"business key", func(f *store.RunFilter) { f.BusinessKey, f.Type = "k", "order" }, plan{kind: kindBusinessKey, terms: []string{"k"}, exact: false}},
		{"workflow id", func(f *store.RunFilter) { f.WorkflowID, f.BusinessKey = "wf", "k" }, plan{kind: kindWorkflow, terms: []string{"wf"}, exact: false}},
		{"long type", func(f *store.RunFilter) { f.Type = strings.Repeat("t", 300) }, plan{kind: kindType, terms: []string{mustTerm(strings.Repeat("t", 300))}, exact: false}},
		{"workflow id prefix", func(f *store.RunFilter) { f.WorkflowIDPrefix = "order-" }, plan{kind: kindWorkflowValue, prefix: "order-", exact: true,
			rest: &plan{kind: kindAll, terms: []string{""}, exact: true}}},
		{"prefixes and type", func(f *store.RunFilter) { f.WorkflowIDPrefix, f.BusinessKeyPrefix, f.Type = "order-", "c", "order" },
			plan{kind: kindWorkflowValue, prefix: "order-", rest: &plan{kind: kindType, terms: []string{"order"}, exact: true}}},
		{"business key prefix", func(f *store.RunFilter) {
			f.BusinessKeyPrefix, f.Statuses = "c", []store.RunStatus{store.StatusRunning}
		},
			plan{kind: kindBusinessKeyValue, prefix: "c", rest: &plan{kind: kindStatus, terms: []string{"running"}, exact: true}}},
		{"workflow id and business key prefix", func(f *store.RunFilter) { f.WorkflowID, f.BusinessKeyPrefix = "wf", "c" },
			plan{kind: kindWorkflow, terms: []string{"wf"}}},
	} {
		f := ns
		c.f(&f)
		if got := planFor(f); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func mustTerm(v string) string {
	t, _ := term(v)
	return t
}

func TestBounds(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	f := store.RunFilter{Namespace: "n", StartedAfter: at(1000), StartedBefore: at(5000)}
	b := boundsFor(f, nil, false)
	if want := (bounds{hasUpper: true, upperStart: 5000, hasLower: true, lowerStart: 1000}); b != want {
		t.Fatalf("bounds %+v, want %+v", b, want)
	}
	// A cursor below StartedBefore replaces it; one above does not.
	if b := boundsFor(f, &runCursor{Start: 3000, RunID: "r"}, false); b.upperStart != 3000 || b.upperRun != "r" {
		t.Errorf("cursor below: %+v", b)
	}
	if b := boundsFor(f, &runCursor{Start: 6000, RunID: "r"}, false); b.upperStart != 5000 || b.upperRun != "" {
		t.Errorf("cursor above: %+v", b)
	}
	if b := boundsFor(f, &runCursor{Start: 5000, RunID: "r"}, false); b.upperStart != 5000 || b.upperRun != "" {
		t.Errorf("cursor at StartedBefore: %+v", b)
	}
	if !boundsFor(store.RunFilter{StartedAfter: at(5000), StartedBefore: at(5000)}, nil, false).empty() {
		t.Error("[5000, 5000) is not empty")
	}
	if boundsFor(store.RunFilter{StartedAfter: at(5000)}, &runCursor{Start: 5000, RunID: "a"}, false).empty() {
		t.Error("[5000, (5000, a)) is empty")
	}
	whole := boundsFor(store.RunFilter{StartedAfter: at(dayMillis), StartedBefore: at(2 * dayMillis)}, nil, false)
	if !whole.covers(1) || whole.covers(0) || whole.covers(2) {
		t.Errorf("covers: %+v", whole)
	}
	if boundsFor(store.RunFilter{StartedBefore: at(2*dayMillis - 1)}, nil, false).covers(1) {
		t.Error("a bound inside the day covers it")
	}
}

func TestIndexKeysAndMinus(t *testing.T) {
	start := time.UnixMilli(3*dayMillis + 5)
	r := store.VisibilityRecord{Namespace: "n", WorkflowID: "wf", RunID: "r", Type: "order", Status: store.StatusRunning,
		StartTime: start, Attributes: map[string]string{"region": "eu"}}
	keys := indexKeys(r, 3)
	want := map[indexKey]bool{
		{kindAll, "", 3, 3*dayMillis + 5}:             true,
		{kindStatus, "running", 3, 3*dayMillis + 5}:   true,
		{kindWorkflow, "wf", 0, 3*dayMillis + 5}:      true,
		{kindWorkflowValue, "wf", 3, 3*dayMillis + 5}: true,
		{kindType, "order", 3, 3*dayMillis + 5}:       true,
		{kindAttr, "6:region=eu", 3, 3*dayMillis + 5}: true,
	}
	if len(keys) != len(want) {
		t.Fatalf("keys %+v", keys)
	}
	for _, k := range keys {
		if !want[k] {
			t.Errorf("unexpected key %+v", k)
		}
	}
	closed := r
	closed.Status, closed.BusinessKey = store.StatusCompleted, "k"
	stale := minus(keys, indexKeys(closed, 3))
	if len(stale) != 1 || stale[0].Term != "running" {
		t.Errorf("stale %+v", stale)
	}
	if got := minus(append(keys, keys...), nil); len(got) != len(keys) {
		t.Errorf("minus does not dedupe: %d keys", len(got))
	}
}

func TestStaleAfter(t *testing.T) {
	k := func(term string) indexKey { return indexKey{kindStatus, term, 1, 1} }
	del, stale := staleAfter([]indexKey{k("a"), k("b")}, nil, []indexKey{k("b"), k("c")})
	if !reflect.DeepEqual(del, []indexKey{k("a")}) || !reflect.DeepEqual(stale, []staleKey{{k("a"), staleRetries}}) {
		t.Fatalf("first update: del %v, stale %v", del, stale)
	}
	// The same record again still deletes the stale row, staleRetries times.
	cur := []indexKey{k("b"), k("c")}
	for i := staleRetries; i > 0; i-- {
		del, stale = staleAfter(cur, stale, cur)
		if !reflect.DeepEqual(del, []indexKey{k("a")}) {
			t.Fatalf("retry %d: del %v", i, del)
		}
	}
	if len(stale) != 0 {
		t.Fatalf("stale rows kept after %d updates: %v", staleRetries, stale)
	}
	// A stale row that comes back is not deleted.
	del, stale = staleAfter(cur, []staleKey{{k("a"), 2}, {k("c"), 2}}, []indexKey{k("a")})
	if !reflect.DeepEqual(del, []indexKey{k("b"), k("c")}) || len(stale) != 2 {
		t.Fatalf("returning row: del %v, stale %v", del, stale)
	}
}
