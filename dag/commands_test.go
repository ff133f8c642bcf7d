package dag_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/dag"
	dagtask "github.com/strandhq/strand/dag/task"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
)

// TestCommands: what operators do to instances, through strand worker
// processes, on every store.
func TestCommands(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		newEnv(t, st).concurrently(t,
			subtest{"pause and resume", pauseResume},
			subtest{"stop kills the process group", stopKills},
			subtest{"shell timeout", shellTimeout},
			subtest{"timeout keeps the log and alerts", timeoutKeepsLog},
			subtest{"every attempt's log", everyAttemptLog},
			subtest{"sub-process and dependent", subProcessAndDependent},
			subtest{"start from the failed node", startFromFailed},
			subtest{"worker killed mid-task", workerKilled},
			subtest{"log while running", liveLog},
			subtest{"backfill", backfill},
			subtest{"tenants and task types", tenantsAndTaskTypes},
			subtest{"dag backfill", dagBackfill},
			subtest{"waiting for a worker group", waitingForWorker},
			subtest{"failure strategy end kills", endKills})
	})
}

// awaitFile is a shell snippet that waits for the file at path, which the
// test creates when the task may go on (an event, not a guess at how long
// the test needs), and fails the task if it does not come within a
// minute.
func awaitFile(path string) string {
	return fmt.Sprintf("for i in $(seq 600); do test -e %[1]s && break; sleep 0.1; done; test -e %[1]s", path)
}

// touch creates the file at path.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// start starts an instance and returns its workflow id.
func (e *env) start(in dag.RunInput) string {
	e.t.Helper()
	s, err := e.client.Start(e.ctx, in, dag.StartOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return s.WorkflowID
}

// waitFor polls an instance until cond holds of it.
func (e *env) waitFor(id, what string, d time.Duration, cond func(*dag.Instance) bool) *dag.Instance {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		inst, _, err := e.client.Instance(e.ctx, id)
		if err == nil && cond(inst) {
			return inst
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: timed out after %s waiting for %s: %v, %v", id, d, what, states0(inst), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func states0(inst *dag.Instance) string {
	if inst == nil {
		return "no instance"
	}
	return string(inst.State) + ": " + states(inst)
}

// wait waits for an instance to end and returns it.
func (e *env) wait(id string) *dag.Instance {
	e.t.Helper()
	ref := api.RunRef{Namespace: e.ns, WorkflowID: id}
	if _, err := e.eng.WaitResult(e.ctx, api.ResultRequest{RunRef: ref}); err != nil {
		// Say where the instance stands, to tell a lost task from a
		// slow machine.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		inst, _, ierr := e.client.Instance(ctx, id)
		d, derr := e.eng.DescribeWorkflow(ctx, ref)
		e.t.Fatalf("%s: %v; the instance: %s (%v); the run: %s, next event %d, pending steps %+v, timers %+v, children %+v, paused %v, workflow task failure %v (%v)",
			id, err, states0(inst), ierr, d.Status, d.NextEventID, d.Steps, d.Timers, d.Children, d.Paused, d.WorkflowTaskFailure, derr)
	}
	inst, _, err := e.client.Instance(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return inst
}

func task(inst *dag.Instance, name string) dag.TaskInstance {
	for _, t := range inst.Tasks {
		if t.Name == name {
			return t
		}
	}
	return dag.TaskInstance{}
}

// pauseResume: a paused instance lets its running task finish and starts
// no new one until it is resumed.
func pauseResume(t *testing.T, e *env) {
	dir := t.TempDir()
	// first runs until the pause was sent, however long that takes.
	e.apply(fmt.Sprintf(`name: pausing
tasks:
  - {name: first, type: shell, script: 'touch %[1]s/first-started; %[2]s'}
  - {name: second, type: shell, upstream: [first], script: 'touch %[1]s/second'}
`, dir, awaitFile(filepath.Join(dir, "paused"))))
	id := e.start(dag.RunInput{DAG: "pausing"})
	e.waitFor(id, "first to start", 30*time.Second, func(*dag.Instance) bool {
		_, err := os.Stat(filepath.Join(dir, "first-started"))
		return err == nil
	})
	if err := e.client.Command(e.ctx, id, dag.ActionPause, "test"); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(dir, "paused"))
	inst := e.waitFor(id, "paused", 30*time.Second, func(i *dag.Instance) bool { return i.State == dag.StatePaused })
	if got := states(inst); got != "first=success second=" {
		t.Fatalf("paused: %s", got)
	}
	// Read from the run's memo, it is what its interpreter answers.
	q, err := e.eng.QueryWorkflow(e.ctx, api.QueryRequest{RunRef: api.RunRef{Namespace: e.ns, WorkflowID: id}, Name: dag.QueryInstance})
	if err != nil {
		t.Fatal(err)
	}
	var queried dag.Instance
	if err := json.Unmarshal(q, &queried); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%+v", *inst), fmt.Sprintf("%+v", queried); got != want {
		t.Fatalf("read %s\nwant what the interpreter answers: %s", got, want)
	}
	// Nothing may happen while paused: a while, long enough for second to
	// have started and run had the pause not held it.
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "second")); err == nil {
		t.Fatal("second ran while the instance was paused")
	}
	if err := e.client.Command(e.ctx, id, dag.ActionResume, "test"); err != nil {
		t.Fatal(err)
	}
	if inst := e.wait(id); inst.State != dag.StateSuccess {
		t.Fatalf("after resume: %s", states0(inst))
	}
}

