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

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"", ""},
		{"a", "b"},
		{"order-", "order."},
		{"a\U0010FFFF", "b"},
		{"\U0010FFFF\U0010FFFF", ""},
		{"é", "ê"},
		{"\uD7FF", "\uE000"},
		{"x\u007F", "x\u0080"},
	} {
		if got := PrefixEnd(c.prefix); got != c.want {
			t.Errorf("PrefixEnd(%+q) = %+q, want %+q", c.prefix, got, c.want)
		}
	}
	// Every string that starts with a prefix is in [prefix, end).
	for _, p := range []string{"a", "é", "a\U0010FFFF", "\uD7FF"} {
		end := PrefixEnd(p)
		for _, suffix := range []string{"", "\x00", "z", "\U0010FFFF", "\U0010FFFF\U0010FFFF"} {
			if s := p + suffix; s < p || end != "" && s >= end {
				t.Errorf("%+q is outside [%+q, %+q)", s, p, end)
			}
		}
	}
}
