package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/store"
)

// The restart test's load and kill schedule.
const (
	restartWorkflows = 200
	restartKills     = 6
)

// TestServerRestarts kills `strand server` with SIGKILL again and again,
// restarting it on the same address each time, while two worker processes
// (internal/testworker) run workflows of four steps, a durable sleep and a
// signal, and the test itself starts and signals them. Then it checks that
// every acknowledged workflow completed with a sound history, that no
// workflow task failed, that a restart wrote no RunRecovered event, and
// that a step ran twice only where it was running when the server died.
func TestServerRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	// Its servers, ports and store are its own: it runs beside the others.
	t.Parallel()
	bin := binaries(t, "strand", "testworker")
	t.Run("sqlite", func(t *testing.T) {
		restartTest(t, bin, "sqlite://"+filepath.Join(t.TempDir(), "strand.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		base := testdb.PostgresURL(t)
		restartTest(t, bin, testdb.WithSearchPath(t, base, testdb.NewSchema(t, base)))
	})
}

// restartingServer is a `strand server` process that the test kills and restarts.
type restartingServer struct {
	t        *testing.T
	bin, url string
	args     []string
	log      *os.File
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
}

func (s *restartingServer) start() {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "strand"), s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	waitReady(s.t, "strand server", s.url, done, s.log.Name())
}

// kill ends the server with SIGKILL and waits until it is gone.
func (s *restartingServer) kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

func (s *restartingServer) stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// serverLog is a file in dir for a server's output, closed when the test
// ends (after the server stopped).
func serverLog(t *testing.T, dir string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func restartTest(t *testing.T, bin, storeURL string) {
	dir := t.TempDir()
	addr := freePort(t)
	logf := serverLog(t, dir)
	srv := &restartingServer{t: t, bin: bin, url: "http://" + addr, log: logf,
		args: []string{"server", "--store", storeURL, "--listen", addr, "--poll-wait", "5s", "--drain", "1s"}}
	srv.start()
	defer srv.stop()

	effects := filepath.Join(dir, "effects")
	for i := range 2 {
		w, _ := process(t, "worker started", filepath.Join(bin, "testworker"), "--server", srv.url, "--effects", effects,
			"--identity", fmt.Sprintf("restart-worker-%d", i))
		_ = w // stopped by process's cleanup
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	svc := remote.New(srv.url, nil)
	// retry calls f until it succeeds: the server may be down for a moment.
	retry := func(what string, f func(ctx context.Context) error) {
		for ctx.Err() == nil {
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			err := f(cctx)
			ccancel()
			if err == nil {
				return
			}
			if !errors.Is(err, api.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: %v", what, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("%s: %v", what, ctx.Err())
	}

	// The load: every workflow is started and signaled with a request id,
	// so that a call retried after a lost answer acts once.
	// The starts are spread over the kill schedule.
	var load sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range restartWorkflows {
		id := fmt.Sprintf("chores-%d", i)
		load.Go(func() {
			time.Sleep(time.Duration(i) * 40 * time.Millisecond)
			sem <- struct{}{}
			defer func() { <-sem }()
			retry("start "+id, func(ctx context.Context) error {
				_, err := svc.StartWorkflow(ctx, api.StartRequest{WorkflowID: id, WorkflowType: "Chores", Input: []byte(strconv.Quote(id)),
					RequestID: "start-" + id, IDReuse: api.RejectDuplicate})
				return err
			})
			retry("signal "+id, func(ctx context.Context) error {
				return svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: api.RunRef{WorkflowID: id}, Name: "go", Input: []byte(`"now"`),
					RequestID: "signal-" + id})
			})
		})
	}

	// The kill schedule: the server lives 0.5 to 2 s after it is ready,
	// then dies and is restarted at once.
	var kills []int64
	for range restartKills {
		time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		kills = append(kills, time.Now().UnixNano())
		srv.kill()
		srv.start()
	}
	load.Wait()

	// Every workflow completes.
	var waits sync.WaitGroup
	for i := range restartWorkflows {
		id := fmt.Sprintf("chores-%d", i)
		waits.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			retry("wait for "+id, func(ctx context.Context) error {
				res, err := svc.WaitResult(ctx, api.ResultRequest{RunRef: api.RunRef{WorkflowID: id}, FollowRuns: true})
				if err == nil && res.Status != store.StatusCompleted {
					t.Errorf("%s closed %s: %v", id, res.Status, res.Failure)
				}
				return err
			})
		})
	}
	waits.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Histories: no gap, every step completed once, the signal received
	// once, no workflow task failed, no recovery event from a restart.
	var recoveredEvents, failedTasks int
	for i := range restartWorkflows {
		id := fmt.Sprintf("chores-%d", i)
		var evs []api.Event
		var token []byte
		for {
			var page api.HistoryPage
			retry("history of "+id, func(ctx context.Context) error {
				var err error
				page, err = svc.GetHistory(ctx, api.HistoryRequest{RunRef: api.RunRef{WorkflowID: id}, PageToken: token})
				return err
			})
			evs = append(evs, page.Events...)
			if token = page.NextPageToken; len(token) == 0 {
				break
			}
		}
		completed := map[int64]int{}
		signals := 0
		for j, ev := range evs {
			if ev.ID != int64(j+1) {
				t.Fatalf("%s: event %d has id %d", id, j+1, ev.ID)
			}
			switch ev.Type {
			case api.EventStepCompleted:
				completed[ev.Seq]++
			case api.EventSignalReceived:
				signals++
			case api.EventWorkflowTaskFailed:
				failedTasks++
				t.Errorf("%s: workflow task failed: %v", id, ev.Failure)
			case api.EventRunRecovered:
				recoveredEvents++
			}
		}
		if len(completed) != 4 || signals != 1 {
			t.Errorf("%s: %d steps completed, %d signals received", id, len(completed), signals)
		}
		for seq, n := range completed {
			if n != 1 {
				t.Errorf("%s: step #%d completed %d times", id, seq, n)
			}
		}
	}

	// Side effects: a step ran more than once only if it was running when
	// the server was killed (it started before a kill and ended after it).
	runs := readEffects(t, effects)
	duplicates, redelivered := 0, 0
	for key, rs := range runs {
		if !slices.ContainsFunc(rs, stepRun.ended) {
			t.Errorf("step %s never ended (the workers live throughout): %+v", key, rs)
			continue
		}
		for _, r := range rs {
			if r.redelivered {
				redelivered++
			}
		}
		for _, r := range rs[1:] {
			duplicates++
			if r.attempt == rs[0].attempt && !r.redelivered {
				t.Errorf("step %s ran attempt %d again without saying it was redelivered", key, r.attempt)
			}
		}
		if len(rs) > 1 && !rs[0].spans(kills) {
			t.Errorf("step %s ran %d times, though its first run (%s to %s) was not running at any kill", key, len(rs),
				time.Unix(0, rs[0].start).Format("15:04:05.000"), time.Unix(0, rs[0].end).Format("15:04:05.000"))
		}
	}
	if len(runs) != restartWorkflows*4 {
		t.Errorf("%d steps ran, want %d", len(runs), restartWorkflows*4)
	}
	if recoveredEvents != 0 {
		t.Errorf("%d RunRecovered events after restarts of one node (a restart writes none)", recoveredEvents)
	}
	t.Logf("%d workflows across %d kills: %d duplicate step side effects, %d step runs redelivered, %d RunRecovered events, %d failed workflow tasks",
		restartWorkflows, len(kills), duplicates, redelivered, recoveredEvents, failedTasks)
}

