package sdk

import (
	"encoding/json"
	"fmt"
)

// Future is the result of an asynchronous workflow call.
type Future[T any] interface {
	// Get blocks the calling workflow goroutine until the result is ready.
	Get(ctx Context) (T, error)
	// IsReady reports whether Get would not block.
	IsReady() bool
}

// Readiness is what a selector waits on: any future.
type Readiness interface{ IsReady() bool }

// settable is the untyped state behind every future: a value (decoded
// lazily from its payload) or an error.
type settable struct {
	inst    *Instance
	ready   bool
	payload []byte
	value   any
	hasVal  bool
	err     error
}

func (s *settable) IsReady() bool { return s.ready }

func (s *settable) setPayload(p []byte, err error) {
	if s.ready {
		return
	}
	s.ready, s.payload, s.err = true, p, err
}

func (s *settable) setValue(v any, err error) {
	if s.ready {
		return
	}
	s.ready, s.value, s.hasVal, s.err = true, v, true, err
}

func (s *settable) wait() { s.inst.sched.block(func() bool { return s.ready }) }

type future[T any] struct{ s *settable }

func (f future[T]) IsReady() bool { return f.s.ready }

func (f future[T]) Get(Context) (T, error) {
	f.s.wait()
	var v T
	if f.s.hasVal {
		if f.s.value != nil {
			v = f.s.value.(T)
		}
		return v, f.s.err
	}
	if f.s.err != nil {
		return v, f.s.err
	}
	if err := decode(f.s.payload, &v); err != nil {
		return v, err
	}
	return v, nil
}

func newFuture[T any](inst *Instance) (future[T], *settable) {
	s := &settable{inst: inst}
	return future[T]{s}, s
}

// NewFuture returns a future and the function that settles it, for
// workflow code that hands results between its goroutines.
func NewFuture[T any](ctx Context) (Future[T], func(T, error)) {
	f, s := newFuture[T](ctx.state().inst)
	return f, func(v T, err error) { s.setValue(v, err) }
}

func decode(p []byte, v any) error {
	if len(p) == 0 {
		return nil
	}
	if err := json.Unmarshal(p, v); err != nil {
		return fmt.Errorf("workflow: decode %T: %w", v, err)
	}
	return nil
}

// Encode is the payload form of a workflow or step value.
func Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("workflow: encode %T: %w", v, err)
	}
	return b, nil
}

// Decode is the inverse of Encode.
func Decode(p []byte, v any) error { return decode(p, v) }

// channel is a workflow channel of untyped values; signals hold payloads.
type channel struct {
	inst     *Instance
	buf      []any
	capacity int
	closed   bool
	// taken counts values received, for unbuffered sends.
	taken int
	sent  int
}

func newChannel(inst *Instance, capacity int) *channel {
	return &channel{inst: inst, capacity: capacity}
}

func (c *channel) send(v any) {
	if c.closed {
		panic("workflow: send on closed channel")
	}
	c.inst.sched.block(func() bool { return len(c.buf) < max(c.capacity, 1) })
	c.buf = append(c.buf, v)
	c.sent++
	if c.capacity == 0 {
		n := c.sent
		c.inst.sched.block(func() bool { return c.taken >= n })
	}
}

func (c *channel) ready() bool { return len(c.buf) > 0 || c.closed }

func (c *channel) receiveAsync() (any, bool, bool) {
	if len(c.buf) > 0 {
		v := c.buf[0]
		c.buf[0] = nil
		c.buf = c.buf[1:]
		c.taken++
		return v, true, true
	}
	return nil, false, c.closed
}

// ReceiveChannel is the receiving end of a workflow channel.
type ReceiveChannel[T any] interface {
	// Receive blocks until a value arrives; more is false once the channel
	// is closed and drained.
	Receive(ctx Context) (v T, more bool)
	// ReceiveAsync takes a value if one is waiting.
	ReceiveAsync() (v T, ok bool)
	// Len is the number of values waiting.
	Len() int
	IsReady() bool
	base() *channel
}

