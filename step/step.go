// Package step is what step (activity) code uses besides its
// context.Context: its attempt, its idempotency key and heartbeats.
//
// A step is a Go function
//
//	func(ctx context.Context, in I) (O, error)
//
// registered on a worker. It runs at least once, and every run of it
// carries the same IdempotencyKey:
//
//   - after a failure or a timeout the engine decides on a new attempt: the
//     step runs again with a higher Attempt;
//   - after a crash, a restart or a failover that lost track of a running
//     attempt, the same attempt is offered again: same Attempt, with
//     Redelivered set, since the attempt may have run (or may still run)
//     elsewhere. The engine first waits for the worker that ran it to
//     report or heartbeat: until the step's heartbeat timeout passes, or
//     else its start-to-close.
package step

import (
	"context"
	"time"

	"github.com/strandhq/strand/store"
)

// Info describes the attempt of a step that is running.
type Info struct {
	Run          store.RunKey
	WorkflowType string
	Name         string
	Seq          int64
	// Attempt counts from 1; it moves on when an attempt failed or timed
	// out, not when the same attempt is offered again.
	Attempt int32
	// Redelivered says this attempt may have run before: the engine
	// offered it again after losing track of it (a crash, a restart, a
	// failover). Code with effects that its IdempotencyKey does not make
	// safe to repeat should check what an earlier run did.
	Redelivered bool
	// IdempotencyKey is the same for every attempt of this step.
	IdempotencyKey string
	ScheduledTime  time.Time
	StartedTime    time.Time
	Deadline       time.Time
	// HeartbeatDetails are the last details a previous attempt recorded.
	HeartbeatDetails []byte
}

// Runtime is what the worker puts in a step's context.
type Runtime interface {
	Info() Info
	Heartbeat(ctx context.Context, details any) error
	AuditDetail(name string, value any) error
}

type key struct{}

// WithRuntime returns ctx carrying r; workers call it.
func WithRuntime(ctx context.Context, r Runtime) context.Context {
	return context.WithValue(ctx, key{}, r)
}

func runtimeOf(ctx context.Context) Runtime {
	r, _ := ctx.Value(key{}).(Runtime)
	return r
}

// GetInfo returns the running step's description; the zero Info outside a step.
func GetInfo(ctx context.Context) Info {
	if r := runtimeOf(ctx); r != nil {
		return r.Info()
	}
	return Info{}
}

// Heartbeat records progress. A step with a heartbeat timeout must call it
// within that timeout. When the workflow asked the step to stop, ctx is
// canceled soon after. While the service cannot be reached (a server
// restarting), Heartbeat retries until the heartbeat lands or ctx ends; a
// heartbeat after a restart also keeps the attempt for this worker instead
// of its being redelivered to another.
func Heartbeat(ctx context.Context, details any) error {
	if r := runtimeOf(ctx); r != nil {
		return r.Heartbeat(ctx, details)
	}
	return nil
}

// AuditDetail attaches value, encoded as JSON (a string is text), under
// name to the event that records how this attempt ended (StepCompleted,
// or StepAttemptFailed or StepFailed when it fails), for the people who
// read the run's history: a request and a response, a report, a
// process's output. A name given again replaces its value. Small values
// are kept with the event, large ones as documents loaded when asked for.
// Outside a step it does nothing.
func AuditDetail(ctx context.Context, name string, value any) error {
	if r := runtimeOf(ctx); r != nil {
		return r.AuditDetail(name, value)
	}
	return nil
}

// HeartbeatEvery heartbeats every d, with what details returns (nil: no
// details), until stop is called; stop returns once the last heartbeat
// ended. It is for steps whose work gives no natural points to beat at (a
// process they wait for, a call into other code).
func HeartbeatEvery(ctx context.Context, d time.Duration, details func() any) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				var v any
				if details != nil {
					v = details()
				}
				_ = Heartbeat(ctx, v)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
