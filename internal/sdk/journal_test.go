package sdk

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
)

// TestResumeFromJournal: an instance resumed from another's journal is in
// the same state: it issues the same commands for the next task, keeps its
// side effects' values without running them again, and sees the time of
// the tasks it replays. A journal taken after a replay of history serves
// as well.
func TestResumeFromJournal(t *testing.T) {
	calls := 0
	wf := func(ctx Context, _ []byte) ([]byte, error) {
		token := SideEffect(ctx, func() int { calls++; return 40 + calls })
		first := Now(ctx)
		v, _ := GetSignalChannel[string](ctx, "go").Receive(ctx)
		out, err := ExecuteStep[string](ctx, StepOptions{}, "echo", fmt.Sprintf("%d %s %d", token, v, Now(ctx).Sub(first)/time.Second)).Get(ctx)
		if err != nil {
			return nil, err
		}
		return Encode(out)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sig := func(id int64) api.Event {
		return api.Event{ID: id, Type: api.EventSignalReceived, Name: "go", Payload: api.Payload{Data: []byte(`"now"`)}}
	}
	live := NewInstance(Info{RunID: "r"}, wf, nil)
	defer live.Close()
	if cmds, err := live.Execute([]api.Event{started(1)}, t0); err != nil || types(cmds) != "SideEffect" {
		t.Fatalf("first task: %s %v", types(cmds), err)
	}
	data, ok := live.Journal()
	if !ok {
		t.Fatal("no journal")
	}
	resumed, err := Resume(Info{RunID: "r"}, wf, nil, data)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	next := []api.Event{sig(4)}
	want, err := live.Execute(next, t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got, err := resumed.Execute(next, t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if types(got) != "ScheduleStep" || string(got[0].Payload) != `"41 now 3"` || string(want[0].Payload) != string(got[0].Payload) {
		t.Fatalf("resumed instance issued %s %s, the live one %s %s", types(got), got[0].Payload, types(want), want[0].Payload)
	}
	if calls != 1 {
		t.Fatalf("side effect ran %d times, want once", calls)
	}

	// From history: the replayed instance's journal resumes as well.
	history := []api.Event{started(1), {ID: 2, Type: api.EventWorkflowTaskCompleted, Time: t0},
		{ID: 3, Type: api.EventSideEffect, Seq: 1, Payload: api.Payload{Data: []byte("41")}}, sig(4)}
	replayed := NewInstance(Info{RunID: "r"}, wf, nil)
	defer replayed.Close()
	if err := replayed.Replay(history); err != nil {
		t.Fatal(err)
	}
	data, _ = replayed.Journal()
	again, err := Resume(Info{RunID: "r"}, wf, nil, data)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, err = again.Execute(nil, t0.Add(3*time.Second))
	if err != nil || types(got) != "ScheduleStep" || string(got[0].Payload) != `"41 now 3"` {
		t.Fatalf("resumed from a replay's journal: %s %v", types(got), err)
	}
	if calls != 1 {
		t.Fatalf("side effect ran %d times, want once", calls)
	}
}

// TestJournalBound: an instance whose inputs outgrow the journal's bound
// keeps none, and says so.
func TestJournalBound(t *testing.T) {
	inst := NewInstance(Info{RunID: "r"}, race, nil)
	defer inst.Close()
	big := api.Event{ID: 2, Type: api.EventSignalReceived, Name: "other", Payload: api.Payload{Data: []byte(`"` + strings.Repeat("x", maxJournal) + `"`)}}
	if _, err := inst.Execute([]api.Event{started(1), big}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok := inst.Journal(); ok {
		t.Fatal("a journal past its bound")
	}
	if inst.Footprint() > 64<<10 {
		t.Fatalf("footprint %d counts a journal it does not keep", inst.Footprint())
	}
}

// TestJournalKeepsWhatReplayReads: a journal leaves out what replay does
// not read (the start's request id and memo, identities), and the resumed
// instance still knows its queue.
func TestJournalKeepsWhatReplayReads(t *testing.T) {
	inst := NewInstance(Info{RunID: "r"}, race, nil)
	defer inst.Close()
	start := started(1)
	start.Identity = "caller-identity"
	start.Start = &api.StartAttrs{Queue: "orders", RequestID: "request-id-123", Memo: map[string]api.Value{"note": api.Value(`"memo-value"`)}}
	if _, err := inst.Execute([]api.Event{start}, time.Now()); err != nil {
		t.Fatal(err)
	}
	data, ok := inst.Journal()
	if !ok {
		t.Fatal("no journal")
	}
	for _, left := range []string{"request-id-123", `"note"`, "caller-identity"} {
		if strings.Contains(string(data), left) {
			t.Errorf("journal holds %q: %s", left, data)
		}
	}
	resumed, err := Resume(Info{RunID: "r"}, race, nil, data)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	if q := resumed.Info().Queue; q != "orders" {
		t.Errorf("resumed instance's queue %q, want orders", q)
	}
}
