package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
)

// A forwarded call to a node that stops answering is given up when the
// node leaves the view, and only then; a call to a node still listed, or
// one whose caller gave up, ends as it would have.
func TestCallPeerGivesUpWhenTheNodeLeaves(t *testing.T) {
	e := &Engine{}
	both := &view{nodes: []string{"a", "b"}, addr: map[string]string{"a": "a:1", "b": "b:1"}}
	onlyA := &view{nodes: []string{"a"}, addr: map[string]string{"a": "a:1"}}
	e.setView(both)

	started := make(chan struct{}, 2)
	hang := func(ctx context.Context, _ api.Peer) error {
		if !api.Forwarded(ctx) {
			t.Error("a call to a peer is not marked forwarded")
		}
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	toB := make(chan error, 1)
	go func() { toB <- e.callPeer(context.Background(), "b", nil, hang) }()
	callerCtx, callerGaveUp := context.WithCancel(context.Background())
	toA := make(chan error, 1)
	go func() { toA <- e.callPeer(callerCtx, "a", nil, hang) }()
	<-started
	<-started

	e.setView(both) // nothing changed: both calls go on
	select {
	case err := <-toB:
		t.Fatalf("call to b ended while b was listed: %v", err)
	case <-time.After(50 * time.Millisecond):
	}

	e.setView(onlyA)
	if err := <-toB; !errors.Is(err, errPeerLost) || !errors.Is(err, api.ErrUnavailable) {
		t.Fatalf("call to b after b left: %v, want errPeerLost (unavailable)", err)
	}
	select {
	case err := <-toA:
		t.Fatalf("call to a ended while a was listed: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	callerGaveUp()
	if err := <-toA; !errors.Is(err, context.Canceled) || errors.Is(err, errPeerLost) {
		t.Fatalf("call to a after its caller gave up: %v, want context.Canceled", err)
	}

	// A call to a node already gone is not sent.
	if err := e.callPeer(context.Background(), "b", nil, func(context.Context, api.Peer) error {
		t.Error("a call went to a node the view no longer lists")
		return nil
	}); !errors.Is(err, errPeerLost) {
		t.Fatalf("call to a node already gone: %v", err)
	}
	e.cluster.callMu.Lock()
	defer e.cluster.callMu.Unlock()
	if len(e.cluster.calls) != 0 {
		t.Fatalf("calls still registered after they ended: %v", e.cluster.calls)
	}
}
