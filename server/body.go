package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"reflect"
	"strings"
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

// The defaults of Options.MinBodyRate and Options.BodyRateWindow: Apache's
// mod_reqtimeout asks 500 bytes a second of a body too; any link a client
// really uses carries far more, and 10 s covers a slow start and a few
// lost packets' retransmissions.
const (
	DefaultMinBodyRate    = 500
	DefaultBodyRateWindow = 10 * time.Second
)

// errSlowBody is the kind of a request whose body did not arrive in time:
// 408 request_timeout.
var errSlowBody = errors.New("request timeout")

// readBody reads r's body, at most MaxBody bytes, within the budget: at
// once into a buffer of its Content-Length, or a chunk at a time when it
// has none. It never reads past MaxBody, cuts off a body that arrives
// slower than MinBodyRate (or takes longer than BodyTimeout), and clears
// the body's read deadline once it has it.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) (*body, error) {
	limit := h.opts.MaxBody
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, store.PayloadTooLarge("body", int(min(r.ContentLength, 1<<62)), int(limit))
	}
	b := &body{}
	src := h.pace(w, r)
	var err error
	if r.ContentLength >= 0 {
		err = h.readKnown(r, src, b)
	} else {
		err = h.readChunked(r, src, b)
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
		// The rest of the body is not read: the connection ends with the answer.
		w.Header().Set("Connection", "close")
		return nil, src.late(r.ContentLength)
	}
	return nil, api.InvalidArgument("body", "reading: %v", err)
}

// pacedBody reads a request body, moving the connection's read deadline
// on as the bytes come (http.ResponseController), so that a body slower
// than the minimum rate is cut off without a timer or goroutine of its own.
// The deadline starts a window after reading begins (the first bytes'
// grace); each byte moves it on by 1/rate seconds, to at most a window
// ahead of now: a body that falls more than a window behind the rate, or
// sends nothing for a window, fails its next read with
// os.ErrDeadlineExceeded. BodyTimeout caps it, counted from when reading
// begins (the handler counts it from the request's start until then).
type pacedBody struct {
	src     io.Reader
	rc      *http.ResponseController // nil: no pace (nor BodyTimeout: the handler's deadline stands)
	rate    float64                  // bytes a second (0: none)
	window  time.Duration
	begin   time.Time
	end     time.Time // BodyTimeout's deadline (zero: none)
	paced   time.Time // the rate's deadline
	set     time.Time // the deadline set on the connection
	read    int64     // bytes read so far
	timeout time.Duration
}

// pace returns r's body, paced as Options say.
func (h *handler) pace(w http.ResponseWriter, r *http.Request) *pacedBody {
	p := &pacedBody{src: r.Body, begin: time.Now(), timeout: h.opts.BodyTimeout}
	rate, window := h.opts.MinBodyRate, h.opts.BodyRateWindow
	if rate == 0 {
		rate = DefaultMinBodyRate
	}
	if window <= 0 {
		window = DefaultBodyRateWindow
	}
	if rate < 0 || r.ContentLength == 0 {
		return p // BodyTimeout alone, as the handler set it
	}
	p.rc, p.rate, p.window = http.NewResponseController(w), float64(rate), window
	if p.timeout > 0 {
		p.end = p.begin.Add(p.timeout)
	}
	return p
}

// start sets the first deadline: a window from now (called once the body
// has room in the budget, so a wait for room is not counted against it).
func (p *pacedBody) start() {
	if p.rc == nil {
		return
	}
	p.paced = time.Now().Add(p.window)
	p.apply()
}

// Read implements io.Reader.
func (p *pacedBody) Read(b []byte) (int, error) {
	n, err := p.src.Read(b)
	p.read += int64(n)
	if n > 0 && p.rc != nil {
		p.paced = p.paced.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
		if ahead := time.Now().Add(p.window); p.paced.After(ahead) {
			p.paced = ahead
		}
		p.apply()
	}
	return n, err
}

