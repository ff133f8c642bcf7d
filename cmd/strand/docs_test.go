package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strandhq/strand/internal/testsmtp"
)

// TestOperationsCurlExample runs the curl example of docs/operations.md as
// written, with real curl against a real server (on a free port: the
// example's address is replaced) and the test worker.
func TestOperationsCurlExample(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	script := fencedBlock(t, filepath.Join("..", "..", "docs", "operations.md"), "### Calling the API with curl")
	bin := binaries(t, "strand", "testworker")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"), "--listen", addr)
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", "http://"+addr)

	script = strings.ReplaceAll(script, "http://127.0.0.1:8233", "http://"+addr)
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	t.Logf("the example printed:\n%s", out)
	for _, want := range []string{`"started":true`, `"status":"completed","output":"laptop approved by ADA"`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the example printed no %s:\n%s", want, out)
		}
	}
	hist, err := exec.Command("curl", "-sS", "http://"+addr+"/api/v1/namespaces/default/workflows/po-7/history").CombinedOutput()
	if err != nil {
		t.Fatalf("history: %v %s", err, hist)
	}
	for _, want := range []string{`"payload":"laptop"`, `"memo":{"cost":{"eur":1200}}`, `"payload":"ada"`} {
		if !strings.Contains(string(hist), want) {
			t.Fatalf("the history has no %s:\n%s", want, hist)
		}
	}
}

// fencedBlock returns the first fenced code block after heading in the
// Markdown file path.
func fencedBlock(t *testing.T, path, heading string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", path, heading)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("%s: no code block under %q", path, heading)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("%s: the code block under %q does not end", path, heading)
	}
	return block
}

// TestSchedulesGuideExample runs the example of docs/schedules.md as
// written, with the strand binary against a real server and the test
// worker (which registers the guide's Nightly).
func TestSchedulesGuideExample(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	script := fencedBlock(t, filepath.Join("..", "..", "docs", "schedules.md"), "### Example")
	bin := binaries(t, "strand", "testworker")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"), "--listen", addr)
	process(t, "worker started", filepath.Join(bin, "testworker"), "--server", "http://"+addr)

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STRAND_SERVER=http://"+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	t.Logf("the example printed:\n%s", out)
	for _, want := range []string{`"processed 2026-01-02"`, "paused", "quarter close", "nightly-report-2026-01-03T01:00:00Z"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the example printed no %s:\n%s", want, out)
		}
	}
}

// TestDAGsGuideExample runs the example of docs/dags.md as written, with
// the strand binary against a real server: the example starts its own
// strand worker.
func TestDAGsGuideExample(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	guide := filepath.Join("..", "..", "docs", "dags.md")
	// The backfill example runs after the first, with its worker.
	script := fencedBlock(t, guide, "### Example") + fencedBlock(t, guide, "### Example: backfill")
	bin := binaries(t, "strand")
	addr := freePort(t)
	mail := testsmtp.Start(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"), "--listen", addr,
		"--smtp-server", mail.Addr, "--smtp-from", "strand@example.com", "--smtp-tls", "none")

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STRAND_SERVER=http://"+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	t.Logf("the example printed:\n%s", out)
	for _, want := range []string{"daily-sales version 1 stored", "orders=42", "explain", "skipped", "20260228: 42 orders", "created schedule dag-daily-sales",
		"started backfill sales-march of daily-sales: 3 dates, one date after another", "backfill sales-march of daily-sales: success",
		"2026-03-02T02:00:00+08:00", "sales-march-20260304", "20260302: 42 orders",
		"backfill sales-late of daily-sales: success", "sales-late-sales-report-20260310"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the example printed no %q:\n%s", want, out)
		}
	}

	// The alert groups' example, on the same server: a test alert, and a
	// failed instance's email through the server's SMTP server.
	script = fencedBlock(t, filepath.Join("..", "..", "docs", "dags.md"), "### Alert group example")
	cmd = exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STRAND_SERVER=http://"+addr)
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the alert group example failed: %v\n%s", err, out)
	}
	t.Logf("the alert group example printed:\n%s", out)
	for _, want := range []string{"alert group data-team: email to oncall@example.com (cc lead@example.com)", "accepted by", "nightly-load version 1: failure",
		"instance_failure", "email delivered"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the alert group example printed no %q:\n%s", want, out)
		}
	}
	const subject = "[Strand] DAG nightly-load failed at load (business date 20260301, Asia/Shanghai)"
	if !slices.ContainsFunc(mail.Messages(), func(m testsmtp.Message) bool {
		return m.Subject == subject && strings.Contains(m.Body, "load: ") && strings.Contains(m.Body, "exit code 3")
	}) {
		t.Fatalf("no email %q naming the task and its error: %+v", subject, mail.Messages())
	}
}

// TestStateMachinesGuideExample: the example of docs/statemachines.md is
// statemachine/example_test.go as written, which go test runs and checks.
func TestStateMachinesGuideExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "statemachines.md"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "statemachine", "example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+string(example)+"```") {
		t.Fatal("docs/statemachines.md's example is not statemachine/example_test.go as written: copy the file into the guide")
	}
}

// TestSagasGuideExample: the example of docs/sagas.md is
// saga/example_test.go as written, which go test runs and checks.
func TestSagasGuideExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "sagas.md"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "saga", "example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+string(example)+"```") {
		t.Fatal("docs/sagas.md's example is not saga/example_test.go as written: copy the file into the guide")
	}
}

// TestMessagesGuideExample: the examples of docs/messages.md are
// message/example_test.go, humantask/example_test.go and
// workflow/example_auditdetail_test.go as written, which go test runs and
// checks.
func TestMessagesGuideExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "messages.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"message/example_test.go", "humantask/example_test.go", "workflow/example_auditdetail_test.go"} {
		example, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```go\n"+string(example)+"```") {
			t.Fatalf("docs/messages.md's example is not %s as written: copy the file into the guide", file)
		}
	}
}

// TestDAGsGuideResourcesExample runs the examples of docs/dags.md's
// "Resources" and "Data sources" as written, with the strand binary
// against a real server: the first starts a strand worker given no data
// source, which the second uses.
func TestDAGsGuideResourcesExample(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	doc := filepath.Join("..", "..", "docs", "dags.md")
	script := fencedBlock(t, doc, "## Resources") + fencedBlock(t, doc, "## Data sources")
	bin := binaries(t, "strand")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"), "--listen", addr)

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STRAND_SERVER=http://"+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	for _, want := range []string{"load.sh version 2 stored", "-- resource load.sh version 1", "loading 1 statement(s), script version 1",
		"loading 1 statement(s), script version 2", "data source shop created", "total=42"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the example printed no %q:\n%s", want, out)
		}
	}
}
