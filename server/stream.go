package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strandhq/strand/access"
)

// A task stream (GET /api/v1/namespaces/{namespace}/task-stream, upgraded
// to a WebSocket) carries a worker's task exchanges over one connection:
// what the worker would POST to task-exchange, without a request's cost
// (its headers, its authentication, its connection's turn) per exchange.
// The upgrade is authenticated and authorized as task-exchange is; each
// exchange on the stream is then served exactly as a POST of it, with the
// identity of the upgrade.
//
// Each WebSocket message is a JSON object. The worker sends StreamFrames
// (exchanges to carry out, or to stop waiting for), the server answers
// with StreamAnswers; the server serves a stream's exchanges at once, and
// answers each when it is done, in any order, by its id. A worker without
// WebSockets posts its exchanges, or uses the plain calls.

// StreamFrame is one message of a task stream from the worker.
type StreamFrame struct {
	Requests []StreamRequest `json:"requests" max:"1000"`
}

// StreamRequest is an exchange to carry out, under an id the worker chose
// (unique among its exchanges in flight on the stream); or, with Cancel,
// the exchange of that id to end now (one waiting for tasks answers with
// what it took).
type StreamRequest struct {
	ID       uint64    `json:"id"`
	Cancel   bool      `json:"cancel,omitempty"`
	Exchange *Exchange `json:"exchange,omitempty"`
}

// StreamAnswers is one message of a task stream from the server.
type StreamAnswers struct {
	Answers []StreamAnswer `json:"answers"`
}

// StreamAnswer answers the exchange of an id: with its ExchangeAnswer, or
// with the error a POST of it would have got, its HTTP status and its
// Retry-After.
type StreamAnswer struct {
	ID         uint64          `json:"id"`
	Answer     *ExchangeAnswer `json:"answer,omitempty"`
	Status     int             `json:"status,omitempty"`
	Error      *Error          `json:"error,omitempty"`
	RetryAfter string          `json:"retry_after,omitempty"`
}

// streamInFlight bounds the exchanges a stream serves at once: past it the
// server reads the stream's next message only once one is answered.
const streamInFlight = 256

// taskStreamRoute is the route of task streams. The OpenAPI document does
// not describe it (it is not a JSON call); docs/architecture.md does.
func taskStreamRoute(h *handler) Route {
	e := endpoint{serve: h.serveTaskStream, internal: true}
	return Route{"GET", prefix + "/namespaces/{namespace}/task-stream", "Carry a worker's task exchanges over one WebSocket", e}
}

// serveTaskStream serves a task stream until the worker closes it, it
// breaks, or the server drains (the exchanges in flight answer, then the
// stream closes with 1001, going away).
func (h *handler) serveTaskStream(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Upgrade", "websocket")
		writeJSON(w, http.StatusUpgradeRequired, Error{Code: CodeInvalidArgument,
			Message: "a task stream is a WebSocket: send the upgrade (or POST the exchanges to task-exchange)"})
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept answered
	}
	conn.SetReadLimit(h.opts.MaxBody)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st := &stream{h: h, conn: conn, ns: r.PathValue("namespace"), waiting: map[uint64]context.CancelFunc{},
		wake: make(chan struct{}, 1), slots: make(chan struct{}, streamInFlight)}
	var writer sync.WaitGroup
	writer.Go(func() { st.write(ctx) })
	if d := h.opts.Draining; d != nil {
		defer context.AfterFunc(d, st.drain)()
	}
	var checker sync.WaitGroup
	defer func() {
		cancel()
		checker.Wait()
	}()
	checker.Go(func() { st.recheck(ctx, r) })
	reason, status := st.read(ctx)
	// The worker left, or the stream broke: the exchanges in flight end.
	st.mu.Lock()
	for _, cancel := range st.waiting {
		cancel()
	}
	st.mu.Unlock()
	st.served.Wait()
	st.mu.Lock()
	st.done = true
	st.mu.Unlock()
	st.signal()
	writer.Wait()
	conn.Close(status, reason)
}

// stream is one task stream being served.
type stream struct {
	h    *handler
	conn *websocket.Conn
	ns   string
	// slots holds a token per exchange in flight.
	slots  chan struct{}
	served sync.WaitGroup
	wake   chan struct{} // a signal to the writer

	mu       sync.Mutex
	waiting  map[uint64]context.CancelFunc // the exchanges in flight, by id
	answers  []StreamAnswer                // not written yet
	draining bool                          // the server drains: close once none is in flight
	done     bool                          // the reader ended: the writer ends once it wrote the answers
}

