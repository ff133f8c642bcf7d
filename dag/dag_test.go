package dag_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/internal/testsmtp"
	"github.com/strandhq/strand/schedule"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
)

// strandBin is the strand binary the tests run workers of (TestMain
// builds it).
var strandBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strand-dag-test")
	if err != nil {
		panic(err)
	}
	strandBin = filepath.Join(dir, "strand")
	if out, err := exec.Command("go", "build", "-o", strandBin, "../cmd/strand").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build strand: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// served is what a strand server serves: the engine, schedules, batches.
type served struct {
	*engine.Engine
	*schedules
	*batches
}

type (
	schedules = schedule.Service
	batches   = batch.Service
)

// env is an engine over a store behind a real HTTP server, its system
// worker (schedules), and strand worker processes that run the pipelines.
// Each subtest works on its own view of it (on), which shares all but t.
type env struct {
	// t is the test running now; root the test the env lives for.
	t, root *testing.T
	ctx     context.Context
	eng     *engine.Engine
	url     string
	// ns is the namespace client starts and reads instances in.
	ns     string
	client *dag.Client
	sched  *schedule.Service
	// smtp receives the alert emails the system workers send; alerter
	// reads the groups' recent alerts.
	smtp    *testsmtp.Server
	alerter *dag.Alerter

	// dataPath is the SQLite file every worker knows as the data source
	// "local".
	dataPath string

	*procs
}

// procs are the strand worker processes running, by identity.
type procs struct {
	mu      sync.Mutex
	workers map[string]*exec.Cmd
}

// on returns the view of e for test t.
func (e *env) on(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// subtest is one of the subtests concurrently runs.
type subtest struct {
	name string
	f    func(t *testing.T, e *env)
}

// concurrently runs the subtests side by side, each on its own view of
// e, and returns when all have ended. They mostly wait (for worker
// processes, heartbeats, timers), and each uses DAGs of its own names,
// so one after another would only add up their waits. t.Parallel would
// not run them at once: it counts them against -parallel (GOMAXPROCS by
// default, 2 on a 2-core machine), which the stores' subtests already
// fill.
func (e *env) concurrently(t *testing.T, subtests ...subtest) {
	var wg sync.WaitGroup
	for _, s := range subtests {
		wg.Go(func() { t.Run(s.name, func(t *testing.T) { s.f(t, e.on(t)) }) })
	}
	wg.Wait()
}

func newEnv(t *testing.T, st store.Store) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	eng, err := engine.Open(ctx, st, engine.Options{Logger: testenv.Logger(), WorkflowTaskTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	mail := testsmtp.Start(t)
	alerter := dag.NewAlerter(eng, dag.AlertOptions{Mail: &dag.MailServer{Addr: mail.Addr, From: "strand@example.com", TLS: dag.MailPlain},
		Records: st, Logger: testenv.Logger()})
	runner := system.NewRunner(eng, system.RunnerOptions{Logger: testenv.Logger(), Worker: worker.Options{Logger: testenv.Logger()},
		Register: func(w *worker.Worker, _ string) { dag.RegisterAlerts(w, alerter) }})
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Stop(context.Background()) })
	sched := schedule.NewService(eng)
	srv := httptest.NewServer(server.New(served{eng, sched, batch.NewService(eng)}, server.Options{PollWait: time.Second, Logger: testenv.Logger()}))
	t.Cleanup(srv.Close)
	e := &env{t: t, root: t, ctx: ctx, eng: eng, url: srv.URL, ns: api.DefaultNamespace, client: dag.NewClient(eng, ""), sched: sched, smtp: mail, alerter: alerter,
		procs: &procs{workers: map[string]*exec.Cmd{}}, dataPath: filepath.Join(t.TempDir(), "data.db")}
	e.startWorker("w1")
	return e
}

// inNamespace returns a view of e whose client starts and reads instances
// in namespace ns (created here), and whose startWorker starts workers of
// ns: a test that kills a worker does it there, so that the workers of
// the default namespace, which the other subtests share, run on.
func (e *env) inNamespace(ns string) *env {
	e.t.Helper()
	if _, err := e.eng.CreateNamespace(e.ctx, api.Namespace{Name: ns}); err != nil && !errors.Is(err, api.ErrAlreadyExists) {
		e.t.Fatal(err)
	}
	c := *e
	c.ns, c.client = ns, dag.NewClient(e.eng, ns)
	return &c
}

