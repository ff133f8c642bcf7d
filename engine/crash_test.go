package engine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/postgres"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// The crash test runs workflows in a child process (this test binary, in
// TestCrashChild) and kills it with SIGKILL at random moments, restarting
// it each time; the last child runs until every workflow completed. Then
// the parent checks what the store holds.
//
// A kill's moment is a random point of the work, not of the clock: each
// child is killed once the step side effects written so far reach a random
// count within its share of the work (and after it wrote one of its own),
// so every kill lands while steps, timers and workflow tasks are in
// flight, however slow the machine (a kill at a random 300 ms to 1 s after
// the child's start could land before a loaded machine had opened the
// engine). 200 workflows are plenty for that: 32 are started at once and
// 16 steps run at once, so dozens of runs are mid-flight at every kill.

const (
	crashWorkflows = 200
	crashSteps     = 4
	crashKills     = 4
)

// CrashFlow runs crashSteps steps with a short durable sleep in the middle.
func CrashFlow(ctx workflow.Context, id string) (int, error) {
	n := 0
	for i := range crashSteps {
		if i == crashSteps/2 {
			if err := workflow.Sleep(ctx, 50*time.Millisecond); err != nil {
				return 0, err
			}
		}
		v, err := workflow.ExecuteStepByName[int](ctx, workflow.StepOptions{}, "effect", fmt.Sprintf("%s/%d", id, i)).Get(ctx)
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

// openCrashStore opens the store that getenv names (os.Getenv in the
// child; the parent, whose subtests run side by side, passes its own).
func openCrashStore(ctx context.Context, getenv func(string) string) (store.Store, error) {
	var st store.Store
	var err error
	if u := getenv("STRAND_CRASH_PG"); u != "" {
		st, err = postgres.Open(ctx, postgres.Options{URL: u})
	} else {
		st, err = sqlite.Open(ctx, sqlite.Options{Path: getenv("STRAND_CRASH_DB")})
	}
	if err != nil {
		return nil, err
	}
	if _, _, err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// TestCrashChild is the child process; it does nothing unless the parent
// started it.
func TestCrashChild(t *testing.T) {
	if os.Getenv("STRAND_CRASH_CHILD") == "" {
		t.Skip("run by TestCrashRecovery")
	}
	ctx := context.Background()
	st, err := openCrashStore(ctx, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	// Its worker died with it: the attempts it ran are offered again at
	// once, without waiting for their start-to-close timeouts.
	eng, err := engine.Open(ctx, st, engine.Options{Logger: logger(), RedeliveryDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	effects, err := os.OpenFile(os.Getenv("STRAND_CRASH_EFFECTS"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	w := worker.New(eng, worker.Options{Logger: logger(), WorkflowPollers: 16, StepPollers: 4, MaxConcurrentSteps: 16})
	worker.RegisterWorkflow(w, CrashFlow)
	worker.RegisterStepNamed(w, "effect", func(ctx context.Context, key string) (int, error) {
		time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if _, err := effects.WriteString(key + "\n"); err != nil {
			return 0, err
		}
		return 1, effects.Sync()
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := client.New(eng, client.Options{})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range crashWorkflows {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id := fmt.Sprintf("crash-%d", i)
			_, err := client.Start(ctx, c, CrashFlow, id, client.StartOptions{ID: id, IDReuse: client.RejectDuplicate})
			if err != nil && !errors.Is(err, api.ErrAlreadyStarted) {
				t.Errorf("start %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	fmt.Println("STARTED")
	for i := range crashWorkflows {
		id := fmt.Sprintf("crash-%d", i)
		if _, err := client.GetRun[int](c, id, "").Get(ctx); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	fmt.Println("ALL COMPLETED")
	w.Stop(context.Background())
	eng.Close()
	st.Close()
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	// The backends side by side: each child spends much of its life
	// starting up and its steps sleeping, so together they take little
	// more time than one.
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		crashRecovery(t, []string{"STRAND_CRASH_DB=" + filepath.Join(t.TempDir(), "crash.db")})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		base := testdb.PostgresURL(t)
		crashRecovery(t, []string{"STRAND_CRASH_PG=" + testdb.WithSearchPath(t, base, testdb.NewSchema(t, base))})
	})
}

func crashRecovery(t *testing.T, env []string) {
	effects := filepath.Join(t.TempDir(), "effects")
	env = append(env, "STRAND_CRASH_CHILD=1", "STRAND_CRASH_EFFECTS="+effects)
	child := func() (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v", "-test.timeout=10m")
		cmd.Env = append(os.Environ(), env...)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, out
	}
	// Kill i comes within the i-th of crashKills+1 equal shares of the
	// crashWorkflows*crashSteps side effects at least written.
	share := crashWorkflows * crashSteps / (crashKills + 1)
kills:
	for i := range crashKills {
		before := lines(effects)
		target := max(i*share+1+rand.IntN(share), before+1)
		cmd, out := child()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		start := time.Now()
		for n := before; n < target; n = lines(effects) {
			select {
			case err := <-exited:
				if err == nil && strings.Contains(out.String(), "ALL COMPLETED") {
					// Only when this goroutine was kept from looking for
					// long: the work ended before the kill's share of it.
					t.Logf("child %d completed every workflow before its kill (at %d step side effects)", i+1, lines(effects))
					break kills
				}
				t.Fatalf("child %d exited (%v) before its kill, with %d of the %d step side effects awaited written\n%s", i+1, err, n, target, out.String())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Since(start) > 2*time.Minute {
				cmd.Process.Kill()
				<-exited
				t.Fatalf("child %d: %d step side effects written after 2 minutes; its kill awaited %d\n%s", i+1, lines(effects), target, out.String())
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			<-exited
			if errors.Is(err, os.ErrProcessDone) && strings.Contains(out.String(), "ALL COMPLETED") {
				t.Logf("child %d completed every workflow before its kill (at %d step side effects)", i+1, lines(effects))
				break
			}
			t.Fatalf("kill child %d: %v\n%s", i+1, err, out.String())
		}
		<-exited
		t.Logf("kill %d after %s, at %d step side effects (awaited %d)", i+1, time.Since(start).Round(time.Millisecond), lines(effects), target)
	}
	cmd, out := child()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "ALL COMPLETED") {
			t.Fatalf("last child: %v\n%s", err, out.String())
		}
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		<-done // its output is whole, and no longer written
		t.Fatalf("last child did not finish within 5 minutes\n%s", out.String())
	}

	// Check what the store holds, with a fresh engine.
	ctx := context.Background()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	st, err := openCrashStore(ctx, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := engine.Open(ctx, st, engine.Options{Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := client.New(eng, client.Options{})
	seen := map[string]int{}
	f, err := os.Open(effects)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		seen[sc.Text()]++
	}
	f.Close()
	// Each workflow is checked on its own, 16 at a time.
	var mu sync.Mutex
	reexecuted, recovered := 0, 0
	if err := forEach(crashWorkflows, func(i int) error {
		id := fmt.Sprintf("crash-%d", i)
		d, err := c.Describe(ctx, id, "")
		if err != nil {
			return fmt.Errorf("%s: %v", id, err)
		}
		if d.Status != store.StatusCompleted {
			return fmt.Errorf("%s: status %s", id, d.Status)
		}
		// Reading the state verifies its checksum; reading history checks
		// every block's ids.
		shard, err := shardOfErr(st, id)
		if err != nil {
			return err
		}
		x, err := st.GetExecution(ctx, shard, store.RunKey{Namespace: "default", WorkflowID: id, RunID: d.RunID})
		if err != nil {
			return fmt.Errorf("%s: %v", id, err)
		}
		if x.NextEventID != d.NextEventID {
			return fmt.Errorf("%s: next event id %d, described %d", id, x.NextEventID, d.NextEventID)
		}
		evs, err := c.AllHistory(ctx, id, "")
		if err != nil {
			return fmt.Errorf("%s: %v", id, err)
		}
		completed := map[int64]int{}
		for j, ev := range evs {
			if ev.ID != int64(j+1) {
				return fmt.Errorf("%s: event %d has id %d", id, j+1, ev.ID)
			}
			if ev.Type == api.EventStepCompleted {
				completed[ev.Seq]++
			}
		}
		if int64(len(evs)) != x.NextEventID-1 {
			return fmt.Errorf("%s: %d events, next event id %d", id, len(evs), x.NextEventID)
		}
		if count(evs, api.EventWorkflowCompleted) != 1 || len(completed) != crashSteps {
			return fmt.Errorf("%s: %d completions, %d steps completed", id, count(evs, api.EventWorkflowCompleted), len(completed))
		}
		for seq, n := range completed {
			if n != 1 {
				return fmt.Errorf("%s: step #%d completed %d times", id, seq, n)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if count(evs, api.EventRunRecovered) > 0 {
			recovered++
		}
		for s := range crashSteps {
			n := seen[fmt.Sprintf("%s/%d", id, s)]
			if n == 0 {
				return fmt.Errorf("%s: step %d's side effect never happened", id, s)
			}
			reexecuted += n - 1
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d workflows completed across %d kills; %d step side effects ran more than once (at-least-once); %d runs carry a recovery event",
		crashWorkflows, crashKills, reexecuted, recovered)
	if recovered != 0 {
		t.Errorf("%d runs carry a recovery event, though only the same engine restarted (a restart writes none)", recovered)
	}
}

func lines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

// shardOfErr finds the shard holding a workflow by asking each.
func shardOfErr(st store.Store, id string) (int32, error) {
	for s := range int32(4) {
		if _, err := st.GetCurrentExecution(context.Background(), s, "default", id); err == nil {
			return s, nil
		}
	}
	return 0, fmt.Errorf("%s: no shard holds it", id)
}
