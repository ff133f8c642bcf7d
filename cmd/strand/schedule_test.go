package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/workflow"
)

// Report is a scheduled workflow: it reports the day it stands for.
func Report(ctx workflow.Context, _ struct{}) (string, error) {
	return workflow.ScheduledTime(ctx).Format(time.DateOnly), nil
}

// TestScheduleVerbs drives strand schedule against a server that runs the
// scheduler, as strand server does.
func TestScheduleVerbs(t *testing.T) {
	url := systemServer(t)
	cli := func(args ...string) string {
		t.Helper()
		out, code := run(t, append(args, "--server", url)...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	// Bad input: the field at fault, exit 1, nothing created.
	for _, c := range []struct{ args, want string }{
		{"--cron 61_*_*_*_* --workflow-type Report", `schedule.spec.cron[0]: "61 * * * *"`},
		{"--cron @daily --start 2026-02-01 --end 2026-01-01 --workflow-type Report", "schedule.spec.end: 2026-01-01T00:00:00Z is not after the start"},
		{"--cron @daily --start yesterday --workflow-type Report", `--start "yesterday": want RFC 3339`},
		{"--cron @daily --catchup sometimes --workflow-type Report", `schedule.policies.catchup: "sometimes"; want one of [latest none all]`},
	} {
		args := []string{"schedule", "create", "bad", "--server", url}
		for _, a := range strings.Fields(c.args) {
			args = append(args, strings.ReplaceAll(a, "_", " "))
		}
		if out, code := run(t, args...); code == 0 || !strings.Contains(out, c.want) {
			t.Fatalf("create %s: exit %d: %s; want an error with %q", c.args, code, out, c.want)
		}
	}

	cli("schedule", "create", "daily-report", "--cron", "0 6 * * *", "--time-zone", "Europe/Berlin", "--workflow-type", "Report", "--overlap", "buffer_one", "--catchup", "all")
	eventually("the list", func() bool { return strings.Contains(cli("schedule", "list"), "daily-report") })
	if out := cli("schedule", "list"); !strings.Contains(out, "0 6 * * * (Europe/Berlin)") || !strings.Contains(out, "active") {
		t.Fatalf("list: %s", out)
	}
	var d api.ScheduleDescription
	if err := json.Unmarshal([]byte(cli("schedule", "describe", "daily-report", "-o", "json")), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.NextFires) != 10 || d.NextFires[0].In(time.UTC).Hour() != 5 && d.NextFires[0].In(time.UTC).Hour() != 4 {
		t.Fatalf("next fires %v; want ten, at 06:00 in Berlin", d.NextFires)
	}

	cli("schedule", "pause", "daily-report", "--note", "quarter close")
	out := cli("schedule", "describe", "daily-report")
	for _, want := range []string{"paused", "quarter close", "strand-cli:", "buffer_one"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe after pause: %s; want %q", out, want)
		}
	}
	if !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return slices.Equal(strings.Fields(l), []string{"Catch-up", "all"}) }) {
		t.Fatalf("describe: %s; want the catch-up policy all", out)
	}
	cli("schedule", "update", "daily-report", "--cron", "0 7 * * *")
	if out := cli("schedule", "describe", "daily-report"); !strings.Contains(out, "0 7 * * *") || !strings.Contains(out, "paused") {
		t.Fatalf("describe after update: %s; want the new spec, still paused", out)
	}
	cli("schedule", "unpause", "daily-report")
	cli("schedule", "trigger", "daily-report")
	cli("schedule", "backfill", "daily-report", "--start", "2026-01-01", "--end", "2026-01-04", "--parallelism", "3")
	eventually("four actions closed", func() bool {
		var d api.ScheduleDescription
		if err := json.Unmarshal([]byte(cli("schedule", "describe", "daily-report", "-o", "json")), &d); err != nil {
			t.Fatal(err)
		}
		closed := 0
		for _, r := range d.Recent {
			if r.Status == "completed" {
				closed++
			}
		}
		return closed == 4 && d.Backfilled == 3 && d.Triggers == 1
	})
	// Each backfilled run reports its own day (07:00 Berlin is 06:00 UTC).
	var res api.Result
	if err := json.Unmarshal([]byte(cli("workflow", "result", "daily-report-2026-01-02T06:00:00Z", "-o", "json")), &res); err != nil || string(res.Output) != `"2026-01-02"` {
		t.Fatalf("backfilled run: %+v, %v", res, err)
	}

	cli("schedule", "delete", "daily-report")
	if out, code := run(t, "schedule", "describe", "daily-report", "--server", url); code == 0 || !strings.Contains(out, `schedule "daily-report" not found`) {
		t.Fatalf("describe after delete: exit %d: %s", code, out)
	}
}
