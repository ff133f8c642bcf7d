package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// attempts records what each attempt of a step saw.
type attempts struct {
	mu   sync.Mutex
	keys map[string][]int32 // idempotency key -> attempts
}

func (a *attempts) add(info step.Info) int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys == nil {
		a.keys = map[string][]int32{}
	}
	a.keys[info.IdempotencyKey] = append(a.keys[info.IdempotencyKey], info.Attempt)
	return int32(len(a.keys[info.IdempotencyKey]))
}

func (a *attempts) all() map[string][]int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]int32{}
	for k, v := range a.keys {
		out[k] = append([]int32(nil), v...)
	}
	return out
}

var fastRetry = &workflow.RetryPolicy{InitialInterval: 20 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 100 * time.Millisecond}

// StepCase runs the step named by c.Step with c's options and returns its
// result or error text.
type StepCase struct {
	Step    string
	Options workflow.StepOptions
}

func RunStep(ctx workflow.Context, c StepCase) (string, error) {
	return workflow.ExecuteStepByName[string](ctx, c.Options, c.Step, "in").Get(ctx)
}

func TestStepRetriesAndTimeouts(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		var seen attempts
		e := newEnv(t, st, func(w *worker.Worker) {
			worker.RegisterWorkflow(w, RunStep)
			// Fails twice, then succeeds.
			worker.RegisterStepNamed(w, "flaky", func(ctx context.Context, in string) (string, error) {
				info := step.GetInfo(ctx)
				n := seen.add(info)
				if info.Attempt != n {
					return "", fmt.Errorf("attempt %d reported as %d", n, info.Attempt)
				}
				if info.Attempt < 3 {
					return "", errors.New("not yet")
				}
				return fmt.Sprintf("ok after %d", info.Attempt), nil
			})
			worker.RegisterStepNamed(w, "broken", func(ctx context.Context, in string) (string, error) {
				seen.add(step.GetInfo(ctx))
				return "", workflow.NewError("Broken", "always broken", false)
			})
			worker.RegisterStepNamed(w, "fatal", func(ctx context.Context, in string) (string, error) {
				seen.add(step.GetInfo(ctx))
				return "", workflow.NewError("Fatal", "do not retry", false)
			})
			// The first attempt hangs past its start-to-close timeout.
			worker.RegisterStepNamed(w, "slow-once", func(ctx context.Context, in string) (string, error) {
				if step.GetInfo(ctx).Attempt == 1 {
					<-ctx.Done()
					time.Sleep(50 * time.Millisecond)
					return "", ctx.Err()
				}
				return "second attempt", nil
			})
			// Never heartbeats.
			worker.RegisterStepNamed(w, "silent", func(ctx context.Context, in string) (string, error) {
				select {
				case <-ctx.Done():
				case <-time.After(3 * time.Second):
				}
				return "", ctx.Err()
			})
			// Heartbeats with its progress; a retry sees the last details.
			worker.RegisterStepNamed(w, "beating", func(ctx context.Context, in string) (string, error) {
				info := step.GetInfo(ctx)
				if info.Attempt == 2 {
					return "resumed from " + string(info.HeartbeatDetails), nil
				}
				for i := range 5 {
					if err := step.Heartbeat(ctx, i); err != nil {
						return "", err
					}
					time.Sleep(30 * time.Millisecond)
				}
				select { // then goes silent
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
				return "", errors.New("gave up")
			})
		})
		run := func(name string, c StepCase) (string, error) {
			r, err := client.Start(e.ctx, e.c, RunStep, c, client.StartOptions{ID: name})
			if err != nil {
				t.Fatal(err)
			}
			return r.Get(e.ctx)
		}

		t.Run("retries until success", func(t *testing.T) {
			got, err := run("flaky", StepCase{Step: "flaky", Options: workflow.StepOptions{Retry: fastRetry}})
			if err != nil || got != "ok after 3" {
				t.Fatalf("got %q, %v", got, err)
			}
			evs := e.history("flaky", "")
			if n := count(evs, api.EventStepAttemptFailed); n != 2 {
				dump(t, evs)
				t.Fatalf("%d failed attempts in history, want 2", n)
			}
			keys := 0
			for _, as := range seen.all() {
				if len(as) == 3 {
					keys++
				}
			}
			if keys != 1 {
				t.Fatalf("attempts by idempotency key: %v; want one key with 3 attempts", seen.all())
			}
		})
		t.Run("maximum attempts", func(t *testing.T) {
			p := *fastRetry
			p.MaximumAttempts = 3
			_, err := run("broken", StepCase{Step: "broken", Options: workflow.StepOptions{Retry: &p}})
			var se *api.StepError
			if !errors.As(err, &se) || !errors.Is(err, api.ErrStepFailed) {
				t.Fatalf("got %v, want a step error", err)
			}
			var app *api.ApplicationError
			if se.Attempt != 3 || se.Step != "broken" || !errors.As(err, &app) || app.Type != "Broken" {
				t.Fatalf("step error %+v (cause %v): want attempt 3 of broken caused by Broken", se, se.Cause)
			}
		})
		t.Run("non-retryable type", func(t *testing.T) {
			p := *fastRetry
			p.NonRetryableTypes = []string{"Fatal"}
			_, err := run("fatal", StepCase{Step: "fatal", Options: workflow.StepOptions{Retry: &p}})
			var se *api.StepError
			if !errors.As(err, &se) || se.Attempt != 1 {
				t.Fatalf("got %v, want a step error after attempt 1", err)
			}
		})
		t.Run("retryable types only", func(t *testing.T) {
			p := *fastRetry
			p.RetryableTypes = []string{"Broken"}
			p.MaximumAttempts = 2
			// A failure of another type is final at once...
			_, err := run("only-flaky", StepCase{Step: "flaky", Options: workflow.StepOptions{Retry: &p}})
			var se *api.StepError
			if !errors.As(err, &se) || se.Attempt != 1 {
				t.Fatalf("got %v, want a step error after attempt 1", err)
			}
			// ...one of the types listed is retried.
			_, err = run("only-broken", StepCase{Step: "broken", Options: workflow.StepOptions{Retry: &p}})
			if !errors.As(err, &se) || se.Attempt != 2 {
				t.Fatalf("got %v, want a step error after attempt 2", err)
			}
		})
		t.Run("a chosen idempotency key, labels and attempt start times", func(t *testing.T) {
			o := workflow.StepOptions{Retry: fastRetry, IdempotencyKey: "order-7/charge", Labels: map[string]string{"strand.saga.step": "charge"}}
			if got, err := run("keyed", StepCase{Step: "flaky", Options: o}); err != nil || got != "ok after 3" {
				t.Fatalf("got %q, %v", got, err)
			}
			if got := seen.all()["order-7/charge"]; fmt.Sprint(got) != "[1 2 3]" {
				t.Fatalf("attempts with the chosen key: %v", got)
			}
			for _, ev := range e.history("keyed", "") {
				switch ev.Type {
				case api.EventStepScheduled:
					if ev.Step == nil || ev.Step.Labels["strand.saga.step"] != "charge" || ev.Step.IdempotencyKey != "order-7/charge" {
						t.Errorf("scheduled: %+v", ev.Step)
					}
				case api.EventStepAttemptFailed, api.EventStepCompleted:
					if ev.AttemptStarted.IsZero() || ev.AttemptStarted.After(ev.Time) {
						t.Errorf("%s of attempt %d: started %v, ended %v", ev.Type, ev.Attempt, ev.AttemptStarted, ev.Time)
					}
				}
			}
		})
		t.Run("start-to-close", func(t *testing.T) {
			got, err := run("s2c", StepCase{Step: "slow-once", Options: workflow.StepOptions{StartToClose: 300 * time.Millisecond, Retry: fastRetry}})
			if err != nil || got != "second attempt" {
				t.Fatalf("got %q, %v", got, err)
			}
			evs := e.history("s2c", "")
			var found bool
			for _, ev := range evs {
				if ev.Type == api.EventStepAttemptFailed && ev.Failure != nil && ev.Failure.Kind == api.KindTimeout && ev.Failure.Type == api.TimeoutStartToClose {
					found = true
				}
			}
			if !found {
				dump(t, evs)
				t.Fatal("no start-to-close timeout in history")
			}
		})
		t.Run("heartbeat", func(t *testing.T) {
			p := *fastRetry
			p.MaximumAttempts = 1
			_, err := run("hb", StepCase{Step: "silent", Options: workflow.StepOptions{Heartbeat: 200 * time.Millisecond, Retry: &p}})
			var te *api.TimeoutError
			if !errors.As(err, &te) || te.What != api.TimeoutHeartbeat || !errors.Is(err, api.ErrTimedOut) {
				t.Fatalf("got %v, want a heartbeat timeout", err)
			}
		})
		t.Run("heartbeat details reach the retry", func(t *testing.T) {
			got, err := run("hb-details", StepCase{Step: "beating", Options: workflow.StepOptions{Heartbeat: 300 * time.Millisecond, Retry: fastRetry}})
			if err != nil || got != "resumed from 4" {
				t.Fatalf("got %q, %v", got, err)
			}
		})
		t.Run("schedule-to-start", func(t *testing.T) {
			_, err := run("s2s", StepCase{Step: "flaky", Options: workflow.StepOptions{Queue: "nobody-polls", ScheduleToStart: 300 * time.Millisecond}})
			var te *api.TimeoutError
			if !errors.As(err, &te) || te.What != api.TimeoutScheduleToStart {
				t.Fatalf("got %v, want a schedule-to-start timeout", err)
			}
		})
		t.Run("schedule-to-close", func(t *testing.T) {
			_, err := run("sc2c", StepCase{Step: "broken", Options: workflow.StepOptions{ScheduleToClose: 500 * time.Millisecond, Retry: fastRetry}})
			var te *api.TimeoutError
			if !errors.As(err, &te) || (te.What != api.TimeoutScheduleToClose) {
				var se *api.StepError
				if errors.As(err, &se) && se.Attempt > 1 {
					// Out of time to back off again: the last failure stands.
					return
				}
				t.Fatalf("got %v, want a schedule-to-close timeout", err)
			}
		})
	})
}

