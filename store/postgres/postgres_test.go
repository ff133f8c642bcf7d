package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/sqlstore"
	"github.com/strandhq/strand/store/storetest"
)

func TestConformance(t *testing.T) {
	// A small prefix scan limit: the prefix tests take both ways of
	// listing a prefix.
	storetest.Run(t, func(t *testing.T) store.Store { return testdb.Postgres(t).(*sqlstore.Store).WithPrefixScanLimit(5) })
}

func BenchmarkWritePath(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) (store.Store, storetest.RawCommitter) {
		st := testdb.Postgres(b)
		return st, testdb.Raw(st)
	})
}

// TestCountDeltasAreFolded: the triggers' count deltas are folded into the
// counters as records are written and deleted, so a count reads few of
// them, and counters that reach zero go away.
func TestCountDeltasAreFolded(t *testing.T) {
	st := testdb.Postgres(t)
	ctx := context.Background()
	if _, err := st.CreateNamespace(ctx, store.Namespace{Name: "default"}); err != nil {
		t.Fatal(err)
	}
	db := st.(interface{ DB() *sql.DB }).DB()
	rows := func(table string) int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	base := store.Time(time.Now().Truncate(time.Hour).Add(-48 * time.Hour))
	const total = 3000
	for b := range total / 100 {
		var recs []store.VisibilityRecord
		for i := b * 100; i < (b+1)*100; i++ {
			recs = append(recs, store.VisibilityRecord{Namespace: "default", WorkflowID: fmt.Sprint("wf-", i), RunID: fmt.Sprint("run-", i),
				Type: "t", Status: store.StatusCompleted, StartTime: base.Add(time.Duration(i) * time.Minute),
				Attributes: map[string]string{"n": fmt.Sprint(i)}, Version: 1})
		}
		if err := st.UpsertVisibility(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	if d := rows("visibility_count_deltas"); d >= total {
		t.Fatalf("%d count deltas after %d records: none folded", d, total)
	}
	if n, err := st.CountRuns(ctx, store.RunFilter{Namespace: "default"}); err != nil || n != total {
		t.Fatalf("count %d, %v; want %d", n, err, total)
	}
	for i := range total {
		if err := st.DeleteVisibility(ctx, "default", fmt.Sprint("run-", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.CountRuns(ctx, store.RunFilter{Namespace: "default", StartedAfter: base.Add(time.Hour)}); err != nil || n != 0 {
		t.Fatalf("count %d, %v after deleting every run", n, err)
	}
	// Of the 50 hours and 3,000 attribute values, what is left is at most
	// the counters of the deltas not folded yet (fewer than 1,000 records).
	if h, a := rows("visibility_hour_counts"), rows("visibility_attribute_counts"); h > 20 || a > 1000 {
		t.Fatalf("%d hour counters and %d attribute counters left after deleting every run", h, a)
	}
	if z := rows("visibility_hour_counts WHERE n = 0") + rows("visibility_attribute_counts WHERE n = 0"); z > 0 {
		t.Fatalf("%d counters at zero kept", z)
	}
}