// stepRun is one run of the test worker's Chore step, as its effects
// file tells it.
type stepRun struct {
	start, end  int64
	attempt     int
	redelivered bool
}

func (r stepRun) ended() bool { return r.end != 0 }

// spans reports whether the run was going on at one of the kills.
func (r stepRun) spans(kills []int64) bool {
	return slices.ContainsFunc(kills, func(k int64) bool { return r.start <= k && (r.end == 0 || k <= r.end) })
}

// readEffects reads the runs of each step from the test worker's effects
// file: "start KEY ATTEMPT REDELIVERED UNIXNANO" and "end KEY UNIXNANO",
// in order for each key (a step's runs never overlap in this test but
// the last, whose end a killed worker may not have written).
func readEffects(t *testing.T, path string) map[string][]stepRun {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs := map[string][]stepRun{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 5 && fields[0] == "start":
			attempt, _ := strconv.Atoi(fields[2])
			at, _ := strconv.ParseInt(fields[4], 10, 64)
			runs[fields[1]] = append(runs[fields[1]], stepRun{start: at, attempt: attempt, redelivered: fields[3] == "true"})
		case len(fields) == 3 && fields[0] == "end":
			at, _ := strconv.ParseInt(fields[2], 10, 64)
			rs := runs[fields[1]]
			for i := range rs {
				if rs[i].end == 0 {
					rs[i].end = at
					break
				}
			}
		default:
			t.Fatalf("effects: bad line %q", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return runs
}