func (st *stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// drain closes the stream once the exchanges in flight answered (those
// waiting for tasks answer at once when the server drains).
func (st *stream) drain() {
	st.mu.Lock()
	st.draining = true
	st.mu.Unlock()
	st.signal()
}

// streamRecheck (a variable for tests) is how often a stream's credentials are checked again: a
// token revoked, a session ended or a role taken away ends the streams
// opened with it within this time.
var streamRecheck = time.Minute

// recheck checks the upgrade request's credentials every streamRecheck
// until ctx ends, and closes the stream once they no longer admit it.
func (st *stream) recheck(ctx context.Context, r *http.Request) {
	need, _ := needOf(http.MethodGet, prefix+"/namespaces/{namespace}/task-stream")
	t := time.NewTicker(streamRecheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id, err := st.h.authenticate(r, need)
		if err == nil {
			err = authorize(access.WithIdentity(ctx, id), need, r)
		}
		if err != nil {
			st.conn.Close(websocket.StatusPolicyViolation, closeReason(err))
			return
		}
	}
}

// read serves the worker's frames until the stream ends, and says why.
func (st *stream) read(ctx context.Context) (string, websocket.StatusCode) {
	for {
		typ, data, err := st.conn.Read(ctx)
		if err != nil {
			return "", websocket.StatusNormalClosure
		}
		if typ != websocket.MessageText {
			return "want JSON text messages", websocket.StatusUnsupportedData
		}
		if d := bytes.TrimSpace(data); len(d) == 0 || d[0] != '{' {
			return `want a JSON object, {"requests": [...]}`, websocket.StatusInvalidFramePayloadData
		}
		var frame StreamFrame
		if err := (&body{data: data}).decode(&frame); err != nil {
			return closeReason(err), websocket.StatusInvalidFramePayloadData
		}
		for _, req := range frame.Requests {
			if req.Cancel {
				st.mu.Lock()
				if cancel := st.waiting[req.ID]; cancel != nil {
					cancel()
				}
				st.mu.Unlock()
				continue
			}
			if req.Exchange == nil {
				return "a request without an exchange or a cancel", websocket.StatusInvalidFramePayloadData
			}
			select {
			case st.slots <- struct{}{}:
			case <-ctx.Done():
				return "", websocket.StatusNormalClosure
			}
			ectx, cancel := context.WithCancel(ctx)
			st.mu.Lock()
			if old := st.waiting[req.ID]; old != nil {
				old() // an id used again: the worker gave up on the first
			}
			st.waiting[req.ID] = cancel
			st.mu.Unlock()
			st.served.Go(func() {
				defer func() { <-st.slots }()
				defer cancel()
				answer := StreamAnswer{ID: req.ID}
				out, err := st.h.exchange(ectx, st.ns, *req.Exchange)
				if err != nil {
					status, body := errorOf(err)
					answer.Status, answer.Error, answer.RetryAfter = status, &body, retryAfterOf(err)
				} else {
					answer.Answer = &out
				}
				if st.h.streamed != nil {
					st.h.streamed.Inc()
				}
				st.mu.Lock()
				delete(st.waiting, req.ID)
				st.answers = append(st.answers, answer)
				st.mu.Unlock()
				st.signal()
			})
		}
	}
}

// write writes the answers as they come, all those queued in one message,
// until the reader ended; a write that fails ends the stream. On a server
// that drains it closes the stream once no exchange is in flight.
func (st *stream) write(ctx context.Context) {
	closing := false
	for {
		select {
		case <-st.wake:
		case <-ctx.Done():
			return
		}
		st.mu.Lock()
		batch, done := st.answers, st.done
		idle := st.draining && len(st.waiting) == 0
		st.answers = nil
		st.mu.Unlock()
		if len(batch) > 0 {
			data, err := json.Marshal(StreamAnswers{Answers: batch})
			if err == nil {
				err = st.conn.Write(ctx, websocket.MessageText, data)
			}
			if err != nil {
				st.conn.CloseNow() // the reader ends, and the exchanges with it
				return
			}
		}
		if done {
			return
		}
		if idle && !closing {
			closing = true
			// The worker reads the close and opens a stream elsewhere; the
			// reader ends when the close completes.
			go st.conn.Close(websocket.StatusGoingAway, "the server is shutting down")
		}
	}
}

// closeReason is err's message cut to what a WebSocket close frame holds.
func closeReason(err error) string {
	msg := err.Error()
	var body Error
	if _, body = errorOf(err); body.Message != "" {
		msg = body.Message
	}
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return msg
}

// streamedCounter counts the exchanges served on task streams.
func streamedCounter(reg prometheus.Registerer) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "strand_api_stream_exchanges_total",
		Help: "Task exchanges served on task streams (a POSTed exchange counts in strand_api_requests_total)."})
	reg.MustRegister(c)
	return c
}
