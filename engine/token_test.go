package engine

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

func TestTokenRoundTrip(t *testing.T) {
	run := store.RunKey{Namespace: "default", WorkflowID: "order-ü-1", RunID: "0194e2c4-run"}
	for _, wt := range []wtToken{{Run: run, Nonce: 7}, {Run: run, Query: "q-1"}, {Run: run, Nonce: -1 << 62}} {
		var got wtToken
		if err := decodeToken(encodeToken(&wt), &got); err != nil || got != wt {
			t.Errorf("workflow token %+v came back as %+v, %v", wt, got, err)
		}
	}
	for _, st := range []stepToken{{Run: run, Seq: 3, Attempt: 2, Nonce: 99}, {Run: run, Seq: 1 << 40, Attempt: 1<<31 - 1, Nonce: 1}} {
		var got stepToken
		if err := decodeToken(encodeToken(&st), &got); err != nil || got != st {
			t.Errorf("step token %+v came back as %+v, %v", st, got, err)
		}
	}
}

// TestTokenFromBefore: a JSON token handed out by a Strand from before is
// still read, so that tasks in flight survive a rolling upgrade.
func TestTokenFromBefore(t *testing.T) {
	run := store.RunKey{Namespace: "default", WorkflowID: "wf", RunID: "r1"}
	old, _ := json.Marshal(stepToken{Run: run, Seq: 4, Attempt: 1, Nonce: 5})
	var got stepToken
	if err := decodeToken(old, &got); err != nil || got != (stepToken{Run: run, Seq: 4, Attempt: 1, Nonce: 5}) {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestMalformedTokens(t *testing.T) {
	run := store.RunKey{Namespace: "default", WorkflowID: "wf", RunID: "r1"}
	step := encodeToken(&stepToken{Run: run, Seq: 4, Attempt: 1, Nonce: 5})
	for name, b := range map[string][]byte{
		"another kind":  encodeToken(&wtToken{Run: run, Nonce: 1}),
		"truncated":     step[:len(step)-1],
		"cut in a name": step[:4],
		"trailing":      append(append([]byte{}, step...), 0),
		"no run":        encodeToken(&stepToken{Seq: 1}),
		"attempt range": append(appendRun([]byte{stepTokenKind}, run), 2, 0x80, 0x80, 0x80, 0x80, 0x10, 2),
		"bad json":      []byte(`{"run":`),
		"garbage":       []byte("\xff\x00"),
	} {
		var got stepToken
		if err := decodeToken(b, &got); !errors.Is(err, api.ErrTaskNotFound) {
			t.Errorf("%s: %v, want ErrTaskNotFound", name, err)
		}
	}
	var got stepToken
	if err := decodeToken(nil, &got); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("empty: %v, want ErrInvalidArgument", err)
	}
}

// FuzzDecodeToken: any bytes decode to a task token or to ErrTaskNotFound,
// and a token that decodes encodes to the same fields again.
func FuzzDecodeToken(f *testing.F) {
	run := store.RunKey{Namespace: "default", WorkflowID: "wf", RunID: "r1"}
	f.Add(encodeToken(&stepToken{Run: run, Seq: 4, Attempt: 1, Nonce: 5}))
	f.Add(encodeToken(&wtToken{Run: run, Nonce: 3, Query: "q"}))
	f.Add([]byte(`{"run":{"ns":"default","wf":"wf","run":"r1"},"seq":1,"attempt":2,"n":3}`)) // from before
	f.Add([]byte(`{"run":{"ns":"default","wf":"wf","run":"r1"},"n":3,"q":"q"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzToken[stepToken](t, b)
		fuzzToken[wtToken](t, b)
	})
}

// fuzzToken decodes b as a token of type T, and then its encoding again.
func fuzzToken[T stepToken | wtToken, P interface {
	*T
	token
}](t *testing.T, b []byte) {
	var tok T
	if err := decodeToken(b, P(&tok)); err != nil {
		if !errors.Is(err, api.ErrTaskNotFound) && !errors.Is(err, api.ErrInvalidArgument) {
			t.Fatalf("%q: %v", b, err)
		}
		return
	}
	var again T
	if err := decodeToken(encodeToken(P(&tok)), P(&again)); err != nil || again != tok {
		t.Fatalf("%q decoded to %+v, which encodes to %+v, %v", b, tok, again, err)
	}
}
