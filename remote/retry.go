package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// RetryPolicy says how a Service retries a call that failed for a reason
// that passes: the server could not be reached or dropped the connection
// (refused, reset, EOF: it is down or restarting), answered 503
// unavailable (it is starting, or its shards are moving), 429 (too many
// polls), 502 or 504 (a timeout, or a proxy in front of it). A query is
// not sent again after the server's own 504: it waited its deadline for
// an answer, and would wait as long again.
//
// Only a call that may reach the server twice without a second effect is
// retried (on another node of a cluster when its node failed: see
// NewCluster): reads, polls, the calls that carry a task token (completing,
// failing or heartbeating a step or a workflow task, answering a query:
// a second delivery is answered task_not_found, never applied twice), and
// start, signal, signal-with-start, cancel and terminate when they carry a
// request id. Without one those are sent once, unless the connection was
// never made (refused, a failed connect: nothing was sent). So are creating and updating
// a namespace, whose second delivery would answer already_exists or
// conflict, and every call one node forwards to another: the engine's
// routing retries those itself, and first finds the shard's owner again,
// which a retry here cannot. A client mistake (any other 4xx) is never
// retried.
//
// Back-off doubles from Initial up to Max with equal jitter: the wait
// before retry n is d/2 plus a random part of up to d/2, where d is
// Initial·2ⁿ⁻¹ capped at Max. Half of it is certain, so a crowd of workers
// coming back after a restart keeps a floor under its rate, and the other
// half spreads them out. A Retry-After the server sends with a 429 or a 503
// (seconds or an HTTP date) is honoured when longer, up to 30 s.
//
// Retries go on until the call's context ends, unless MaxAttempts or
// MaxElapsed say otherwise. The zero value is the default policy.
type RetryPolicy struct {
	// Initial is the first back-off (default 50ms).
	Initial time.Duration
	// Max caps the back-off (default 2s).
	Max time.Duration
	// MaxAttempts bounds the attempts of one call, the first included: 1
	// turns retries off; 0 means no bound (until the context ends).
	MaxAttempts int
	// MaxElapsed bounds how long a call is retried: no retry starts later
	// than this after its first failure (counted from the failure, so a long
	// poll that fails late still gets its retries); 0 means no bound (until
	// the context ends).
	MaxElapsed time.Duration
}

// Defaults of RetryPolicy, and the longest Retry-After honoured.
const (
	DefaultRetryInitial = 50 * time.Millisecond
	DefaultRetryMax     = 2 * time.Second
	maxRetryAfter       = 30 * time.Second
)

// withDefaults fills in what p leaves zero (or negative).
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Initial <= 0 {
		p.Initial = DefaultRetryInitial
	}
	if p.Max <= 0 {
		p.Max = DefaultRetryMax
	}
	p.Max = max(p.Max, p.Initial)
	return p
}

// backoff is the wait before retry n (1 for the first), with equal jitter;
// rnd(k) returns a number in [0, k).
func (p RetryPolicy) backoff(n int, rnd func(int64) int64) time.Duration {
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	half := d / 2
	return half + time.Duration(rnd(int64(d-half)+1))
}

// resend says whether a call may reach the server twice without a second
// effect, so that a transient failure may be retried.
type resend int8

const (
	sendOnce   resend = iota
	idempotent        // retried on every transient failure
	// exceptTimeouts: retried, but not when the server itself says the call
	// ran out of time (504 timeout): a query that waited its deadline for
	// an answer would only wait as long again.
	exceptTimeouts
	// forwarded: a call one node forwards to another, never sent again
	// (not even when the connect failed): the engine's routing retries it
	// after finding the shard's owner again.
	forwarded
)

// attempt is the outcome of one try of a call.
type attempt struct {
	ok  bool  // the answer had a body (not 204)
	err error // nil on success
	// transient: err may pass; retryAfter is what the server asked for.
	transient  bool
	retryAfter time.Duration
	// ended: the call's context ended during the attempt.
	ended bool
	// timedOut: the server answered that the call ran out of time.
	timedOut bool
	// nodeDown: the failure is the node's (it could not be reached, or
	// answered 503 unavailable): the next attempt goes to another node.
	nodeDown bool
	// notSent: the connection was never made, so nothing reached the
	// node: even a call sent once may be tried again.
	notSent bool
}