// stepHeartbeat heartbeats; it fails once the step's run no longer wants it.
func stepHeartbeat(ctx context.Context) error { return step.Heartbeat(ctx, nil) }

// Forgetful schedules a step and closes in the same workflow task, without
// waiting for it.
func Forgetful(ctx workflow.Context, _ int) (string, error) {
	workflow.ExecuteStepByName[string](ctx, workflow.StepOptions{}, "ignored", "x")
	return "closed", nil
}

// A step scheduled by the task that closes its run is never offered, and
// its dispatch is acknowledged: it does not hold the transfer queue's ack
// level (nor anything after it) forever.
func TestStepScheduledAsTheRunCloses(t *testing.T) {
	st := testdb.SQLite(t)
	var ran atomic.Int32
	e := newEnv(t, st, func(w *worker.Worker) {
		worker.RegisterWorkflow(w, Forgetful)
		worker.RegisterStepNamed(w, "ignored", func(context.Context, string) (string, error) { ran.Add(1); return "", nil })
	})
	r, err := client.Start(e.ctx, e.c, Forgetful, 0, client.StartOptions{ID: "forgetful"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(e.ctx); err != nil || got != "closed" {
		t.Fatalf("got %q, %v", got, err)
	}
	e.eventually("the transfer queue to drain", func() bool {
		page, err := st.ReadTasks(e.ctx, store.ReadTasksRequest{ShardID: 0, Range: store.TaskRange{Category: store.CategoryTransfer}})
		return err == nil && len(page.Tasks) == 0
	})
	if n := ran.Load(); n != 0 {
		t.Fatalf("the step of a closed run ran %d times", n)
	}
}
