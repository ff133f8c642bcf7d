package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/sqlstore"
	"github.com/strandhq/strand/store/postgres"
	"github.com/strandhq/strand/store/sqlite"
)

// TestUpgradeFromVersion1 writes visibility rows under schema version 1,
// upgrades, and checks that lists and counts (from the counters the
// upgrade fills) see them, and that writes after the upgrade keep the
// counters.
func TestUpgradeFromVersion1(t *testing.T) {
	ctx := context.Background()
	for name, open := range map[string]func(t *testing.T) *sqlstore.Store{
		"sqlite": func(t *testing.T) *sqlstore.Store {
			st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "v1.db")})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"postgres": func(t *testing.T) *sqlstore.Store {
			base := testdb.PostgresURL(t)
			st, err := postgres.Open(ctx, postgres.Options{URL: testdb.WithSearchPath(t, base, testdb.NewSchema(t, base))})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	} {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			defer st.Close()
			if _, to, err := st.MigrateTo(ctx, 1); err != nil || to != 1 {
				t.Fatalf("migrate to 1: %d, %v", to, err)
			}
			if _, err := st.CreateNamespace(ctx, store.Namespace{Name: "default"}); err != nil {
				t.Fatal(err)
			}
			// Version 1's UpsertVisibility, as SQL.
			base := store.Time(time.Now().Truncate(time.Hour).Add(-24 * time.Hour))
			q := func(query string) string {
				if name == "postgres" {
					n := 0
					out := ""
					for _, c := range query {
						if c == '?' {
							n++
							out += fmt.Sprint("$", n)
							continue
						}
						out += string(c)
					}
					return out
				}
				return query
			}
			for i := range 50 {
				start := base.Add(time.Duration(i) * 17 * time.Minute)
				status := []store.RunStatus{store.StatusCompleted, store.StatusFailed}[i%2]
				if _, err := st.DB().ExecContext(ctx, q(`INSERT INTO visibility (namespace, run_id, workflow_id, type, status, start_time,
					close_time, business_key, attributes, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
					"default", fmt.Sprint("run-", i), fmt.Sprint("wf-", i), []string{"a", "b", "c"}[i%3], status,
					store.UnixMilli(start), store.UnixMilli(start)+1000, "", []byte(fmt.Sprintf(`{"region":"r%d"}`, i%4)), 1); err != nil {
					t.Fatal(err)
				}
				if _, err := st.DB().ExecContext(ctx, q(`INSERT INTO visibility_attributes (namespace, run_id, name, value) VALUES (?, ?, ?, ?)`),
					"default", fmt.Sprint("run-", i), "region", fmt.Sprint("r", i%4)); err != nil {
					t.Fatal(err)
				}
			}
			if from, to, err := st.Migrate(ctx); err != nil || from != 1 || to < 2 {
				t.Fatalf("upgrade: %d to %d, %v", from, to, err)
			}
			check := func(what string, f store.RunFilter, want int) {
				t.Helper()
				n, err := st.CountRuns(ctx, f)
				if err != nil || n != int64(want) {
					t.Fatalf("%s: count %d, %v; want %d", what, n, err, want)
				}
				p, err := st.ListRuns(ctx, store.ListRunsRequest{RunFilter: f, PageSize: 1000})
				if err != nil || len(p.Runs) != want {
					t.Fatalf("%s: listed %d, %v; want %d", what, len(p.Runs), err, want)
				}
			}
			check("all", store.RunFilter{Namespace: "default"}, 50)
			check("failed", store.RunFilter{Namespace: "default", Statuses: []store.RunStatus{store.StatusFailed}}, 25)
			check("type", store.RunFilter{Namespace: "default", Type: "a"}, 17)
			check("hours", store.RunFilter{Namespace: "default", StartedAfter: base.Add(2 * time.Hour), StartedBefore: base.Add(10 * time.Hour)}, 28)
			check("attribute", store.RunFilter{Namespace: "default", Attributes: map[string]string{"region": "r1"}}, 13)
			check("attribute and time", store.RunFilter{Namespace: "default", Attributes: map[string]string{"region": "r1"},
				StartedAfter: base.Add(5 * time.Hour)}, 8)

			// Writes after the upgrade move the counters.
			r, err := st.GetVisibility(ctx, "default", "run-1")
			if err != nil {
				t.Fatal(err)
			}
			r.Status, r.Attributes, r.Version = store.StatusCompleted, map[string]string{"region": "r0"}, 2
			if err := st.UpsertVisibility(ctx, r); err != nil {
				t.Fatal(err)
			}
			if err := st.DeleteVisibility(ctx, "default", "run-3"); err != nil {
				t.Fatal(err)
			}
			check("failed after writes", store.RunFilter{Namespace: "default", Statuses: []store.RunStatus{store.StatusFailed}}, 23)
			check("attribute after writes", store.RunFilter{Namespace: "default", Attributes: map[string]string{"region": "r1"}}, 12)
			check("other attribute after writes", store.RunFilter{Namespace: "default", Attributes: map[string]string{"region": "r0"}}, 14)
			if name != "sqlite" {
				return
			}

			// SQLite keeps the records in a file of their own: the upgrade
			// moved them out of the runs' file. A move cut short (a record
			// in both files) and records left behind are taken up by the
			// next Migrate, each counted once.
			var left int
			if err := st.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM visibility`).Scan(&left); err != nil || left != 0 {
				t.Fatalf("records left in the runs' file: %d, %v", left, err)
			}
			for _, id := range []string{"run-2", "run-100"} { // moved already; not yet
				if _, err := st.DB().ExecContext(ctx, `INSERT INTO visibility (namespace, run_id, workflow_id, type, status, start_time,
					close_time, business_key, attributes, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					"default", id, "wf-"+id, "c", store.StatusCompleted, store.UnixMilli(base), store.UnixMilli(base)+1000, "", []byte(`{}`), 1); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			check("all after a second move", store.RunFilter{Namespace: "default"}, 50)
			check("type after a second move", store.RunFilter{Namespace: "default", Type: "c"}, 17)
		})
	}
}
