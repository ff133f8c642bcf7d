package remote

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/strandhq/strand/server"
)

// TestTaskTokensAge: a task's token is remembered until it is reported, or
// for one to two tokenAge when it never is.
func TestTaskTokensAge(t *testing.T) {
	now := time.Unix(0, 0)
	tokens := taskTokens{now: func() time.Time { return now }}
	tokens.add([]byte("a"), handedOut{namespace: "ns1"})
	tokens.add([]byte("b"), handedOut{namespace: "ns2"})
	if h, ok := tokens.lookup([]byte("a")); !ok || h.namespace != "ns1" {
		t.Fatalf("a: %+v %v", h, ok)
	}
	tokens.forget([]byte("a"))
	if _, ok := tokens.lookup([]byte("a")); ok {
		t.Fatal("a reported, still remembered")
	}
	now = now.Add(tokenAge)
	tokens.add([]byte("c"), handedOut{namespace: "ns1"}) // a new generation: b is old
	if h, ok := tokens.lookup([]byte("b")); !ok || h.namespace != "ns2" {
		t.Fatalf("b a generation on: %+v %v", h, ok)
	}
	now = now.Add(tokenAge)
	tokens.add([]byte("d"), handedOut{namespace: "ns1"}) // b's generation is dropped
	if _, ok := tokens.lookup([]byte("b")); ok {
		t.Fatal("b never reported, remembered past two generations")
	}
	if _, ok := tokens.lookup([]byte("c")); !ok {
		t.Fatal("c lost a generation on")
	}
}

// TestAppendFrame: a frame of encoded exchanges and cancels is the JSON of
// a server.StreamFrame.
func TestAppendFrame(t *testing.T) {
	got := string(appendFrame(nil, []streamRequest{{id: 1, exchange: []byte(`{"wait":true}`)}, {id: 2, cancel: true}}))
	want := `{"requests":[{"id":1,"exchange":{"wait":true}},{"id":2,"cancel":true}]}`
	if got != want {
		t.Errorf("frame %s, want %s", got, want)
	}
	var f server.StreamFrame
	if err := json.Unmarshal([]byte(got), &f); err != nil || len(f.Requests) != 2 || !f.Requests[0].Exchange.Wait || !f.Requests[1].Cancel {
		t.Errorf("decoded: %+v, %v", f, err)
	}
}
