// Package task runs the built-in task types of DAG definitions (shell
// scripts, HTTP calls, SQL statements) inside a worker process, as Apache
// DolphinScheduler's users know them. Each runner is a plain function: it
// runs the task, writes the task's log to an io.Writer and returns the
// task's output parameters or a typed error. Retries and timeouts are the
// caller's: a runner stops when its context ends.
package task

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Shell is a shell task: a script run by bash in a fresh working directory.
type Shell struct {
	// Script is the text of the script, run as `bash FILE`.
	Script string
	// Env is added to the worker's environment (and wins over it).
	Env map[string]string
	// WorkDir is the directory under which the fresh working directory is
	// made (default os.TempDir()).
	WorkDir string
	// Dir, when set, is the working directory itself, made (with the
	// task's resources in it) and removed by the caller; WorkDir is then
	// unused.
	Dir string
	// KillGrace is how long a stopped script's process group has between
	// SIGTERM and SIGKILL (default 5s).
	KillGrace time.Duration
	// User, when set, is the OS user the script runs as (a tenant's): it
	// owns the working directory, and HOME, USER and LOGNAME are its. The
	// worker needs the privilege to switch users (root).
	User *User
}

// ShellResult is what a shell task left.
type ShellResult struct {
	// ExitCode is bash's exit code; 128+N when it was ended by signal N.
	ExitCode int
	// Outputs are the output parameters set by ${setValue(key=value)} on
	// stdout; a later one wins.
	Outputs map[string]string
	// PID is the id of bash, the leader of the script's process group, for
	// the task instance record.
	PID int
}

// ExitError is the error of a script that exited with a non-zero code.
type ExitError struct {
	// Code is the program's exit code; 128+N when it was ended by signal N.
	Code int
	// Signal is the signal that ended the program, or 0 when it exited by
	// itself.
	Signal syscall.Signal

	what, program string // "shell task", "bash"
}

// Error implements error.
func (e *ExitError) Error() string {
	what, prog := cmp.Or(e.what, "shell task"), cmp.Or(e.program, "bash")
	if e.Signal != 0 {
		return fmt.Sprintf("%s: %s was ended by signal %d (%v), exit code %d", what, prog, int(e.Signal), e.Signal, e.Code)
	}
	return fmt.Sprintf("%s: exit code %d", what, e.Code)
}

const (
	// defaultKillGrace is Shell.KillGrace's default.
	defaultKillGrace = 5 * time.Second
	// pipeGrace is how long the output pipes may stay open after bash
	// exited (held by background children) before the group is killed.
	pipeGrace = 2 * time.Second
	// maxOutputLine caps the part of one stdout line scanned for setValue.
	maxOutputLine = 1 << 20
	// readChunk is the pipe reader's buffer: a longer line is logged in
	// pieces of this size.
	readChunk = 64 << 10
)

// StderrPrefix starts each line a shell task wrote to stderr, in its log:
// stdout's and stderr's lines are interleaved in the order they were
// written, stderr's marked.
const StderrPrefix = "[stderr] "

// setValueRE matches DolphinScheduler's ${setValue(key=value)}.
var setValueRE = regexp.MustCompile(`\$\{setValue\(\s*([^=()\s]+)\s*=(.*?)\)\}`)

// RunShell runs sh: it writes the script to a file in a new directory under
// sh.WorkDir and runs `bash FILE` there, in a process group of its own, with
// the worker's environment plus sh.Env. Stdout and stderr go to log line by
// line as they arrive, stderr's after StderrPrefix; stdout lines with ${setValue(key=value)} set outputs.
//
// A non-zero exit returns the result and an *ExitError. When ctx ends, the
// whole process group gets SIGTERM, then SIGKILL after sh.KillGrace if
// anything is left, and the error wraps context.Cause(ctx). Processes the
// script left behind in its group are killed when bash exits: a task's
// processes end with it. They also end with the worker: when the worker
// process dies (even by SIGKILL), a watchdog process SIGKILLs the group,
// and on Linux bash gets the parent-death signal. The working directory
// is removed.
func RunShell(ctx context.Context, sh Shell, log io.Writer) (ShellResult, error) {
	return runScript(ctx, sh, program{what: "shell task", path: "bash", file: "script.sh"}, log)
}

// program is what runs a task's script: a shell task's bash, a python
// task's interpreter.
type program struct {
	// what names the task in errors ("shell task").
	what string
	// path is the program, looked up on PATH when it has no slash.
	path string
	// file is the script's file name in the working directory.
	file string
}

