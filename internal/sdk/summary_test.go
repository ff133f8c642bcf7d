package sdk

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/strandhq/strand/api"
)

// TestStepSummary: a step's summary goes with its command, cut to what the
// engine takes, and its failure reads as the summary, without the step's
// name and sequence number.
func TestStepSummary(t *testing.T) {
	long := "state validate of instance credit/" + strings.Repeat("é", 1200) + "\x00"
	wf := func(ctx Context, _ []byte) ([]byte, error) {
		_, err := ExecuteStep[string](ctx, StepOptions{Summary: long}, "strand.sm.exec/credit", nil).Get(ctx)
		return nil, err
	}
	inst := NewInstance(Info{RunID: "r1"}, wf, nil)
	defer inst.Close()
	now := time.Now()
	cmds, err := inst.Execute([]api.Event{started(1)}, now)
	if err != nil || len(cmds) != 1 || cmds[0].Step == nil {
		t.Fatalf("commands %+v, %v", cmds, err)
	}
	summary := cmds[0].Step.Summary
	if n := utf8.RuneCountInString(summary); n != maxSummary || strings.Contains(summary, "\x00") || !strings.HasPrefix(summary, "state validate of instance credit/é") {
		t.Fatalf("summary of %d characters: %.60q", n, summary)
	}
	cause := &api.Failure{Kind: api.KindApplication, Type: "error", Message: "insufficient funds"}
	cmds, err = inst.Execute([]api.Event{{ID: 2, Type: api.EventWorkflowTaskCompleted}, {ID: 3, Type: api.EventStepScheduled, Seq: 1, Name: "strand.sm.exec/credit"},
		{ID: 4, Type: api.EventStepFailed, Seq: 1, Failure: &api.Failure{Kind: api.KindStep, Message: "insufficient funds", Step: "strand.sm.exec/credit", Seq: 1, Attempt: 1, Cause: cause}}}, now)
	if err != nil || len(cmds) != 1 || cmds[0].Type != api.CommandFail {
		t.Fatalf("commands %+v, %v", cmds, err)
	}
	f := cmds[0].Failure
	if want := summary + " failed after 1 attempt: insufficient funds"; f.Message != want || f.Summary != summary ||
		strings.Contains(f.Message, "strand.sm.exec") || strings.Contains(f.Message, "#") {
		t.Fatalf("failure %.80q (summary %.40q); want %.80q", f.Message, f.Summary, want)
	}
}
