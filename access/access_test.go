package access_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/testdb"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newService returns two services over one store (two nodes) with one
// clock.
func newService(t *testing.T) (*access.Service, *access.Service, *clock) {
	c := &clock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	st := testdb.SQLite(t)
	opts := access.Options{Now: c.now, BcryptCost: 4, TokenCacheTTL: time.Minute}
	return access.New(st, opts), access.New(st, opts), c
}

func TestTokens(t *testing.T) {
	ctx := context.Background()
	ac, other, clk := newService(t)
	if _, err := ac.CreateUser(ctx, access.NewUser{Name: "ci", Kind: access.KindService}); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Grant(ctx, "ci", "payments", access.Worker, access.Writer, access.Worker); err != nil {
		t.Fatal(err)
	}
	secret, tok, err := ac.CreateToken(ctx, access.NewToken{User: "ci", Name: "build", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, access.TokenPrefix+tok.ID+"_") {
		t.Fatalf("token %q does not start with its id %s", secret, tok.ID)
	}
	id, err := ac.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "ci" || id.TokenID != tok.ID || !id.Can("payments", access.Worker) || !id.Can("payments", access.Reader) ||
		id.Can("payments", access.Operator) || id.Can("other", access.Reader) {
		t.Fatalf("identity %+v", id)
	}
	if got := id.Roles("payments"); len(got) != 2 || got[0] != access.Writer || got[1] != access.Worker {
		t.Fatalf("roles %v, want [writer worker]", got)
	}
	// The last use is recorded, at most once a minute.
	if tokens, _ := ac.ListTokens(ctx, "ci"); len(tokens) != 1 || !tokens[0].LastUsedAt.Equal(clk.now()) {
		t.Fatalf("tokens %+v: want last used now", tokens)
	}

	// A wrong secret with a real id, a malformed token, a token of no one.
	wrong := secret[:len(secret)-1] + "0"
	if wrong == secret {
		wrong = secret[:len(secret)-1] + "1"
	}
	for _, bad := range []string{wrong, "strand_nope", "Bearer x", access.TokenPrefix + "0123456789abcdef_" + strings.Repeat("00", 32)} {
		if _, err := ac.Authenticate(ctx, bad); !errors.Is(err, api.ErrUnauthenticated) {
			t.Errorf("%q: %v, want unauthenticated", bad, err)
		} else if strings.Contains(err.Error(), secret[len(secret)-64:]) {
			t.Errorf("the error holds the secret: %v", err)
		}
	}

	// Expired: refused even while cached.
	clk.add(59 * time.Minute)
	if _, err := ac.Authenticate(ctx, secret); err != nil {
		t.Fatalf("a minute before expiry: %v", err)
	}
	clk.add(time.Minute)
	if _, err := ac.Authenticate(ctx, secret); !errors.Is(err, api.ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired: %v", err)
	}

	// Revoked: refused at once, though the cache held it.
	secret2, tok2, err := ac.CreateToken(ctx, access.NewToken{User: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Authenticate(ctx, secret2); err != nil {
		t.Fatal(err)
	}
	if err := ac.RevokeToken(ctx, tok2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Authenticate(ctx, secret2); !errors.Is(err, api.ErrUnauthenticated) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked: %v", err)
	}

	// Revoked on another node: this one believes its cache for the TTL,
	// then reads the store again.
	secret3, tok3, _ := ac.CreateToken(ctx, access.NewToken{User: "ci"})
	if _, err := ac.Authenticate(ctx, secret3); err != nil {
		t.Fatal(err)
	}
	if err := other.RevokeToken(ctx, tok3.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Authenticate(ctx, secret3); !errors.Is(err, api.ErrUnauthenticated) {
		t.Fatalf("revoked, on the node that revoked it: %v", err)
	}
	if _, err := ac.Authenticate(ctx, secret3); err != nil {
		t.Fatalf("revoked elsewhere, within the cache's TTL: %v", err)
	}
	clk.add(time.Minute)
	if _, err := ac.Authenticate(ctx, secret3); !errors.Is(err, api.ErrUnauthenticated) {
		t.Fatalf("revoked elsewhere, after the TTL: %v", err)
	}

	secret3, _, _ = ac.CreateToken(ctx, access.NewToken{User: "ci"})
	// A disabled user's tokens are refused; a deleted user's too.
	if _, err := ac.SetDisabled(ctx, "ci", true); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Authenticate(ctx, secret3); !errors.Is(err, api.ErrUnauthenticated) {
		t.Fatalf("disabled user: %v", err)
	}
	if err := ac.DeleteUser(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Authenticate(ctx, secret3); !errors.Is(err, api.ErrUnauthenticated) {
		t.Fatalf("deleted user: %v", err)
	}
}

func TestPasswords(t *testing.T) {
	ctx := context.Background()
	ac, _, _ := newService(t)
	for _, bad := range []access.NewUser{
		{Name: "", Password: "long enough"},
		{Name: "-x", Password: "long enough"},
		{Name: "a b", Password: "long enough"},
		{Name: "short", Password: "seven77"},
		{Name: "few", Password: "ééé€"},                   // 9 bytes, but 4 characters: the API document counts characters
		{Name: "wide", Password: strings.Repeat("é", 37)}, // 37 characters, but 74 bytes: bcrypt reads 72
		{Name: "long", Password: strings.Repeat("x", 73)},
		{Name: "svc", Kind: access.KindService, Password: "services have none"},
		{Name: "kind", Kind: "robot", Password: "long enough"},
		{Name: "mail", Email: "not-an-address", Password: "long enough"},
	} {
		if _, err := ac.CreateUser(ctx, bad); !errors.Is(err, api.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want invalid argument", bad, err)
		}
	}
	if users, err := ac.ListUsers(ctx); err != nil || len(users) != 0 {
		t.Fatalf("bad users were stored: %v %v", users, err)
	}
	if _, err := ac.CreateUser(ctx, access.NewUser{Name: "alice", Email: "alice@example.com", Password: "correct horse", ClusterAdmin: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.CreateUser(ctx, access.NewUser{Name: "alice", Password: "another one"}); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("second alice: %v", err)
	}
	id, err := ac.Login(ctx, "alice", "correct horse")
	if err != nil || !id.ClusterAdmin || !id.Can("anything", access.Admin) {
		t.Fatalf("login: %+v %v", id, err)
	}
	_, wrongPassword := ac.Login(ctx, "alice", "wrong horse")
	_, noUser := ac.Login(ctx, "bob", "correct horse")
	if !errors.Is(wrongPassword, api.ErrUnauthenticated) || !errors.Is(noUser, api.ErrUnauthenticated) || wrongPassword.Error() != noUser.Error() {
		t.Fatalf("a wrong password and an unknown user must read alike: %v / %v", wrongPassword, noUser)
	}
	if _, err := ac.SetPassword(ctx, "alice", "battery staple", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Login(ctx, "alice", "correct horse"); !errors.Is(err, api.ErrUnauthenticated) {
		t.Fatalf("old password: %v", err)
	}
	if _, err := ac.Login(ctx, "alice", "battery staple"); err != nil {
		t.Fatal(err)
	}
	u, err := ac.GetUser(ctx, "alice")
	if err != nil || u.Email != "alice@example.com" {
		t.Fatalf("%+v %v", u, err)
	}
}

// TestGroups: a user's groups are set, shown and carried by the identity
// the user is authenticated as; bad names are refused and change nothing.
func TestGroups(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService(t)
	if _, err := s.CreateUser(ctx, access.NewUser{Name: "bob", Kind: access.KindService, Groups: []string{"finance"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetGroups(ctx, "bob", []string{"finance", "managers"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"has space"}, {""}, {"finance", "finance"}} {
		if _, err := s.SetGroups(ctx, "bob", bad); !errors.Is(err, api.ErrInvalidArgument) {
			t.Errorf("groups %q: %v, want an invalid argument", bad, err)
		}
	}
	if _, err := s.CreateUser(ctx, access.NewUser{Name: "carol", Kind: access.KindService, Groups: []string{"bad group"}}); !errors.Is(err, api.ErrInvalidArgument) {
		t.Errorf("a user created with a bad group: %v", err)
	}
	id, err := s.UserIdentity(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(id.Groups, ",") != "finance,managers" {
		t.Fatalf("bob's identity has groups %v", id.Groups)
	}
}
