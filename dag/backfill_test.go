package dag_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/store"
)

// dagBackfill: strand dag backfill without a schedule: serial over a range
// (in a time zone), stopping at a date that fails; parallel over a list,
// with the DAGs that depend on it; bad input starts nothing.
func dagBackfill(t *testing.T, e *env) {
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: bf-up
tasks:
  - {name: mark, type: shell, script: 'test ${system.biz.curdate} != 20260303 && touch %s/up_${system.biz.curdate}_${system.biz.date}_$[HHmm]'}
`, dir))
	e.apply(fmt.Sprintf(`name: bf-down
tasks:
  - {name: wait, type: dependent, depends: [{dag: bf-up}], check_interval: 1s, timeout: {after: 2m, action: fail}}
  - {name: mark, type: shell, upstream: [wait], script: 'touch %s/down_${system.biz.curdate}'}
`, dir))
	backfills := func() int {
		page, err := e.eng.ListWorkflows(e.ctx, api.ListRequest{Namespace: e.ns, WorkflowType: dag.BackfillWorkflowType, BusinessKey: "bf-up"})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Runs)
	}

	// Bad input: a clear error, and no backfill.
	for _, c := range []struct {
		req   dag.BackfillRequest
		field string
	}{
		{dag.BackfillRequest{DAG: "bf-up", From: "2026-01-04", To: "2026-01-01"}, "to"},
		{dag.BackfillRequest{DAG: "bf-up", From: "2026-01-32", To: "2026-02-02"}, "from"},
		{dag.BackfillRequest{DAG: "bf-up", Dates: []string{"2026-01-01", "yesterday"}}, "dates"},
		{dag.BackfillRequest{DAG: "bf-up", From: "2026-01-01", To: "2026-01-02", Dates: []string{"2026-01-03"}}, "dates"},
		{dag.BackfillRequest{DAG: "bf-up"}, "from"},
		{dag.BackfillRequest{DAG: "bf-up", From: "2026-01-01", To: "2026-01-02", At: "25:00"}, "at"},
		{dag.BackfillRequest{DAG: "bf-up", From: "2026-01-01", To: "2026-01-02", TimeZone: "Mars/Olympus"}, "time_zone"},
		{dag.BackfillRequest{DAG: "bf-up", From: "2026-01-01", To: "2026-01-02", Parallelism: -1}, "parallelism"},
	} {
		_, err := e.client.Backfill(e.ctx, c.req)
		var ia *store.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != c.field {
			t.Errorf("backfill %+v: %v; want an invalid argument of %s", c.req, err, c.field)
		}
	}
	if _, err := e.client.Backfill(e.ctx, dag.BackfillRequest{DAG: "no-such-dag", From: "2026-01-01", To: "2026-01-02"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("backfill of an unknown DAG: %v; want not found", err)
	}
	if n := backfills(); n != 0 {
		t.Fatalf("bad input started %d backfills", n)
	}

	wait := func(id string) dag.Backfill {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			b, err := e.client.BackfillProgress(e.ctx, id)
			if err == nil && b.State != dag.BackfillRunning {
				return b
			}
			if time.Now().After(deadline) {
				t.Fatalf("backfill %s: %+v, %v after 2 minutes; want it ended", id, b, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	states := func(b dag.Backfill) []string {
		var out []string
		for _, d := range b.Days {
			for _, x := range d.Instances {
				out = append(out, d.Date+" "+x.DAG+" "+x.State)
			}
		}
		return out
	}
	files := func(want ...string) {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		var got []string
		for _, en := range entries {
			got = append(got, en.Name())
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("files %v; want %v", got, want)
		}
		for _, f := range want {
			os.Remove(filepath.Join(dir, f))
		}
	}

	// Serial, over a range, in Shanghai at 02:00: one date after another,
	// and it stops at the date that fails (2026-03-03).
	serial, err := e.client.Backfill(e.ctx, dag.BackfillRequest{DAG: "bf-up", From: "2026-03-01", To: "2026-03-04",
		TimeZone: "Asia/Shanghai", At: "02:00", ID: "bf-serial"})
	if err != nil {
		t.Fatal(err)
	}
	if len(serial.Days) != 4 || serial.Days[0].Instances[0].WorkflowID != "bf-serial-20260301" || serial.Parallelism != 1 {
		t.Fatalf("serial backfill started as %+v", serial)
	}
	b := wait("bf-serial")
	want := []string{"2026-03-01 bf-up success", "2026-03-02 bf-up success", "2026-03-03 bf-up failure", "2026-03-04 bf-up not_run"}
	if b.State != dag.BackfillFailure || !slices.Equal(states(b), want) {
		t.Fatalf("serial backfill ended %s: %v; want failure: %v", b.State, states(b), want)
	}
	files("up_20260301_20260228_0200", "up_20260302_20260301_0200")
	var prevClose time.Time
	for _, d := range b.Days[:3] {
		desc, err := e.eng.DescribeWorkflow(e.ctx, api.RunRef{Namespace: e.ns, WorkflowID: d.Instances[0].WorkflowID})
		if err != nil {
			t.Fatal(err)
		}
		if desc.StartTime.Before(prevClose) {
			t.Fatalf("serial: %s started at %s, before the date before it ended (%s)", desc.WorkflowID, desc.StartTime, prevClose)
		}
		prevClose = desc.CloseTime
	}
	if _, err := e.eng.DescribeWorkflow(e.ctx, api.RunRef{Namespace: e.ns, WorkflowID: "bf-serial-20260304"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("serial: the date after the failure: %v; want never started", err)
	}

	// Parallel, over a list (unordered, one date twice), with the DAGs
	// that depend on it: each date's bf-down runs once its bf-up succeeded.
	par, err := e.client.Backfill(e.ctx, dag.BackfillRequest{DAG: "bf-up", Dates: []string{"2026-04-05", "2026-04-01", "2026-04-05"},
		Parallelism: 2, Dependents: true, ID: "bf-par"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(par.Dependents, []string{"bf-down"}) || len(par.Days) != 2 {
		t.Fatalf("parallel backfill started as %+v; want two dates, bf-down depending", par)
	}
	b = wait("bf-par")
	want = []string{"2026-04-01 bf-up success", "2026-04-01 bf-down success", "2026-04-05 bf-up success", "2026-04-05 bf-down success"}
	if b.State != dag.BackfillSuccess || !slices.Equal(states(b), want) {
		t.Fatalf("parallel backfill ended %s: %v; want success: %v", b.State, states(b), want)
	}
	files("up_20260401_20260331_0000", "up_20260405_20260404_0000", "down_20260401", "down_20260405")
	// Both dates ran at once: each started before the other ended.
	var runs []api.Description
	for _, d := range b.Days {
		desc, err := e.eng.DescribeWorkflow(e.ctx, api.RunRef{Namespace: e.ns, WorkflowID: d.Instances[0].WorkflowID})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, desc)
	}
	if !runs[0].StartTime.Before(runs[1].CloseTime) || !runs[1].StartTime.Before(runs[0].CloseTime) {
		t.Fatalf("parallel: %s ran %s to %s, %s %s to %s; want at once", runs[0].WorkflowID, runs[0].StartTime, runs[0].CloseTime,
			runs[1].WorkflowID, runs[1].StartTime, runs[1].CloseTime)
	}
	if n := backfills(); n != 2 {
		t.Fatalf("%d backfills; want 2", n)
	}
}
