package server

import (
	"container/list"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of IdleConnsOptions. A client that keeps connections opens new
// ones only when all it keeps are busy, so it holds few idle at once: 32
// is far more than one client process holds idle for long, while a
// client that opens hundreds to hold them gets only 32. The grace lets a
// busy client (a worker whose polls answer and start again) reuse its
// connections without losing any to the cap.
const (
	DefaultMaxIdleConnsPerAddress = 32
	DefaultIdleConnGrace          = time.Second
)

// IdleConnsOptions configure NewIdleConns.
type IdleConnsOptions struct {
	// MaxPerAddress is how many idle keep-alive connections one remote
	// address may hold (an IPv6 address counts by its /64, what one host
	// is given). Beyond it, the one idle the longest is closed once it has
	// been idle for Grace. 0 or less: no cap.
	MaxPerAddress int
	// Grace is how long a connection beyond the cap may stay idle (default
	// DefaultIdleConnGrace; negative: none, closed at once).
	Grace time.Duration
}

// IdleConns caps the idle keep-alive connections each remote address holds
// on an http.Server: serve on its Listener (under TLS, if any) and set its
// ConnState as the server's ConnState. Active connections (a request being
// read or answered: a long poll, a stream) are never counted nor closed;
// an idle one is waiting for its client's next request. A connection is
// closed only while no byte of a next request has come: a request that
// meets the close was not read, so not carried out, and its client sees
// the connection closed (Go's transport sends it again on a new one when
// nothing of it was written, as browsers do; the remote client retries a
// call that is safe to repeat).
//
// Close stops its timer.
type IdleConns struct {
	max   int
	grace time.Duration

	mu     sync.Mutex
	idle   map[*trackedConn]*list.Element // of *idleConn
	addrs  map[netip.Prefix]*list.List
	over   map[netip.Prefix]bool // addresses above the cap
	timer  *time.Timer           // armed while an address is over the cap
	due    time.Time             // when timer fires (zero: not armed)
	count  int                   // idle connections
	closed int64                 // connections closed for the cap
	done   bool
}

// idleConn is one idle connection: since when, and from where.
type idleConn struct {
	conn  *trackedConn
	addr  netip.Prefix
	since time.Time
}

// NewIdleConns returns a tracker of idle connections that keeps each
// remote address within opts.MaxPerAddress.
func NewIdleConns(opts IdleConnsOptions) *IdleConns {
	if opts.Grace == 0 {
		opts.Grace = DefaultIdleConnGrace
	}
	return &IdleConns{max: opts.MaxPerAddress, grace: max(opts.Grace, 0), idle: map[*trackedConn]*list.Element{},
		addrs: map[netip.Prefix]*list.List{}, over: map[netip.Prefix]bool{}}
}

// Metrics are the gauge strand_api_idle_connections (Idle) and the counter
// strand_api_idle_connections_closed_total (Closed), to register.
func (c *IdleConns) Metrics() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_api_idle_connections",
			Help: "Keep-alive connections waiting for their client's next request (counted when capped per address)."},
			func() float64 { return float64(c.Idle()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strand_api_idle_connections_closed_total",
			Help: "Idle keep-alive connections closed because their client's address held more than the cap."},
			func() float64 { return float64(c.Closed()) }),
	}
}

// Idle is the number of idle connections.
func (c *IdleConns) Idle() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// Closed is the number of connections closed because their address held
// more idle ones than the cap.
func (c *IdleConns) Closed() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close stops closing connections (the server is shutting down).
func (c *IdleConns) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// Listener returns ln, its connections watched for the cap (a connection
// accepted elsewhere is not capped).
func (c *IdleConns) Listener(ln net.Listener) net.Listener {
	if c.max <= 0 {
		return ln
	}
	return &listener{ln}
}

// ConnState is the http.Server's ConnState hook.
func (c *IdleConns) ConnState(nc net.Conn, state http.ConnState) {
	if c.max <= 0 {
		return
	}
	conn := tracked(nc)
	if conn == nil {
		return
	}
	var surplus []*trackedConn
	c.mu.Lock()
	switch state {
	case http.StateIdle:
		if _, ok := c.idle[conn]; ok || c.done {
			break
		}
		addr, ok := addressOf(nc)
		if !ok {
			break
		}
		if tc, isTLS := nc.(*tls.Conn); isTLS && tc.ConnectionState().NegotiatedProtocol == "h2" {
			conn.mu.Lock()
			conn.h2 = true
			conn.mu.Unlock()
		}
		l := c.addrs[addr]
		if l == nil {
			l = list.New()
			c.addrs[addr] = l
		}
		c.idle[conn] = l.PushBack(&idleConn{conn: conn, addr: addr, since: time.Now()})
		c.count++
		if l.Len() > c.max {
			c.over[addr] = true
			surplus = c.sweepLocked(time.Now())
		}
	case http.StateActive, http.StateHijacked, http.StateClosed:
		c.forgetLocked(conn)
	}
	c.mu.Unlock()
	closeAll(surplus)
}