// stopKills: stopping an instance kills its running shell task's whole
// process group, children included.
func stopKills(t *testing.T, e *env) {
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: stopping
tasks:
  - name: long
    type: shell
    script: |
      echo "long task started"
      sleep 300 &
      echo $! > %[1]s/child
      sleep 300
  - {name: after, type: shell, upstream: [long], script: 'true'}
`, dir))
	id := e.start(dag.RunInput{DAG: "stopping"})
	var child int
	e.waitFor(id, "the child process", 30*time.Second, func(*dag.Instance) bool {
		b, err := os.ReadFile(filepath.Join(dir, "child"))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && child > 0
	})
	// A heartbeat carries the log's start: the first comes after
	// heartbeatEvery (2s).
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := e.client.Log(e.ctx, id, "long")
		if err == nil && l.Running && strings.Contains(l.Log, "long task started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 30s waiting for a heartbeat to carry the running task's log start: %+v, %v", l, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := e.client.Command(e.ctx, id, dag.ActionStop, "test"); err != nil {
		t.Fatal(err)
	}
	inst := e.wait(id)
	if l, err := e.client.Log(e.ctx, id, "long"); err != nil || l.Running || !strings.Contains(l.Log, "long task started") {
		t.Errorf("the stopped task's log: %+v, %v", l, err)
	}
	if inst.State != dag.StateStopped || task(inst, "long").State != dag.StateStopped || task(inst, "after").State != dag.StateNotRun {
		t.Fatalf("stopped: %s", states0(inst))
	}
	deadline = time.Now().Add(30 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the task's child process %d outlived the stop by 30s", child)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alive reports whether a process runs (a zombie does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// shellTimeout: a task past its timeout with action fail is stopped and
// fails; one with action warn sends an alert and goes on.
func shellTimeout(t *testing.T, e *env) {
	alerts := make(chan dag.Alert, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a dag.Alert
		_ = json.NewDecoder(r.Body).Decode(&a)
		alerts <- a
	}))
	defer srv.Close()
	if err := e.client.Catalog.SetAlertGroup(e.ctx, "oncall", dag.AlertGroup{URL: srv.URL}, "test"); err != nil {
		t.Fatal(err)
	}
	// dawdle runs until the test got the alert.
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: lagging
warning: {type: none, group: oncall}
tasks:
  - {name: dawdle, type: shell, script: '%s', timeout: {after: 500ms, action: warn}}
`, awaitFile(filepath.Join(dir, "alerted"))))
	id := e.start(dag.RunInput{DAG: "lagging"})
	select {
	case a := <-alerts:
		if a.Event != "task_timeout" || a.Task != "dawdle" || a.DAG != "lagging" {
			t.Fatalf("alert %+v", a)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no task_timeout alert within 60s of the start")
	}
	touch(t, filepath.Join(dir, "alerted"))
	inst := e.wait(id)
	if inst.State != dag.StateSuccess || !task(inst, "dawdle").Warned {
		t.Fatalf("warn timeout: %s, warned %v", states0(inst), task(inst, "dawdle").Warned)
	}

	e.apply(`name: slow
tasks:
  - {name: hang, type: shell, script: 'sleep 60', timeout: {after: 3s, action: fail}}
`)
	began := time.Now()
	id = e.start(dag.RunInput{DAG: "slow"})
	inst = e.wait(id)
	if took := time.Since(began); inst.State != dag.StateFailure || task(inst, "hang").State != dag.StateFailure || took > 30*time.Second {
		t.Fatalf("after %s: %s (%s)", took, states0(inst), task(inst, "hang").Error)
	}
	if msg := task(inst, "hang").Error; !strings.Contains(msg, "the task ran past its timeout of 3s") {
		t.Errorf("the error does not say it ran past its timeout: %s", task(inst, "hang").Error)
	}

	// The instance's own timeout stops its running tasks and fails it.
	e.apply(`name: bounded
timeout: 1s
tasks:
  - {name: forever, type: shell, script: 'sleep 60'}
`)
	began = time.Now()
	inst = e.wait(e.start(dag.RunInput{DAG: "bounded"}))
	if took := time.Since(began); inst.State != dag.StateFailure || task(inst, "forever").State != dag.StateStopped ||
		!strings.Contains(inst.Error, "timed out after 1s") || took > 30*time.Second {
		t.Fatalf("after %s: %s (%s)", took, states0(inst), inst.Error)
	}
}