// transientStatus reports whether an HTTP status says the failure may pass.
func transientStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// transportError reports whether err, met while reading an answer, is the
// connection failing rather than a malformed answer.
func transportError(err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.As(err, &ne)
}

// retryAfter parses a Retry-After header (seconds or an HTTP date), capped
// at maxRetryAfter; 0 when absent, malformed or past.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(h); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// retry runs try, on the node it is given, until it succeeds, fails for
// good, or the policy or ctx says to stop; what names the call in errors
// and logs, poll says it is a poll (spread over the nodes). An attempt that
// failed on a node that is down is tried at once on another node that is
// up and was not tried since the last wait; when none is left, the
// back-off is waited (so the back-off's count is that of the waits).
func (s *Service) retry(ctx context.Context, may resend, poll bool, what string, try func(*node) attempt) (bool, error) {
	return s.retryOn(ctx, may, poll, nil, what, try)
}

// retryOn is retry whose first attempt goes to node first when it is
// set and up; its answer does not make first the node later calls go to.
func (s *Service) retryOn(ctx context.Context, may resend, poll bool, first *node, what string, try func(*node) attempt) (bool, error) {
	s.refresh(ctx)
	p := s.policy
	var failing time.Time // since the first failure
	var last attempt
	tried := map[*node]bool{} // failed on since the last wait
	used := map[*node]bool{}  // every node the call went to
	waits := 0
	routed := first // a call sent to the run's owner (placement.go)
	for n := 1; ; n++ {
		nd := s.nodes.pick(poll, tried, first)
		first = nil
		a := try(nd)
		used[nd] = true
		if n == 1 {
			failing = time.Now()
		}
		if a.ended && last.err != nil {
			return false, s.gaveUp(ctx, what+s.onNodes(used), n, last.err)
		}
		switch {
		case a.ended:
		case a.nodeDown:
			s.nodes.failed(nd, a.err)
		default:
			s.nodes.answered(nd, nd != routed)
		}
		if a.err == nil || !a.transient {
			return a.ok, a.err
		}
		last = a
		if (may == sendOnce && !a.notSent) || may == forwarded || (may == exceptTimeouts && a.timedOut) || (p.MaxAttempts > 0 && n >= p.MaxAttempts) {
			if n > 1 {
				return false, fmt.Errorf("remote: %s: gave up after %d attempts%s: %w", what, n, s.onNodes(used), a.err)
			}
			return false, a.err
		}
		if a.nodeDown {
			tried[nd] = true
			if s.nodes.untriedUp(tried) {
				s.log.DebugContext(ctx, "remote: trying another node", "call", what, "attempt", n, "node", nd.url, "err", a.err)
				continue
			}
		}
		// After the wait, the node that failed last is still avoided while
		// another is up: keep only it.
		clear(tried)
		if a.nodeDown {
			tried[nd] = true
		}
		waits++
		wait := max(p.backoff(waits, s.rnd), a.retryAfter)
		if p.MaxElapsed > 0 && time.Since(failing)+wait > p.MaxElapsed {
			return false, fmt.Errorf("remote: %s: gave up after %d attempts%s in %s: %w", what, n, s.onNodes(used), time.Since(failing).Round(time.Millisecond), a.err)
		}
		s.log.DebugContext(ctx, "remote: retrying", "call", what, "attempt", n, "wait", wait, "err", a.err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, s.gaveUp(ctx, what+s.onNodes(used), n, a.err)
		case <-t.C:
		}
	}
}

// onNodes says, for a cluster, on how many of its nodes a call was tried:
// " on 2 of 3 nodes" ("" for one server).
func (s *Service) onNodes(used map[*node]bool) string {
	if len(s.nodes.list) == 1 {
		return ""
	}
	return fmt.Sprintf(" on %d of %d nodes", len(used), len(s.nodes.list))
}

// gaveUp is the error of a call whose context ended while it was being
// retried: it matches both the context's error and the last failure's (so
// errors.Is(err, api.ErrUnavailable) holds).
func (s *Service) gaveUp(ctx context.Context, what string, attempts int, last error) error {
	return fmt.Errorf("remote: %s: gave up after %d attempts, the context ended (%w); the last failure: %w", what, attempts, context.Cause(ctx), last)
}
