package access

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// LoginLimits bound how fast a login may be tried: per user name, and per
// remote address. After BackoffAfter failures of a name (within Window of
// each other) each further attempt waits a delay that doubles with each
// failure (2s, 4s, 8s, … up to MaxBackoff); after LockAfter failures the
// name is locked for LockFor, or until a cluster admin unlocks it. While a
// name waits or is locked every attempt is refused, the right password
// too. An address backs off the same way after AddressBackoffAfter
// failures, whatever names it tried, but is not locked.
//
// The counts are kept in memory on each node (a restart forgets them), at
// most Tracked names and Tracked addresses: when full, the entries of
// names that are not locked are let go of first, oldest first.
type LoginLimits struct {
	// BackoffAfter is how many failures of a name are free (default 5).
	BackoffAfter int
	// LockAfter is how many failures lock a name (default 10).
	LockAfter int
	// LockFor is how long a lock lasts (default 15 minutes).
	LockFor time.Duration
	// Window is how long a failure is remembered: a name or an address
	// with no failure for this long starts afresh (default 15 minutes).
	Window time.Duration
	// MaxBackoff is the longest wait between attempts (default 1 minute).
	MaxBackoff time.Duration
	// AddressBackoffAfter is how many failures from one address, of any
	// names, are free (default 20).
	AddressBackoffAfter int
	// Tracked is how many names, and how many addresses, are remembered
	// at most (default 10,000 each).
	Tracked int
	// Off turns the limits off (benchmarks; never a server).
	Off bool
}

func (l LoginLimits) withDefaults() LoginLimits {
	if l.BackoffAfter <= 0 {
		l.BackoffAfter = 5
	}
	if l.LockAfter <= 0 {
		l.LockAfter = 10
	}
	if l.LockAfter < l.BackoffAfter {
		l.BackoffAfter = l.LockAfter
	}
	if l.LockFor <= 0 {
		l.LockFor = 15 * time.Minute
	}
	if l.Window <= 0 {
		l.Window = 15 * time.Minute
	}
	if l.MaxBackoff <= 0 {
		l.MaxBackoff = time.Minute
	}
	if l.AddressBackoffAfter <= 0 {
		l.AddressBackoffAfter = 20
	}
	if l.Tracked <= 0 {
		l.Tracked = 10000
	}
	return l
}

// ErrTooManyLogins is a login refused because its name or address failed
// too often of late; *LoginThrottledError says which and when to try
// again.
var ErrTooManyLogins = errors.New("too many failed logins")

// LoginThrottledError is a login (or a password change) refused without
// looking at the password: its name or its address is waiting out a
// back-off or a lock.
type LoginThrottledError struct {
	// Name is the user name refused ("" when the address is).
	Name string
	// Address is the remote address refused ("" when the name is).
	Address string
	// RetryAfter is when an attempt may be tried again.
	RetryAfter time.Duration
	// Locked says the name is locked (not just backing off).
	Locked bool
	// Locking says this attempt's failure locked the name: what the
	// audit log records.
	Locking bool
	// Failures is how many failures the name or address has counted.
	Failures int
	// lockedAt is when the lock began.
	lockedAt time.Time
}

func (e *LoginThrottledError) Error() string {
	switch {
	case e.Name == "":
		return fmt.Sprintf("%v from %s; try again in %s", ErrTooManyLogins, e.Address, waitText(e.RetryAfter))
	case e.Locked:
		return fmt.Sprintf("%v for %s: it is locked; try again in %s, or ask a cluster admin to unlock it (strand user unlock %s)",
			ErrTooManyLogins, e.Name, waitText(e.RetryAfter), e.Name)
	}
	return fmt.Sprintf("%v for %s; try again in %s", ErrTooManyLogins, e.Name, waitText(e.RetryAfter))
}

// Unwrap makes a LoginThrottledError match ErrTooManyLogins.
func (e *LoginThrottledError) Unwrap() error { return ErrTooManyLogins }

// waitText says a wait in whole seconds, rounded up: 30s, 2m, 14m59s.
func waitText(d time.Duration) string {
	s := int((d + time.Second - 1) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", max(s, 1))
	case s%60 == 0:
		return fmt.Sprintf("%dm", s/60)
	}
	return fmt.Sprintf("%dm%ds", s/60, s%60)
}

// attempts is what is remembered of a name or an address.
type attempts struct {
	failures    int
	last        time.Time // the last failure
	lockedUntil time.Time
	inflight    int // attempts being checked now
}

// limiter counts the failed logins of names and addresses.
type limiter struct {
	l     LoginLimits
	now   func() time.Time
	mu    sync.Mutex
	names map[string]*attempts
	addrs map[string]*attempts
}

func newLimiter(l LoginLimits, now func() time.Time) *limiter {
	return &limiter{l: l.withDefaults(), now: now, names: map[string]*attempts{}, addrs: map[string]*attempts{}}
}

