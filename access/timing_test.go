package access

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/strandhq/strand/internal/testdb"
)

// TestFailedLoginsCompareOneHash: a failed login of any kind of name (a
// user's wrong password, an unknown name, a service account, a disabled
// user) makes exactly one bcrypt comparison, against a hash of the cost
// real passwords are hashed with. Before, a service account's made none,
// and an unknown name's compared a hash of bcrypt's default cost whatever
// the server's.
func TestFailedLoginsCompareOneHash(t *testing.T) {
	ctx := context.Background()
	for _, cost := range []int{4, 5} {
		s := New(testdb.SQLite(t), Options{BcryptCost: cost, LoginLimits: LoginLimits{Off: true}})
		seed(t, s)
		su, _, err := s.getUser(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := bcrypt.Cost([]byte(su.PasswordHash)); got != cost {
			t.Fatalf("a password hashed at cost %d, want %d", got, cost)
		}
		if got, _ := bcrypt.Cost(s.dummyHash()); got != cost {
			t.Fatalf("the dummy hash has cost %d, the passwords %d", got, cost)
		}
		var costs []int
		compareHash = func(hash, password []byte) error {
			c, _ := bcrypt.Cost(hash)
			costs = append(costs, c)
			return bcrypt.CompareHashAndPassword(hash, password)
		}
		t.Cleanup(func() { compareHash = bcrypt.CompareHashAndPassword })
		for _, k := range failedKinds {
			costs = nil
			if _, err := s.Login(ctx, k.name, k.password); err == nil {
				t.Fatalf("%s: logged in", k.kind)
			}
			if fmt.Sprint(costs) != fmt.Sprint([]int{cost}) {
				t.Errorf("cost %d, %s: compared hashes of costs %v, want one of %d", cost, k.kind, costs, cost)
			}
		}
	}
}

// failedKinds are the kinds of failed login, one name of each.
var failedKinds = []struct{ kind, name, password string }{
	{"user, wrong password", "alice", "wrong horse"},
	{"unknown name", "nobody", "wrong horse"},
	{"service account", "ci", "wrong horse"},
	{"disabled user", "bob", "wrong horse"},
}

func seed(tb testing.TB, s *Service) {
	ctx := context.Background()
	for _, nu := range []NewUser{{Name: "alice", Password: "correct horse"}, {Name: "ci", Kind: KindService}, {Name: "bob", Password: "correct horse"}} {
		if _, err := s.CreateUser(ctx, nu); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := s.SetDisabled(ctx, "bob", true); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkFailedLogin measures a failed login per kind of name at the
// cost real servers hash with: the times should agree within bcrypt's
// noise (see docs/operations.md).
func BenchmarkFailedLogin(b *testing.B) {
	s := New(testdb.SQLite(b), Options{LoginLimits: LoginLimits{Off: true}})
	seed(b, s)
	s.dummyHash()
	ctx := context.Background()
	for _, k := range failedKinds {
		b.Run(k.kind, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Login(ctx, k.name, k.password); err == nil {
					b.Fatal("logged in")
				}
			}
		})
	}
}

// TestLoginLimitsBounded: names sprayed past the limit of tracked ones
// keep the table at its size, and a locked name stays locked while names
// that are not are let go of.
func TestLoginLimitsBounded(t *testing.T) {
	ctx := context.Background()
	s := New(testdb.SQLite(t), Options{BcryptCost: 4, LoginLimits: LoginLimits{Tracked: 20, BackoffAfter: 1, LockAfter: 1}})
	if _, err := s.Login(ctx, "victim", "guess"); err == nil {
		t.Fatal("logged in")
	}
	for i := range 60 {
		s.LoginFrom(ctx, fmt.Sprintf("spray-%d", i), "guess", fmt.Sprintf("10.0.%d.%d", i/250, i%250))
	}
	if names, addrs := s.limits.size(); names > 20 || addrs > 20 {
		t.Fatalf("%d names and %d addresses remembered, want at most 20", names, addrs)
	}
	if _, err := s.Login(ctx, "victim", "guess"); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("the locked name after a spray: %v", err)
	}
}
