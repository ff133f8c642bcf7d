package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
)

// StepOptions are a step's queue, priority, timeouts and retry policy, and
// what it does in its user's words (Summary).
type StepOptions = api.StepOptions

// RetryPolicy is a step's retry policy.
type RetryPolicy = api.RetryPolicy

// ChildOptions describe a child workflow.
type ChildOptions = api.ChildOptions

// FuncName is the name a function is registered under when none is given:
// its name without package path ("ChargeCard").
func FuncName(fn any) string {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func {
		panic(fmt.Sprintf("strand: %T is not a function", fn))
	}
	name := runtime.FuncForPC(v.Pointer()).Name()
	name = strings.TrimSuffix(name, "-fm")
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// ExecuteStep schedules a step by name and returns the future of its result.
// When ctx is canceled first, the step is asked to stop and the future
// fails with a *api.CanceledError.
func ExecuteStep[O any](ctx Context, opts StepOptions, name string, input any) Future[O] {
	c := ctx.state()
	inst := c.inst
	f, s := newFuture[O](inst)
	payload, err := Encode(input)
	if err != nil {
		s.setPayload(nil, err)
		return f
	}
	if c.err != nil {
		s.setPayload(nil, c.err)
		return f
	}
	seq := inst.nextSeq()
	o := opts
	o.Summary = summaryOf(o.Summary)
	inst.command(api.Command{Type: api.CommandScheduleStep, Seq: seq, Name: name, Payload: payload, Step: &o})
	p := &pending{kind: api.CommandScheduleStep, result: s, name: name, summary: o.Summary}
	inst.pending[seq] = p
	p.cancel = c.whenCanceled(func() {
		if inst.pending[seq] == p {
			delete(inst.pending, seq)
			inst.command(api.Command{Type: api.CommandCancelStep, Seq: seq, Name: name})
			s.setPayload(nil, c.err)
		}
	})
	return f
}

// maxSummary is the most characters of a step's summary the engine takes
// (api.StepOptions.Summary's max).
const maxSummary = 1000

// summaryOf is a step's summary as the engine takes it: at most
// maxSummary characters, without NUL, so that a long name in it never
// makes the workflow task's commands refused.
func summaryOf(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if utf8.RuneCountInString(s) <= maxSummary {
		return s
	}
	const more = "…"
	return string([]rune(s)[:maxSummary-utf8.RuneCountInString(more)]) + more
}

// NewTimer returns a future that is ready after d of workflow time. When ctx
// is canceled first, the timer is canceled and the future fails with a
// *api.CanceledError.
func NewTimer(ctx Context, d time.Duration) Future[struct{}] {
	c := ctx.state()
	inst := c.inst
	f, s := newFuture[struct{}](inst)
	if c.err != nil {
		s.setPayload(nil, c.err)
		return f
	}
	if d <= 0 {
		s.setValue(struct{}{}, nil)
		return f
	}
	seq := inst.nextSeq()
	inst.command(api.Command{Type: api.CommandStartTimer, Seq: seq, Timer: d})
	p := &pending{kind: api.CommandStartTimer, result: s}
	inst.pending[seq] = p
	p.cancel = c.whenCanceled(func() {
		if inst.pending[seq] == p {
			delete(inst.pending, seq)
			inst.command(api.Command{Type: api.CommandCancelTimer, Seq: seq})
			s.setPayload(nil, c.err)
		}
	})
	return f
}

// Sleep blocks for d of workflow time; it survives restarts.
func Sleep(ctx Context, d time.Duration) error {
	_, err := NewTimer(ctx, d).Get(ctx)
	return err
}

// ChildFuture is a child workflow's result, with its start.
type ChildFuture[O any] interface {
	Future[O]
	// Started is ready with the child's run id once the child runs, or
	// fails if it could not start.
	Started() Future[string]
}

type childFuture[O any] struct {
	future[O]
	started future[string]
}

func (c childFuture[O]) Started() Future[string] { return c.started }

// ExecuteChild starts a child workflow by type name. Canceling ctx asks the
// child to cancel.
func ExecuteChild[O any](ctx Context, opts ChildOptions, workflowType string, input any) ChildFuture[O] {
	c := ctx.state()
	inst := c.inst
	f, s := newFuture[O](inst)
	sf, ss := newFuture[string](inst)
	cf := childFuture[O]{f, sf}
	payload, err := Encode(input)
	if err == nil {
		err = c.err
	}
	if err != nil {
		s.setPayload(nil, err)
		ss.setValue("", err)
		return cf
	}
	seq := inst.nextSeq()
	o := opts
	if o.WorkflowID == "" {
		o.WorkflowID = fmt.Sprintf("%s-child-%d", inst.info.RunID, seq)
	}
	if o.Queue == "" {
		o.Queue = inst.info.Queue
	}
	inst.command(api.Command{Type: api.CommandStartChild, Seq: seq, Name: workflowType, Payload: payload, Child: &o})
	p := &pending{kind: api.CommandStartChild, result: s, started: ss, name: workflowType}
	inst.pending[seq] = p
	p.cancel = c.whenCanceled(func() {
		if inst.pending[seq] == p {
			cseq := inst.nextSeq()
			inst.command(api.Command{Type: api.CommandCancelExternal, Seq: cseq,
				Target: &api.Target{Namespace: o.Namespace, WorkflowID: o.WorkflowID}})
			// The child's outcome (canceled, most likely) still arrives.
		}
	})
	return cf
}

// SignalExternal sends a signal to another workflow; the future is ready
// once it was delivered.
func SignalExternal(ctx Context, target api.Target, name string, input any) Future[struct{}] {
	return SignalExternalWithStart(ctx, target, name, input, nil)
}

// SignalExternalWithStart sends a signal to another workflow as
// SignalExternal does and, when start is not nil and the target has no
// open run, starts it with the signal as its first input.
func SignalExternalWithStart(ctx Context, target api.Target, name string, input any, start *api.SignalStart) Future[struct{}] {
	c := ctx.state()
	inst := c.inst
	f, s := newFuture[struct{}](inst)
	payload, err := Encode(input)
	if err != nil {
		s.setPayload(nil, err)
		return f
	}
	seq := inst.nextSeq()
	inst.command(api.Command{Type: api.CommandSignalExternal, Seq: seq, Name: name, Payload: payload, Target: &target, SignalStart: start})
	inst.pending[seq] = &pending{kind: api.CommandSignalExternal, result: s, name: name}
	return f
}

// CancelExternal asks another workflow to cancel.
func CancelExternal(ctx Context, target api.Target) Future[struct{}] {
	inst := ctx.state().inst
	f, s := newFuture[struct{}](inst)
	seq := inst.nextSeq()
	inst.command(api.Command{Type: api.CommandCancelExternal, Seq: seq, Target: &target})
	inst.pending[seq] = &pending{kind: api.CommandCancelExternal, result: s}
	return f
}

// UpsertAttributes sets the run's attributes, the key-value pairs lists
// filter on: each key to its value, a key given "" removed. It takes
// effect when the workflow task completes.
func UpsertAttributes(ctx Context, attrs map[string]string) {
	inst := ctx.state().inst
	changes := make(map[string]string, len(attrs))
	for k, v := range attrs {
		changes[k] = v
	}
	inst.command(api.Command{Type: api.CommandUpsertAttributes, Seq: inst.nextSeq(), Attributes: changes})
}

// UpsertMemo sets keys of the run's memo, which DescribeWorkflow answers:
// each key to its value as JSON, a key given nil removed. It takes effect
// when the workflow task completes; history keeps each change, so set
// only what changed.
func UpsertMemo(ctx Context, memo map[string]any) error {
	inst := ctx.state().inst
	changes := make(map[string]api.Value, len(memo))
	for k, v := range memo {
		if v == nil {
			changes[k] = api.Value{}
			continue
		}
		b, err := Encode(v)
		if err != nil {
			return fmt.Errorf("workflow: memo %s: %w", k, err)
		}
		changes[k] = b
	}
	if len(changes) > 0 {
		inst.command(api.Command{Type: api.CommandUpsertMemo, Seq: inst.nextSeq(), Memo: changes})
	}
	return nil
}

// SideEffect runs fn once and records its result; replays return the
// recorded value without running fn.
func SideEffect[T any](ctx Context, fn func() T) T {
	inst := ctx.state().inst
	seq := inst.nextSeq()
	var v T
	if p, ok := inst.recorded[seq]; ok {
		if err := decode(p, &v); err != nil {
			panic(fmt.Sprintf("workflow: side effect #%d: %v", seq, err))
		}
		inst.command(api.Command{Type: api.CommandSideEffect, Seq: seq, Payload: p})
		return v
	}
	v = fn()
	p, err := Encode(v)
	if err != nil {
		panic(fmt.Sprintf("workflow: side effect #%d: %v", seq, err))
	}
	inst.recorded[seq] = p
	inst.command(api.Command{Type: api.CommandSideEffect, Seq: seq, Payload: p})
	return v
}

// Now is the workflow's deterministic time: when the current task began.
func Now(ctx Context) time.Time { return ctx.state().inst.now }

// Rand is a random source that replays identically.
func Rand(ctx Context) *rand.Rand { return ctx.state().inst.rand }

// UUID returns a random UUID that replays identically.
func UUID(ctx Context) string {
	r := ctx.state().inst.rand
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	u, _ := uuid.FromBytes(b[:])
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return u.String()
}

// GetSignalChannel returns the channel of a signal name; signals that
// arrived before the workflow asked are waiting in it.
func GetSignalChannel[T any](ctx Context, name string) ReceiveChannel[T] {
	return &typedChannel[T]{ctx.state().inst.signalChannel(name)}
}

// SetQueryHandler answers queries of a name with fn, which must not block
// or change workflow state.
func SetQueryHandler[I, O any](ctx Context, name string, fn func(I) (O, error)) {
	ctx.state().inst.queries[name] = func(in []byte) ([]byte, error) {
		var i I
		if err := decode(in, &i); err != nil {
			return nil, fmt.Errorf("decode query input: %w", err)
		}
		o, err := fn(i)
		if err != nil {
			return nil, err
		}
		return json.Marshal(o)
	}
}

// GetInfo returns the run the workflow is executing.
func GetInfo(ctx Context) Info { return ctx.state().inst.info }

// Logger returns a logger that stays quiet while the workflow replays.
func Logger(ctx Context) *slog.Logger {
	inst := ctx.state().inst
	return slog.New(&replayHandler{inst: inst, h: inst.logger.Handler()})
}

type replayHandler struct {
	inst *Instance
	h    slog.Handler
}

func (r *replayHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return !r.inst.replaying && r.h.Enabled(ctx, l)
}
func (r *replayHandler) Handle(ctx context.Context, rec slog.Record) error {
	return r.h.Handle(ctx, rec)
}
func (r *replayHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &replayHandler{r.inst, r.h.WithAttrs(a)}
}
func (r *replayHandler) WithGroup(n string) slog.Handler {
	return &replayHandler{r.inst, r.h.WithGroup(n)}
}

// IsReplaying reports whether the workflow is replaying history.
func IsReplaying(ctx Context) bool { return ctx.state().inst.replaying }