// backoff is the wait after failures when free failures are allowed.
func (lm *limiter) backoff(failures, free int) time.Duration {
	if failures < free {
		return 0
	}
	d := 2 * time.Second
	for i := free; i < failures && d < lm.l.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, lm.l.MaxBackoff)
}

// wait returns how long a's next attempt must wait (locked: a lock), and
// forgets a's past when it is over.
func (lm *limiter) wait(a *attempts, free int, now time.Time) (time.Duration, bool) {
	if !a.lockedUntil.IsZero() {
		if now.Before(a.lockedUntil) {
			return a.lockedUntil.Sub(now), true
		}
		a.failures, a.lockedUntil = 0, time.Time{}
	}
	if a.failures > 0 && now.Sub(a.last) >= lm.l.Window {
		a.failures = 0
	}
	// Attempts in flight count as failures until they end: a burst in
	// parallel gets the free attempts and no more.
	if a.failures+a.inflight < free {
		return 0, false
	}
	if a.inflight > 0 {
		return lm.backoff(a.failures+a.inflight, free), false
	}
	if until := a.last.Add(lm.backoff(a.failures, free)); now.Before(until) {
		return until.Sub(now), false
	}
	return 0, false
}

// begin checks an attempt of name from addr; when it may go on it counts
// as in flight until done is called with how it ended.
func (lm *limiter) begin(name, addr string) (done func(ok bool) *LoginThrottledError, refused *LoginThrottledError) {
	if lm.l.Off {
		return func(bool) *LoginThrottledError { return nil }, nil
	}
	lm.mu.Lock()
	defer lm.mu.Unlock()
	now := lm.now()
	var a *attempts
	if addr != "" {
		a = lm.addrs[addr]
		if a != nil {
			if d, _ := lm.wait(a, lm.l.AddressBackoffAfter, now); d > 0 {
				return nil, &LoginThrottledError{Address: addr, RetryAfter: d, Failures: a.failures}
			}
		}
	}
	n := lm.names[name]
	if n != nil {
		if d, locked := lm.wait(n, lm.l.BackoffAfter, now); d > 0 {
			return nil, &LoginThrottledError{Name: name, RetryAfter: d, Locked: locked, Failures: n.failures, lockedAt: n.lockedUntil.Add(-lm.l.LockFor)}
		}
	}
	if addr != "" && a == nil {
		a = lm.add(lm.addrs, addr, now)
	}
	if n == nil {
		n = lm.add(lm.names, name, now)
	}
	if a != nil {
		a.inflight++
	}
	n.inflight++
	return func(ok bool) *LoginThrottledError {
		lm.mu.Lock()
		defer lm.mu.Unlock()
		t := lm.now()
		if a != nil {
			a.inflight--
			if !ok {
				a.failures++
				a.last = t
			}
		}
		n.inflight--
		if ok {
			n.failures, n.lockedUntil = 0, time.Time{}
			return nil
		}
		n.failures++
		n.last = t
		if n.failures >= lm.l.LockAfter && n.lockedUntil.IsZero() {
			n.lockedUntil = t.Add(lm.l.LockFor)
			return &LoginThrottledError{Name: name, RetryAfter: lm.l.LockFor, Locked: true, Locking: true, Failures: n.failures, lockedAt: t}
		}
		return nil
	}, nil
}

// add makes room for and adds an entry to m: when m is full it first lets
// go of entries whose failures are forgotten, then the oldest of those not
// locked, then the lock that ends first.
func (lm *limiter) add(m map[string]*attempts, key string, now time.Time) *attempts {
	if len(m) >= lm.l.Tracked {
		var oldest, firstLock string
		for k, a := range m {
			if a.inflight > 0 {
				continue
			}
			if a.lockedUntil.IsZero() && now.Sub(a.last) >= lm.l.Window || !a.lockedUntil.IsZero() && !now.Before(a.lockedUntil) {
				delete(m, k)
				continue
			}
			switch {
			case a.lockedUntil.IsZero() && (oldest == "" || a.last.Before(m[oldest].last)):
				oldest = k
			case !a.lockedUntil.IsZero() && (firstLock == "" || a.lockedUntil.Before(m[firstLock].lockedUntil)):
				firstLock = k
			}
		}
		if len(m) >= lm.l.Tracked {
			if oldest != "" {
				delete(m, oldest)
			} else if firstLock != "" {
				delete(m, firstLock)
			}
		}
	}
	a := &attempts{}
	m[key] = a
	return a
}

// unlock lifts a name's lock and back-off; it reports whether the name was
// locked or waiting.
func (lm *limiter) unlock(name string) bool {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	now := lm.now()
	a := lm.names[name]
	if a == nil {
		return false
	}
	d, _ := lm.wait(a, lm.l.BackoffAfter, now)
	a.failures, a.lockedUntil = 0, time.Time{}
	if a.inflight == 0 {
		delete(lm.names, name)
	}
	return d > 0
}

// size returns how many names and addresses are remembered.
func (lm *limiter) size() (names, addrs int) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return len(lm.names), len(lm.addrs)
}
