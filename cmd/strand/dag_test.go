package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/internal/testsmtp"
)

// TestDAGVerbs: a pipeline applied with the CLI runs through a strand
// worker process; a bad definition is refused with its line and column
// and stores nothing.
func TestDAGVerbs(t *testing.T) {
	url := systemServer(t)
	bin := binaries(t, "strand")
	worker, _ := process(t, "running the groups", filepath.Join(bin, "strand"), "worker", "--server", url, "--group", "default")
	cli := func(args ...string) (string, int) {
		t.Helper()
		return run(t, append(args, "--server", url)...)
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: etl\ntasks:\n  - {name: a, type: shell, script: 'true'}\n  - {name: b, type: shell, script: 'true', upstream: [nope]}\n"), 0o644)
	if out, code := cli("dag", "apply", "-f", bad); code != 2 || !strings.Contains(out, "bad.yaml: invalid definition: line 4, column 55: tasks[1].upstream[0]: unknown task \"nope\"") {
		t.Fatalf("bad definition: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "list"); strings.Contains(out, "etl") {
		t.Fatalf("a refused definition was stored: %s", out)
	}
	// References: a sub_process or a dependent naming a DAG that does not
	// exist (yet) is stored with a warning at its line and column; a DAG
	// running itself as a sub_process is refused and stores nothing.
	refs := filepath.Join(dir, "refs.yaml")
	os.WriteFile(refs, []byte("name: refs\ntasks:\n  - {name: child, type: sub_process, dag: nope-child}\n  - name: wait\n    type: dependent\n    depends:\n      - {dag: nope-dag}\n"), 0o644)
	out, code := cli("dag", "apply", "-f", refs)
	if code != 0 || !strings.Contains(out, "refs version 1 stored") ||
		strings.Count(out, "warning: ") != 2 ||
		!strings.Contains(out, `/refs.yaml: line 3, column 43: tasks[0].dag: no DAG "nope-child" to run as a sub-process (apply it before running refs)`) ||
		!strings.Contains(out, `/refs.yaml: line 7, column 15: tasks[1].depends[0].dag: no DAG "nope-dag" to depend on (apply it before running refs)`) {
		t.Fatalf("apply with missing references: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "list"); !strings.Contains(out, "refs") {
		t.Fatalf("a definition with warnings was not stored: %s", out)
	}
	// The API returns the warnings; a DAG that exists is no warning.
	body, _ := json.Marshal(map[string]string{"text": "name: refs-api\ntasks:\n  - {name: child, type: sub_process, dag: refs}\n  - {name: wait, type: dependent, depends: [{dag: nope-dag}]}\n"})
	res, err := http.Post(url+"/api/v1/dags", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var applied struct {
		Version  int32
		Warnings []struct {
			Line, Column   int
			Field, Message string
		}
	}
	err = json.NewDecoder(res.Body).Decode(&applied)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || applied.Version != 1 || len(applied.Warnings) != 1 ||
		applied.Warnings[0].Line != 4 || applied.Warnings[0].Column != 51 || applied.Warnings[0].Field != "tasks[1].depends[0].dag" ||
		!strings.Contains(applied.Warnings[0].Message, `no DAG "nope-dag" to depend on`) {
		t.Fatalf("apply through the API: %s, %v: %+v", res.Status, err, applied)
	}
	self := filepath.Join(dir, "selfish.yaml")
	os.WriteFile(self, []byte("name: selfish\ntasks:\n  - {name: me, type: sub_process, dag: selfish}\n"), 0o644)
	if out, code := cli("dag", "apply", "-f", self); code != 2 || !strings.Contains(out, "selfish.yaml: invalid definition: line 3, column 40: tasks[0].dag: a definition may not run itself as a sub-process") {
		t.Fatalf("self-reference: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "list"); strings.Contains(out, "selfish") {
		t.Fatalf("a refused definition was stored: %s", out)
	}
	cli("dag", "delete", "refs")
	cli("dag", "delete", "refs-api")

	// Tenants: defined with the CLI and the API, named by DAGs (an unknown
	// one is a warning at its line and column); a worker not allowed to
	// run as a tenant refuses the task, naming the tenant and itself.
	if out, code := cli("tenant", "create", "t1", "--user", "nobody", "--queue", "root.t1"); code != 0 || !regexp.MustCompile(`t1\s+nobody\s+root.t1`).MatchString(out) {
		t.Fatalf("tenant create: exit %d: %s", code, out)
	}
	if out, code := cli("tenant", "create", "t1", "--user", "root"); code == 0 || !strings.Contains(out, `tenant "t1" exists (OS user nobody)`) {
		t.Fatalf("tenant create twice: exit %d: %s", code, out)
	}
	if out, code := cli("tenant", "create", "bad/name", "--user", "nobody"); code == 0 || !strings.Contains(out, `"bad/name" is not a tenant name`) {
		t.Fatalf("tenant create with a bad name: exit %d: %s", code, out)
	}
	if out, code := cli("tenant", "update", "t1", "--queue", "root.t1.night"); code != 0 || !strings.Contains(out, "root.t1.night") {
		t.Fatalf("tenant update: exit %d: %s", code, out)
	}
	body, _ = json.Marshal(map[string]string{"name": "t2", "user": "nobody"})
	if res, err := http.Post(url+"/api/v1/tenants", "application/json", bytes.NewReader(body)); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v1/tenants: %v, %v", res, err)
	}
	if out, _ := cli("tenant", "list"); !regexp.MustCompile(`(?s)t1\s+nobody\s+root.t1.night.*t2\s+nobody`).MatchString(out) {
		t.Fatalf("tenant list: %s", out)
	}
	req, _ := http.NewRequest("DELETE", url+"/api/v1/tenants/t2", nil)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE /api/v1/tenants/t2: %v, %v", res, err)
	}
	if res, err := http.Get(url + "/api/v1/tenants/t2"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET a deleted tenant: %v, %v", res, err)
	}
	if out, code := cli("tenant", "show", "t2"); code == 0 || !strings.Contains(out, `no tenant "t2"`) {
		t.Fatalf("tenant show of a deleted tenant: exit %d: %s", code, out)
	}
	tenanted := filepath.Join(dir, "tenanted.yaml")
	os.WriteFile(tenanted, []byte("name: tenanted\ntenant: ghost\ntasks:\n  - {name: who, type: shell, tenant: t1, retries: 2, script: 'id -un'}\n"), 0o644)
	out, code = cli("dag", "apply", "-f", tenanted)
	if code != 0 || strings.Count(out, "warning: ") != 1 ||
		!strings.Contains(out, `/tenanted.yaml: line 2, column 9: tenant: no tenant "ghost" (create it with strand tenant create ghost --user OS_USER before running tenanted)`) {
		t.Fatalf("apply naming an unknown tenant: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "run", "tenanted", "--id", "tenanted-1", "--wait"); code == 0 || !regexp.MustCompile(`who\s+shell\s+failure\s+1 `).MatchString(out) {
		t.Fatalf("a task as a tenant on a worker not allowed: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "tasks", "tenanted-1", "-o", "json"); !regexp.MustCompile(`worker \S+:\d+ may not run tasks as tenant t1 \(OS user nobody\): start it with --tenant t1 or --run-as-tenants`).MatchString(out) {
		t.Fatalf("the refusal: %s", out)
	}
	cli("dag", "delete", "tenanted")
	cli("tenant", "delete", "t1")
	good := filepath.Join(dir, "etl.yaml")
	os.WriteFile(good, []byte(`name: etl
params: {day: '$[yyyyMMdd-1]'}
tasks:
  - name: extract
    type: shell
    script: |
      echo "extracting ${day}"
      echo '${setValue(rows=12)}'
    outputs: [rows]
  - {name: load, type: shell, upstream: [extract], script: 'echo "loaded ${rows} rows for ${day}"'}
`), 0o644)
	if out, code := cli("dag", "apply", "-f", good); code != 0 || !strings.Contains(out, "etl version 1 stored") {
		t.Fatalf("apply: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "apply", "-f", good); code != 0 || !strings.Contains(out, "etl version 1 unchanged") {
		t.Fatalf("apply again: exit %d: %s", code, out)
	}
	out, code = cli("dag", "run", "etl", "--id", "etl-1", "--schedule-time", "2026-03-01T06:00:00Z", "--wait")
	if code != 0 || !strings.Contains(out, "etl version 1: success") || !strings.Contains(out, "rows=12") {
		t.Fatalf("run: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "logs", "etl-1", "load"); !strings.Contains(out, "loaded 12 rows for 20260228") {
		t.Fatalf("logs: %s", out)
	}
	// In a time zone: 18:00 UTC on February 28 is March 1 in Shanghai.
	out, code = cli("dag", "run", "etl", "--id", "etl-zone", "--schedule-time", "2026-02-28T18:00:00Z", "--time-zone", "Asia/Shanghai", "--wait")
	if code != 0 || !strings.Contains(out, "etl version 1: success") {
		t.Fatalf("run --time-zone: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "logs", "etl-zone", "load"); !strings.Contains(out, "loaded 12 rows for 20260228") {
		t.Fatalf("logs of the run in Asia/Shanghai: %s", out)
	}
	// Every attempt's log, each under its header; a timeout's error in
	// the user's words, with the log of the attempt it stopped.
	rough := filepath.Join(dir, "rough.yaml")
	os.WriteFile(rough, []byte(fmt.Sprintf(`name: rough
tasks:
  - name: flaky
    type: shell
    retries: 1
    retry_interval: 1s
    script: |
      if [ ! -e %[1]s/once ]; then touch %[1]s/once; echo "first try"; echo "no luck" >&2; exit 1; fi
      echo "second try"
  - {name: hang, type: shell, script: 'echo "hanging on"; sleep 30', timeout: 3s}
`, dir)), 0o644)
	if out, code := cli("dag", "apply", "-f", rough); code != 0 {
		t.Fatalf("apply rough: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "run", "rough", "--id", "rough-1", "--wait"); code != 1 ||
		!strings.Contains(out, "hang: task hang of DAG rough instance rough-1 failed after 1 attempt: the task ran past its timeout of 3s") {
		t.Fatalf("run rough: exit %d: %s", code, out)
	}
	// (stdout's and stderr's lines written at the same instant may come
	// in either order: each pipe has its reader)
	attempts := regexp.MustCompile(`(?s)^=== task flaky, attempt 1 of 2 on [^\n]*\d\d:\d\d:\d\d [A-Z]+[^\n]*: failure, exit code 1: shell task: exit code 1 ===\n` +
		`(first try\n\[stderr\] no luck\n|\[stderr\] no luck\nfirst try\n)\n=== task flaky, attempt 2 of 2 [^\n]*: success ===\nsecond try\n$`)
	if out, _ := cli("dag", "logs", "rough-1", "flaky"); !attempts.MatchString(out) {
		t.Fatalf("logs of every attempt:\n%s", out)
	}
	if out, _ := cli("dag", "logs", "rough-1", "flaky", "--attempt", "2"); !strings.Contains(out, "second try") || strings.Contains(out, "first try") {
		t.Fatalf("logs --attempt 2:\n%s", out)
	}
	if out, code := cli("dag", "logs", "rough-1", "flaky", "--attempt", "3"); code == 0 || !strings.Contains(out, "not an attempt 3") {
		t.Fatalf("logs --attempt 3: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "logs", "rough-1", "hang"); !strings.Contains(out, "hanging on") || !strings.Contains(out, "the task ran past its timeout of 3s") {
		t.Fatalf("logs of the attempt stopped by its timeout:\n%s", out)
	}
	cli("dag", "delete", "rough")
	if out, code := cli("dag", "run", "etl", "--time-zone", "Mars/Olympus"); code == 0 || !strings.Contains(out, `"Mars/Olympus" is not an IANA time zone`) {
		t.Fatalf("run in an unknown time zone: exit %d: %s", code, out)
	}
	// Backfill without a schedule: bad input is refused and starts
	// nothing; a list of dates, two at once, prints its instances; the
	// API starts one over a range, serial, and shows its progress.
	for _, c := range []struct{ args, want string }{
		{"etl --from 2026-01-04 --to 2026-01-01", "to: 2026-01-01 is before the first date, 2026-01-04"},
		{"etl --dates 2026-01-01,2026-02-30", `dates: "2026-02-30" is not a date: want yyyy-MM-dd`},
		{"etl --from 2026-01-01", "to: missing"},
		{"nope-dag --from 2026-01-01 --to 2026-01-02", "nope-dag"},
	} {
		if out, code := cli(append([]string{"dag", "backfill"}, strings.Fields(c.args)...)...); code == 0 || !strings.Contains(out, c.want) {
			t.Fatalf("backfill %s: exit %d: %s; want an error with %q", c.args, code, out, c.want)
		}
	}
	if out, _ := cli("workflow", "list", "--type", "strand.DAGBackfill"); strings.Contains(out, "backfill") {
		t.Fatalf("bad backfills started: %s", out)
	}
	out, code = cli("dag", "backfill", "etl", "--dates", "2026-01-03,2026-01-01", "--parallelism", "2", "--id", "etl-bf", "--time-zone", "Asia/Shanghai", "--wait")
	if code != 0 || !strings.Contains(out, "started backfill etl-bf of etl: 2 dates, up to 2 dates at once") ||
		!strings.Contains(out, "backfill etl-bf of etl: success") ||
		!regexp.MustCompile(`2026-01-01 +2026-01-01T00:00:00\+08:00 +etl +etl-bf-20260101 +success`).MatchString(out) ||
		!regexp.MustCompile(`2026-01-03 +2026-01-03T00:00:00\+08:00 +etl +etl-bf-20260103 +success`).MatchString(out) {
		t.Fatalf("backfill --dates: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "logs", "etl-bf-20260103", "load"); !strings.Contains(out, "loaded 12 rows for 20260102") {
		t.Fatalf("logs of a backfilled instance: %s", out)
	}
	body, _ = json.Marshal(map[string]any{"from": "2026-02-01", "to": "2026-02-02", "id": "etl-bf-api"})
	res, err = http.Post(url+"/api/v1/namespaces/default/dags/etl/backfills", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		ID          string
		Parallelism int
		Days        []struct{ Date string }
	}
	err = json.NewDecoder(res.Body).Decode(&started)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || started.ID != "etl-bf-api" || started.Parallelism != 1 || len(started.Days) != 2 || started.Days[1].Date != "2026-02-02" {
		t.Fatalf("backfill through the API: %s, %v: %+v", res.Status, err, started)
	}
	if out, code := cli("dag", "backfill-status", "etl-bf-api", "--wait"); code != 0 || !strings.Contains(out, "etl-bf-api-20260202") || strings.Count(out, " success") != 3 {
		t.Fatalf("backfill-status: exit %d: %s", code, out)
	}
	res, err = http.Get(url + "/api/v1/namespaces/default/dags/etl/backfills/etl-bf-api")
	if err == nil {
		err = json.NewDecoder(res.Body).Decode(&started)
		res.Body.Close()
	}
	if err != nil || res.StatusCode != http.StatusOK || started.ID != "etl-bf-api" {
		t.Fatalf("backfill progress through the API: %v: %+v", err, started)
	}
	// The instance's attributes: listed by state, by the DAG's commands and
	// by the generic ones.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _ := cli("dag", "instances", "etl", "--state", "success")
		generic, _ := cli("workflow", "list", "--attribute", "strand.dag.state=success", "--attribute", "strand.dag.date=20260301")
		if strings.Contains(out, "etl-1") && strings.Contains(out, "20260301") && strings.Contains(generic, "etl-1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instances --state success: %s\nworkflow list --attribute: %s", out, generic)
		}
	}
	// A second version: the diff shows the change; the first is made current again.
	text, _ := os.ReadFile(good)
	os.WriteFile(good, []byte(strings.Replace(string(text), "rows for", "rows into the warehouse for", 1)), 0o644)
	if out, code := cli("dag", "apply", "-f", good); code != 0 || !strings.Contains(out, "etl version 2 stored") {
		t.Fatalf("apply v2: exit %d: %s", code, out)
	}
	if out, _ := cli("dag", "diff", "etl", "1", "2"); !strings.Contains(out, "-  - {name: load") || !strings.Contains(out, "+  - {name: load, type: shell, upstream: [extract], script: 'echo \"loaded ${rows} rows into the warehouse") {
		t.Fatalf("diff: %s", out)
	}
	cli("dag", "use", "etl", "1")
	if out, _ := cli("dag", "versions", "etl"); !strings.Contains(out, "current") || strings.Count(out, "\n") != 3 {
		t.Fatalf("versions: %s", out)
	}
	if out, _ := cli("dag", "list"); !strings.Contains(out, "etl   1        2") {
		t.Fatalf("list after use: %s", out)
	}
	if out, code := cli("dag", "run", "etl", "--failure-strategy", "sometimes"); code != 2 || !strings.Contains(out, "want end, finish_running or continue") {
		t.Fatalf("bad failure strategy: exit %d: %s", code, out)
	}
	// A worker group no worker polls: apply and run warn of it, its task
	// waits submitted for a worker of the group, and its fail timeout,
	// which counts the wait, fails it in words that say so.
	ghost := filepath.Join(dir, "ghost.yaml")
	os.WriteFile(ghost, []byte("name: ghostly\ntasks:\n  - {name: lost, type: shell, worker_group: ghost, script: 'true', timeout: {after: 5s, action: fail}}\n  - {name: found, type: shell, script: 'true'}\n"), 0o644)
	if out, code := cli("dag", "apply", "-f", ghost); code != 0 || strings.Count(out, "warning: ") != 1 ||
		!strings.Contains(out, "ghost.yaml: line 3, column 45: tasks[0].worker_group: no worker polls worker group ghost in namespace default: task lost waits for one") {
		t.Fatalf("apply with a worker group no worker polls: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "run", "ghostly", "--id", "ghost-1", "--failure-strategy", "finish_running"); code != 0 || !strings.Contains(out, "warning: ghostly: line 3, column 45: tasks[0].worker_group: no worker polls worker group ghost") {
		t.Fatalf("run with a worker group no worker polls: exit %d: %s", code, out)
	}
	waiting := regexp.MustCompile(`(?m)^lost\s+shell\s+submitted \(waiting for a worker of group ghost\)\s+0\b`)
	eventually("ghost-1's lost waiting for a worker", func() bool {
		out, _ := cli("dag", "tasks", "ghost-1")
		return waiting.MatchString(out) && strings.Contains(out, "warning: no worker polls worker group ghost: task lost waits for one")
	})
	eventually("ghost-1 failed", func() bool {
		out, _ := cli("dag", "tasks", "ghost-1", "-o", "json")
		return strings.Contains(out, `"state": "failure"`) && strings.Contains(out, "no worker of group ghost took the task within 5s")
	})
	// Scheduled: a schedule whose action starts instances of the DAG.
	if out, code := cli("dag", "schedule", "etl", "--cron", "0 2 * * *", "--warning", "failure", "--alert-group", "ops", "--catchup", "none"); code != 0 || !strings.Contains(out, "created schedule dag-etl") {
		t.Fatalf("schedule: exit %d: %s", code, out)
	}
	if out, code := cli("schedule", "describe", "dag-etl", "-o", "json"); code != 0 || !strings.Contains(out, `"workflow_type": "strand.DAG"`) || !strings.Contains(out, `"catchup": "none"`) {
		t.Fatalf("schedule describe: exit %d: %s; want the DAG's schedule, catch-up none", code, out)
	}
	if out, code := cli("dag", "schedule", "etl", "--cron", "@daily", "--id", "bad-catchup", "--catchup", "sometimes"); code == 0 || !strings.Contains(out, `schedule.policies.catchup: "sometimes"`) {
		t.Fatalf("schedule with a bad catch-up policy: exit %d: %s", code, out)
	}
	// Offline, it cannot be started or scheduled.
	cli("dag", "offline", "etl")
	if out, code := cli("dag", "run", "etl"); code == 0 || !strings.Contains(out, "offline") {
		t.Fatalf("run offline: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "schedule", "etl", "--cron", "@daily", "--id", "other"); code == 0 || !strings.Contains(out, "offline") {
		t.Fatalf("schedule offline: exit %d: %s", code, out)
	}
	// Deleted, it leaves the list; applied again, it comes back online.
	cli("dag", "delete", "etl")
	if out, _ := cli("dag", "list"); strings.Contains(out, "etl") {
		t.Fatalf("deleted but listed: %s", out)
	}
	if out, code := cli("dag", "apply", "-f", good); code != 0 || !strings.Contains(out, "current version 2, online") {
		t.Fatalf("apply after delete: exit %d: %s", code, out)
	}

	// A running instance is read with its worker stopped, from the store;
	// one that no worker picked up is read and listed as submitted.
	slow := filepath.Join(dir, "slow.yaml")
	os.WriteFile(slow, []byte("name: slow\ntasks:\n  - {name: first, type: shell, script: 'echo first'}\n  - {name: nap, type: shell, upstream: [first], script: 'sleep 20'}\n"), 0o644)
	if out, code := cli("dag", "apply", "-f", slow); code != 0 {
		t.Fatalf("apply slow: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "run", "slow", "--id", "slow-1"); code != 0 {
		t.Fatalf("run slow-1: exit %d: %s", code, out)
	}
	napping := regexp.MustCompile(`(?m)^first\s+shell\s+success\b[\s\S]*^nap\s+shell\s+running\b`)
	eventually("slow-1's nap running", func() bool {
		out, _ := cli("dag", "tasks", "slow-1")
		return napping.MatchString(out)
	})
	worker.Process.Kill()
	worker.Wait()
	if out, code := cli("dag", "tasks", "slow-1"); code != 0 || !strings.Contains(out, "slow version 1: running") || !napping.MatchString(out) {
		t.Fatalf("tasks of slow-1 with its worker stopped: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "run", "slow", "--id", "slow-2"); code != 0 {
		t.Fatalf("run slow-2: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "tasks", "slow-2"); code != 0 || !strings.Contains(out, "slow version 1: submitted") {
		t.Fatalf("tasks of slow-2, which no worker picked up: exit %d: %s", code, out)
	}
	eventually("slow-2 listed as submitted", func() bool {
		out, _ := cli("dag", "instances", "slow", "--state", "submitted")
		return strings.Contains(out, "slow-2") && !strings.Contains(out, "slow-1")
	})
}

// TestServerRunsDAGWorkers: strand server --worker-groups runs the DAG
// workers in its own process, so one binary runs pipelines alone; it
// sends the alert groups' emails through the SMTP server it is given.
func TestServerRunsDAGWorkers(t *testing.T) {
	bin := binaries(t, "strand")
	addr := freePort(t)
	mail := testsmtp.Start(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"),
		"--listen", addr, "--worker-groups", "default", "--smtp-server", mail.Addr, "--smtp-from", "strand@example.com", "--smtp-tls", "none")
	url := "http://" + addr
	file := filepath.Join(t.TempDir(), "hello.yaml")
	os.WriteFile(file, []byte("name: hello\ntasks:\n  - {name: greet, type: shell, script: 'echo hello from the server'}\n"), 0o644)
	if out, code := run(t, "dag", "apply", "-f", file, "--server", url); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, out)
	}
	if out, code := run(t, "dag", "run", "hello", "--id", "hello-1", "--wait", "--server", url); code != 0 || !strings.Contains(out, "greet") {
		t.Fatalf("run: exit %d: %s", code, out)
	}
	if out, _ := run(t, "dag", "logs", "hello-1", "greet", "--server", url); !strings.Contains(out, "hello from the server") {
		t.Fatalf("logs: %s", out)
	}
	alertGroups(t, url, mail)
}

// alertGroups: alert groups are set, listed, shown, tested and deleted
// with the CLI; bad input is refused and stores nothing; a failed
// instance emails the group's user and addresses (a copy to cc) and calls
// its webhook, each naming the failed task and its error.
func alertGroups(t *testing.T, url string, mail *testsmtp.Server) {
	cli := func(args ...string) (string, int) {
		t.Helper()
		return run(t, append(args, "--server", url)...)
	}
	hooks := make(chan dag.Alert, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a dag.Alert
		_ = json.NewDecoder(r.Body).Decode(&a)
		hooks <- a
	}))
	defer hook.Close()
	for _, u := range []string{`{"name": "alice", "email": "alice@example.com", "password": "a long enough secret"}`, `{"name": "bob", "password": "a long enough secret"}`} {
		res, err := http.Post(url+"/api/v1/users", "application/json", strings.NewReader(u))
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("create user %s: %v %v", u, err, res)
		}
		res.Body.Close()
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--email", "not-an-address"}, `emails: "not-an-address" is not an email address`},
		{[]string{"--user", "nobody"}, "there is no user nobody"},
		{[]string{"--user", "bob"}, "user bob has no email address"},
		{[]string{"--cc", "lead@example.com"}, "copies need a recipient"},
		{nil, "an alert group needs a channel"},
		{[]string{"--webhook", "ftp://example.com"}, "want an http:// or https:// URL"},
	} {
		if out, code := cli(append([]string{"alert-group", "set", "bad"}, bad.args...)...); code != 2 || !strings.Contains(out, bad.want) {
			t.Fatalf("alert-group set bad %v: exit %d: %s", bad.args, code, out)
		}
	}
	if out, code := cli("alert-group", "list"); code != 0 || strings.Contains(out, "bad") {
		t.Fatalf("a refused alert group was stored: exit %d: %s", code, out)
	}
	// Given an address, bob may be a recipient.
	if out, code := cli("user", "email", "bob", "bob@example.com"); code != 0 || !strings.Contains(out, "bob's email address: bob@example.com") {
		t.Fatalf("user email: exit %d: %s", code, out)
	}
	if out, code := cli("alert-group", "set", "bobs", "--user", "bob"); code != 0 || !strings.Contains(out, "alert group bobs: email to bob") {
		t.Fatalf("alert-group set with bob: exit %d: %s", code, out)
	}
	cli("alert-group", "delete", "bobs")
	out, code := cli("alert-group", "set", "data-team", "--user", "alice", "--email", "oncall@example.com", "--cc", "lead@example.com", "--webhook", hook.URL)
	if code != 0 || !strings.Contains(out, "alert group data-team: email to alice, oncall@example.com (cc lead@example.com); webhook "+hook.URL) {
		t.Fatalf("alert-group set: exit %d: %s", code, out)
	}
	if out, _ := cli("alert-group", "list"); !strings.Contains(out, "data-team  email,webhook") {
		t.Fatalf("alert-group list: %s", out)
	}
	out, code = cli("alert-group", "test", "data-team")
	if code != 0 || !regexp.MustCompile(`email\s+oncall@example.com, alice@example.com, lead@example.com\s+true\s+accepted by`).MatchString(out) ||
		!regexp.MustCompile(`webhook\s+`+regexp.QuoteMeta(hook.URL)+`\s+true\s+answered 200 OK`).MatchString(out) {
		t.Fatalf("alert-group test: exit %d: %s", code, out)
	}
	if a := <-hooks; a.Event != "test" || a.Group != "data-team" {
		t.Fatalf("test alert on the webhook: %+v", a)
	}

	file := filepath.Join(t.TempDir(), "nightly.yaml")
	os.WriteFile(file, []byte("name: nightly\nwarning: {type: failure, group: data-team}\ntasks:\n  - {name: load, type: shell, script: 'echo the warehouse is locked >&2; exit 3'}\n"), 0o644)
	if out, code := cli("dag", "apply", "-f", file); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "run", "nightly", "--id", "nightly-1", "--schedule-time", "2026-03-02T02:00:00Z", "--wait"); code == 0 || !strings.Contains(out, "failure") {
		t.Fatalf("run: exit %d: %s", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, ok := mail.Wait(ctx, func(m testsmtp.Message) bool { return strings.Contains(m.Body, "nightly-1") })
	if !ok {
		t.Fatalf("no email about nightly-1: %+v", mail.Messages())
	}
	if m.Subject != "[Strand] DAG nightly failed at load (business date 20260301, UTC)" ||
		!strings.Contains(m.Body, "load: ") || !strings.Contains(m.Body, "exit code 3") ||
		!strings.Contains(m.Body, "strand dag logs nightly-1 load") ||
		!slices.Equal(m.To, []string{"oncall@example.com", "alice@example.com", "lead@example.com"}) || m.Header.Get("Cc") != "lead@example.com" {
		t.Fatalf("email: to %v, cc %q, subject %q\n%s", m.To, m.Header.Get("Cc"), m.Subject, m.Body)
	}
	if a := <-hooks; a.Event != "instance_failure" || a.Instance != "nightly-1" || a.Task != "load" || len(a.Failed) != 1 || !strings.Contains(a.Failed[0].Error, "exit code 3") {
		t.Fatalf("failure alert on the webhook: %+v", a)
	}
	out, code = cli("alert-group", "show", "data-team")
	if code != 0 || !regexp.MustCompile(`Users:\s+alice\n`).MatchString(out) || !regexp.MustCompile(`instance_failure\s+nightly\s+nightly-1\s+load\s+email delivered; webhook delivered`).MatchString(out) ||
		!strings.Contains(out, "test ") {
		t.Fatalf("alert-group show: exit %d: %s", code, out)
	}
	if out, code := cli("alert-group", "delete", "data-team"); code != 0 {
		t.Fatalf("alert-group delete: exit %d: %s", code, out)
	}
	if out, code := cli("alert-group", "show", "data-team"); code == 0 || !strings.Contains(out, "not found") {
		t.Fatalf("show a deleted group: exit %d: %s", code, out)
	}
}