// runScript runs sh.Script with prog as RunShell describes: every task type
// that runs a process shares its working directory, process group,
// watchdog, parent-death signal, log and outputs.
func runScript(ctx context.Context, sh Shell, prog program, log io.Writer) (ShellResult, error) {
	if err := context.Cause(ctx); err != nil {
		return ShellResult{}, fmt.Errorf("%s not started: %w", prog.what, err)
	}
	grace := sh.KillGrace
	if grace <= 0 {
		grace = defaultKillGrace
	}
	env, err := shellEnv(sh.User, sh.Env)
	if err != nil {
		return ShellResult{}, fmt.Errorf("%s: %w", prog.what, err)
	}
	dir := sh.Dir
	var script string
	if dir == "" {
		parent := sh.WorkDir
		if parent == "" {
			parent = os.TempDir()
		}
		if dir, err = os.MkdirTemp(parent, "strand-shell-"); err != nil {
			return ShellResult{}, fmt.Errorf("%s: make working directory: %w", prog.what, err)
		}
		defer os.RemoveAll(dir)
		script = filepath.Join(dir, prog.file)
	} else {
		// The script beside the resources, out of their way.
		f, err := os.CreateTemp(dir, ".strand-script-*-"+prog.file)
		if err != nil {
			return ShellResult{}, fmt.Errorf("%s: write script: %w", prog.what, err)
		}
		f.Close()
		script = f.Name()
		defer os.Remove(script)
	}
	if err := os.WriteFile(script, []byte(sh.Script), 0o600); err != nil {
		return ShellResult{}, fmt.Errorf("%s: write script: %w", prog.what, err)
	}
	if u := sh.User; u != nil {
		// The tenant's user owns what the task works on: its working
		// directory, the resources fetched into it and its script.
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(u.UID), int(u.GID))
		})
		if err != nil {
			return ShellResult{}, fmt.Errorf("%s: give the working directory to user %s: %w", prog.what, u.Name, err)
		}
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		return ShellResult{}, fmt.Errorf("%s: stdout pipe: %w", prog.what, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return ShellResult{}, fmt.Errorf("%s: stderr pipe: %w", prog.what, err)
	}
	defer outR.Close()
	defer errR.Close()

	cmd := exec.Command(prog.path, filepath.Base(script))
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = outW // *os.File: the child gets the descriptor, exec copies nothing
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if u := sh.User; u != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
	}
	setParentDeath(cmd.SysProcAttr)
	// The parent-death signal is sent when the starting thread exits: keep
	// this goroutine on it until the program has been waited for.
	defer lockThread()()
	err = cmd.Start()
	// The child holds its own copies of the write ends; ours must go so
	// that the readers see EOF once the script's processes are gone.
	outW.Close()
	errW.Close()
	if err != nil {
		if sh.User != nil {
			return ShellResult{}, fmt.Errorf("%s: start %s as user %s: %w", prog.what, prog.path, sh.User.Name, err)
		}
		return ShellResult{}, fmt.Errorf("%s: start %s: %w", prog.what, prog.path, err)
	}
	pid := cmd.Process.Pid
	stopWatchdog, err := startWatchdog(pid)
	if err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		return ShellResult{}, fmt.Errorf("%s: %w", prog.what, err)
	}
	defer stopWatchdog()

	lw := &lineWriter{w: log}
	outputs := map[string]string{}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		readLines(outR, lw, nil, func(line []byte) {
			for _, m := range setValueRE.FindAllSubmatch(line, -1) {
				outputs[string(m[1])] = string(m[2])
			}
		})
	}()
	go func() {
		defer readers.Done()
		readLines(errR, lw, []byte(StderrPrefix), nil)
	}()
	readersDone := make(chan struct{})
	go func() {
		readers.Wait()
		close(readersDone)
	}()

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var (
		waitErr error
		stopped bool
	)
	select {
	case waitErr = <-waited:
		// The program is done; background children may still hold the
		// pipes.
		timer := time.NewTimer(pipeGrace)
		select {
		case <-readersDone:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		killGroup(pid, grace, nil)
	case <-ctx.Done():
		stopped = true
		waitErr = killGroup(pid, grace, waited)
	}

	// Every process of the group is gone, so the pipes close unless a
	// process left the group; do not wait for such a one for long.
	timer := time.NewTimer(pipeGrace)
	select {
	case <-readersDone:
	case <-timer.C:
		past := time.Now()
		outR.SetReadDeadline(past)
		errR.SetReadDeadline(past)
		<-readersDone
	}
	timer.Stop()

	res := ShellResult{ExitCode: exitCode(cmd.ProcessState), Outputs: outputs, PID: pid}
	if stopped {
		return res, fmt.Errorf("%s killed (process group %d, exit code %d): %w", prog.what, pid, res.ExitCode, context.Cause(ctx))
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return res, fmt.Errorf("%s: wait for %s: %w", prog.what, prog.path, waitErr)
	}
	if res.ExitCode != 0 {
		xe := &ExitError{Code: res.ExitCode, what: prog.what, program: filepath.Base(prog.path)}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			xe.Signal = ws.Signal()
		}
		return res, xe
	}
	if lw.err != nil {
		return res, fmt.Errorf("%s: write log: %w", prog.what, lw.err)
	}
	return res, nil
}