// apply sets the earlier of the rate's and BodyTimeout's deadlines on the
// connection, when it moved.
func (p *pacedBody) apply() {
	d := p.paced
	if !p.end.IsZero() && p.end.Before(d) {
		d = p.end
	}
	if !d.Equal(p.set) {
		p.set = d
		p.rc.SetReadDeadline(d) // not supported: the handler's BodyTimeout deadline stands
	}
}

// late is the error of a body whose read deadline passed: too slow for
// the rate, or not whole within BodyTimeout.
func (p *pacedBody) late(length int64) error {
	took := time.Since(p.begin).Round(100 * time.Millisecond)
	if p.rc != nil && (p.end.IsZero() || p.paced.Before(p.end)) {
		of := ""
		if length > 0 {
			of = fmt.Sprintf(" of %d", length)
		}
		return fmt.Errorf("%w: the request body came too slowly (%d%s bytes in %v; the server takes no less than %d bytes a second): the request was not carried out",
			errSlowBody, p.read, of, took, int64(p.rate))
	}
	return fmt.Errorf("%w: the request body was not received within %v: the request was not carried out", errSlowBody, p.timeout)
}

// readKnown reads a body of known length.
func (h *handler) readKnown(r *http.Request, src *pacedBody, b *body) error {
	n := r.ContentLength
	if n == 0 {
		return nil
	}
	if err := h.budget.acquire(r.Context(), n, h.opts.BodyWait); err != nil {
		return err
	}
	b.held = n
	b.data = make([]byte, n)
	src.start()
	if _, err := io.ReadFull(src, b.data); err != nil {
		return err
	}
	// Read on to the end, so that the server watches the connection for
	// a client that leaves (a long poll ends then).
	var one [1]byte
	if m, _ := src.Read(one[:]); m > 0 {
		return errors.New("longer than its Content-Length")
	}
	return nil
}

// readChunked reads a body of unknown length a chunk at a time, growing
// its share of the budget as it goes; a body of several chunks is copied
// into one buffer at the end.
func (h *handler) readChunked(r *http.Request, paced *pacedBody, b *body) error {
	limit := h.opts.MaxBody
	src := io.LimitReader(paced, limit+1)
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
			if err = h.budget.acquire(r.Context(), chunkSize, h.opts.BodyWait); err == nil {
				paced.start()
			}
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
		// JSON has one number type: 5.0 and 5e0 are the integer 5 to a
		// JSON Schema (and so to the API document), but not to
		// encoding/json. Only a body refused for that pays for the rewrite.
		var typeErr *json.UnmarshalTypeError
		fixed, changed := data, false
		if errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Value, "number ") {
			fixed, changed = integralNumbers(data)
		}
		if !changed {
			return api.InvalidArgument("body", "%v", err)
		}
		if err := json.Unmarshal(fixed, v); err != nil {
			return api.InvalidArgument("body", "%v", err)
		}
		data = fixed
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

// integralNumbers rewrites each number of the JSON text data that is
// written with a fraction or an exponent but has an integer value (5.0,
// 1e3, -2.50e1) as that integer, and leaves every other byte as it was.
// changed reports whether it rewrote any.
func integralNumbers(data []byte) (out []byte, changed bool) {
	out = make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(data))
			out = append(out, data[i:j]...)
			i = j
		case c == '-' || ('0' <= c && c <= '9'):
			j := i + 1
			for j < len(data) && strings.IndexByte("0123456789+-.eE", data[j]) >= 0 {
				j++
			}
			num := data[i:j]
			if bytes.ContainsAny(num, ".eE") {
				if f, _, err := big.ParseFloat(string(num), 10, 0, big.ToNearestEven); err == nil && f.IsInt() && f.MantExp(nil) <= 64 {
					if n, acc := f.Int(nil); acc == big.Exact && n.BitLen() <= 64 {
						num, changed = n.Append(nil, 10), true
					}
				}
			}
			out = append(out, num...)
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	return out, changed
}
