package access

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/strandhq/strand/api"
)

// lastUsedEvery is how stale a token's last use may get before a request
// records it again: at most one store write a minute per token.
const lastUsedEvery = time.Minute

// Authenticate returns the identity an API token ("strand_…") stands for.
// An unknown, malformed, expired or revoked token, or one of a disabled or
// deleted user, is api.ErrUnauthenticated; the error never holds the
// token's secret.
func (s *Service) Authenticate(ctx context.Context, raw string) (Identity, error) {
	id, secret, ok := splitToken(raw)
	if !ok {
		return Identity{}, fmt.Errorf("%w: not a Strand API token", api.ErrUnauthenticated)
	}
	if e, ok := s.seen.get(id); ok && e.token.matches(secret) {
		if err := s.usable(e.token); err != nil {
			return Identity{}, err
		}
		return e.identity, nil
	}
	st, _, err := s.getToken(ctx, id)
	if err != nil {
		if isNotFound(err) {
			return Identity{}, fmt.Errorf("%w: unknown token %s", api.ErrUnauthenticated, id)
		}
		return Identity{}, err
	}
	if !st.matches(secret) {
		return Identity{}, fmt.Errorf("%w: unknown token %s", api.ErrUnauthenticated, id)
	}
	if err := s.usable(st); err != nil {
		return Identity{}, err
	}
	u, _, err := s.getUser(ctx, st.User)
	if err != nil {
		if isNotFound(err) {
			return Identity{}, fmt.Errorf("%w: token %s: its user %q is gone", api.ErrUnauthenticated, id, st.User)
		}
		return Identity{}, err
	}
	if u.Disabled {
		return Identity{}, fmt.Errorf("%w: user %q is disabled", api.ErrUnauthenticated, u.Name)
	}
	if now := s.now(); now.Sub(st.LastUsedAt) >= lastUsedEvery {
		// Best effort: a failed write of the last use refuses nothing.
		st.Token, _ = s.updateToken(ctx, id, func(t *storedToken) bool {
			if now.Sub(t.LastUsedAt) < lastUsedEvery {
				return false
			}
			t.LastUsedAt = now.UTC()
			return true
		})
	}
	ident := u.identity(id)
	s.seen.put(id, cachedToken{token: st, identity: ident})
	return ident, nil
}