// startWatchdog starts the process that kills process group pgid when the
// worker dies, however it dies: a bash, in a process group of its own so
// that signals to the worker's group pass it by, reading a pipe whose
// write end only the worker holds. The worker's death closes the pipe, and
// on that end of file the watchdog SIGKILLs the group, the script's
// children included (the parent-death signal reaches bash alone). The
// returned stop ends the watchdog without its killing anything; call it
// once the group is gone.
func startWatchdog(pgid int) (stop func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	cmd := exec.Command("bash", "-c", `trap '' HUP INT QUIT TERM; read -r line || kill -KILL -- "-$1"`,
		"strand-shell-watchdog", strconv.Itoa(pgid))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	return func() {
		w.Write([]byte("done\n"))
		w.Close()
		cmd.Wait()
	}, nil
}

// shellEnv is the worker's environment, then u's HOME, USER and LOGNAME
// when u is set, plus add, whose names are sorted.
func shellEnv(u *User, add map[string]string) ([]string, error) {
	names := make([]string, 0, len(add))
	for k := range add {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("bad environment variable name %q", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	env := os.Environ()
	if u != nil {
		env = append(env, "HOME="+u.Home, "USER="+u.Name, "LOGNAME="+u.Name)
	}
	for _, k := range names {
		env = append(env, k+"="+add[k])
	}
	return env, nil
}

// killGroup ends the process group pgid: SIGTERM, then SIGKILL when a
// live member is left after grace (and in any case to whatever the group
// still holds then, zombies or processes /proc did not show). With waited
// non-nil (bash not yet waited for) it also waits for bash and returns what
// Wait returned.
func killGroup(pgid int, grace time.Duration, waited <-chan error) error {
	if syscall.Kill(-pgid, syscall.SIGTERM) == syscall.ESRCH && waited == nil {
		return nil
	}
	var waitErr error
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for waited != nil || groupAlive(pgid) {
		select {
		case waitErr = <-waited:
			waited = nil
		case <-tick.C:
		case <-deadline.C:
			break wait
		}
	}
	if syscall.Kill(-pgid, 0) == nil {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if waited != nil {
		waitErr = <-waited
	}
	return waitErr
}

// groupAlive tells whether process group pgid has a member that is not a
// zombie. Orphans of the script are reparented to init (or a subreaper),
// which may be slow to reap them, or never do so in a container whose init
// does not; a zombie holds nothing, so it does not count. Without /proc a
// zombie counts as alive.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		name := e.Name()
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		state, pgrp, ok := procStat(b)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the state and process group of /proc/PID/stat's text:
// "PID (COMM) STATE PPID PGRP ...", where COMM may hold spaces and
// parentheses.
func procStat(b []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pgrp, true
}

// exitCode is bash's exit code, 128+N when signal N ended it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lineWriter writes whole lines to w, one writer at a time, and keeps the
// first error.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// writeLine writes prefix and p in one write, adding a newline when p
// has none.
func (l *lineWriter) writeLine(prefix, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if len(prefix) > 0 {
		p = append(prefix[:len(prefix):len(prefix)], p...)
	}
	if len(p) == 0 || p[len(p)-1] != '\n' {
		p = append(p[:len(p):len(p)], '\n')
	}
	if _, err := l.w.Write(p); err != nil {
		l.err = err
	}
}

// readLines copies r to lw line by line until EOF or an error, each line
// after prefix. A line longer than the reader's buffer is written in
// pieces (each after prefix). With line non-nil, it is called with each
// whole line (its first maxOutputLine bytes).
func readLines(r io.Reader, lw *lineWriter, prefix []byte, line func([]byte)) {
	br := bufio.NewReaderSize(r, readChunk)
	var cur bytes.Buffer
	for {
		chunk, err := br.ReadSlice('\n')
		partial := err == bufio.ErrBufferFull
		if len(chunk) > 0 {
			lw.writeLine(prefix, chunk)
			if line != nil {
				if room := maxOutputLine - cur.Len(); room > 0 {
					cur.Write(chunk[:min(room, len(chunk))])
				}
			}
		}
		if line != nil && !partial && cur.Len() > 0 {
			line(bytes.TrimRight(cur.Bytes(), "\r\n"))
			cur.Reset()
		}
		if err != nil && !partial {
			return
		}
	}
}
