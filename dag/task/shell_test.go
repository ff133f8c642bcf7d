package task_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strandhq/strand/dag/task"
)

// logBuffer is a log that tests may read while a task writes it, and that
// tells when a text shows up in it.
type logBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
}

func newLogBuffer(want string) *logBuffer {
	return &logBuffer{want: want, seen: make(chan struct{})}
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	if l.want != "" && strings.Contains(l.b.String(), l.want) {
		l.want = ""
		close(l.seen)
	}
	return n, err
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// alive tells whether process pid exists and is not a zombie (this
// machine's init may leave the script's orphans unreaped).
func alive(t *testing.T, pid int) bool {
	t.Helper()
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return f[0] != "Z" && f[0] != "X"
}

func pidOutput(t *testing.T, res task.ShellResult, name string) int {
	t.Helper()
	pid, err := strconv.Atoi(res.Outputs[name])
	if err != nil || pid <= 0 {
		t.Fatalf("output %s = %q, want a pid (outputs %v)", name, res.Outputs[name], res.Outputs)
	}
	return pid
}

func TestShellOutputs(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	res, err := task.RunShell(context.Background(), task.Shell{Script: `
echo "start"
echo 'before ${setValue(a=1)} middle ${setValue(b=hello world)} after'
echo '${setValue(a=2)}${setValue( c = x=y(z) )}'
echo 'not an output: ${setValue(broken'
echo '${setValue(a=3)}' >&2
`}, &log)
	if err != nil {
		t.Fatalf("RunShell: %v\nlog:\n%s", err, log.String())
	}
	want := map[string]string{"a": "2", "b": "hello world", "c": " x=y(z) "}
	if fmt.Sprint(res.Outputs) != fmt.Sprint(want) {
		t.Errorf("outputs %q, want %q", res.Outputs, want)
	}
	if res.ExitCode != 0 || res.PID <= 0 {
		t.Errorf("exit code %d, pid %d", res.ExitCode, res.PID)
	}
	for _, s := range []string{"start\n", "before ${setValue(a=1)} middle", "${setValue(a=3)}\n"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log.String())
		}
	}
}

func TestShellEnv(t *testing.T) {
	t.Setenv("STRAND_TASK_WORKER_VAR", "from-worker")
	t.Setenv("STRAND_TASK_OVERRIDDEN", "worker")
	var log bytes.Buffer
	res, err := task.RunShell(context.Background(), task.Shell{
		Script: `echo "\${setValue(w=$STRAND_TASK_WORKER_VAR)}\${setValue(t=$STRAND_TASK_VAR)}\${setValue(o=$STRAND_TASK_OVERRIDDEN)}"`,
		Env:    map[string]string{"STRAND_TASK_VAR": "from task", "STRAND_TASK_OVERRIDDEN": "task"},
	}, &log)
	if err != nil {
		t.Fatalf("RunShell: %v\nlog:\n%s", err, log.String())
	}
	want := map[string]string{"w": "from-worker", "t": "from task", "o": "task"}
	if fmt.Sprint(res.Outputs) != fmt.Sprint(want) {
		t.Errorf("outputs %q, want %q", res.Outputs, want)
	}

	_, err = task.RunShell(context.Background(), task.Shell{Script: "true", Env: map[string]string{"A=B": "x"}}, &log)
	if err == nil {
		t.Error("an environment variable name with = was accepted")
	}
}

func TestShellFreshDirectory(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	script := `
test "$(ls -A)" = "$(basename "$0")" || { echo "not fresh: $(ls -A)"; exit 1; }
echo data > left-behind
echo "\${setValue(dir=$PWD)}"`
	var dirs []string
	for range 2 {
		var log bytes.Buffer
		res, err := task.RunShell(context.Background(), task.Shell{Script: script, WorkDir: parent}, &log)
		if err != nil {
			t.Fatalf("RunShell: %v\nlog:\n%s", err, log.String())
		}
		dir := res.Outputs["dir"]
		if filepath.Dir(dir) != parent {
			t.Errorf("working directory %q is not under %q", dir, parent)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("working directory %q not removed: %v", dir, err)
		}
		dirs = append(dirs, dir)
	}
	if dirs[0] == dirs[1] {
		t.Errorf("two runs shared the directory %q", dirs[0])
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("left in the work directory: %v", left)
	}
}

func TestShellExitCode(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	res, err := task.RunShell(context.Background(), task.Shell{Script: `
echo '${setValue(k=v)}'
echo "something went wrong" >&2
exit 3`}, &log)
	var xe *task.ExitError
	if !errors.As(err, &xe) || xe.Code != 3 {
		t.Fatalf("err = %v, want an *ExitError with code 3", err)
	}
	if res.ExitCode != 3 || res.Outputs["k"] != "v" {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(log.String(), task.StderrPrefix+"something went wrong\n") {
		t.Errorf("stderr not in the log:\n%s", log.String())
	}

	// bash ended by a signal it did not get from RunShell.
	_, err = task.RunShell(context.Background(), task.Shell{Script: `kill -KILL $$`}, &log)
	if !errors.As(err, &xe) || xe.Code != 128+9 || xe.Signal != syscall.SIGKILL {
		t.Fatalf("err = %#v, want an *ExitError with code 137 and SIGKILL", err)
	}
}

func TestShellLastLineWithoutNewline(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	res, err := task.RunShell(context.Background(), task.Shell{Script: `
printf 'err-no-newline' >&2
printf 'first\n${setValue(last=yes)} out-no-newline'`}, &log)
	if err != nil {
		t.Fatalf("RunShell: %v", err)
	}
	for _, s := range []string{"first\n", "${setValue(last=yes)} out-no-newline\n", task.StderrPrefix + "err-no-newline\n"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log.String())
		}
	}
	if res.Outputs["last"] != "yes" {
		t.Errorf("outputs %v: the last line's setValue is lost", res.Outputs)
	}
}

