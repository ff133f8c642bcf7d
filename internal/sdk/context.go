package sdk

import (
	"github.com/strandhq/strand/api"
)

// Context is a workflow's context: like context.Context, but deterministic.
// It carries the run it belongs to, values, and cancellation. Workflow code
// passes it to every workflow call and never uses a context.Context.
type Context interface {
	// Err is nil until the context is canceled, then a *api.CanceledError.
	Err() error
	// Value returns the value stored under key by WithValue, or nil.
	Value(key any) any
	// Done is closed when the context is canceled.
	Done() ReceiveChannel[struct{}]

	state() *ctxState
}

type ctxState struct {
	inst     *Instance
	parent   *ctxState
	err      error
	done     *channel
	onCancel []func()
	children []*ctxState
	key, val any
	// disconnected contexts are not canceled with their parent.
	disconnected bool
}

func (c *ctxState) Err() error                     { return c.err }
func (c *ctxState) state() *ctxState               { return c }
func (c *ctxState) Done() ReceiveChannel[struct{}] { return &typedChannel[struct{}]{c.done} }

func (c *ctxState) Value(key any) any {
	for s := c; s != nil; s = s.parent {
		if s.key != nil && s.key == key {
			return s.val
		}
	}
	return nil
}

func newCtx(inst *Instance, parent *ctxState) *ctxState {
	c := &ctxState{inst: inst, parent: parent, done: newChannel(inst, 0)}
	if parent != nil {
		parent.children = append(parent.children, c)
		if parent.err != nil {
			c.err = parent.err
			c.done.closed = true
		}
	}
	return c
}

// cancel cancels c and every context derived from it (but not the
// disconnected ones), running the cancel hooks of pending calls.
func (c *ctxState) cancel(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	c.done.closed = true
	hooks := c.onCancel
	c.onCancel = nil
	for _, h := range hooks {
		h()
	}
	for _, ch := range c.children {
		if !ch.disconnected {
			ch.cancel(err)
		}
	}
}

// whenCanceled runs fn when c is canceled; it returns a function that
// unregisters it.
func (c *ctxState) whenCanceled(fn func()) func() {
	if c.err != nil {
		fn()
		return func() {}
	}
	done := false
	c.onCancel = append(c.onCancel, func() {
		if !done {
			fn()
		}
	})
	return func() { done = true }
}

// CancelFunc cancels a context.
type CancelFunc func()

// WithCancel returns a child of ctx and a function that cancels it.
func WithCancel(ctx Context) (Context, CancelFunc) {
	parent := ctx.state()
	c := newCtx(parent.inst, parent)
	return c, func() { c.cancel(&api.CanceledError{Reason: "context canceled"}) }
}

// WithValue returns a child of ctx that carries val under key.
func WithValue(ctx Context, key, val any) Context {
	parent := ctx.state()
	c := newCtx(parent.inst, parent)
	c.key, c.val = key, val
	return c
}

// NewDisconnectedContext returns a context with ctx's values that is not
// canceled when ctx is: for clean-up work after a cancellation.
func NewDisconnectedContext(ctx Context) Context {
	parent := ctx.state()
	c := &ctxState{inst: parent.inst, parent: parent, done: newChannel(parent.inst, 0), disconnected: true}
	parent.children = append(parent.children, c)
	return c
}
