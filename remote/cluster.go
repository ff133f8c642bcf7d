package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandhq/strand/api"
)

// A Service made by NewCluster calls the nodes of a cluster. Any live node
// serves any call (a node forwards a call to the node that owns the run's
// shard, task answers included), so the Service chooses a node per
// attempt:
//
//   - a call about one workflow goes to the node that owns its shard, when
//     known (placement.go); any other call to the node that answered one
//     of them last, while it is up;
//   - a poll (of workflow tasks or of steps) goes to the live nodes in
//     turn, so that a worker's polls are spread over the cluster;
//   - a node that cannot be reached (refused, reset, EOF before the
//     answer, a failed connect) or answers 503 unavailable is marked down
//     for a back-off (250ms doubling up to 10s) and the call's next attempt
//     goes to another node at once; once the back-off passes the node is
//     tried again by the next call that comes (the probe), and an answer
//     marks it up;
//   - a node that hangs instead (paused, frozen: it accepts connections
//     and answers nothing) is found out while a call waits on it: its
//     /healthz is asked every second, and after two checks unanswered
//     within 2s the attempt is given up as the node's failure;
//   - when every node is down, the call waits its RetryPolicy's back-off
//     and tries the node coming back soonest.
//
// The RetryPolicy's rules on what is sent again hold across nodes: a call
// sent once (a start without a request id, creating a namespace…) is not
// sent to a second node when it may have reached the first. Only a failed
// connect proves that nothing was sent: such a call is tried on the next
// node (or, with one node, again on it) as a retry of a call that may be
// sent again.

// Down-time of a node that failed: doubling from nodeDownMin up to
// nodeDownMax with each failure in a row.
const (
	nodeDownMin = 250 * time.Millisecond
	nodeDownMax = 10 * time.Second
)

// node is one server a Service calls.
type node struct {
	url  string // as given, without a trailing slash; and its address if resolved
	base string // the URL as given + "/api/v1"
	// source is the URL given; client, when not nil, dials the address its
	// host name resolved to (Options.ResolveEvery).
	source string
	client *http.Client
	// streams are its task streams.
	streams nodeStreams
	// Guarded by nodes.mu.
	fails     int       // failures in a row
	downUntil time.Time // not chosen before (zero: up)
	lastOK    time.Time // its last answer
	lastHeard time.Time // its last answer or health check answered
	lastErr   error     // its last failure
	calls     int64     // attempts sent to it
	polls     int64     // of which polls
}

// nodes are the servers of a Service, and how they fare.
type nodes struct {
	mu   sync.Mutex
	list []*node
	pref *node // the node that answered last
	turn int   // the next poll's turn
}

// NodeStatus is how a node of a Service fares, as NodeStatuses reports.
type NodeStatus struct {
	// URL is the node's address, as given.
	URL string
	// Up: calls may go to it (it has not failed, or its back-off passed).
	Up bool
	// DownUntil is when a node marked down is tried again (zero: up).
	DownUntil time.Time
	// Failures counts its failures in a row.
	Failures int
	// LastAnswer is when it last answered a call (zero: never).
	LastAnswer time.Time
	// LastError is its last failure ("" if none).
	LastError string
	// Calls counts the attempts sent to it, Polls those that were polls.
	Calls, Polls int64
}

// NewCluster returns the service of a cluster whose nodes are at urls
// (http://host:port each; an entry may list several, comma-separated),
// configured by opts: a call goes to a live node and moves to another when
// one fails (see Service). A list without a URL, or one that is not
// http:// or https://, is refused with api.ErrInvalidArgument.
func NewCluster(urls []string, opts Options) (*Service, error) {
	list, err := ParseURLs(urls...)
	if err != nil {
		return nil, err
	}
	return newService(list, opts), nil
}

