package server

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/strandhq/strand/access"
)

// TestTaskStreamAccess: a task stream is a worker's of its namespace; the
// upgrade is refused to other callers, and a stream whose token is revoked
// is closed at its next check.
func TestTaskStreamAccess(t *testing.T) {
	defer func(d time.Duration) { streamRecheck = d }(streamRecheck)
	streamRecheck = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := newAccessFixture(t)
	dial := func(auth string) (*websocket.Conn, int) {
		t.Helper()
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		conn, resp, err := websocket.Dial(ctx, f.srv.URL+"/api/v1/namespaces/acme/task-stream", &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			if resp == nil {
				t.Fatal(err)
			}
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { conn.CloseNow() })
		return conn, http.StatusSwitchingProtocols
	}
	for who, want := range map[string]int{"": http.StatusUnauthorized, "acme-reader": http.StatusForbidden,
		"other-operator": http.StatusForbidden, "acme-worker": http.StatusSwitchingProtocols} {
		if _, status := dial(f.auth(t, who)); status != want {
			t.Errorf("%q: upgrade answered %d, want %d", who, status, want)
		}
	}

	if _, err := f.ac.CreateUser(ctx, access.NewUser{Name: "w", Kind: access.KindService}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ac.Grant(ctx, "w", "acme", access.Worker); err != nil {
		t.Fatal(err)
	}
	secret, tok, err := f.ac.CreateToken(ctx, access.NewToken{User: "w"})
	if err != nil {
		t.Fatal(err)
	}
	conn, status := dial("Bearer " + secret)
	if conn == nil {
		t.Fatalf("w's stream: %d", status)
	}
	if err := f.ac.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	_, _, err = conn.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation {
		t.Errorf("a stream whose token was revoked: %v; want it closed, 1008", err)
	}
}
