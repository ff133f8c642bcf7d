package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/server"
)

// Task streams. The exchanges of a Service's workers go on a task stream
// to the node the call picked (one stream per node and namespace, opened
// when first needed): a WebSocket that carries many exchanges at once,
// each without a request of its own (see server.StreamFrame). A node that
// has no task streams (a server from before them), or whose stream cannot
// be opened, gets its exchanges POSTed, as with Options.PostedExchanges.
// A stream that breaks fails the exchanges in flight on it as a broken
// connection fails a request: the Service's retry policy sends them again
// (a report delivered twice changes nothing).

// Limits of task streams.
const (
	// streamIdle is how long a stream with no exchange in flight is kept.
	streamIdle = time.Minute
	// cancelGrace is how long an exchange given up (its poll left) waits
	// for the server's answer to the cancel: the tasks it took by then
	// are kept for the next poll rather than left to time out.
	cancelGrace = 2 * time.Second
	// streamWriteTimeout bounds writing one message of a stream; past it
	// the stream is taken as broken.
	streamWriteTimeout = 30 * time.Second
	// Back-offs before a node is asked for a stream again: after it
	// refused one (no such route), and after it could not be reached.
	noStreamsFor   = time.Minute
	streamRetryFor = time.Second
)

// errStreamIdle closes a stream no exchange used for streamIdle.
var errStreamIdle = errors.New("idle")

// nodeStreams are a node's task streams, by namespace.
type nodeStreams struct {
	mu      sync.Mutex
	open    map[string]*taskStream
	noUntil time.Time // none is opened before (the node refused, or failed)
	closed  bool      // the Service was closed: none is opened
}

// taskStream is one open task stream. Its reader and writer goroutines end
// when it breaks or closes (idle for streamIdle, or its node failed).
type taskStream struct {
	conn *websocket.Conn
	home *nodeStreams
	key  string // its namespace in home
	// heard notes that the node answered something.
	heard func()
	wake  chan struct{} // a signal to the writer

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan streamResult
	out     []streamRequest // not written yet
	broken  error           // set once: the stream is done
	idle    *time.Timer     // armed while nothing is pending
}

// streamRequest is server.StreamRequest with its exchange encoded already.
type streamRequest struct {
	id       uint64
	cancel   bool
	exchange []byte
}

