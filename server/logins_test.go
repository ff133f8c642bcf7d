package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/internal/testdb"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestLogins: over HTTP, a user changes their own password (their other
// sessions, cookie and login token, end; a wrong current password changes
// nothing); an admin's change ends the sessions too; failed logins back
// off, then lock the name (429 with Retry-After, the right password too),
// a cluster admin unlocks it; the lock and the unlock are audited; one
// address guessing many names backs off.
func TestLogins(t *testing.T) {
	ctx := context.Background()
	st := testdb.SQLite(t)
	eng, err := engine.Open(ctx, st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	clk := &testClock{t: time.Now()}
	ac := access.New(st, access.Options{BcryptCost: 4, Now: clk.now})
	audit := NewAuditLog(st, AuditOptions{})
	audit.Start()
	t.Cleanup(audit.Close)
	srv := httptest.NewServer(New(eng, Options{Access: ac, Audit: audit}))
	t.Cleanup(srv.Close)
	if _, err := ac.CreateUser(ctx, access.NewUser{Name: "root", Kind: access.KindService, ClusterAdmin: true}); err != nil {
		t.Fatal(err)
	}
	root, _, err := ac.CreateToken(ctx, access.NewToken{User: "root"})
	if err != nil {
		t.Fatal(err)
	}
	const first, second = "correct horse battery", "battery staple horse"
	if _, err := ac.CreateUser(ctx, access.NewUser{Name: "alice", Password: first}); err != nil {
		t.Fatal(err)
	}

	// do calls the API with a token or a session cookie.
	do := func(method, path, body, token string, cookie *http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+prefix+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if cookie != nil {
			req.AddCookie(cookie)
			req.Header.Set(csrfHeader, "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	login := func(password string, session bool) (*http.Response, string) {
		t.Helper()
		return do("POST", "/login", fmt.Sprintf(`{"name":"alice","password":%q,"session":%v}`, password, session), "", nil)
	}
	token := func(password string) string {
		t.Helper()
		resp, body := login(password, false)
		var lr LoginResponse
		json.Unmarshal([]byte(body), &lr)
		if resp.StatusCode != 200 || lr.Token == "" {
			t.Fatalf("login: %d %s", resp.StatusCode, body)
		}
		return lr.Token
	}
	whoami := func(token string, cookie *http.Cookie) int {
		t.Helper()
		resp, _ := do("GET", "/whoami", "", token, cookie)
		return resp.StatusCode
	}

	// A user changes their own password.
	resp, _ := login(first, true)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("no session cookie: %d", resp.StatusCode)
	}
	other, here := token(first), token(first)
	apiToken, _, err := ac.CreateToken(ctx, access.NewToken{User: "alice", Name: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	change := func(current, next, token string) (*http.Response, string) {
		return do("PUT", "/whoami/password", fmt.Sprintf(`{"current_password":%q,"new_password":%q}`, current, next), token, nil)
	}
	if resp, body := change("not my password", second, here); resp.StatusCode != 400 || !strings.Contains(body, "current_password") {
		t.Fatalf("a wrong current password: %d %s, want 400", resp.StatusCode, body)
	}
	if whoami("", cookie) != 200 || whoami(other, nil) != 200 {
		t.Fatal("a refused change ended sessions")
	}
	if resp, body := change(first, second, here); resp.StatusCode != 200 || !strings.Contains(body, `"sessions_ended":2`) {
		t.Fatalf("change: %d %s, want 2 sessions ended", resp.StatusCode, body)
	}
	if whoami("", cookie) != 401 || whoami(other, nil) != 401 {
		t.Fatal("the console session or the other login still works after the password changed")
	}
	if whoami(here, nil) != 200 || whoami(apiToken, nil) != 200 {
		t.Fatal("the session the change came with, or an API token, ended")
	}
	if resp, _ := login(first, false); resp.StatusCode != 401 {
		t.Fatalf("the old password: %d", resp.StatusCode)
	}
	if resp, body := change(first, second, root); resp.StatusCode != 409 {
		t.Fatalf("a service account changing its password: %d %s, want 409", resp.StatusCode, body)
	}
	// A cluster admin's change ends every session of the user.
	if resp, body := do("PUT", "/users/alice", `{"password":"`+first+`"}`, root, nil); resp.StatusCode != 200 {
		t.Fatalf("the admin's change: %d %s", resp.StatusCode, body)
	}
	if whoami(here, nil) != 401 {
		t.Fatal("a session still works after the admin changed the password")
	}

	// Failed logins back off, then lock the name.
	for i := 1; i < 5; i++ { // the wrong current password above was the first
		if resp, _ := login("wrong password", false); resp.StatusCode != 401 {
			t.Fatalf("failure %d: %d", i, resp.StatusCode)
		}
	}
	resp, body := login(first, false)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(body, "too many failed logins for alice; try again in 2s") {
		t.Fatalf("the right password after 5 failures: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	for failures := 5; failures < 10; failures++ {
		clk.add(time.Minute)
		if resp, body := login("wrong password", false); resp.StatusCode != 401 && failures < 9 {
			t.Fatalf("failure %d after its wait: %d %s", failures+1, resp.StatusCode, body)
		}
	}
	resp, body = login(first, false)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "900" || !strings.Contains(body, "rate_limited") || !strings.Contains(body, "strand user unlock alice") {
		t.Fatalf("the right password while locked: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, body := do("POST", "/users/alice/unlock", "", root, nil); resp.StatusCode != 200 || !strings.Contains(body, `"was_locked":true`) {
		t.Fatalf("unlock: %d %s", resp.StatusCode, body)
	}
	token(first)

	// One address guessing names: 20 failures in all (11 above: the wrong
	// current password, 9 wrong ones, the old one), then it waits.
	for i := 0; i < 9; i++ {
		if resp, _ := do("POST", "/login", fmt.Sprintf(`{"name":"guess-%d","password":"guessed"}`, i), "", nil); resp.StatusCode != 401 {
			t.Fatalf("guess %d: %d", i, resp.StatusCode)
		}
	}
	if resp, body := do("POST", "/login", `{"name":"guess-9","password":"guessed"}`, "", nil); resp.StatusCode != 429 || !strings.Contains(body, "too many failed logins from 127.0.0.1") {
		t.Fatalf("the 21st failure from one address: %d %s", resp.StatusCode, body)
	}

	// The audit log: the lock, the unlock, no password.
	var raw string
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(raw, "POST /users/{user}/unlock") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		_, raw = do("GET", "/audit?page_size=1000", "", root, nil)
	}
	var list AuditList
	json.Unmarshal([]byte(raw), &list)
	var lock, unlock *AuditEntry
	for i, e := range list.Entries {
		switch e.Action {
		case "lock logins of a user name":
			lock = &list.Entries[i]
		case "POST /users/{user}/unlock":
			unlock = &list.Entries[i]
		}
	}
	if lock == nil || lock.Target != "alice" || lock.Status != 429 || !strings.Contains(string(lock.Detail), `"failures":10`) ||
		unlock == nil || unlock.Target != "alice" || unlock.Actor != "root (service)" || unlock.Status != 200 {
		t.Fatalf("the lock %+v and the unlock %+v in the audit log", lock, unlock)
	}
	for _, p := range []string{first, second, "not my password"} {
		if strings.Contains(raw, p) {
			t.Errorf("the audit log holds a password: %s", raw)
		}
	}
}