// startWorker starts a strand worker process of the default group in
// e's namespace; extra flags are added (a --group or --workdir of them
// replaces the default's).
func (e *env) startWorker(identity string, extra ...string) *exec.Cmd {
	e.t.Helper()
	args := []string{"worker", "--server", e.url, "--namespace", e.ns, "--identity", identity, "--stop-wait", "2s", "--datasource", "local=sqlite:" + e.dataPath}
	if !slices.Contains(extra, "--group") {
		args = append(args, "--group", "default")
	}
	if !slices.Contains(extra, "--workdir") {
		args = append(args, "--workdir", e.root.TempDir())
	}
	if !slices.Contains(extra, "--concurrency") {
		// The subtests of TestCommands share the worker, several with
		// tasks that sleep a minute: the default 8 slots would keep a
		// task waiting for one past a short fail timeout, which counts
		// the wait for a worker.
		args = append(args, "--concurrency", "32")
	}
	cmd := exec.Command(strandBin, append(args, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.root.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if strings.Contains(lines.Text(), "running the groups") {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		e.t.Fatalf("strand worker %s did not start", identity)
	}
	e.mu.Lock()
	e.workers[identity] = cmd
	e.mu.Unlock()
	return cmd
}

func (e *env) apply(text string) {
	e.t.Helper()
	if _, err := e.client.Catalog.Apply(e.ctx, []byte(text), "test", false); err != nil {
		e.t.Fatal(err)
	}
}

// run starts an instance and waits for it to end.
func (e *env) run(in dag.RunInput) (*dag.Instance, error) {
	e.t.Helper()
	started, err := e.client.Start(e.ctx, in, dag.StartOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.eng.WaitResult(e.ctx, api.ResultRequest{RunRef: api.RunRef{Namespace: e.ns, WorkflowID: started.WorkflowID}})
	if err != nil {
		e.t.Fatal(err)
	}
	inst, _, err := e.client.Instance(e.ctx, started.WorkflowID)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Failure != nil {
		return inst, res.Failure
	}
	return inst, nil
}

// instances lists a DAG's instances once the list shows want of them (the
// lists lag the runs).
func (e *env) instances(name string, want int) api.ListResponse {
	e.t.Helper()
	return e.instancesIn(name, "", want)
}

// instancesIn lists a DAG's instances in a state once the list shows want
// of them.
func (e *env) instancesIn(name string, state dag.State, want int) api.ListResponse {
	e.t.Helper()
	var page api.ListResponse
	const bound = 30 * time.Second // generous: a loaded machine's lists lag
	deadline := time.Now().Add(bound)
	for {
		var err error
		page, err = e.client.Instances(e.ctx, name, state, 10, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(page.Runs) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(page.Runs) != want {
		e.t.Fatalf("instances of %s in state %q: %d after waiting up to %s; want %d", name, state, len(page.Runs), bound, want)
	}
	return page
}

func states(inst *dag.Instance) string {
	var parts []string
	for _, t := range inst.Tasks {
		parts = append(parts, t.Name+"="+string(t.State))
	}
	return strings.Join(parts, " ")
}

func TestPipelines(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		newEnv(t, st).concurrently(t,
			subtest{"fan out and in", fanOutIn},
			subtest{"failure strategies", failureStrategies},
			subtest{"branches", branches},
			subtest{"http and alerts", httpAndAlerts},
			subtest{"sql", sqlTasks})
	})
}

// fanOutIn: one task fans out to three, which fan in to one; outputs go
// down, a forbidden task is skipped and its dependants run, and
// $[yyyyMMdd-1] counts from the business time.
func fanOutIn(t *testing.T, e *env) {
	dir := t.TempDir()
	e.apply(fmt.Sprintf(`name: fan
params:
  dt: $[yyyyMMdd-1]
  dir: %s
tasks:
  - name: start
    type: shell
    script: echo '${setValue(n=3)}'
    outputs: [n]
  - {name: a, type: shell, upstream: [start], script: 'echo a >> ${dir}/a-${dt}', outputs: [x]}
  - {name: b, type: shell, upstream: [start], script: 'echo ${n} > ${dir}/b'}
  - {name: c, type: shell, upstream: [start], script: 'exit 1', forbidden: true}
  - name: join
    type: shell
    upstream: [a, b, c]
    script: |
      test -f ${dir}/a-${dt} && test "$(cat ${dir}/b)" = 3 && echo "joined ${dt} ${system.biz.curdate}"
`, dir))
	base := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	inst, err := e.run(dag.RunInput{DAG: "fan", ScheduleTime: base})
	if err != nil {
		t.Fatalf("%v; tasks %s", err, states(inst))
	}
	if got := states(inst); got != "start=success a=success b=success c=forbidden join=success" {
		t.Fatalf("states %s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "a-20260228")); err != nil {
		t.Fatalf("$[yyyyMMdd-1] at 2026-03-01: %v", err)
	}
	page := e.instances("fan", 1)
	log, err := e.client.Log(e.ctx, page.Runs[0].WorkflowID, "join")
	if err != nil || !strings.Contains(log.Log, "joined 20260228 20260301") {
		t.Fatalf("log of join: %+v, %v", log, err)
	}
}

// failureStrategies: with finish_running, nothing new starts after a failure; with
// continue, every branch that does not depend on it runs.
func failureStrategies(t *testing.T, e *env) {
	// bad fails once slow runs: finish_running lets a running task finish.
	const text = `name: fail-%[1]s
failure_strategy: %[1]s
tasks:
  - {name: bad, type: shell, script: '%[2]s; echo broken >&2; exit 3'}
  - {name: slow, type: shell, script: 'touch %[3]s; sleep 1'}
  - {name: after-slow, type: shell, upstream: [slow], script: 'true'}
  - {name: after-bad, type: shell, upstream: [bad], script: 'true'}
`
	// end (which kills the running tasks) is endKills's, in
	// commands_test.go.
	for _, s := range []string{"finish_running", "continue"} {
		started := filepath.Join(t.TempDir(), "slow-started")
		e.apply(fmt.Sprintf(text, s, awaitFile(started), started))
		inst, err := e.run(dag.RunInput{DAG: "fail-" + s})
		var f *api.Failure
		if !errors.As(err, &f) || f.Type != dag.ErrorFailed {
			t.Fatalf("%s: %v; want the instance failed", s, err)
		}
		want := map[string]string{
			"finish_running": "bad=failure slow=success after-slow=not_run after-bad=skipped",
			"continue":       "bad=failure slow=success after-slow=success after-bad=skipped",
		}[s]
		if got := states(inst); got != want {
			t.Errorf("%s: %s; want %s", s, got, want)
		}
		if inst.State != dag.StateFailure {
			t.Errorf("%s: instance %s", s, inst.State)
		}
		if bad := task(inst, "bad"); bad.Attempt != 1 || bad.Host != "w1" || bad.EndTime.IsZero() {
			t.Errorf("%s: the failed task's attempt %d, host %q, end %v", s, bad.Attempt, bad.Host, bad.EndTime)
		}
		// The task's error names the task and the DAG, not the engine's
		// step name and sequence number.
		if bad := task(inst, "bad"); !strings.HasPrefix(bad.Error, "task bad of DAG fail-"+s+" instance ") ||
			!strings.Contains(bad.Error, " failed after 1 attempt: ") || strings.Contains(bad.Error, "strand.dag") || strings.Contains(bad.Error, "#") {
			t.Errorf("%s: the failed task's error %q", s, bad.Error)
		}
		if slow := task(inst, "slow"); slow.Attempt != 1 || slow.Host != "w1" {
			t.Errorf("%s: the succeeded task's attempt %d, host %q", s, slow.Attempt, slow.Host)
		}
	}
	// The failed task's log is kept with it.
	page := e.instancesIn("fail-finish_running", dag.StateFailure, 1)
	if a := page.Runs[0].Attributes; a[dag.AttrVersion] != "1" || len(a[dag.AttrDate]) != 8 {
		t.Fatalf("attributes %+v", a)
	}
	e.instancesIn("fail-finish_running", dag.StateSuccess, 0)
	log, err := e.client.Log(e.ctx, page.Runs[0].WorkflowID, "bad")
	if err != nil || !strings.Contains(log.Log, "broken") {
		t.Fatalf("log of bad: %+v, %v", log, err)
	}
}

// branches: a conditions task takes its failure branch; a switch takes
// the case its parameters choose.
func branches(t *testing.T, e *env) {
	e.apply(`name: branches
params: {region: eu}
failure_strategy: continue
tasks:
  - {name: probe, type: shell, script: 'exit 1'}
  - name: check
    type: conditions
    upstream: [probe]
    when: {tasks: [{task: probe, state: success}]}
    success: [ok]
    failure: [repair]
  - {name: ok, type: shell, upstream: [check], script: 'true'}
  - {name: repair, type: shell, upstream: [check], script: 'true'}
  - name: route
    type: switch
    cases:
      - {when: '"${region}" == "us"', next: us}
      - {when: '"${region}" == "eu"', next: eu}
    default: other
  - {name: us, type: shell, upstream: [route], script: 'true'}
  - {name: eu, type: shell, upstream: [route], script: 'true'}
  - {name: other, type: shell, upstream: [route], script: 'true'}
  - {name: after-eu, type: shell, upstream: [eu], script: 'true'}
`)
	inst, _ := e.run(dag.RunInput{DAG: "branches"})
	want := "probe=failure check=success ok=skipped repair=success route=success us=skipped eu=success other=skipped after-eu=success"
	if got := states(inst); got != want {
		t.Fatalf("%s; want %s", got, want)
	}
	// Start parameters override the global ones.
	inst, _ = e.run(dag.RunInput{DAG: "branches", Params: map[string]string{"region": "us"}})
	if got := states(inst); !strings.Contains(got, "us=success eu=skipped") {
		t.Fatalf("region us: %s", got)
	}
}

// httpAndAlerts: an http task's output goes to the next task; a failed
// instance alerts its group through each channel, naming the failed task
// and its error: the webhook gets the alert as JSON, and the email (a real
// SMTP server) goes to the group's address with a copy. An SMTP server
// that refuses the address is recorded with the group's recent alerts and
// does not stop the webhook or the instance.
func httpAndAlerts(t *testing.T, e *env) {
	var mu sync.Mutex
	var alerts []dag.Alert
	var flaky int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/order":
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, `{"data": {"id": "ord-%s"}}`, body)
		case "/flaky":
			// Fails its first call: the retry resends the webhook only.
			mu.Lock()
			flaky++
			first := flaky == 1
			mu.Unlock()
			if first {
				http.Error(w, "busy", http.StatusServiceUnavailable)
			}
		case "/alert":
			var a dag.Alert
			_ = json.NewDecoder(r.Body).Decode(&a)
			mu.Lock()
			alerts = append(alerts, a)
			mu.Unlock()
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	if err := e.client.Catalog.SetAlertGroup(e.ctx, "ops", dag.AlertGroup{URL: srv.URL + "/alert",
		Emails: []string{"oncall@example.com"}, CC: []string{"lead@example.com"}}, "test"); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Catalog.SetAlertGroup(e.ctx, "ops-refused", dag.AlertGroup{URL: srv.URL + "/alert",
		Emails: []string{"refused@example.com"}}, "test"); err != nil {
		t.Fatal(err)
	}
	e.apply(fmt.Sprintf(`name: calls
warning: {type: failure, group: ops}
tasks:
  - {name: order, type: http, method: POST, url: '%s/order', body: '7', outputs: {id: $.data.id}}
  - {name: use, type: shell, upstream: [order], script: 'test "${id}" = ord-7'}
  - {name: missing, type: http, upstream: [use], url: '%s/nowhere'}
`, srv.URL, srv.URL))
	inst, err := e.run(dag.RunInput{DAG: "calls", ScheduleTime: time.Date(2026, 1, 2, 2, 0, 0, 0, time.UTC), TimeZone: "Asia/Shanghai"})
	if err == nil {
		t.Fatal("a 404 succeeded")
	}
	if got := states(inst); got != "order=success use=success missing=failure" {
		t.Fatalf("%s", got)
	}
	if inst.Tasks[0].Outputs["id"] != "ord-7" {
		t.Fatalf("outputs %+v", inst.Tasks[0].Outputs)
	}
	taskErr := task(inst, "missing").Error
	if taskErr == "" {
		t.Fatalf("the failed task has no error: %+v", inst.Tasks)
	}
	mu.Lock()
	got := slices.Clone(alerts)
	mu.Unlock()
	if len(got) != 1 || got[0].Event != "instance_failure" || got[0].DAG != "calls" || got[0].Task != "missing" ||
		!strings.Contains(got[0].Message, taskErr) || len(got[0].Failed) != 1 || got[0].Failed[0] != (dag.FailedTask{Name: "missing", Error: taskErr}) ||
		got[0].BusinessDate != "20260101" || got[0].TimeZone != "Asia/Shanghai" {
		t.Fatalf("webhook alerts %+v", got)
	}
	id := got[0].Instance
	wait, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	m, ok := e.smtp.Wait(wait, func(m testsmtp.Message) bool { return strings.Contains(m.Body, id) })
	if !ok {
		t.Fatalf("no email about %s; got %+v", id, e.smtp.Messages())
	}
	if !strings.Contains(m.Subject, "DAG calls failed at missing") || !strings.Contains(m.Subject, "business date 20260101, Asia/Shanghai") ||
		!strings.Contains(m.Body, "missing: "+taskErr) || !strings.Contains(m.Body, "strand dag tasks "+id) ||
		!slices.Equal(m.To, []string{"oncall@example.com", "lead@example.com"}) || m.Header.Get("Cc") != "lead@example.com" {
		t.Fatalf("email: to %v, cc %q, subject %q\n%s", m.To, m.Header.Get("Cc"), m.Subject, m.Body)
	}

	// The SMTP server refuses the address: the webhook is still called,
	// the instance ends as it would, and the group's recent alerts say so.
	e.apply(fmt.Sprintf(`name: calls-refused
warning: {type: failure, group: ops-refused}
tasks:
  - {name: lost, type: http, url: '%s/nowhere'}
`, srv.URL))
	inst, err = e.run(dag.RunInput{DAG: "calls-refused"})
	if err == nil || inst.State != dag.StateFailure {
		t.Fatalf("calls-refused: %v %s", err, states0(inst))
	}
	recent, err := e.alerter.Recent(e.ctx, "ops-refused")
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 1 || recent[0].Alert.Task != "lost" || len(recent[0].Results) != 2 ||
		recent[0].Results[0].Delivered || !strings.Contains(recent[0].Results[0].Answer, "550") || !recent[0].Results[1].Delivered {
		t.Fatalf("recent alerts of ops-refused: %+v", recent)
	}

	// A webhook that fails once: the retry calls it again but does not
	// send the email again, and the group's recent alerts keep one entry.
	if err := e.client.Catalog.SetAlertGroup(e.ctx, "ops-flaky", dag.AlertGroup{URL: srv.URL + "/flaky",
		Emails: []string{"flaky@example.com"}}, "test"); err != nil {
		t.Fatal(err)
	}
	e.apply(fmt.Sprintf(`name: calls-flaky
warning: {type: failure, group: ops-flaky}
tasks:
  - {name: lost, type: http, url: '%s/nowhere'}
`, srv.URL))
	inst, _ = e.run(dag.RunInput{DAG: "calls-flaky", ScheduleTime: time.Date(2026, 1, 2, 2, 0, 0, 0, time.UTC)})
	if inst.State != dag.StateFailure {
		t.Fatalf("calls-flaky: %s", states0(inst))
	}
	recent, err = e.alerter.Recent(e.ctx, "ops-flaky")
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 1 || recent[0].Attempts != 2 || len(recent[0].Results) != 2 || !recent[0].Results[0].Delivered || !recent[0].Results[1].Delivered {
		t.Fatalf("recent alerts of ops-flaky: %+v", recent)
	}
	var sent int
	for _, m := range e.smtp.Messages() {
		if slices.Contains(m.To, "flaky@example.com") {
			sent++
		}
	}
	if sent != 1 {
		t.Fatalf("the email of ops-flaky was sent %d times", sent)
	}
}

// sqlTasks: sql tasks run statements on a data source the worker names,
// and a query's first row sets output parameters.
func sqlTasks(t *testing.T, e *env) {
	e.apply(`name: ledger
params: {amount: "40"}
tasks:
  - name: load
    type: sql
    datasource: local
    pre: ["CREATE TABLE IF NOT EXISTS entries (amount INTEGER)", "DELETE FROM entries"]
    sql: INSERT INTO entries VALUES (${amount}), (2)
  - name: total
    type: sql
    upstream: [load]
    datasource: local
    query: true
    sql: SELECT SUM(amount) AS total, COUNT(*) AS n FROM entries
    outputs: [total, n]
  - {name: report, type: shell, upstream: [total], script: 'test "${total}/${n}" = 42/2'}
`)
	inst, err := e.run(dag.RunInput{DAG: "ledger"})
	if err != nil {
		t.Fatalf("%v: %s", err, states(inst))
	}
	if got := task(inst, "total").Outputs; got["total"] != "42" || got["n"] != "2" {
		t.Fatalf("outputs %+v", got)
	}
	log, err := e.client.Log(e.ctx, e.instances("ledger", 1).Runs[0].WorkflowID, "total")
	if err != nil || !strings.Contains(log.Log, "SELECT SUM(amount)") {
		t.Fatalf("log of total: %+v, %v", log, err)
	}
}
