package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runIn executes the CLI in-process with stdin and returns its output and
// exit code.
func runIn(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		return out.String() + err.Error(), exitCode(err)
	}
	return out.String(), 0
}

// TestAccessControl runs strand server with access control as an operator
// would set it up: it refuses to serve other machines with no user, the
// first admin is made against the store, logs in, makes a service account
// with a token and a role; the token works in its namespace only, stops
// working once revoked; and neither a password nor a token ever shows in
// the server's output.
func TestAccessControl(t *testing.T) {
	bin := binaries(t, "strand")
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("STRAND_TOKEN", "")
	storeURL := "sqlite://" + filepath.Join(dir, "strand.db")

	// No user, and an address other machines reach: refused.
	open := exec.Command(filepath.Join(bin, "strand"), "server", "--store", storeURL, "--listen", "0.0.0.0:0", "--console=false")
	out, err := open.CombinedOutput()
	if code := open.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "strand user create") {
		t.Fatalf("a non-loopback server without users: exit %d (%v): %s", code, err, out)
	}

	const password = "a very secret password"
	if out, code := runIn(t, password+"\n", "user", "create", "root", "--admin", "--password-stdin", "--store", storeURL); code != 0 {
		t.Fatalf("user create: %d %s", code, out)
	}
	if out, code := runIn(t, "short\n", "user", "create", "bob", "--password-stdin", "--store", storeURL); code != 2 || !strings.Contains(out, "password") {
		t.Fatalf("a short password: %d %s", code, out)
	}

	addr := freePort(t)
	url := "http://" + addr
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(filepath.Join(bin, "strand"), "server", "--store", storeURL, "--listen", addr, "--console=false",
		"--login-backoff-after", "3", "--login-lock-after", "3")
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
		logFile.Close()
	}()
	eventually(t, "the server up", func() bool {
		out, _ := runIn(t, "", "whoami", "--server", url, "--retry-for", "1ms")
		return strings.Contains(out, "unauthenticated") // up, and wants credentials
	})

	if out, code := runIn(t, "", "whoami", "--server", url, "--retry-for", "1ms"); !strings.Contains(out, "unauthenticated") {
		t.Fatalf("whoami without a token: %d %s", code, out)
	}
	if out, code := runIn(t, "wrong password\n", "login", "--server", url, "--name", "root", "--password-stdin"); code == 0 || !strings.Contains(out, "wrong user name or password") {
		t.Fatalf("login with a wrong password: %d %s", code, out)
	}
	if out, code := runIn(t, password+"\n", "login", "--server", url, "--name", "root", "--password-stdin"); code != 0 {
		t.Fatalf("login: %d %s", code, out)
	}
	if out, code := runIn(t, "", "whoami", "--server", url, "-o", "json"); code != 0 || !strings.Contains(out, `"cluster_admin": true`) || !strings.Contains(out, `"access_control": true`) {
		t.Fatalf("whoami after login: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"namespace", "create", "acme"},
		{"user", "create", "ci", "--service"},
		{"user", "grant", "ci", "--namespace", "acme", "--roles", "writer,worker"},
	} {
		if out, code := runIn(t, "", append(args, "--server", url)...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	out2, code := runIn(t, "", "token", "create", "--user", "ci", "--name", "ci", "--ttl", "1h", "--server", url, "-o", "json")
	if code != 0 {
		t.Fatalf("token create: %d %s", code, out2)
	}
	token := between(out2, `"token": "`, `"`)
	tokenID := between(out2, `"id": "`, `"`)
	if !strings.HasPrefix(token, "strand_") || tokenID == "" {
		t.Fatalf("token create printed %s", out2)
	}

	start := func(ns, id string) (string, int) {
		return runIn(t, "", "workflow", "start", id, "--type", "Nothing", "--queue", "q", "--namespace", ns, "--server", url, "--token", token, "--retry-for", "1ms")
	}
	if out, code := start("acme", "w-1"); code != 0 {
		t.Fatalf("start in acme as ci: %d %s", code, out)
	}
	if out, code := start("default", "w-2"); code == 0 || !strings.Contains(out, "permission denied") {
		t.Fatalf("start in default as ci: %d %s", code, out)
	}
	if out, code := runIn(t, "", "workflow", "terminate", "w-1", "--namespace", "acme", "--server", url, "--token", token, "--retry-for", "1ms"); code == 0 || !strings.Contains(out, "permission denied") {
		t.Fatalf("terminate as a writer: %d %s", code, out)
	}
	if out, code := runIn(t, "", "token", "list", "--user", "ci", "--server", url); code != 0 || !strings.Contains(out, tokenID) {
		t.Fatalf("token list: %d %s", code, out)
	}
	if out, code := runIn(t, "", "token", "revoke", tokenID, "--server", url); code != 0 {
		t.Fatalf("token revoke: %d %s", code, out)
	}
	if out, code := start("acme", "w-3"); code == 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("start with a revoked token: %d %s", code, out)
	}
	var audit string
	eventually(t, "the audit log to hold the refused start", func() bool {
		audit, _ = runIn(t, "", "audit", "list", "--all-namespaces", "-o", "json", "--server", url)
		return strings.Contains(audit, `"status": 401`)
	})
	if !strings.Contains(audit, `"actor": "ci (service)"`) || !strings.Contains(audit, `"action": "POST /namespaces/{namespace}/workflows"`) ||
		!strings.Contains(audit, `"action": "POST /login"`) {
		t.Fatalf("the audit log lacks the start or the login:\n%s", audit)
	}
	for what, s := range map[string]string{"the password": password, "the token's secret": token[len(token)-64:]} {
		if strings.Contains(audit, s) {
			t.Errorf("%s is in the audit log:\n%s", what, audit)
		}
	}
	if resp, err := http.Get(url + "/metrics"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("/metrics without a token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+loadCredential(url))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(metrics), "strand_api_requests_total") {
		t.Fatalf("/metrics as the admin: %d %.300s", resp.StatusCode, metrics)
	}
	for what, s := range map[string]string{"the password": password, "the token's secret": token[len(token)-64:]} {
		if strings.Contains(string(metrics), s) {
			t.Errorf("%s is in the metrics", what)
		}
	}
	// Failed logins lock a name (3 here), the right password too, until
	// a cluster admin unlocks it; a user changes their own password, and
	// their other login sessions end.
	rootToken := loadCredential(url)
	const alicePassword, aliceNext = "alice's first password", "alice's second password"
	if out, code := runIn(t, alicePassword+"\n", "user", "create", "alice", "--password-stdin", "--server", url); code != 0 {
		t.Fatalf("user create alice: %d %s", code, out)
	}
	for i := range 3 {
		out, code := runIn(t, "wrong password\n", "login", "--server", url, "--name", "alice", "--password-stdin")
		if code == 0 || i < 2 && !strings.Contains(out, "wrong user name or password") || i == 2 && !strings.Contains(out, "too many failed logins for alice") {
			t.Fatalf("wrong password %d: %d %s", i+1, code, out)
		}
	}
	if out, code := runIn(t, alicePassword+"\n", "login", "--server", url, "--name", "alice", "--password-stdin"); code == 0 ||
		!strings.Contains(out, "too many failed logins for alice: it is locked; try again in 15m") || !strings.Contains(out, "strand user unlock alice") {
		t.Fatalf("the right password while locked: %d %s", code, out)
	}
	if out, code := runIn(t, "", "user", "unlock", "alice", "--server", url, "--token", rootToken); code != 0 || !strings.Contains(out, "alice is unlocked") {
		t.Fatalf("user unlock: %d %s", code, out)
	}
	if out, code := runIn(t, alicePassword+"\n", "login", "--server", url, "--name", "alice", "--password-stdin"); code != 0 {
		t.Fatalf("login after the unlock: %d %s", code, out)
	}
	aliceOther := loadCredential(url)
	if out, code := runIn(t, alicePassword+"\n", "login", "--server", url, "--name", "alice", "--password-stdin"); code != 0 {
		t.Fatalf("a second login: %d %s", code, out)
	}
	if out, code := runIn(t, "not my password\n"+aliceNext+"\n", "password", "--password-stdin", "--server", url); code == 0 || !strings.Contains(out, "current_password") {
		t.Fatalf("password with a wrong current one: %d %s", code, out)
	}
	if out, code := runIn(t, alicePassword+"\n"+aliceNext+"\n", "password", "--password-stdin", "--server", url); code != 0 || !strings.Contains(out, "1 other login session(s) ended") {
		t.Fatalf("password: %d %s", code, out)
	}
	if out, _ := runIn(t, "", "whoami", "--server", url, "--token", aliceOther, "--retry-for", "1ms"); !strings.Contains(out, "unauthenticated") {
		t.Fatalf("alice's other login after the change: %s", out)
	}
	if out, code := runIn(t, "", "whoami", "--server", url); code != 0 || !strings.Contains(out, "alice") {
		t.Fatalf("the login the change came with: %d %s", code, out)
	}
	if err := saveCredential(url, credential{Token: rootToken, User: "root"}); err != nil {
		t.Fatal(err)
	}
	if out, code := runIn(t, "", "logout", "--server", url); code != 0 {
		t.Fatalf("logout: %d %s", code, out)
	}
	if out, _ := runIn(t, "", "whoami", "--server", url, "--retry-for", "1ms"); !strings.Contains(out, "unauthenticated") {
		t.Fatalf("whoami after logout: %s", out)
	}

	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	time.Sleep(100 * time.Millisecond)
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "access control on") {
		t.Fatalf("the server's log does not say access control is on:\n%s", log)
	}
	secret := token[len(token)-64:]
	for what, s := range map[string]string{"the password": password, "the token's secret": secret} {
		if strings.Contains(string(log), s) {
			t.Errorf("%s is in the server's output:\n%s", what, log)
		}
	}
}

// between returns the text of s between the first before and the after
// that follows it.
func between(s, before, after string) string {
	_, rest, ok := strings.Cut(s, before)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, after)
	return v
}