// timeoutKeepsLog: an attempt stopped by its timeout keeps its log, host
// and pid, its error says so in the user's words, and a task_timeout alert
// names the task and the error: with action fail when the warning type
// sends failure alerts, with warnfail whatever it is (each attempt's).
// The timeout counts the wait for a worker too, so it is long enough for a
// worker on a loaded machine to take the task first.
func timeoutKeepsLog(t *testing.T, e *env) {
	alerts := make(chan dag.Alert, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a dag.Alert
		_ = json.NewDecoder(r.Body).Decode(&a)
		alerts <- a
	}))
	defer srv.Close()
	if err := e.client.Catalog.SetAlertGroup(e.ctx, "pager", dag.AlertGroup{URL: srv.URL}, "test"); err != nil {
		t.Fatal(err)
	}
	next := func(what string) dag.Alert {
		t.Helper()
		select {
		case a := <-alerts:
			return a
		case <-time.After(60 * time.Second):
			t.Fatalf("no %s alert within 60s", what)
		}
		return dag.Alert{}
	}
	e.apply(`name: overrun
warning: {type: failure, group: pager}
tasks:
  - name: hang
    type: shell
    timeout: {after: 8s, action: fail}
    script: |
      echo "loading the day"
      echo "slow disk" >&2
      sleep 60
`)
	id := e.start(dag.RunInput{DAG: "overrun"})
	inst := e.wait(id)
	hang := task(inst, "hang")
	if inst.State != dag.StateFailure || hang.State != dag.StateFailure || hang.Host != "w1" || hang.PID == 0 {
		t.Fatalf("%s: host %q pid %d (%s)", states0(inst), hang.Host, hang.PID, hang.Error)
	}
	if !strings.Contains(hang.Error, "the task ran past its timeout of 8s") || strings.Contains(hang.Error, "start_to_close") {
		t.Errorf("the error: %q", hang.Error)
	}
	l, err := e.client.Log(e.ctx, id, "hang")
	if err != nil || l.Running || !strings.Contains(l.Log, "loading the day\n") || !strings.Contains(l.Log, "slow disk") ||
		!strings.Contains(l.Log, "ran past its timeout of 8s") {
		t.Errorf("the timed out attempt's log: %+v, %v", l, err)
	}
	if a := next("task_timeout"); a.Event != "task_timeout" || a.Task != "hang" || a.Instance != id || !strings.Contains(a.Message, "ran past its timeout of 8s") {
		t.Errorf("first alert %+v; want task_timeout for hang", a)
	}
	if a := next("instance_failure"); a.Event != "instance_failure" {
		t.Errorf("second alert %+v; want instance_failure", a)
	}

	// warnfail warns and fails, whatever the warning type: an alert for
	// each attempt its timeout stopped.
	e.apply(`name: overrun-twice
warning: {type: none, group: pager}
tasks:
  - {name: nap, type: shell, retries: 1, retry_interval: 1s, timeout: {after: 8s, action: warnfail}, script: 'echo napping; sleep 60'}
`)
	id = e.start(dag.RunInput{DAG: "overrun-twice"})
	for n := 1; n <= 2; n++ {
		if a := next("warnfail"); a.Event != "task_timeout" || a.Task != "nap" || a.Instance != id || !strings.Contains(a.Message, "ran past its timeout of 8s") {
			t.Errorf("alert %d: %+v; want task_timeout for nap", n, a)
		}
	}
	if inst := e.wait(id); inst.State != dag.StateFailure || task(inst, "nap").Attempt != 2 {
		t.Fatalf("warnfail: %s, attempt %d", states0(inst), task(inst, "nap").Attempt)
	}
	select {
	case a := <-alerts:
		t.Errorf("an alert more: %+v (warning type none)", a)
	default:
	}
}

