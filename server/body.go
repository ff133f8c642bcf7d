package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// budget bounds the request-body bytes the server holds at once. A request
// that holds nothing waits for room (up to Options.BodyWait); a request
// that holds some and needs more (a body without a Content-Length, read a
// chunk at a time) never waits, so that readers holding part of the budget
// cannot wait on each other, and gives way to the ones waiting.
type budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	waiting int
	freed   chan struct{} // closed (and replaced) when bytes are released
	gauge   func(float64) // the bytes in use, for the metric (nil: none)
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, freed: make(chan struct{})}
}

// errBusy answers a request that found no room for its body.
var errBusy = fmt.Errorf("%w: the server holds as many request bodies as it may; retry shortly", api.ErrUnavailable)

// acquire takes n bytes (at most the whole budget), waiting up to wait.
func (b *budget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	n = min(n, b.limit)
	var timer <-chan time.Time
	b.mu.Lock()
	for b.used+n > b.limit {
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		freed := b.freed
		b.waiting++
		b.mu.Unlock()
		var err error
		select {
		case <-freed:
		case <-timer:
			err = errBusy
		case <-ctx.Done():
			err = fmt.Errorf("server: waiting for room for the request body: %w", ctx.Err())
		}
		b.mu.Lock()
		b.waiting--
		if err != nil {
			b.mu.Unlock()
			return err
		}
	}
	b.take(n)
	b.mu.Unlock()
	return nil
}

// grow takes n more bytes for a request that holds some already, only if
// they are free and no request waits for room.
func (b *budget) grow(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting > 0 || b.used+n > b.limit {
		return errBusy
	}
	b.take(n)
	return nil
}

func (b *budget) take(n int64) {
	b.used += n
	if b.gauge != nil {
		b.gauge(float64(b.used))
	}
}

// release gives back n bytes taken by acquire (n as passed to it) or grow.
func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= min(n, b.limit)
	if b.used < 0 {
		b.used = 0
	}
	if b.gauge != nil {
		b.gauge(float64(b.used))
	}
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// chunkSize is the unit a body without a Content-Length is read in.
const chunkSize = 64 << 10

// chunks recycles the chunks of bodies without a Content-Length, so that a
// stream of them leaves no garbage beyond what the budget lets be held.
var chunks = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// body is a request body read whole, and the budget it holds until the
// request is answered.
type body struct {
	data []byte
	held int64
	free func() // gives back the chunks data lives in (nil: none)
}

// readBody reads r's body, at most MaxBody bytes, within the budget: at
// once into a buffer of its Content-Length, or a chunk at a time when it
// has none. It never reads past MaxBody, and clears the body's read
// deadline once it has it.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) (*body, error) {
	limit := h.opts.MaxBody
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, store.PayloadTooLarge("body", int(min(r.ContentLength, 1<<62)), int(limit))
	}
	b := &body{}
	var err error
	if r.ContentLength >= 0 {
		err = h.readKnown(r, b)
	} else {
		err = h.readChunked(r, b)
	}
	if err == nil {
		http.NewResponseController(w).SetReadDeadline(time.Time{}) // the server's own deadlines only, from here
		return b, nil
	}
	b.close(h.budget)
	var tooLarge *store.InvalidArgumentError
	if errors.As(err, &tooLarge) || errors.Is(err, errBusy) {
		w.Header().Set("Connection", "close")
		return nil, err
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, api.InvalidArgument("body", "not received within %v", h.opts.BodyTimeout)
	}
	return nil, api.InvalidArgument("body", "reading: %v", err)
}

// readKnown reads a body of known length.
func (h *handler) readKnown(r *http.Request, b *body) error {
	n := r.ContentLength
	if n == 0 {
		return nil
	}
	if err := h.budget.acquire(r.Context(), n, h.opts.BodyWait); err != nil {
		return err
	}
	b.held = n
	b.data = make([]byte, n)
	if _, err := io.ReadFull(r.Body, b.data); err != nil {
		return err
	}
	// Read on to the end, so that the server watches the connection for
	// a client that leaves (a long poll ends then).
	var one [1]byte
	if m, _ := r.Body.Read(one[:]); m > 0 {
		return errors.New("longer than its Content-Length")
	}
	return nil
}

// readChunked reads a body of unknown length a chunk at a time, growing
// its share of the budget as it goes; a body of several chunks is copied
// into one buffer at the end.
func (h *handler) readChunked(r *http.Request, b *body) error {
	limit := h.opts.MaxBody
	src := io.LimitReader(r.Body, limit+1)
	var parts []*[chunkSize]byte
	b.free = func() {
		for _, p := range parts {
			chunks.Put(p)
		}
		parts = nil
	}
	total := int64(0)
	for {
		var err error
		if len(parts) == 0 {
			err = h.budget.acquire(r.Context(), chunkSize, h.opts.BodyWait)
		} else {
			err = h.budget.grow(chunkSize)
		}
		if err != nil {
			return err
		}
		b.held += chunkSize
		p := chunks.Get().(*[chunkSize]byte)
		parts = append(parts, p)
		n, err := io.ReadFull(src, p[:])
		total += int64(n)
		if total > limit {
			return store.PayloadTooLarge("body", int(total), int(limit))
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if len(parts) == 1 {
		b.data = parts[0][:total]
		return nil
	}
	if err := h.budget.grow(total); err != nil {
		return err
	}
	b.held += total
	b.data = make([]byte, 0, total)
	for _, p := range parts {
		b.data = append(b.data, p[:min(chunkSize, total-int64(len(b.data)))]...)
	}
	b.free()
	h.budget.release(int64(len(parts)) * chunkSize)
	b.held -= int64(len(parts)) * chunkSize
	return nil
}

// close gives back what the body holds.
func (b *body) close(bg *budget) {
	if b == nil {
		return
	}
	b.data = nil
	if b.free != nil {
		b.free()
	}
	bg.release(b.held)
	b.held = 0
}

// decode reads a JSON object of at most MaxBody bytes into v and checks it:
// valid UTF-8 without lone surrogate escapes (encoding/json would store
// U+FFFD in their place), no field the type does not have, nothing after
// the object, and every field within its size limit (store.CheckLimits).
// The caller calls the returned release once it answered.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any) (release func(), err error) {
	b, err := h.readBody(w, r)
	if err != nil {
		return func() {}, err
	}
	noteBody(r.Context(), b.data)
	if err := b.decode(v); err != nil {
		b.close(h.budget)
		return func() {}, err
	}
	stampIdentity(r.Context(), v)
	return func() { b.close(h.budget) }, nil
}

// decode decodes and checks the body into v.
func (b *body) decode(v any) error {
	data := bytes.TrimSpace(b.data)
	if len(data) == 0 {
		return api.InvalidArgument("body", "empty; want a JSON object")
	}
	if !utf8.Valid(data) {
		return api.InvalidArgument("body", "not valid UTF-8")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return api.InvalidArgument("body", "%v", err)
	}
	if err := checkJSON(data, reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	if err := store.CheckLimits(v); err != nil {
		return err
	}
	if b.free == nil {
		b.data = nil // v has its own copy; the budget stays held until the answer
	}
	return nil
}
