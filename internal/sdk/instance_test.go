package sdk

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
)

// race waits for a timer or a "go" signal, whichever comes first, then
// runs a step.
func race(ctx Context, _ []byte) ([]byte, error) {
	timer := NewTimer(ctx, time.Hour)
	sig := GetSignalChannel[string](ctx, "go")
	var why string
	sel := NewSelector(ctx)
	sel.AddFuture(timer, func() { why = "timer" })
	AddReceive(sel, sig, func(ch ReceiveChannel[string]) { v, _ := ch.Receive(ctx); why = "signal " + v })
	sel.Select(ctx)
	out, err := ExecuteStep[string](ctx, StepOptions{}, "echo", why).Get(ctx)
	if err != nil {
		return nil, err
	}
	return Encode(out)
}

func started(id int64) api.Event {
	return api.Event{ID: id, Type: api.EventWorkflowStarted, Payload: api.Payload{Data: []byte("null")}}
}

func types(cmds []api.Command) string {
	var s []string
	for _, c := range cmds {
		s = append(s, string(c.Type))
	}
	return strings.Join(s, ",")
}

func TestExecuteAndReplay(t *testing.T) {
	now := time.Now()
	inst := NewInstance(Info{RunID: "r1"}, race, nil)
	defer inst.Close()
	// The signal arrives with the start: the selector takes it, the timer
	// is canceled.
	sig := api.Event{ID: 2, Type: api.EventSignalReceived, Name: "go", Payload: api.Payload{Data: []byte(`"now"`)}}
	cmds, err := inst.Execute([]api.Event{started(1), sig}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := types(cmds); got != "StartTimer,ScheduleStep" {
		t.Fatalf("commands %s", got)
	}
	if string(cmds[1].Payload) != `"signal now"` {
		t.Fatalf("step input %s", cmds[1].Payload)
	}
	// History as the engine records it.
	history := []api.Event{started(1), sig, {ID: 3, Type: api.EventWorkflowTaskCompleted},
		{ID: 4, Type: api.EventTimerStarted, Seq: 1}, {ID: 5, Type: api.EventStepScheduled, Seq: 2, Name: "echo"}}
	replayed := NewInstance(Info{RunID: "r1"}, race, nil)
	defer replayed.Close()
	if err := replayed.Replay(history); err != nil {
		t.Fatal(err)
	}
	if replayed.LastEventID != 5 {
		t.Fatalf("last event %d", replayed.LastEventID)
	}
	// The step completes: the workflow completes.
	cmds, err = replayed.Execute([]api.Event{{ID: 6, Type: api.EventStepCompleted, Seq: 2, Payload: api.Payload{Data: []byte(`"ok"`)}}}, now)
	if err != nil || types(cmds) != "CompleteWorkflow" || string(cmds[0].Payload) != `"ok"` {
		t.Fatalf("commands %s %v", types(cmds), err)
	}

	// History that the code does not produce: a non-determinism error
	// naming the difference.
	changed := append([]api.Event(nil), history...)
	changed[4].Name = "other"
	bad := NewInstance(Info{RunID: "r1"}, race, nil)
	defer bad.Close()
	err = bad.Replay(changed)
	var nd *api.NonDeterminismError
	if !errors.As(err, &nd) || !strings.Contains(nd.Message, `"other"`) || !strings.Contains(nd.Message, `"echo"`) {
		t.Fatalf("got %v, want a non-determinism error naming both steps", err)
	}
}

func TestSideEffectsAreRecordedOnce(t *testing.T) {
	calls := 0
	wf := func(ctx Context, _ []byte) ([]byte, error) {
		v := SideEffect(ctx, func() int { calls++; return 42 })
		return Encode(v)
	}
	inst := NewInstance(Info{RunID: "r"}, wf, nil)
	defer inst.Close()
	cmds, err := inst.Execute([]api.Event{started(1)}, time.Now())
	if err != nil || types(cmds) != "SideEffect,CompleteWorkflow" {
		t.Fatalf("%s %v", types(cmds), err)
	}
	history := []api.Event{started(1), {ID: 2, Type: api.EventWorkflowTaskCompleted},
		{ID: 3, Type: api.EventSideEffect, Seq: 1, Payload: api.Payload{Data: []byte("7")}},
		{ID: 4, Type: api.EventWorkflowCompleted}}
	again := NewInstance(Info{RunID: "r"}, wf, nil)
	defer again.Close()
	if err := again.Replay(history); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("side effect ran %d times, want once", calls)
	}
}
