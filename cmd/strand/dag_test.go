package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
  - {name: hang, type: shell, script: 'echo "hanging on"; sleep 30', timeout: 1s}
`, dir)), 0o644)
	if out, code := cli("dag", "apply", "-f", rough); code != 0 {
		t.Fatalf("apply rough: exit %d: %s", code, out)
	}
	if out, code := cli("dag", "run", "rough", "--id", "rough-1", "--wait"); code != 1 ||
		!strings.Contains(out, "hang: task hang of DAG rough instance rough-1 failed after 1 attempt: the task ran past its timeout of 1s") {
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
	if out, _ := cli("dag", "logs", "rough-1", "hang"); !strings.Contains(out, "hanging on") || !strings.Contains(out, "the task ran past its timeout of 1s") {
		t.Fatalf("logs of the attempt stopped by its timeout:\n%s", out)
	}
	cli("dag", "delete", "rough")
	if out, code := cli("dag", "run", "etl", "--time-zone", "Mars/Olympus"); code == 0 || !strings.Contains(out, `"Mars/Olympus" is not an IANA time zone`) {
		t.Fatalf("run in an unknown time zone: exit %d: %s", code, out)
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
	if out, code := cli("dag", "run", "etl", "--failure-strategy", "sometimes"); code != 2 || !strings.Contains(out, "want end or continue") {
		t.Fatalf("bad failure strategy: exit %d: %s", code, out)
	}
	// Scheduled: a schedule whose action starts instances of the DAG.
	if out, code := cli("dag", "schedule", "etl", "--cron", "0 2 * * *", "--warning", "failure", "--alert-group", "ops"); code != 0 || !strings.Contains(out, "created schedule dag-etl") {
		t.Fatalf("schedule: exit %d: %s", code, out)
	}
	if out, code := cli("schedule", "describe", "dag-etl", "-o", "json"); code != 0 || !strings.Contains(out, `"workflow_type": "strand.DAG"`) {
		t.Fatalf("schedule describe: exit %d: %s", code, out)
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
// workers in its own process, so one binary runs pipelines alone.
func TestServerRunsDAGWorkers(t *testing.T) {
	bin := binaries(t, "strand")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"),
		"--listen", addr, "--worker-groups", "default")
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
}