func TestShellLinesDoNotInterleave(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	_, err := task.RunShell(context.Background(), task.Shell{Script: `
for i in $(seq 1 500); do echo "out-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; done &
for i in $(seq 1 500); do echo "err-$i-yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy" >&2; done &
wait`}, &log)
	if err != nil {
		t.Fatalf("RunShell: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 1000 {
		t.Fatalf("%d lines logged, want 1000", len(lines))
	}
	for _, l := range lines {
		var n int
		var tail string
		if _, err := fmt.Sscanf(l, "out-%d-%s", &n, &tail); err == nil && tail == strings.Repeat("x", 32) {
			continue
		}
		if _, err := fmt.Sscanf(l, task.StderrPrefix+"err-%d-%s", &n, &tail); err == nil && tail == strings.Repeat("y", 32) {
			continue
		}
		t.Fatalf("mixed line %q", l)
	}
}

func TestShellCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	log := newLogBuffer("ready\n")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := errors.New("stopped by the user")
	go func() {
		select {
		case <-log.seen:
			cancel(stop)
		case <-time.After(30 * time.Second):
		}
	}()
	start := time.Now()
	res, err := task.RunShell(ctx, task.Shell{
		KillGrace: 500 * time.Millisecond,
		Script: `
sleep 1000 &
echo "\${setValue(bg=$!)}"
( sleep 1000 & echo "\${setValue(grandchild=$!)}"; wait ) &
echo "\${setValue(sub=$!)}"
( trap '' TERM; exec sleep 1000 ) &
echo "\${setValue(deaf=$!)}"
sleep 0.2 # the subshell's echo comes first
echo ready
sleep 1000
echo "not reached"`,
	}, log)
	elapsed := time.Since(start)
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("err = %v, want it to say killed and wrap %v\nlog:\n%s", err, stop, log.String())
	}
	if elapsed > 20*time.Second {
		t.Errorf("RunShell took %v to return after the cancel", elapsed)
	}
	pids := map[string]int{"bash": res.PID}
	for _, name := range []string{"bg", "grandchild", "sub", "deaf"} {
		pids[name] = pidOutput(t, res, name)
	}
	for name, pid := range pids {
		if alive(t, pid) {
			t.Errorf("%s (pid %d) survived the cancel", name, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if strings.Contains(log.String(), "not reached") {
		t.Errorf("the script went on:\n%s", log.String())
	}
}

func TestShellTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var log bytes.Buffer
	_, err := task.RunShell(ctx, task.Shell{Script: "sleep 1000"}, &log)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want it to wrap context.DeadlineExceeded", err)
	}

	_, err = task.RunShell(ctx, task.Shell{Script: "echo never"}, &log)
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(log.String(), "never") {
		t.Fatalf("a task on an ended context: err = %v, log %q", err, log.String())
	}
}

func TestShellBackgroundChildHoldingStdout(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	start := time.Now()
	res, err := task.RunShell(context.Background(), task.Shell{Script: `
sleep 1000 &
echo "\${setValue(bg=$!)}"
sleep 1000 >/dev/null 2>&1 &
echo "\${setValue(quiet=$!)}"
echo done`}, &log)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("RunShell: %v\nlog:\n%s", err, log.String())
	}
	if elapsed > 15*time.Second {
		t.Errorf("RunShell took %v with a background child holding stdout", elapsed)
	}
	for _, name := range []string{"bg", "quiet"} {
		if pid := pidOutput(t, res, name); alive(t, pid) {
			t.Errorf("background child %s (pid %d) survived", name, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if !strings.Contains(log.String(), "done\n") {
		t.Errorf("log:\n%s", log.String())
	}
}

// TestShellLeavesNoGoroutine runs alone (not in parallel), so the number of
// goroutines is the package's own when RunShell returns.
func TestShellLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	check := func(what string) {
		t.Helper()
		// A goroutine that returned may not have exited yet (a dump once
		// showed one in runtime.goexit1): give it a moment.
		for deadline := time.Now().Add(time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("%s: %d goroutines after RunShell returned, %d before:\n%s", what, n, before, buf[:runtime.Stack(buf, true)])
		}
	}
	var log bytes.Buffer
	if _, err := task.RunShell(context.Background(), task.Shell{Script: "echo ok; echo err >&2"}, &log); err != nil {
		t.Fatal(err)
	}
	check("success")
	if _, err := task.RunShell(context.Background(), task.Shell{Script: "sleep 1000 & exit 4"}, &log); err == nil {
		t.Fatal("exit 4 succeeded")
	}
	check("exit code with a child holding stdout")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := task.RunShell(ctx, task.Shell{Script: "sleep 1000 & sleep 1000", KillGrace: 100 * time.Millisecond}, &log); err == nil {
		t.Fatal("a timed out task succeeded")
	}
	check("timeout")
}
