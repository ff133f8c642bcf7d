package access_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/testdb"
)

// limited returns two services (two nodes) over one store with one clock
// and the default login limits.
func limited(t *testing.T) (*access.Service, *access.Service, *clock) {
	c := &clock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	st := testdb.SQLite(t)
	opts := access.Options{Now: c.now, BcryptCost: 4}
	return access.New(st, opts), access.New(st, opts), c
}

// throttled returns the login refusal err is, or fails the test.
func throttled(t *testing.T, err error, what string) *access.LoginThrottledError {
	t.Helper()
	var te *access.LoginThrottledError
	if !errors.As(err, &te) || !errors.Is(err, access.ErrTooManyLogins) {
		t.Fatalf("%s: %v, want too many failed logins", what, err)
	}
	return te
}

// TestLoginLockout: after 5 failures each attempt waits a growing delay;
// after 10 the name is locked, the right password refused as the wrong
// one, until a cluster admin unlocks it (on either node) or the lock ends.
func TestLoginLockout(t *testing.T) {
	ctx := context.Background()
	ac, other, clk := limited(t)
	if _, err := ac.CreateUser(ctx, access.NewUser{Name: "alice", Password: "correct horse"}); err != nil {
		t.Fatal(err)
	}
	const from = "192.0.2.7"
	for i := 1; i <= 5; i++ {
		if _, err := ac.LoginFrom(ctx, "alice", "wrong horse", from); !errors.Is(err, api.ErrUnauthenticated) {
			t.Fatalf("failure %d: %v, want unauthenticated", i, err)
		}
	}
	// The sixth waits 2s, the right password too.
	te := throttled(t, mustFail(ac.LoginFrom(ctx, "alice", "correct horse", from)), "right after 5 failures")
	if te.Name != "alice" || te.RetryAfter != 2*time.Second || te.Locked || te.Error() != "too many failed logins for alice; try again in 2s" {
		t.Fatalf("after 5 failures: %+v %q", te, te.Error())
	}
	var waits []time.Duration
	for i := 6; i <= 9; i++ {
		clk.add(te.RetryAfter)
		if _, err := ac.LoginFrom(ctx, "alice", "wrong horse", from); !errors.Is(err, api.ErrUnauthenticated) {
			t.Fatalf("failure %d after its wait: %v", i, err)
		}
		te = throttled(t, mustFail(ac.LoginFrom(ctx, "alice", "wrong horse", from)), "at once after a failure")
		waits = append(waits, te.RetryAfter)
	}
	if fmt.Sprint(waits) != "[4s 8s 16s 32s]" {
		t.Fatalf("waits %v, want doubling", waits)
	}
	clk.add(te.RetryAfter)
	te = throttled(t, mustFail(ac.LoginFrom(ctx, "alice", "wrong horse", from)), "the tenth failure")
	if !te.Locked || !te.Locking || te.RetryAfter != 15*time.Minute {
		t.Fatalf("the tenth failure: %+v, want a new lock of 15m", te)
	}
	clk.add(5 * time.Minute)
	te = throttled(t, mustFail(ac.LoginFrom(ctx, "alice", "correct horse", "198.51.100.1")), "the right password while locked")
	if !te.Locked || te.Locking || te.RetryAfter != 10*time.Minute || !strings.Contains(te.Error(), "strand user unlock alice") {
		t.Fatalf("locked: %+v %q", te, te.Error())
	}
	// Unlocked on the other node: this one lets alice in too.
	if was, err := other.Unlock(ctx, "alice"); err != nil || was {
		t.Fatalf("unlock on the other node: %v %v (it had no lock)", was, err)
	}
	if _, err := ac.LoginFrom(ctx, "alice", "correct horse", from); err != nil {
		t.Fatalf("after a cluster admin unlocked alice: %v", err)
	}
	// A success forgets the failures; an unlock on the node that locked
	// lifts its lock at once.
	lockOut := func(name string) {
		t.Helper()
		for range 20 {
			if _, err := ac.LoginFrom(ctx, name, "wrong horse", ""); errors.Is(err, access.ErrTooManyLogins) {
				if te := throttled(t, err, ""); te.Locked {
					return
				} else {
					clk.add(te.RetryAfter)
				}
			}
		}
		t.Fatalf("%s not locked after 20 attempts", name)
	}
	lockOut("alice")
	throttled(t, mustFail(ac.LoginFrom(ctx, "alice", "correct horse", "")), "locked again")
	if was, err := ac.Unlock(ctx, "alice"); err != nil || !was {
		t.Fatalf("unlock: %v %v", was, err)
	}
	if _, err := ac.LoginFrom(ctx, "alice", "correct horse", ""); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	// An unknown name is locked like a real one; a lock ends by itself.
	lockOut("mallory")
	te = throttled(t, mustFail(ac.LoginFrom(ctx, "mallory", "guess", "")), "an unknown name")
	if !te.Locked {
		t.Fatalf("an unknown name after 10 failures: %+v", te)
	}
	clk.add(te.RetryAfter)
	lockOut("alice")
	clk.add(15 * time.Minute)
	if _, err := ac.LoginFrom(ctx, "alice", "correct horse", ""); err != nil {
		t.Fatalf("after the lock ended: %v", err)
	}
	if _, err := ac.Unlock(ctx, "nobody"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("unlock of no one: %v, want not found", err)
	}
}

