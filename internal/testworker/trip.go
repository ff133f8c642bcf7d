package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// TripPlan says how a Trip saga goes: the step that fails for good, the
// steps busy (retryable) for their first attempts, the compensation that
// always fails, and how long compensations take.
type TripPlan struct {
	Fail       string         `json:"fail,omitempty"`
	Busy       map[string]int `json:"busy,omitempty"`
	UndoBroken string         `json:"undo_broken,omitempty"`
	UndoSleep  string         `json:"undo_sleep,omitempty"`
	// Bulky is the step whose answer carries a voucher of about 300 KB,
	// which the store keeps as a document.
	Bulky string `json:"bulky,omitempty"`
}

// Booking is what a booking step answers, and its compensation gets.
type Booking struct {
	Step string   `json:"step"`
	Ref  string   `json:"ref"`
	Plan TripPlan `json:"plan"`
	// Voucher is what a bulky step answers besides its reference.
	Voucher string `json:"voucher,omitempty"`
}

// Trip books a flight, then a hotel and a car together, then sends the
// tickets: a saga whose steps record their effects (--effects).
func Trip(ctx workflow.Context, p TripPlan) (string, error) {
	s := saga.New(ctx, saga.Options{Name: "trip",
		Step:         workflow.StepOptions{StartToClose: 5 * time.Second},
		Retry:        saga.RetryPolicy{Backoff: 200 * time.Millisecond, MaxBackoff: time.Second, Deadline: time.Minute},
		Compensation: saga.RetryPolicy{Backoff: 200 * time.Millisecond, MaxBackoff: time.Second, Attempts: 3}})
	var flight Booking
	if err := s.Step("flight", "book", Booking{Step: "flight", Plan: p}).Compensate("cancel").Get(&flight); err != nil {
		return "", err
	}
	s.Parallel(func(g *saga.Group) {
		g.Step("hotel", "book", Booking{Step: "hotel", Plan: p}).Compensate("cancel")
		g.Step("car", "book", Booking{Step: "car", Plan: p}).Compensate("cancel")
	})
	s.Step("tickets", "book", Booking{Step: "tickets", Plan: p})
	return flight.Ref, s.End(nil)
}

// book books b.Step.
func book(ctx context.Context, b Booking) (Booking, error) {
	info := step.GetInfo(ctx)
	if err := record(fmt.Sprintf("book %s %s %d", b.Step, info.IdempotencyKey, info.Attempt)); err != nil {
		return b, err
	}
	if int(info.Attempt) <= b.Plan.Busy[b.Step] {
		return b, saga.Retryable(fmt.Errorf("%s: the booking service is busy (503)", b.Step))
	}
	if b.Plan.Fail == b.Step {
		return b, fmt.Errorf("%s: no seats left (409)", b.Step)
	}
	b.Ref = fmt.Sprintf("%s-%d", b.Step, info.Seq)
	if b.Plan.Bulky == b.Step {
		b.Voucher = strings.Repeat("voucher line for "+b.Ref+"\n", 300<<10/(len(b.Ref)+18))
	}
	return b, nil
}

// cancel undoes a booking, taking UndoSleep first.
func cancel(ctx context.Context, b Booking) (string, error) {
	info := step.GetInfo(ctx)
	if err := record(fmt.Sprintf("cancel-start %s %s %d", b.Step, info.IdempotencyKey, info.Attempt)); err != nil {
		return "", err
	}
	if d, _ := time.ParseDuration(b.Plan.UndoSleep); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if b.Plan.UndoBroken == b.Step {
		return "", errors.New(b.Step + ": the cancellation service refused (500)")
	}
	if err := record(fmt.Sprintf("cancel-end %s %s", b.Step, info.IdempotencyKey)); err != nil {
		return "", err
	}
	return "canceled " + b.Ref, nil
}

// registerTrip registers the Trip saga and its steps on w.
func registerTrip(w *worker.Worker) {
	worker.RegisterWorkflow(w, Trip)
	worker.RegisterStepNamed(w, "book", book)
	worker.RegisterStepNamed(w, "cancel", cancel)
}