// appendFrame appends the server.StreamFrame of reqs to b: the exchanges
// as they were encoded, not encoded (and checked) again.
func appendFrame(b []byte, reqs []streamRequest) []byte {
	b = append(b, `{"requests":[`...)
	for i, r := range reqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(append(b, `{"id":`...), r.id, 10)
		if r.cancel {
			b = append(b, `,"cancel":true`...)
		} else {
			b = append(append(b, `,"exchange":`...), r.exchange...)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// streamResult is the answer of an exchange, or the stream's failure.
type streamResult struct {
	answer server.StreamAnswer
	err    error
}

// sendExchange sends a task exchange of namespace, on a task stream of
// the node the call picks (to, when set and up) or POSTed, with the
// Service's retries; from is the node that answered.
func (s *Service) sendExchange(ctx context.Context, wait bool, namespace string, req server.Exchange, out *server.ExchangeAnswer, to *node) (from *node, err error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("remote: encode task exchange: %w", err)
	}
	path := "/namespaces/" + ns(namespace) + "/task-exchange"
	_, err = s.retryOn(ctx, idempotent, wait, to, "POST "+path, func(n *node) attempt {
		from = n
		if !s.postExchanges {
			if st := s.streamOf(ctx, n, namespace); st != nil {
				if a, sent := s.onStream(ctx, n, st, body, out); sent {
					return a
				}
			}
		}
		*out = server.ExchangeAnswer{}
		return s.once(ctx, n, "POST", path, body, out)
	})
	return from, err
}

// errServiceClosed ends the task streams of a closed Service.
var errServiceClosed = errors.New("the service was closed")

// Close ends the Service's task streams, and their goroutines with them;
// a stream would otherwise last until idle for streamIdle. Exchanges in
// flight on them fail and are sent again as requests of their own, as is
// every later exchange; other calls go on as before.
func (s *Service) Close() error {
	s.nodes.mu.Lock()
	list := slices.Clone(s.nodes.list)
	s.nodes.mu.Unlock()
	for _, n := range list {
		home := &n.streams
		home.mu.Lock()
		home.closed = true
		open := slices.Collect(maps.Values(home.open))
		home.mu.Unlock()
		for _, st := range open {
			st.fail(errServiceClosed)
		}
	}
	return nil
}

// streamOf returns n's open task stream of namespace, opening one when
// there is none; nil when n has none to offer now.
func (s *Service) streamOf(ctx context.Context, n *node, namespace string) *taskStream {
	home := &n.streams
	home.mu.Lock()
	defer home.mu.Unlock() // callers wait while one opens the stream: it is quick, or fails
	if st := home.open[namespace]; st != nil {
		return st
	}
	if home.closed || time.Now().Before(home.noUntil) {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	header := http.Header{}
	if s.auth != "" {
		header.Set("Authorization", s.auth)
	}
	conn, resp, err := websocket.Dial(dctx, n.base+"/namespaces/"+ns(namespace)+"/task-stream",
		&websocket.DialOptions{HTTPClient: s.clientOf(n), HTTPHeader: header, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		wait := streamRetryFor
		if resp != nil && resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests {
			wait = noStreamsFor // the node answered, with no stream: its exchanges are POSTed
		}
		home.noUntil = time.Now().Add(wait)
		s.log.DebugContext(ctx, "remote: no task stream; exchanges are posted", "node", n.url, "err", err)
		return nil
	}
	conn.SetReadLimit(1 << 30) // the server bounds what it sends
	st := &taskStream{conn: conn, home: home, key: namespace, heard: func() { s.nodes.heard(n) },
		wake: make(chan struct{}, 1), pending: map[uint64]chan streamResult{}}
	if home.open == nil {
		home.open = map[string]*taskStream{}
	}
	home.open[namespace] = st
	st.idle = time.AfterFunc(streamIdle, st.closeIfIdle)
	go st.read()
	go st.write()
	return st
}

// onStream sends one exchange (body, encoded) on st and waits for its
// answer into out; sent is false when st broke before the exchange went
// in it (the caller posts it instead).
func (s *Service) onStream(ctx context.Context, n *node, st *taskStream, body []byte, out *server.ExchangeAnswer) (a attempt, sent bool) {
	id, ch, ok := st.send(body)
	if !ok {
		return attempt{}, false
	}
	actx, stop := s.watch(ctx, n)
	defer stop()
	select {
	case r := <-ch:
		a := r.attempt(n, out)
		if a.nodeDown {
			// The node said it is unavailable (a shard moving, an engine
			// closing): the next attempt opens a new stream, to whichever
			// node serves then.
			st.fail(a.err)
		}
		return a, true
	case <-actx.Done():
	}
	if a, ok := silent(actx, n); ok {
		st.fail(a.err) // a frozen node: its stream too
		return a, true
	}
	// The caller left: the server ends the exchange and answers with the
	// tasks it took, kept for the next poll.
	st.cancel(id)
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case r := <-ch:
		if a := r.attempt(n, out); a.ok {
			return a, true
		}
	case <-t.C:
		st.forget(id)
	}
	return attempt{err: ctx.Err(), ended: true}, true
}

// attempt is the attempt r was, its answer decoded into out.
func (r streamResult) attempt(n *node, out *server.ExchangeAnswer) attempt {
	switch {
	case r.err != nil:
		return attempt{err: fmt.Errorf("%w: remote: task stream to %s: %v", api.ErrUnavailable, n.url, r.err), transient: true, nodeDown: true}
	case r.answer.Error != nil || r.answer.Status >= 300:
		var e server.Error
		if r.answer.Error != nil {
			e = *r.answer.Error
		}
		return refused("task exchange on a stream", r.answer.Status, r.answer.RetryAfter, e)
	case r.answer.Answer != nil:
		*out = *r.answer.Answer
	}
	return attempt{ok: true}
}

// send queues an exchange for the writer; ok is false when st is broken.
func (st *taskStream) send(body []byte) (id uint64, ch chan streamResult, ok bool) {
	ch = make(chan streamResult, 1)
	st.mu.Lock()
	if st.broken != nil {
		st.mu.Unlock()
		return 0, nil, false
	}
	st.nextID++
	id = st.nextID
	st.pending[id] = ch
	st.idle.Stop()
	st.out = append(st.out, streamRequest{id: id, exchange: body})
	st.mu.Unlock()
	st.signal()
	return id, ch, true
}

// cancel asks the server to end exchange id now.
func (st *taskStream) cancel(id uint64) {
	st.mu.Lock()
	if st.broken == nil {
		st.out = append(st.out, streamRequest{id: id, cancel: true})
	}
	st.mu.Unlock()
	st.signal()
}

// forget drops exchange id, whose answer no one waits for.
func (st *taskStream) forget(id uint64) {
	st.mu.Lock()
	delete(st.pending, id)
	st.armIdle()
	st.mu.Unlock()
}

// armIdle arms the idle timer once nothing is pending; st.mu is held.
func (st *taskStream) armIdle() {
	if len(st.pending) == 0 && st.broken == nil {
		st.idle.Reset(streamIdle)
	}
}

func (st *taskStream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// closeIfIdle closes st if nothing is in flight on it.
func (st *taskStream) closeIfIdle() { st.end(errStreamIdle, true) }

// fail ends st: the exchanges in flight fail with err (sent again by
// their callers' retries), its node opens a new one when next asked.
func (st *taskStream) fail(err error) { st.end(err, false) }

// end ends st with err, unless onlyIdle and an exchange is in flight.
func (st *taskStream) end(err error, onlyIdle bool) {
	st.mu.Lock()
	if st.broken != nil || (onlyIdle && len(st.pending) > 0) {
		st.mu.Unlock()
		return
	}
	st.broken = err
	pending := st.pending
	st.pending = nil
	st.idle.Stop()
	st.mu.Unlock()
	for _, ch := range pending {
		ch <- streamResult{err: err}
	}
	st.home.mu.Lock()
	if st.home.open[st.key] == st {
		delete(st.home.open, st.key)
	}
	st.home.mu.Unlock()
	st.signal() // the writer ends
	if onlyIdle {
		go st.conn.Close(websocket.StatusNormalClosure, "idle") // the reader ends once the server agrees
	} else {
		st.conn.CloseNow() // the reader ends
	}
}

// read hands the answers to their exchanges until st breaks.
func (st *taskStream) read() {
	for {
		_, data, err := st.conn.Read(context.Background())
		if err != nil {
			st.fail(err)
			return
		}
		st.heard()
		var msg server.StreamAnswers
		if err := json.Unmarshal(data, &msg); err != nil {
			st.fail(fmt.Errorf("decode: %w", err))
			return
		}
		st.mu.Lock()
		for _, a := range msg.Answers {
			if ch := st.pending[a.ID]; ch != nil {
				delete(st.pending, a.ID)
				ch <- streamResult{answer: a}
			}
		}
		st.armIdle()
		st.mu.Unlock()
	}
}

// write writes the queued requests, all in one message, until st breaks.
func (st *taskStream) write() {
	for range st.wake {
		st.mu.Lock()
		batch, broken := st.out, st.broken
		st.out = nil
		st.mu.Unlock()
		if broken != nil {
			return
		}
		if len(batch) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), streamWriteTimeout)
		err := st.conn.Write(ctx, websocket.MessageText, appendFrame(nil, batch))
		cancel()
		if err != nil {
			st.fail(err)
			return
		}
	}
}