func mustFail(_ access.Identity, err error) error { return err }

// TestLoginLimitPerAddress: one address guessing many names backs off
// after 20 failures, whatever the names; another address does not; a
// burst in parallel gets the free attempts alone.
func TestLoginLimitPerAddress(t *testing.T) {
	ctx := context.Background()
	ac, _, clk := limited(t)
	if _, err := ac.CreateUser(ctx, access.NewUser{Name: "alice", Password: "correct horse"}); err != nil {
		t.Fatal(err)
	}
	const from = "203.0.113.9"
	for i := range 20 {
		if _, err := ac.LoginFrom(ctx, fmt.Sprintf("name-%d", i), "guess", from); !errors.Is(err, api.ErrUnauthenticated) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	te := throttled(t, mustFail(ac.LoginFrom(ctx, "alice", "correct horse", from)), "the 21st attempt from one address")
	if te.Address != from || te.Name != "" || te.Error() != "too many failed logins from 203.0.113.9; try again in 2s" {
		t.Fatalf("%+v %q", te, te.Error())
	}
	if _, err := ac.LoginFrom(ctx, "alice", "correct horse", "203.0.113.10"); err != nil {
		t.Fatalf("from another address: %v", err)
	}
	clk.add(2 * time.Second)
	if _, err := ac.LoginFrom(ctx, "alice", "correct horse", from); err != nil {
		t.Fatalf("after the wait: %v", err)
	}

	// 40 wrong passwords at once: 5 are looked at, the others refused.
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for range 40 {
		wg.Go(func() {
			_, err := ac.LoginFrom(ctx, "alice", "wrong horse", "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, access.ErrTooManyLogins):
				counts["throttled"]++
			case errors.Is(err, api.ErrUnauthenticated):
				counts["wrong"]++
			default:
				counts[fmt.Sprint(err)]++
			}
		})
	}
	wg.Wait()
	if counts["wrong"] > 5 || counts["wrong"]+counts["throttled"] != 40 {
		t.Fatalf("40 in parallel: %v, want at most 5 passwords looked at", counts)
	}
}

// TestPasswordChange: a user changes their own password with the current
// one; their other login sessions end, their API tokens do not; a wrong
// current password changes nothing and counts as a failed login; a
// cluster admin's change ends every session.
func TestPasswordChange(t *testing.T) {
	ctx := context.Background()
	ac, _, _ := limited(t)
	if _, err := ac.CreateUser(ctx, access.NewUser{Name: "alice", Password: "correct horse"}); err != nil {
		t.Fatal(err)
	}
	token := func(nt access.NewToken) string {
		t.Helper()
		nt.User = "alice"
		secret, _, err := ac.CreateToken(ctx, nt)
		if err != nil {
			t.Fatal(err)
		}
		return secret
	}
	idOf := func(secret string) string { return strings.Split(secret, "_")[1] }
	cookie, cli, here := token(access.NewToken{Session: true}), token(access.NewToken{Login: true}), token(access.NewToken{Login: true})
	older := token(access.NewToken{Name: "login from 127.0.0.1:5555"}) // made before logins were marked
	api1 := token(access.NewToken{Name: "laptop"})
	live := func(secret string) bool { _, err := ac.Authenticate(ctx, secret); return err == nil }

	for _, bad := range []access.PasswordChange{
		{Name: "alice", Current: "wrong horse", New: "battery staple"},
		{Name: "alice", Current: "correct horse", New: "short"},
		{Name: "alice", Current: "correct horse", New: "correct horse"},
	} {
		if _, err := ac.ChangePassword(ctx, bad); !errors.Is(err, api.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want invalid argument", bad, err)
		}
	}
	if !live(cookie) || !live(cli) {
		t.Fatal("a refused change ended sessions")
	}
	if _, err := ac.Login(ctx, "alice", "correct horse"); err != nil {
		t.Fatalf("the password after refused changes: %v", err)
	}
	ended, err := ac.ChangePassword(ctx, access.PasswordChange{Name: "alice", Current: "correct horse", New: "battery staple", Keep: idOf(here)})
	if err != nil || ended != 3 {
		t.Fatalf("change: %d %v, want 3 sessions ended", ended, err)
	}
	for what, s := range map[string]string{"a console session": cookie, "a CLI login": cli, "an older login": older} {
		if live(s) {
			t.Errorf("%s still works after the password changed", what)
		}
	}
	if !live(here) || !live(api1) {
		t.Fatal("the session the change came with, or an API token, ended")
	}
	if _, err := ac.Login(ctx, "alice", "battery staple"); err != nil {
		t.Fatal(err)
	}
	if ended, err := ac.SetPassword(ctx, "alice", "a third password", ""); err != nil || ended != 1 || live(here) {
		t.Fatalf("the admin's change: %d %v, want the last session ended", ended, err)
	}
	// Wrong current passwords count as failed logins.
	for range 5 {
		ac.ChangePassword(ctx, access.PasswordChange{Name: "alice", Current: "a guess", New: "whatever it is"})
	}
	_, err = ac.ChangePassword(ctx, access.PasswordChange{Name: "alice", Current: "a third password", New: "whatever it is"})
	throttled(t, err, "a change after 5 wrong current passwords")
}