// ParseURLs splits and checks a list of node URLs, each entry possibly
// comma-separated, as the CLI's --server takes them: http:// or https://,
// a host, no query. It refuses an empty list with api.ErrInvalidArgument.
func ParseURLs(urls ...string) ([]string, error) {
	var out []string
	for _, entry := range urls {
		for _, u := range strings.Split(entry, ",") {
			u = strings.TrimRight(strings.TrimSpace(u), "/")
			if u == "" {
				continue
			}
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.RawQuery != "" {
				return nil, api.InvalidArgument("server", "%q: want http://HOST:PORT or https://HOST:PORT", u)
			}
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return nil, api.InvalidArgument("server", "no server URL given")
	}
	return out, nil
}

// URLs returns the servers s calls, as given.
func (s *Service) URLs() []string {
	out := make([]string, len(s.nodes.list))
	for i, n := range s.nodes.list {
		out[i] = n.url
	}
	return out
}

// NodeStatuses reports how each server s calls fares: up or down, its
// failures, its last answer.
func (s *Service) NodeStatuses() []NodeStatus {
	ns := &s.nodes
	ns.mu.Lock()
	defer ns.mu.Unlock()
	now := time.Now()
	out := make([]NodeStatus, len(ns.list))
	for i, n := range ns.list {
		st := NodeStatus{URL: n.url, Up: !now.Before(n.downUntil), Failures: n.fails, LastAnswer: n.lastOK, Calls: n.calls, Polls: n.polls}
		if !st.Up {
			st.DownUntil = n.downUntil
		}
		if n.lastErr != nil {
			st.LastError = n.lastErr.Error()
		}
		out[i] = st
	}
	return out
}

// count returns how many nodes there are now.
func (ns *nodes) count() int {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return len(ns.list)
}

// pick chooses the node of an attempt: for a poll the next live node in
// turn, else the node that answered last while it is up, else the live
// node that answered most recently; when none is up, the one coming back
// soonest. The nodes in skip (those the call just failed on) are chosen
// only when every other is down too. prefer, when set and up, is chosen.
func (ns *nodes) pick(poll bool, skip map[*node]bool, prefer *node) *node {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var n *node
	switch {
	case len(ns.list) == 1:
		n = ns.list[0]
	case prefer != nil && !skip[prefer] && !time.Now().Before(prefer.downUntil) && slices.Contains(ns.list, prefer):
		n = prefer
	default:
		now := time.Now()
		var up []*node
		for _, c := range ns.list {
			if !skip[c] && !now.Before(c.downUntil) {
				up = append(up, c)
			}
		}
		switch {
		case len(up) == 0:
			for _, c := range ns.list {
				if n == nil || skip[n] && !skip[c] || skip[n] == skip[c] && c.downUntil.Before(n.downUntil) {
					n = c
				}
			}
		case poll:
			n = up[ns.turn%len(up)]
			ns.turn++
		default:
			for _, c := range up {
				if c == ns.pref {
					n = c
					break
				}
				if n == nil || c.lastOK.After(n.lastOK) {
					n = c
				}
			}
		}
	}
	n.calls++
	if poll {
		n.polls++
	}
	return n
}

// untriedUp reports whether a node up now is not among tried.
func (ns *nodes) untriedUp(tried map[*node]bool) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	now := time.Now()
	for _, c := range ns.list {
		if !tried[c] && !now.Before(c.downUntil) {
			return true
		}
	}
	return false
}

// answered marks n up: it answered a call; prefer makes it the node
// that calls go to while it is up.
func (ns *nodes) answered(n *node, prefer bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	n.fails, n.downUntil, n.lastOK, n.lastHeard = 0, time.Time{}, time.Now(), time.Now()
	if prefer {
		ns.pref = n
	}
}

// failed marks n down for a back-off that doubles with its failures in a
// row: it could not be reached, or said it is unavailable.
func (ns *nodes) failed(n *node, err error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	n.fails++
	d := nodeDownMin
	for i := 1; i < n.fails && d < nodeDownMax; i++ {
		d *= 2
	}
	n.downUntil, n.lastErr = time.Now().Add(min(d, nodeDownMax)), err
	if ns.pref == n {
		ns.pref = nil
	}
}

// notSent reports whether err, the failure of sending a request, proves
// that nothing reached the server: the connection was never made (refused,
// no route, the name did not resolve, the connect timed out).
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// resolver resolves the host names of a Service's URLs now and then
// (Options.ResolveEvery).
type resolver struct {
	every     time.Duration
	lookup    func(ctx context.Context, host string) ([]string, error)
	transport *http.Transport // cloned per address
	busy      atomic.Bool     // a resolution runs
	last      time.Time       // guarded by nodes.mu
	sources   []string        // the URLs given; guarded by nodes.mu
}

// resolveTimeout bounds a resolution of the nodes' names.
const resolveTimeout = 2 * time.Second

