package store

import (
	"encoding/json"
	"testing"
)

func TestRunStatusJSON(t *testing.T) {
	b, err := json.Marshal(struct{ S RunStatus }{StatusCompleted})
	if err != nil || string(b) != `{"S":"completed"}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	for in, want := range map[string]RunStatus{`"timed_out"`: StatusTimedOut, `3`: StatusFailed} {
		var s RunStatus
		if err := json.Unmarshal([]byte(in), &s); err != nil || s != want {
			t.Errorf("%s: %v %v", in, s, err)
		}
	}
	var s RunStatus
	if err := json.Unmarshal([]byte(`"sleeping"`), &s); err == nil {
		t.Error("unknown name accepted")
	}
}
