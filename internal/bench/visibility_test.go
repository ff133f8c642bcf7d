package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
)

// matches is the filter's meaning, written apart from every store.
func matches(f store.RunFilter, r store.VisibilityRecord) bool {
	if f.WorkflowID != "" && r.WorkflowID != f.WorkflowID || f.Type != "" && r.Type != f.Type ||
		f.BusinessKey != "" && r.BusinessKey != f.BusinessKey ||
		!strings.HasPrefix(r.WorkflowID, f.WorkflowIDPrefix) || !strings.HasPrefix(r.BusinessKey, f.BusinessKeyPrefix) ||
		len(f.Statuses) > 0 && !slices.Contains(f.Statuses, r.Status) ||
		!f.StartedAfter.IsZero() && r.StartTime.Before(f.StartedAfter) ||
		!f.StartedBefore.IsZero() && !r.StartTime.Before(f.StartedBefore) {
		return false
	}
	for k, v := range f.Attributes {
		if r.Attributes[k] != v {
			return false
		}
	}
	return true
}

// TestRunVisibility loads a small data set on every backend and checks
// that every filter was measured, with the rows the data set says it
// matches: a first page, the page after it where there is one, and a
// count. A second run on the same store loads nothing and measures the
// same rows.
//
// The data set has visTestRows records on every backend: the fewest with
// which every filter not marked rare matches a record, over 30 days and
// over an hour alike (at 500, "last day status=failed" matches none;
// checkReport fails on such a filter, so a smaller or changed data set
// cannot pass unnoticed). That is still more than a page of 50 for most
// filters, so first pages, the page after and counts all differ, and six
// batches of 100 for three loaders. The 3,000 SQLite and PostgreSQL had
// tested no more, at five times the rows to load, scan and count under the
// race detector; strand bench visibility measures a million by default.
const visTestRows = 600

func TestRunVisibility(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(t *testing.T) store.Store
		rows int
		span time.Duration
	}{
		{"sqlite", func(t *testing.T) store.Store { return testdb.SQLite(t) }, visTestRows, 0},
		{"sqlite, a burst", func(t *testing.T) store.Store { return testdb.SQLite(t) }, visTestRows, time.Hour},
		{"postgres", func(t *testing.T) store.Store { return testdb.Postgres(t) }, visTestRows, 0},
		{"cassandra", func(t *testing.T) store.Store { return testdb.Cassandra(t) }, visTestRows, 0},
	} {
		t.Run(backend.name, func(t *testing.T) {
			st := backend.open(t)
			ctx := context.Background()
			cfg := VisibilityConfig{Store: st, Rows: backend.rows, PageSizes: []int{10, 50}, Repeat: 3, Batch: 100, Loaders: 3, Span: backend.span}
			rep, err := RunVisibility(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Loaded != backend.rows || rep.LoadTime <= 0 || rep.LoadRate() <= 0 {
				t.Fatalf("loaded %d records in %s; want %d", rep.Loaded, rep.LoadTime, backend.rows)
			}
			d, err := dataset(ctx, VisibilityConfig{Store: st, Rows: backend.rows, Namespace: rep.Namespace, Span: cmp.Or(backend.span, VisibilitySpan)})
			if err != nil {
				t.Fatal(err)
			}
			var all []store.VisibilityRecord
			for i := range d.rows {
				all = append(all, d.record(rep.Namespace, i))
			}
			checkReport(t, cfg, d, all, rep)

			// Again on the same store: nothing to load, the same answers.
			// One measured call per query compares the answers (the first
			// run measured each three times, as a median and a maximum
			// need); every query still runs twice.
			cfgAgain := cfg
			cfgAgain.Repeat = 1
			again, err := RunVisibility(ctx, cfgAgain)
			if err != nil {
				t.Fatal(err)
			}
			if again.Loaded != 0 {
				t.Fatalf("second run loaded %d records", again.Loaded)
			}
			checkReport(t, cfgAgain, d, all, again)
			var out strings.Builder
			PrintVisibility(&out, backend.name, again)
			if !strings.Contains(out.String(), "none loaded") || strings.Count(out.String(), "\n") != len(again.Results)+3 {
				t.Fatalf("printed:\n%s", out.String())
			}

			// A data set of another size or span is not mixed into this one.
			cfg.Namespace = rep.Namespace
			cfg.Rows++
			if _, err := RunVisibility(ctx, cfg); !errors.Is(err, store.ErrInvalidArgument) {
				t.Fatalf("another size in the same namespace: %v", err)
			}
			cfg.Rows--
			cfg.Span = cmp.Or(backend.span, VisibilitySpan) + time.Hour
			if _, err := RunVisibility(ctx, cfg); !errors.Is(err, store.ErrInvalidArgument) {
				t.Fatalf("another span in the same namespace: %v", err)
			}
		})
	}
}

func checkReport(t *testing.T, cfg VisibilityConfig, d visDataset, all []store.VisibilityRecord, rep VisibilityReport) {
	t.Helper()
	got := map[string]QueryResult{}
	for _, r := range rep.Results {
		if len(r.Times) != cfg.Repeat || r.Median <= 0 || r.Max < r.Median || r.First <= 0 {
			t.Errorf("%s %s: not measured: %+v", r.Filter, r.Query, r)
		}
		got[r.Filter+"/"+r.Query] = r
	}
	for _, vf := range d.filters(rep.Namespace) {
		want := 0
		for _, r := range all {
			if matches(vf.f, r) {
				want++
			}
		}
		if want == 0 && !vf.rare {
			t.Errorf("filter %s matches no record of the data set", vf.name)
		}
		queries := map[string]int64{"count": int64(want)}
		for _, size := range cfg.PageSizes {
			queries[fmt.Sprint("list ", size)] = int64(min(size, want))
		}
		if want > cfg.PageSizes[0] {
			queries[fmt.Sprint("next ", cfg.PageSizes[0])] = int64(min(cfg.PageSizes[0], want-cfg.PageSizes[0]))
		}
		for q, n := range queries {
			r, ok := got[vf.name+"/"+q]
			if !ok {
				t.Errorf("%s %s: not measured", vf.name, q)
			} else if r.Rows != n {
				t.Errorf("%s %s: %d rows; the data set has %d", vf.name, q, r.Rows, n)
			}
		}
	}
	if r, ok := got[RunsPageFilter+"/page 50"]; !ok || r.Rows != int64(min(50, len(all))) {
		t.Errorf("the runs page: %+v; want %d rows", r, min(50, len(all)))
	}
	if len(rep.Results) == 0 {
		t.Fatal("no results")
	}
}
