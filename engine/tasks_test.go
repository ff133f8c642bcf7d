package engine

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

func TestBackoffDelay(t *testing.T) {
	p := &api.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Second}
	for attempt, want := range map[int32]time.Duration{2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second, 5: 5 * time.Second, 40: 5 * time.Second} {
		if got := backoffDelay(p, attempt); got != want {
			t.Errorf("attempt %d: %s, want %s", attempt, got, want)
		}
	}
	if got := backoffDelay(nil, 2); got != time.Second {
		t.Errorf("default policy: %s", got)
	}
	if got := backoffDelay(nil, 60); got != 100*time.Second {
		t.Errorf("default cap: %s", got)
	}
}

func TestRetryable(t *testing.T) {
	now := time.Now()
	info := store.StepInfo{Attempt: 2, ScheduledTime: now, Retry: &store.RetryPolicy{MaximumAttempts: 3, NonRetryableTypes: []string{"Fatal"}}}
	cases := []struct {
		name string
		info store.StepInfo
		f    api.Failure
		want bool
	}{
		{"plain", info, api.Failure{Type: "Oops"}, true},
		{"non-retryable flag", info, api.Failure{Type: "Oops", NonRetryable: true}, false},
		{"non-retryable type", info, api.Failure{Type: "Fatal"}, false},
		{"schedule-to-start", info, api.Failure{Kind: api.KindTimeout, Type: api.TimeoutScheduleToStart}, false},
		{"out of attempts", store.StepInfo{Attempt: 3, Retry: info.Retry}, api.Failure{}, false},
		{"out of time", store.StepInfo{Attempt: 1, ScheduledTime: now, ScheduleToClose: time.Second}, api.Failure{}, false},
		{"listed retryable type", store.StepInfo{Attempt: 1, Retry: &store.RetryPolicy{RetryableTypes: []string{"Busy"}}}, api.Failure{Type: "Busy"}, true},
		{"type not listed retryable", store.StepInfo{Attempt: 1, Retry: &store.RetryPolicy{RetryableTypes: []string{"Busy"}}}, api.Failure{Type: "Oops"}, false},
		{"timeout not listed retryable", store.StepInfo{Attempt: 1, Retry: &store.RetryPolicy{RetryableTypes: []string{"Busy"}}}, api.Failure{Kind: api.KindTimeout, Type: api.TimeoutStartToClose}, false},
	}
	for _, c := range cases {
		if got := retryable(c.info, &c.f, now, 2*time.Second); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAckTracker(t *testing.T) {
	k := func(id int64) store.TaskKey { return store.TaskKey{TaskID: id} }
	a := newAckTracker(k(9))
	level := func(want int64, when string) {
		t.Helper()
		if l := a.level(); l != k(want) {
			t.Fatalf("%s: level %v, want %v", when, l, k(want))
		}
	}
	level(10, "empty")
	a.add(k(10))
	a.add(k(11))
	a.add(k(12))
	a.finish(k(11))
	level(10, "10 open")
	a.finish(k(10))
	level(12, "12 open")
	a.finish(k(12))
	level(13, "all done")

	// A key registered twice is pending until finished twice, whenever the
	// level is asked in between; finishing it a third time, or finishing a
	// key never registered, changes nothing.
	a.add(k(20))
	a.finish(k(20))
	a.add(k(20))
	level(20, "20 registered twice, finished once")
	a.finish(k(20))
	a.finish(k(20))
	a.finish(k(30))
	level(21, "20 finished twice")
	a.add(k(30))
	level(30, "30 finished before it was registered")
	if len(a.counts) != 1 || len(a.pending) != 1 {
		t.Fatalf("bookkeeping left behind: %v, pending %v", a.counts, a.pending)
	}

	// Timer keys order by time, then id; the level is the pending key's
	// instant, whatever the location of the time it was registered with.
	base := time.Date(2026, 11, 27, 12, 0, 0, 500, time.FixedZone("X", 3600))
	tk := func(d time.Duration, id int64) store.TaskKey { return store.TaskKey{FireTime: base.Add(d), TaskID: id} }
	m := newAckTracker(store.TaskKey{FireTime: base.Add(-time.Hour)})
	m.add(tk(time.Second, 1))
	m.add(tk(0, 7))
	m.add(tk(time.Nanosecond, 2))
	if l := m.level(); !l.FireTime.Equal(base) || l.TaskID != 7 {
		t.Fatalf("timer level %v, want %v/7", l, base)
	}
	m.finish(tk(0, 7))
	if l := m.level(); !l.FireTime.Equal(base.Add(time.Nanosecond)) || l.TaskID != 2 {
		t.Fatalf("timer level %v, want %v/2", l, base.Add(time.Nanosecond))
	}
}

func TestValidateCommands(t *testing.T) {
	bad := [][]api.Command{
		{{Type: "Nope", Seq: 1}},
		{{Type: api.CommandScheduleStep, Seq: 0, Name: "x"}},
		{{Type: api.CommandScheduleStep, Seq: 1}},
		{{Type: api.CommandStartTimer, Seq: 1}},
		{{Type: api.CommandComplete}, {Type: api.CommandStartTimer, Seq: 1, Timer: time.Second}},
		{{Type: api.CommandFail}},
		{{Type: api.CommandStartChild, Seq: 1, Name: "W"}},
		{{Type: api.CommandScheduleStep, Seq: 1, Name: "x", Step: &api.StepOptions{Priority: 7}}},
	}
	for i, cmds := range bad {
		if err := validateCommands(cmds); err == nil {
			t.Errorf("case %d: accepted %+v", i, cmds)
		}
	}
	if err := validateCommands([]api.Command{{Type: api.CommandScheduleStep, Seq: 1, Name: "x"}, {Type: api.CommandComplete}}); err != nil {
		t.Fatal(err)
	}
}

// TestTimerLevelWaitsForQueuedTimers: a timer whose transition waits for
// the committer longer than its delay (fire time already past) keeps the
// timer ack level below it until it has its key: a level persisted in
// between passed it, and a new owner of the shard, reading the timers from
// the level, never fired it (TestCluster lost one so on a loaded machine).
func TestTimerLevelWaitsForQueuedTimers(t *testing.T) {
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	s := newShard(&Engine{log: slog.New(slog.DiscardHandler)}, 1)
	s.timerAck = newAckTracker(store.TaskKey{FireTime: base.Add(-time.Hour)})
	s.transferAck = newAckTracker(store.TaskKey{})
	s.timerHorizon = store.TaskKey{FireTime: base.Add(time.Hour)}
	s.nextTaskID, s.taskIDLimit = 1000, 2000 // ids in hand: no store call
	s.ackLevels.Timer = store.TaskKey{FireTime: base.Add(-time.Hour)}
	// A later timer came and fired: the level would move up to it.
	done := store.TaskKey{FireTime: base.Add(30 * time.Second), TaskID: 500}
	s.timerAck.add(done)
	s.timerAck.finish(done)
	fire := base.Add(time.Second) // a past fire time: its transition waited
	p := &part{tasks: []*store.Task{{Category: store.CategoryTimer, Key: store.TaskKey{FireTime: fire}}}}
	s.queueTimers(p, 1)
	b := &store.Batch{}
	s.addAckLevels(b)
	if b.AckLevels == nil || b.AckLevels.Timer.FireTime.After(fire) {
		t.Fatalf("with a timer queued for %s the level is %+v", fire, b.AckLevels)
	}
	s.ackLevels = *b.AckLevels
	if err := s.assignIDs(context.Background(), []*part{p}); err != nil { // the key goes into timerAck
		t.Fatal(err)
	}
	b = &store.Batch{}
	s.addAckLevels(b)
	if b.AckLevels != nil && b.AckLevels.Timer.FireTime.After(fire) {
		t.Fatalf("with the timer keyed (%+v) the level passed it: %+v", p.tasks[0].Key, b.AckLevels)
	}
	s.ackTimer(p.tasks[0].Key) // fired
	b = &store.Batch{}
	s.addAckLevels(b)
	if b.AckLevels == nil || !p.tasks[0].Key.Less(b.AckLevels.Timer) {
		t.Fatalf("with the timer fired the level stays at %+v", b.AckLevels)
	}
}
