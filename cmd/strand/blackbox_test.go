package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testdb"
)

// TestBlackBox builds the binary and a worker program, starts `strand
// server` on a free port and a remote worker process, and drives the CLI
// against them: on a temporary SQLite file and on PostgreSQL.
func TestBlackBox(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	// Its servers, ports and store are its own: it runs beside the others.
	t.Parallel()
	bin := binaries(t, "strand", "testworker")
	t.Run("sqlite", func(t *testing.T) {
		blackBox(t, bin, "sqlite://"+filepath.Join(t.TempDir(), "strand.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		base := testdb.PostgresURL(t)
		blackBox(t, bin, testdb.WithSearchPath(t, base, testdb.NewSchema(t, base)))
	})
}

// TestMain removes the programs binaries built when the package's tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built holds the programs binaries has built in this test process: each
// is linked once (a link of strand takes seconds of CPU), not once per test.
var built struct {
	sync.Mutex
	dir  string
	have map[string]bool
}

// binaries builds the named programs (strand, testworker), once per test
// process, into a temporary directory and returns it. Tests only run what
// is there; none writes into it.
func binaries(t *testing.T, names ...string) string {
	t.Helper()
	pkgs := map[string]string{"strand": ".", "testworker": "../../internal/testworker"}
	built.Lock()
	defer built.Unlock()
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "strand-cmd-test-")
		if err != nil {
			t.Fatal(err)
		}
		built.dir, built.have = dir, map[string]bool{}
	}
	for _, name := range names {
		if built.have[name] {
			continue
		}
		if out, err := exec.Command("go", "build", "-o", filepath.Join(built.dir, name), pkgs[name]).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkgs[name], err, out)
		}
		built.have[name] = true
	}
	return built.dir
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process starts a program, waits for a line of its output and returns
// the process and the rest of its output lines.
func process(t *testing.T, ready string, name string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGINT", name)
		}
	})
	lines := bufio.NewScanner(out)
	found := make(chan bool, 1)
	rest := make(chan string, 100)
	go func() {
		for lines.Scan() {
			if strings.Contains(lines.Text(), ready) {
				found <- true
				break
			}
		}
		for lines.Scan() {
			select {
			case rest <- lines.Text():
			default:
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not say %q: %s", name, ready, stderr.String())
	}
	return cmd, rest
}

// eventually polls f until it holds, failing t after 30 seconds.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !f(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func blackBox(t *testing.T, bin, storeURL string) {
	addr := freePort(t)
	url := "http://" + addr
	if out, err := exec.Command(filepath.Join(bin, "strand"), "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "strand ") {
		t.Fatalf("version: %v %s", err, out)
	}
	if out, err := exec.Command(filepath.Join(bin, "strand"), "migrate", "--store", storeURL).CombinedOutput(); err != nil || !strings.Contains(string(out), "schema") {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv, _ := process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", storeURL, "--listen", addr)
	worker, said := process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := func(args ...string) (string, int) {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "strand"), append(args, "--server", url)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	must := func(args ...string) string {
		t.Helper()
		out, code := cli(args...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	must("workflow", "start", "po-1", "--type", "Approval", "--input", `"laptop"`)
	eventually(t, "the query to answer", func() bool {
		out, code := cli("workflow", "query", "po-1", "item")
		return code == 0 && strings.TrimSpace(out) == `"laptop"`
	})
	if out := must("workflow", "describe", "po-1"); !strings.Contains(out, "running") {
		t.Fatalf("describe: %s", out)
	}
	must("workflow", "signal", "po-1", "approve", "--input", `"ada"`)
	if out := must("workflow", "result", "po-1"); !strings.Contains(out, `"laptop approved by ADA"`) || !strings.Contains(out, "completed") {
		t.Fatalf("result: %s", out)
	}
	if out := must("workflow", "history", "po-1"); !strings.Contains(out, "StepCompleted") || !strings.Contains(out, "WorkflowCompleted") {
		t.Fatalf("history: %s", out)
	}
	eventually(t, "the run listed", func() bool {
		out, _ := cli("workflow", "list", "--status", "completed", "-o", "json")
		return strings.Contains(out, `"po-1"`)
	})
	// Audit details: named under their events; with --details printed, the
	// large one loaded from its document.
	must("workflow", "start", "inv-1", "--type", "Invoice", "--input", `"acme"`)
	must("workflow", "result", "inv-1")
	if out := must("workflow", "history", "inv-1"); !strings.Contains(out, "details=request,log") || !strings.Contains(out, "details=plan") ||
		strings.Contains(out, "rendered") {
		t.Fatalf("history without --details: %s", out)
	}
	out := must("workflow", "history", "inv-1", "--details")
	for _, want := range []string{"details=request,log", "plan: {", `"customer": "acme"`, `"total": "129.00 EUR"`,
		"log: page 1 of the invoice for acme rendered\n", "page 7000 of the invoice for acme rendered\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("history --details lacks %q: %.2000s", want, out)
		}
	}
	if out := must("workflow", "history", "inv-1", "--details", "-o", "json"); !strings.Contains(out, "page 7000 of the invoice") || strings.Contains(out, "$document") {
		t.Fatalf("history --details -o json: %.2000s", out)
	}
	must("workflow", "start", "po-2", "--type", "Approval", "--input", `"desk"`)
	must("workflow", "cancel", "po-2", "--reason", "not needed")
	must("workflow", "terminate", "po-2", "--reason", "really")
	if out := must("workflow", "result", "po-2"); !strings.Contains(out, "terminated") {
		t.Fatalf("result: %s", out)
	}
	if out, code := cli("workflow", "start", "po-1", "--type", "Approval", "--id-reuse", "reject-duplicate"); code != 1 || !strings.Contains(out, "already started") {
		t.Fatalf("duplicate: %d %s", code, out)
	}
	if out, code := cli("workflow", "start", "po-3", "--type", "Approval", "--input", "{"); code != 2 {
		t.Fatalf("bad input: %d %s", code, out)
	}
	if out := must("namespace", "create", "billing", "--retention", "24h", "--description", "invoices"); !strings.Contains(out, "24h0m0s") {
		t.Fatalf("namespace create: %s", out)
	}
	if out, code := cli("namespace", "create", "billing"); code != 1 || !strings.Contains(out, "already exists") {
		t.Fatalf("second create: %d %s", code, out)
	}
	must("namespace", "update", "billing", "--retention", "48h")
	if out := must("namespace", "describe", "billing"); !strings.Contains(out, "48h0m0s") || !strings.Contains(out, "invoices") {
		t.Fatalf("namespace describe: %s", out)
	}
	if out := must("namespace", "list"); !strings.Contains(out, "billing") || !strings.Contains(out, "default") || strings.Contains(out, "strand-system") {
		t.Fatalf("namespace list: %s", out)
	}
	if out, code := cli("namespace", "describe", "nope"); code != 1 || !strings.Contains(out, "namespace not found") {
		t.Fatalf("missing namespace: %d %s", code, out)
	}
	must("workflow", "start", "inv-1", "--type", "Approval", "--namespace", "billing", "--input", `"x"`)

	// A worker killed in the middle of a step loses nothing: the step's
	// start-to-close timeout gives it to another worker.
	must("workflow", "start", "nap-1", "--type", "Patient", "--input", "{}")
	select {
	case line := <-said:
		for !strings.Contains(line, "nap started") {
			line = <-said
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the step did not start")
	}
	worker.Process.Kill()
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", url)
	if out := must("workflow", "result", "nap-1"); !strings.Contains(out, "rested on attempt 2") {
		t.Fatalf("result after the worker died: %s", out)
	}
	if out := must("workflow", "history", "nap-1"); !strings.Contains(out, "StepAttemptFailed") || !strings.Contains(out, "start_to_close") {
		t.Fatalf("history after the worker died: %s", out)
	}

	// strand bench through the server (its workers and client over HTTP).
	if out := must("bench", "--n", "20", "--shapes", "sequential,single", "--quiet"); !strings.Contains(out, "sequential") || !strings.Contains(out, "workflows/s") {
		t.Fatalf("bench: %s", out)
	}

	if out := must("workflow", "describe", "inv-1", "--namespace", "billing"); !strings.Contains(out, "running") {
		t.Fatalf("describe in billing: %s", out)
	}

	// A graceful stop ends the workers' long polls instead of waiting them out.
	srv.Process.Signal(os.Interrupt)
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("server exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not stop within 15s of SIGINT (polls are 30s)")
	}
}
