package remote

import (
	"testing"
	"time"
)

// TestTaskTokensAge: a task's token is remembered until it is reported, or
// for one to two tokenAge when it never is.
func TestTaskTokensAge(t *testing.T) {
	now := time.Unix(0, 0)
	tokens := taskTokens{now: func() time.Time { return now }}
	tokens.add([]byte("a"), "ns1")
	tokens.add([]byte("b"), "ns2")
	if n, ok := tokens.namespace([]byte("a")); !ok || n != "ns1" {
		t.Fatalf("a: %q %v", n, ok)
	}
	tokens.forget([]byte("a"))
	if _, ok := tokens.namespace([]byte("a")); ok {
		t.Fatal("a reported, still remembered")
	}
	now = now.Add(tokenAge)
	tokens.add([]byte("c"), "ns1") // a new generation: b is old
	if n, ok := tokens.namespace([]byte("b")); !ok || n != "ns2" {
		t.Fatalf("b a generation on: %q %v", n, ok)
	}
	now = now.Add(tokenAge)
	tokens.add([]byte("d"), "ns1") // b's generation is dropped
	if _, ok := tokens.namespace([]byte("b")); ok {
		t.Fatal("b never reported, remembered past two generations")
	}
	if _, ok := tokens.namespace([]byte("c")); !ok {
		t.Fatal("c lost a generation on")
	}
}