// usable refuses a revoked or expired token.
func (s *Service) usable(st storedToken) error {
	if !st.RevokedAt.IsZero() {
		return fmt.Errorf("%w: token %s was revoked", api.ErrUnauthenticated, st.ID)
	}
	if !st.ExpiresAt.IsZero() && !s.now().Before(st.ExpiresAt) {
		return fmt.Errorf("%w: token %s expired at %s", api.ErrUnauthenticated, st.ID, st.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// dummyHash returns a bcrypt hash of the service's cost that no password
// matches: a failed login compares against it when the name has no
// password to compare (an unknown name, a service account), so that every
// failed login costs one bcrypt comparison of the same cost.
func (s *Service) dummyHash() []byte {
	s.dummyOnce.Do(func() {
		secret := make([]byte, 32)
		rand.Read(secret)
		s.dummy, _ = bcrypt.GenerateFromPassword([]byte(hex.EncodeToString(secret)), s.cost)
	})
	return s.dummy
}

// compareHash is bcrypt's comparison (tests count its calls).
var compareHash = bcrypt.CompareHashAndPassword

// Login checks a user's password and returns their identity. A wrong name
// or password is api.ErrUnauthenticated with the same message for both. It
// is LoginFrom without an address.
func (s *Service) Login(ctx context.Context, name, password string) (Identity, error) {
	return s.LoginFrom(ctx, name, password, "")
}

// LoginFrom checks a user's password, sent from a remote address (an IP
// address; "" for none), and returns their identity. A wrong name or
// password is api.ErrUnauthenticated with the same message for both, and
// takes as long whatever the name is: a user, a service account, a
// disabled user or no one. A name or an address that failed too often of
// late (see LoginLimits) is refused with a *LoginThrottledError before the
// password is looked at, the right one too.
func (s *Service) LoginFrom(ctx context.Context, name, password, address string) (Identity, error) {
	refused := fmt.Errorf("%w: wrong user name or password", api.ErrUnauthenticated)
	done, err := s.beginAttempt(ctx, name, address)
	if err != nil {
		return Identity{}, err
	}
	su, err := s.checkPassword(ctx, name, password)
	if err != nil {
		if !errors.Is(err, api.ErrUnauthenticated) {
			done(true) // the store failed: no one's failure
			return Identity{}, err
		}
		if locked := done(false); locked != nil {
			return Identity{}, locked
		}
		return Identity{}, refused
	}
	done(true)
	if su.Disabled {
		return Identity{}, fmt.Errorf("%w: user %q is disabled", api.ErrUnauthenticated, name)
	}
	return su.User.identity(""), nil
}

// beginAttempt checks the limits of a login of name from address; a name
// locked here but unlocked since by a cluster admin (on any node) is let
// through.
func (s *Service) beginAttempt(ctx context.Context, name, address string) (func(ok bool) *LoginThrottledError, error) {
	done, refused := s.limits.begin(name, address)
	if refused == nil {
		return done, nil
	}
	if refused.Locked {
		if su, _, err := s.getUser(ctx, name); err == nil && su.LoginUnlockedAt.After(refused.lockedAt) {
			s.limits.unlock(name)
			if done, refused = s.limits.begin(name, address); refused == nil {
				return done, nil
			}
		}
	}
	return nil, refused
}

// checkPassword returns the user whose password is password; any failure
// to match is api.ErrUnauthenticated after one bcrypt comparison.
func (s *Service) checkPassword(ctx context.Context, name, password string) (storedUser, error) {
	refused := fmt.Errorf("%w: wrong user name or password", api.ErrUnauthenticated)
	su, _, err := s.getUser(ctx, name)
	if err != nil && !isNotFound(err) {
		return storedUser{}, err
	}
	hash := []byte(su.PasswordHash)
	if err != nil || su.PasswordHash == "" {
		hash = s.dummyHash()
	}
	if compareHash(hash, []byte(password)) != nil || err != nil || su.PasswordHash == "" {
		return storedUser{}, refused
	}
	return su, nil
}

// Unlock lifts the lock (or back-off) of failed logins on a name: at once
// on this node, and on the others at the name's next attempt (the user's
// record says when it was unlocked). It reports whether the name was
// locked or waiting here; api.ErrNotFound if there is no such user and
// nothing to lift.
func (s *Service) Unlock(ctx context.Context, name string) (bool, error) {
	was := s.limits.unlock(name)
	_, err := s.updateUser(ctx, name, func(su *storedUser) error {
		su.LoginUnlockedAt = s.now().UTC()
		return nil
	})
	if isNotFound(err) && was {
		return true, nil
	}
	return was, err
}

func isNotFound(err error) bool { return errors.Is(err, api.ErrNotFound) }

// cachedToken is a token authenticated a moment ago.
type cachedToken struct {
	token    storedToken
	identity Identity
	at       time.Time
}

// tokenCache holds authenticated tokens for a TTL, at most maxCached.
type tokenCache struct {
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	m   map[string]cachedToken
}

const maxCached = 10000

func newTokenCache(ttl time.Duration, now func() time.Time) *tokenCache {
	return &tokenCache{ttl: ttl, now: now, m: map[string]cachedToken{}}
}

func (c *tokenCache) get(id string) (cachedToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if ok && c.now().Sub(e.at) >= c.ttl {
		delete(c.m, id)
		return cachedToken{}, false
	}
	return e, ok
}

func (c *tokenCache) put(id string, e cachedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.m) >= maxCached {
		for k, old := range c.m {
			if now.Sub(old.at) >= c.ttl {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxCached {
			clear(c.m)
		}
	}
	e.at = now
	c.m[id] = e
}

func (c *tokenCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// forgetUser drops a user's tokens, so that a change of their grants or a
// disabling holds at once on this node.
func (c *tokenCache) forgetUser(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if e.token.User == name {
			delete(c.m, k)
		}
	}
}

// UserIdentity returns the identity of a user or service account a
// request proved it is some other way than a token (a client certificate
// whose common name is the user's name): api.ErrUnauthenticated for no
// such user, or a disabled one. Like a token, it is believed for the
// cache's TTL.
func (s *Service) UserIdentity(ctx context.Context, name string) (Identity, error) {
	key := "user:" + name
	if e, ok := s.seen.get(key); ok {
		return e.identity, nil
	}
	u, _, err := s.getUser(ctx, name)
	if isNotFound(err) {
		return Identity{}, fmt.Errorf("%w: no user %q", api.ErrUnauthenticated, name)
	}
	if err != nil {
		return Identity{}, err
	}
	if u.Disabled {
		return Identity{}, fmt.Errorf("%w: user %q is disabled", api.ErrUnauthenticated, name)
	}
	id := u.identity("")
	s.seen.put(key, cachedToken{token: storedToken{Token: Token{User: name}}, identity: id})
	return id, nil
}