// refresh resolves the host names of the URLs s was given when
// ResolveEvery has passed since the last time, and makes each address a
// node: those still named keep how they fare, those no longer named are
// dropped. A name that does not resolve keeps its nodes. The call that
// finds it due does it, bounded by resolveTimeout; the calls meanwhile go
// on with the nodes as they are.
func (s *Service) refresh(ctx context.Context) {
	r := s.resolve
	if r == nil {
		return
	}
	ns := &s.nodes
	ns.mu.Lock()
	if r.sources == nil {
		for _, n := range ns.list {
			r.sources = append(r.sources, n.source)
		}
	}
	due := time.Since(r.last) >= r.every
	sources := r.sources
	ns.mu.Unlock()
	if !due || !r.busy.CompareAndSwap(false, true) {
		return
	}
	defer r.busy.Store(false)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	type found struct {
		source string
		addrs  []string // nil: keep its nodes
	}
	var all []found
	for _, src := range sources {
		u, err := url.Parse(src)
		if err != nil {
			continue
		}
		host := u.Hostname()
		if net.ParseIP(host) != nil {
			all = append(all, found{src, []string{""}}) // an address: the URL as given
			continue
		}
		addrs, err := r.lookup(ctx, host)
		if err != nil || len(addrs) == 0 {
			s.log.WarnContext(ctx, "remote: the nodes' name did not resolve; its nodes stay as they were", "url", src, "err", err)
			all = append(all, found{source: src})
			continue
		}
		all = append(all, found{src, addrs})
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	r.last = time.Now()
	old := map[string]*node{}
	for _, n := range ns.list {
		old[n.url] = n
	}
	var list []*node
	for _, f := range all {
		if f.addrs == nil {
			for _, n := range ns.list {
				if n.source == f.source {
					list = append(list, n)
				}
			}
			continue
		}
		for _, a := range f.addrs {
			key := f.source
			if a != "" {
				key += " (" + a + ")"
			}
			if n := old[key]; n != nil {
				list = append(list, n)
				continue
			}
			list = append(list, r.newNode(f.source, a, key))
		}
	}
	if len(list) == 0 {
		return
	}
	if ns.pref != nil && !slices.Contains(list, ns.pref) {
		ns.pref = nil
	}
	ns.list = list
}

// newNode is the node of the address addr ("": none, the URL as given)
// that src's host name resolved to.
func (r *resolver) newNode(src, addr, key string) *node {
	n := &node{url: key, base: src + "/api/v1", source: src}
	if addr == "" {
		return n
	}
	port := "80"
	if u, err := url.Parse(src); err == nil {
		if p := u.Port(); p != "" {
			port = p
		} else if u.Scheme == "https" {
			port = "443"
		}
	}
	target := net.JoinHostPort(addr, port)
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := r.transport.Clone()
	// The request keeps the name (its Host header, the name TLS checks);
	// the connection goes to this address.
	t.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, target)
	}
	n.client = &http.Client{Transport: t}
	return n
}

// A node of a cluster may hang rather than refuse (a paused process, a
// frozen VM: the kernel still accepts connections), and a long poll's
// answer is long in coming anyway. So while an attempt on a node of a
// cluster waits for its answer, its node's /healthz is asked every
// probeEvery (unless it answered something within probeEvery), each within
// probeTimeout; when probeMisses checks in a row
// go unanswered the attempt is given up as a failure of the node (marked
// down; a call that may be sent again moves to another node).
const (
	probeEvery   = time.Second
	probeTimeout = 2 * time.Second
	probeMisses  = 2
)

// errSilent is the cause of an attempt given up because its node stopped
// answering its health checks.
var errSilent = errors.New("the node stopped answering its health checks")

// watch returns the context of an attempt on node n, and stops watching
// it. For a Service of a cluster, a watcher owned by the attempt checks
// n's health while the attempt lasts (see probeEvery), and ends the
// attempt's context with errSilent if n stops answering.
func (s *Service) watch(ctx context.Context, n *node) (context.Context, func()) {
	if !s.cluster {
		return ctx, func() {}
	}
	actx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.probeEvery)
		defer t.Stop()
		misses := 0
		for {
			select {
			case <-done:
				return
			case <-actx.Done():
				return
			case <-t.C:
			}
			if s.nodes.heardWithin(n, s.probeEvery) || s.healthy(actx, n) {
				// The watchers of a node's attempts share what they heard:
				// one check a second, however many polls wait on it.
				misses = 0
				continue
			}
			if actx.Err() != nil {
				return
			}
			if misses++; misses >= probeMisses {
				cancel(errSilent)
				return
			}
		}
	})
	return actx, func() {
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// healthy reports whether n answers its /healthz within probeTimeout.
func (s *Service) healthy(ctx context.Context, n *node) bool {
	ctx, cancel := context.WithTimeout(ctx, s.probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(n.base, "/api/v1")+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := s.clientOf(n).Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	s.nodes.mu.Lock()
	n.lastHeard = time.Now()
	s.nodes.mu.Unlock()
	return true
}

// clientOf is the HTTP client that reaches n: its own when its host name
// was resolved to an address of its own (Options.ResolveEvery).
func (s *Service) clientOf(n *node) *http.Client {
	if n.client != nil {
		return n.client
	}
	return s.http
}

// heard notes that n answered something.
func (ns *nodes) heard(n *node) {
	ns.mu.Lock()
	n.lastHeard = time.Now()
	ns.mu.Unlock()
}

// heardWithin reports whether n answered within d.
func (ns *nodes) heardWithin(n *node, d time.Duration) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return time.Since(n.lastHeard) < d
}

// silent is the attempt on n given up because n stopped answering its
// health checks (ok false: it was not).
func silent(actx context.Context, n *node) (attempt, bool) {
	if context.Cause(actx) != errSilent {
		return attempt{}, false
	}
	return attempt{err: fmt.Errorf("%w: %s: %v", api.ErrUnavailable, n.url, errSilent), transient: true, nodeDown: true}, true
}