// forgetLocked drops conn from the idle ones (it is busy or gone).
func (c *IdleConns) forgetLocked(conn *trackedConn) {
	e, ok := c.idle[conn]
	if !ok {
		return
	}
	ic := e.Value.(*idleConn)
	l := c.addrs[ic.addr]
	l.Remove(e)
	delete(c.idle, conn)
	c.count--
	switch {
	case l.Len() == 0:
		delete(c.addrs, ic.addr)
		delete(c.over, ic.addr)
	case l.Len() <= c.max:
		delete(c.over, ic.addr)
	}
}

// sweepLocked closes the connections due at now: of each address over
// the cap, the longest idle ones beyond it that have been idle for the
// grace and have not begun to receive a request. It arms the timer for the
// next one due.
func (c *IdleConns) sweepLocked(now time.Time) []*trackedConn {
	var surplus []*trackedConn
	var next time.Time
	for addr := range c.over {
		l := c.addrs[addr]
		for e := l.Front(); e != nil && l.Len() > c.max; {
			ic := e.Value.(*idleConn)
			e = e.Next()
			if due := ic.since.Add(c.grace); due.After(now) {
				if next.IsZero() || due.Before(next) {
					next = due
				}
				break
			}
			if !ic.conn.cut(now) {
				if ic.conn.h2 {
					// Not quiet yet: look again when it may be.
					if due := now.Add(h2Quiet); next.IsZero() || due.Before(next) {
						next = due
					}
				}
				continue // or a request is coming in: it turns active
			}
			surplus = append(surplus, ic.conn)
			c.forgetLocked(ic.conn)
			c.closed++
		}
	}
	if !next.IsZero() && (c.due.IsZero() || next.Before(c.due) || !c.due.After(now)) {
		c.due = next
		if c.timer == nil {
			c.timer = time.AfterFunc(next.Sub(now), c.fire)
		} else {
			c.timer.Reset(next.Sub(now))
		}
	}
	return surplus
}

// fire is the timer's: it closes what is due and rearms.
func (c *IdleConns) fire() {
	c.mu.Lock()
	var surplus []*trackedConn
	if !c.done {
		c.due = time.Time{}
		surplus = c.sweepLocked(time.Now())
	}
	c.mu.Unlock()
	closeAll(surplus)
}

// closeAll closes connections cut off (their TCP connection: under TLS,
// no close alert is written to a client that may not read it).
func closeAll(conns []*trackedConn) {
	for _, conn := range conns {
		conn.Conn.Close()
	}
}

// listener wraps the connections it accepts in trackedConn.
type listener struct{ net.Listener }

// Accept implements net.Listener.
func (l *listener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trackedConn{Conn: conn}, nil
}

// trackedConn is an accepted connection that tells whether a request may
// have begun to come on it, so that an idle connection is closed only
// before its next request, never after: over HTTP/1, when it received
// anything since it last sent (its answer); over HTTP/2, whose frames come
// and go while it is idle, when it received anything within h2Quiet (a
// request's frame is handled, and the connection active, long before).
type trackedConn struct {
	net.Conn
	mu       sync.Mutex
	heard    bool      // bytes were read since the last write
	lastRead time.Time // when bytes were last read
	h2       bool      // HTTP/2
	closing  bool      // cut off: what a read brings is dropped
}

// h2Quiet is how long nothing must have come on an idle HTTP/2 connection
// before it may be closed.
const h2Quiet = time.Second

// Read implements net.Conn: once the connection is cut off, what came
// with the read is dropped (the server never sees a request it would
// answer on a closed connection).
func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return 0, net.ErrClosed
	}
	if n > 0 {
		c.heard, c.lastRead = true, time.Now()
	}
	return n, err
}

// Write implements net.Conn.
func (c *trackedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.mu.Lock()
		c.heard = false
		c.mu.Unlock()
	}
	return n, err
}

// CloseWrite half-closes the connection, as net/http does before closing
// one it answered with an error.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// cut marks the connection cut off unless a request began to come since
// its last answer; the caller then closes it.
func (c *trackedConn) cut(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h2 && now.Sub(c.lastRead) < h2Quiet || !c.h2 && c.heard {
		return false
	}
	c.closing = true
	return true
}

// tracked is the trackedConn under what the server was given (a TLS
// connection over it), or nil.
func tracked(conn net.Conn) *trackedConn {
	for {
		switch c := conn.(type) {
		case *trackedConn:
			return c
		case interface{ NetConn() net.Conn }:
			conn = c.NetConn()
		default:
			return nil
		}
	}
}

// addressOf is what a connection's remote address counts as: its IP, or
// the /64 of an IPv6 address.
func addressOf(conn net.Conn) (netip.Prefix, bool) {
	ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err != nil {
		return netip.Prefix{}, false
	}
	ip := ap.Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, err := ip.WithZone("").Prefix(bits)
	return p, err == nil
}