// Channel is a workflow channel between workflow goroutines.
type Channel[T any] interface {
	ReceiveChannel[T]
	Send(ctx Context, v T)
	Close()
}

type typedChannel[T any] struct{ c *channel }

func (t *typedChannel[T]) base() *channel      { return t.c }
func (t *typedChannel[T]) Len() int            { return len(t.c.buf) }
func (t *typedChannel[T]) IsReady() bool       { return t.c.ready() }
func (t *typedChannel[T]) Close()              { t.c.closed = true }
func (t *typedChannel[T]) Send(_ Context, v T) { t.c.send(v) }

func (t *typedChannel[T]) Receive(Context) (T, bool) {
	t.c.inst.sched.block(t.c.ready)
	v, ok := t.ReceiveAsync()
	return v, ok
}

func (t *typedChannel[T]) ReceiveAsync() (T, bool) {
	var v T
	raw, ok, _ := t.c.receiveAsync()
	if !ok {
		return v, false
	}
	switch x := raw.(type) {
	case signalValue:
		if err := decode(x, &v); err != nil {
			x := t.c.inst
			x.logf("dropping signal that does not decode into %T: %v", v, err)
			return v, false
		}
	case T:
		v = x
	}
	return v, true
}

// signalValue is a signal's payload waiting in its channel.
type signalValue []byte

// NewChannel returns a channel for workflow goroutines; capacity 0 makes
// Send wait for a receiver.
func NewChannel[T any](ctx Context, capacity int) Channel[T] {
	return &typedChannel[T]{newChannel(ctx.state().inst, capacity)}
}

// Selector waits for the first of several futures and channels.
type Selector struct {
	inst  *Instance
	cases []selectCase
	deflt func()
}

type selectCase struct {
	ready func() bool
	fire  func()
}

// NewSelector returns an empty selector.
func NewSelector(ctx Context) *Selector { return &Selector{inst: ctx.state().inst} }

// AddFuture adds a case that fires fn once f is ready; each future fires at
// most once per selector.
func (s *Selector) AddFuture(f Readiness, fn func()) *Selector {
	fired := false
	s.cases = append(s.cases, selectCase{
		ready: func() bool { return !fired && f.IsReady() },
		fire:  func() { fired = true; fn() },
	})
	return s
}

// AddReceive adds a case that fires fn when ch has a value (or is
// closed); fn must receive it.
func AddReceive[T any](s *Selector, ch ReceiveChannel[T], fn func(ch ReceiveChannel[T])) *Selector {
	s.cases = append(s.cases, selectCase{ready: ch.IsReady, fire: func() { fn(ch) }})
	return s
}

// AddDefault adds a case that fires when no other case is ready.
func (s *Selector) AddDefault(fn func()) *Selector { s.deflt = fn; return s }

// Select blocks until a case is ready and fires the first ready one.
func (s *Selector) Select(Context) {
	pick := func() int {
		for i, c := range s.cases {
			if c.ready() {
				return i
			}
		}
		return -1
	}
	if s.deflt != nil {
		if i := pick(); i >= 0 {
			s.cases[i].fire()
		} else {
			s.deflt()
		}
		return
	}
	s.inst.sched.block(func() bool { return pick() >= 0 })
	s.cases[pick()].fire()
}

// HasPending reports whether a case is ready now.
func (s *Selector) HasPending() bool {
	for _, c := range s.cases {
		if c.ready() {
			return true
		}
	}
	return false
}

// Go starts fn as a new workflow goroutine.
func Go(ctx Context, fn func(ctx Context)) {
	inst := ctx.state().inst
	inst.sched.spawn(fmt.Sprintf("go-%d", len(inst.sched.coroutines)), func() { fn(ctx) })
}

// Await blocks until cond holds; cond is checked each time workflow state
// changes.
func Await(ctx Context, cond func() bool) error {
	c := ctx.state()
	c.inst.sched.block(func() bool { return c.err != nil || cond() })
	if !cond() {
		return c.err
	}
	return nil
}