// everyAttemptLog: every attempt of a task keeps its log and its record
// (host, times, outcome, exit code), stdout and stderr told apart; a
// conditions task's log says what it evaluated and the branch it chose.
func everyAttemptLog(t *testing.T, e *env) {
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: flaky
tasks:
  - name: flaky
    type: shell
    retries: 2
    retry_interval: 1s
    script: |
      n=$(( $(cat %[1]s/n 2>/dev/null || echo 0) + 1 )); echo $n > %[1]s/n
      echo "out of attempt $n"
      echo "err of attempt $n" >&2
      test $n -ge 3
  - {name: pick, type: conditions, upstream: [flaky], when: {tasks: [{task: flaky, state: success}]}, success: [fine], failure: [mend]}
  - {name: fine, type: shell, upstream: [pick], script: 'true'}
  - {name: mend, type: shell, upstream: [pick], script: 'true'}
`, dir))
	id := e.start(dag.RunInput{DAG: "flaky"})
	inst := e.wait(id)
	if got := states(inst); inst.State != dag.StateSuccess || got != "flaky=success pick=success fine=success mend=skipped" {
		t.Fatalf("%s", states0(inst))
	}
	fl := task(inst, "flaky")
	if fl.Attempt != 3 || len(fl.Attempts) != 3 {
		t.Fatalf("attempt %d, attempts %+v; want 3", fl.Attempt, fl.Attempts)
	}
	for i, a := range fl.Attempts {
		want, code := dag.StateFailure, 1
		if i == 2 {
			want, code = dag.StateSuccess, 0
		}
		if a.Attempt != int32(i+1) || a.State != want || a.ExitCode != code || a.Host != "w1" || a.PID == 0 ||
			a.StartTime.IsZero() || a.EndTime.Before(a.StartTime) || (i > 0 && a.StartTime.Before(fl.Attempts[i-1].EndTime)) {
			t.Errorf("attempt %d: %+v", i+1, a)
		}
	}
	logs, err := e.client.Logs(e.ctx, id, "flaky")
	if err != nil || len(logs) != 3 {
		t.Fatalf("logs: %+v, %v; want 3 attempts", logs, err)
	}
	for i, l := range logs {
		n := i + 1
		want := fmt.Sprintf("out of attempt %d\n", n)
		stderr := fmt.Sprintf("%serr of attempt %d\n", dagtask.StderrPrefix, n)
		if l.Attempt != int32(n) || l.Attempts != 3 || l.Running || !strings.Contains(l.Log, want) || !strings.Contains(l.Log, stderr) ||
			strings.Contains(l.Log, fmt.Sprintf("attempt %d\n", n+1)) || l.Host != "w1" {
			t.Errorf("attempt %d's log: %+v", n, l)
		}
	}
	if l, err := e.client.AttemptLog(e.ctx, id, "flaky", 2); err != nil || !strings.Contains(l.Log, "out of attempt 2\n") || l.State != dag.StateFailure {
		t.Errorf("attempt 2: %+v, %v", l, err)
	}
	if _, err := e.client.AttemptLog(e.ctx, id, "flaky", 4); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("attempt 4: %v; want not found", err)
	}
	if l, err := e.client.Log(e.ctx, id, "pick"); err != nil || !strings.Contains(l.Log, "task flaky is success (wanted success): true") ||
		!strings.Contains(l.Log, "the branch taken: fine") {
		t.Errorf("the conditions task's log: %+v, %v", l, err)
	}
}

// subProcessAndDependent: a sub-process runs another definition as a
// child instance and passes its outputs on; a dependent task waits for
// another definition's instance of the same business date.
func subProcessAndDependent(t *testing.T, e *env) {
	e.apply(`name: child
params: {what: none}
tasks:
  - {name: produce, type: shell, script: "echo '${setValue(made=${what})}'", outputs: [made]}
`)
	e.apply(`name: parent
tasks:
  - {name: sub, type: sub_process, dag: child, local_params: {what: bricks}, outputs: [made]}
  - {name: use, type: shell, upstream: [sub], script: 'test "${made}" = bricks'}
`)
	parent := e.start(dag.RunInput{DAG: "parent"})
	inst := e.wait(parent)
	if inst.State != dag.StateSuccess || task(inst, "sub").Child == "" {
		t.Fatalf("parent: %s", states0(inst))
	}
	// The sub-process's log names its child instance and how to read it.
	child := task(inst, "sub").Child
	if l, err := e.client.Log(e.ctx, parent, "sub"); err != nil || !strings.Contains(l.Log, "the child instance "+child) ||
		!strings.Contains(l.Log, "strand dag logs "+child+" TASK") || !strings.Contains(l.Log, "succeeded") {
		t.Errorf("the sub-process's log: %+v, %v", l, err)
	}

	e.apply(`name: upstream-job
tasks:
  - {name: work, type: shell, script: 'true'}
`)
	e.apply(`name: downstream-job
tasks:
  - {name: wait, type: dependent, depends: [{dag: upstream-job}], check_interval: 1s, timeout: {after: 2m, action: fail}}
  - {name: go, type: shell, upstream: [wait], script: 'true'}
`)
	day := time.Date(2026, 5, 4, 3, 0, 0, 0, time.UTC)
	down := e.start(dag.RunInput{DAG: "downstream-job", ScheduleTime: day})
	e.waitFor(down, "waiting for its dependency", 30*time.Second, func(i *dag.Instance) bool {
		return task(i, "wait").State == dag.StateWaitingDepend
	})
	// An instance of another day does not count: once the list (which
	// the check reads) shows it, two more checks end (the second began
	// after it was listed) and the task still waits.
	if inst := e.wait(e.start(dag.RunInput{DAG: "upstream-job", ScheduleTime: day.AddDate(0, 0, -1)})); inst.State != dag.StateSuccess {
		t.Fatal(states0(inst))
	}
	e.instancesIn("upstream-job", dag.StateSuccess, 1)
	checks := e.dependencyChecks(down)
	deadline := time.Now().Add(60 * time.Second)
	for e.dependencyChecks(down) < checks+2 {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 60s waiting for two dependency checks after the other day's instance was listed (%d before)", checks)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if inst, _, _ := e.client.Instance(e.ctx, down); task(inst, "wait").State != dag.StateWaitingDepend {
		t.Fatalf("an instance of the day before released the dependency: %s", states0(inst))
	}
	e.wait(e.start(dag.RunInput{DAG: "upstream-job", ScheduleTime: day.Add(5 * time.Hour)}))
	if inst := e.wait(down); inst.State != dag.StateSuccess {
		t.Fatalf("downstream: %s", states0(inst))
	}
	// The dependent task's log lists what it waited for and its checks.
	if l, err := e.client.Log(e.ctx, down, "wait"); err != nil || !strings.Contains(l.Log, "an instance of DAG upstream-job for 20260504 to succeed") ||
		!strings.Contains(l.Log, "check 1: waiting: no instance of upstream-job for 20260504 has succeeded yet") ||
		!strings.Contains(l.Log, ": every dependency succeeded") {
		t.Errorf("the dependent task's log: %+v, %v", l, err)
	}
}

// dependencyChecks counts the dependency checks that ended in an
// instance's history.
func (e *env) dependencyChecks(id string) int {
	e.t.Helper()
	evs, err := client.New(e.eng, client.Options{Namespace: e.ns}).AllHistory(e.ctx, id, "")
	if err != nil {
		e.t.Fatal(err)
	}
	checks := map[int64]bool{} // the seqs of the check steps
	n := 0
	for _, ev := range evs {
		switch {
		case ev.Type == api.EventStepScheduled && ev.Name == "strand.dag.dependency":
			checks[ev.Seq] = true
		case ev.Type == api.EventStepCompleted && checks[ev.Seq]:
			n++
		}
	}
	return n
}

// startFromFailed: after the script is fixed, the instance starts again
// from its failed task; the task that succeeded does not run again.
func startFromFailed(t *testing.T, e *env) {
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: fragile
tasks:
  - {name: prepare, type: shell, script: "echo once >> %[1]s/prepared; echo '${setValue(batch=b7)}'", outputs: [batch]}
  - {name: load, type: shell, upstream: [prepare], script: 'test -f %[1]s/fixed && test "${batch}" = b7'}
`, dir))
	id := e.start(dag.RunInput{DAG: "fragile"})
	if inst := e.wait(id); inst.State != dag.StateFailure {
		t.Fatalf("first run: %s", states0(inst))
	}
	os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644)
	if _, err := e.client.Restart(e.ctx, id, true, nil, "test"); err != nil {
		t.Fatal(err)
	}
	inst := e.waitFor(id, "the second run to end", time.Minute, func(i *dag.Instance) bool { return i.State == dag.StateSuccess || i.State == dag.StateFailure })
	if inst.State != dag.StateSuccess {
		t.Fatalf("from the failed node: %s", states0(inst))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "prepared")); string(b) != "once\n" {
		t.Fatalf("prepare ran again: %q", b)
	}

	// Start from a chosen node: the tasks it does not lead to count as done.
	e.apply(fmt.Sprintf(`name: steps
tasks:
  - {name: a, type: shell, script: 'echo a >> %[1]s/ran'}
  - {name: b, type: shell, upstream: [a], script: 'echo b >> %[1]s/ran'}
  - {name: c, type: shell, upstream: [b], script: 'echo c >> %[1]s/ran'}
  - {name: side, type: shell, upstream: [a], script: 'echo side >> %[1]s/ran'}
`, dir))
	if inst := e.wait(e.start(dag.RunInput{DAG: "steps", StartFrom: []string{"b"}})); inst.State != dag.StateSuccess {
		t.Fatalf("start from b: %s", states0(inst))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ran")); string(b) != "b\nc\n" {
		t.Fatalf("start from b ran %q; want b and c", b)
	}
}

// workerKilled: a worker SIGKILLed mid-task takes its task's processes
// with it (the script and the script's children), and the task is retried
// by its retry policy on another worker. It takes the heartbeat timeout
// (15s) for the engine to see the task's worker gone.
//
// It runs in a namespace of its own with workers of its own, so that the
// kill stops no work of the other subtests (every worker also runs the
// DAG interpreter of its namespace).
func workerKilled(t *testing.T, e *env) {
	e = e.inNamespace("crash")
	e.startWorker("c1")
	e.startWorker("c2")
	dir := t.TempDir()
	// The first attempt runs until it is killed, with a child of its own;
	// the retry ends at once.
	e.apply(fmt.Sprintf(`name: crashy
tasks:
  - name: work
    type: shell
    retries: 2
    retry_interval: 1s
    script: |
      echo attempt >> %[1]s/attempts
      if [ "$(wc -l < %[1]s/attempts)" -eq 1 ]; then
        sleep 300 &
        echo $$ $! > %[1]s/first.tmp; mv %[1]s/first.tmp %[1]s/first
        wait
      fi
`, dir))
	first := func() []int {
		b, _ := os.ReadFile(filepath.Join(dir, "first"))
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if pid, _ := strconv.Atoi(f); pid > 0 {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	t.Cleanup(func() {
		for _, pid := range first() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	id := e.start(dag.RunInput{DAG: "crashy"})
	e.waitFor(id, "the first attempt", 30*time.Second, func(*dag.Instance) bool { return len(first()) == 2 })
	pids := first()
	// Which worker runs it: the one of this namespace whose process has a
	// bash child.
	var victim string
	e.mu.Lock()
	for _, name := range []string{"c1", "c2"} {
		if cmd := e.workers[name]; hasChild(cmd.Process.Pid, "bash") {
			victim = name
		}
	}
	cmd := e.workers[victim]
	e.mu.Unlock()
	if victim == "" {
		t.Fatal("no worker runs the task")
	}
	cmd.Process.Kill()
	e.mu.Lock()
	delete(e.workers, victim)
	e.mu.Unlock()
	// The script (bash) and its child (sleep) die with their worker.
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !procGone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of the killed worker's task still runs; want it dead with its worker", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	inst := e.wait(id)
	if inst.State != dag.StateSuccess {
		t.Fatalf("after the worker was killed: %s", states0(inst))
	}
	if w := task(inst, "work"); w.Host == victim || w.Host == "" {
		t.Fatalf("the task finished on %q; want another worker than %s", w.Host, victim)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "attempts")); strings.Count(string(b), "attempt") != 2 {
		t.Fatalf("attempts: %q; want the killed one and its retry", b)
	}
}

// procGone reports whether process pid is gone: no longer there, or a
// zombie (an orphan that init has not reaped yet holds nothing).
func procGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// hasChild reports whether process pid has a child named name (started
// by any of its threads).
func hasChild(pid int, name string) bool {
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var all []string
	for _, l := range lists {
		b, _ := os.ReadFile(l)
		all = append(all, strings.Fields(string(b))...)
	}
	for _, c := range all {
		comm, _ := os.ReadFile("/proc/" + c + "/comm")
		if strings.TrimSpace(string(comm)) == name {
			return true
		}
	}
	return false
}

// backfill: a schedule's backfill starts an instance per past day, each
// computing $[yyyyMMdd-1] from its own fire time.
func backfill(t *testing.T, e *env) {
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: daily
params: {day: '$[yyyyMMdd-1]'}
tasks:
  - {name: mark, type: shell, script: 'touch %s/${day}'}
`, dir))
	action, err := dag.ScheduleAction(dag.RunInput{DAG: "daily"})
	if err != nil {
		t.Fatal(err)
	}
	err = e.sched.CreateSchedule(e.ctx, api.CreateScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: "daily"},
		Schedule: api.Schedule{Spec: api.ScheduleSpec{Cron: []string{"0 2 * * *"}}, Action: action, Paused: true}})
	if err != nil {
		t.Fatal(err)
	}
	err = e.sched.BackfillSchedule(e.ctx, api.BackfillScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: "daily"},
		Start: time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC), Parallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"20260129", "20260130", "20260131"}
	deadline := time.Now().Add(time.Minute)
	for {
		missing := 0
		for _, d := range want {
			if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(dir)
			runs, _ := e.eng.ListWorkflows(e.ctx, api.ListRequest{})
			var seen []string
			for _, r := range runs.Runs {
				seen = append(seen, fmt.Sprintf("%s %s %s", r.Type, r.WorkflowID, r.Status))
			}
			t.Fatalf("after the backfill and a minute: %v; want files %v; runs: %s", entries, want, strings.Join(seen, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
	page := e.instances("daily", 3)
	for _, r := range page.Runs {
		if r.BusinessKey != "daily" {
			t.Errorf("instance %s has business key %q", r.WorkflowID, r.BusinessKey)
		}
	}

	// In a schedule's time zone, the business dates are that zone's:
	// 02:00 in Shanghai is 18:00 UTC the day before, and 23:00 in Los
	// Angeles is the next day in UTC, across its change to daylight
	// saving time on 2026-03-08.
	for _, z := range []struct {
		zone, cron string
		start      [3]int
		want       []string
	}{
		{"Asia/Shanghai", "0 2 * * *", [3]int{2026, 1, 1}, []string{"20260101_20251231_20251231", "20260102_20260101_20260101", "20260103_20260102_20260102"}},
		{"America/Los_Angeles", "0 23 * * *", [3]int{2026, 3, 7}, []string{"20260307_20260306_20260306", "20260308_20260307_20260307", "20260309_20260308_20260308"}},
	} {
		loc, err := time.LoadLocation(z.zone)
		if err != nil {
			t.Fatal(err)
		}
		name := "daily-" + strings.ToLower(strings.ReplaceAll(z.zone, "/", "-"))
		zdir := t.TempDir()
		e.apply(fmt.Sprintf(`name: %s
params: {day: '$[yyyyMMdd-1]'}
tasks:
  - {name: mark, type: shell, script: 'touch %s/${system.biz.curdate}_${day}_${system.biz.date}'}
`, name, zdir))
		action, err := dag.ScheduleAction(dag.RunInput{DAG: name, TimeZone: z.zone})
		if err != nil {
			t.Fatal(err)
		}
		err = e.sched.CreateSchedule(e.ctx, api.CreateScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: name},
			Schedule: api.Schedule{Spec: api.ScheduleSpec{Cron: []string{z.cron}, TimeZone: z.zone}, Action: action, Paused: true}})
		if err != nil {
			t.Fatal(err)
		}
		from := time.Date(z.start[0], time.Month(z.start[1]), z.start[2], 0, 0, 0, 0, loc)
		err = e.sched.BackfillSchedule(e.ctx, api.BackfillScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: name},
			Start: from, End: from.AddDate(0, 0, 3), Parallelism: 3})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			entries, _ := os.ReadDir(zdir)
			var got []string
			for _, en := range entries {
				got = append(got, en.Name())
			}
			if slices.Equal(got, z.want) {
				break
			}
			if time.Now().After(deadline) || len(got) >= len(z.want) {
				t.Fatalf("%s: the backfilled instances' dates (curdate_$[yyyyMMdd-1]_biz.date) are %v; want %v", z.zone, got, z.want)
			}
			time.Sleep(200 * time.Millisecond)
		}
		// The business dates are the runs' attributes, which lists see
		// about a second after the interpreter set them.
		dates := []string{z.want[0][:8], z.want[1][:8], z.want[2][:8]}
		for {
			var wrong []string
			for _, r := range e.instances(name, 3).Runs {
				if d := r.Attributes[dag.AttrDate]; !slices.Contains(dates, d) {
					wrong = append(wrong, fmt.Sprintf("%s has business date %q", r.WorkflowID, d))
				}
			}
			if len(wrong) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v; want one of the zone's dates %v", z.zone, wrong, dates)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// liveLog: a running task's log can be read while it runs (from its
// heartbeats), and whole once it ended.
func liveLog(t *testing.T, e *env) {
	// talk writes half its log, then runs until the test read that half
	// while it ran, then writes the rest.
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: chatty
tasks:
  - name: talk
    type: shell
    script: |
      for i in $(seq 1 15); do echo "line $i"; sleep 0.02; done
      %s
      for i in $(seq 16 30); do echo "line $i"; sleep 0.02; done
`, awaitFile(filepath.Join(dir, "seen"))))
	id := e.start(dag.RunInput{DAG: "chatty"})
	var running dag.TaskLog
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := e.client.Log(e.ctx, id, "talk")
		if err == nil && l.Running && strings.Contains(l.Log, "line 2\n") {
			running = l
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 30s waiting for the log of the running task: %+v, %v", l, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(running.Log, "line 30") {
		t.Fatalf("the log read while running already has the end: %q", running.Log)
	}
	touch(t, filepath.Join(dir, "seen"))
	e.wait(id)
	l, err := e.client.Log(e.ctx, id, "talk")
	if err != nil || l.Running || !strings.HasPrefix(l.Log, "line 1\n") || !strings.HasSuffix(l.Log, "line 30\n") {
		t.Fatalf("the log at the end: %+v, %v", l, err)
	}
	if text, missed := l.Unseen(running.Size); missed != 0 || !strings.HasSuffix(text, "line 30\n") || strings.Contains(text, "line 1\n") {
		t.Fatalf("what a follower had not seen: %q, %d missed", text, missed)
	}
}

// waitingForWorker: a task in a worker group no worker polls is
// submitted (not running) while a task a worker runs is running on its
// host; the waiting task's fail timeout counts the wait, and fails it in
// its user's words.
func waitingForWorker(t *testing.T, e *env) {
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: ghostly
failure_strategy: continue
tasks:
  - {name: lost, type: shell, worker_group: ghost, script: 'true', timeout: {after: 4s, action: fail}}
  - {name: busy, type: shell, script: '%s'}
`, awaitFile(filepath.Join(dir, "seen"))))
	began := time.Now()
	id := e.start(dag.RunInput{DAG: "ghostly"})
	inst := e.waitFor(id, "lost submitted, busy running on w1", 20*time.Second, func(i *dag.Instance) bool {
		return task(i, "lost").State == dag.State("submitted") && task(i, "busy").State == dag.StateRunning && task(i, "busy").Host == "w1"
	})
	if lost := task(inst, "lost"); lost.Attempt != 0 || !lost.StartTime.IsZero() || lost.Host != "" {
		t.Errorf("the waiting task: attempt %d, start %v, host %q", lost.Attempt, lost.StartTime, lost.Host)
	}
	if busy := task(inst, "busy"); busy.Attempt != 1 || busy.StartTime.IsZero() {
		t.Errorf("the running task: attempt %d, start %v", busy.Attempt, busy.StartTime)
	}
	touch(t, filepath.Join(dir, "seen"))
	inst = e.wait(id)
	lost := task(inst, "lost")
	if took := time.Since(began); inst.State != dag.StateFailure || lost.State != dag.StateFailure || task(inst, "busy").State != dag.StateSuccess || took > 40*time.Second {
		t.Fatalf("after %s: %s (%s)", took, states0(inst), lost.Error)
	}
	if want := "no worker of group ghost took the task within 4s"; !strings.Contains(lost.Error, want) {
		t.Errorf("the waiting task's error %q; want it to say %q", lost.Error, want)
	}
}

// endKills: under failure strategy end (DolphinScheduler's), the first
// failure kills the running tasks; the tasks it never started, or never
// reached, end not_run. Under finish_running the running tasks finish;
// the ones no worker started end not_run (there, long finishes only once
// the instance has seen bad fail: on a loaded machine a sleep may outlast
// nothing).
func endKills(t *testing.T, e *env) {
	const text = `name: ending-%[1]s
failure_strategy: %[1]s
tasks:
  - {name: long, type: shell, script: 'touch %[2]s/started; %[3]s'}
  - {name: bad, type: shell, script: '%[4]s; exit 3'}
  - {name: after-bad, type: shell, upstream: [bad], script: 'true'}
  - {name: after-long, type: shell, upstream: [long], script: 'true'}
%[5]s`
	// lost waits for a worker of a group that has none.
	const lost = "  - {name: lost, type: shell, worker_group: ghost, script: 'true', timeout: {after: 40s, action: fail}}\n"
	for _, c := range []struct {
		strategy string
		release  bool // long ends once bad has failed, else it sleeps until killed
		lost     string
		want     string
	}{
		{"end", false, lost, "long=kill bad=failure after-bad=skipped after-long=skipped lost=not_run"},
		{"finish_running", true, lost, "long=success bad=failure after-bad=skipped after-long=not_run lost=not_run"},
	} {
		dir := t.TempDir()
		body := "sleep 60"
		if c.release {
			body = awaitFile(filepath.Join(dir, "go"))
		}
		e.apply(fmt.Sprintf(text, c.strategy, dir, body, awaitFile(filepath.Join(dir, "started")), c.lost))
		began := time.Now()
		id := e.start(dag.RunInput{DAG: "ending-" + c.strategy})
		if c.release {
			e.waitFor(id, "bad to fail", time.Minute, func(i *dag.Instance) bool { return task(i, "bad").State == dag.StateFailure })
			touch(t, filepath.Join(dir, "go"))
		}
		inst := e.wait(id)
		if took := time.Since(began); states(inst) != c.want || inst.State != dag.StateFailure || took > 40*time.Second {
			t.Errorf("%s: after %s: %s; want %s", c.strategy, took, states0(inst), c.want)
		}
		if long := task(inst, "long"); c.strategy == "end" && (long.Host != "w1" || long.StartTime.IsZero() || !strings.Contains(long.Error, "killed")) {
			t.Errorf("%s: the killed task: host %q, start %v, error %q", c.strategy, long.Host, long.StartTime, long.Error)
		}
	}
}
