package api_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strandhq/strand/api"
)

// InsufficientFunds is a step's own error type.
type InsufficientFunds struct{ Amount int }

func (e *InsufficientFunds) Error() string { return fmt.Sprintf("%d short", e.Amount) }

// declared declares its failure type.
type declared struct{}

func (declared) Error() string       { return "declared" }
func (declared) FailureType() string { return "payments.Declined" }

// TestErrorTexts: what users read of a failure speaks of their things: a
// step's failure of its summary (else its name) and its attempts, without
// the engine's sequence number; a failure's type is never a Go type's
// name; not-found and bad-input texts carry no engine prefix.
func TestErrorTexts(t *testing.T) {
	cause := &api.ApplicationError{Type: "error", Message: "insufficient funds"}
	for _, c := range []struct {
		err  *api.StepError
		want string
	}{
		{&api.StepError{Step: "strand.sm.exec/credit", Summary: "state validate of credit instance c7", Seq: 13, Attempt: 1, Cause: cause},
			"state validate of credit instance c7 failed after 1 attempt: insufficient funds"},
		{&api.StepError{Step: "ChargeCard", Seq: 5, Attempt: 3, Cause: cause}, "step ChargeCard failed after 3 attempts: insufficient funds"},
		{&api.StepError{Step: "ChargeCard", Seq: 5}, "step ChargeCard failed"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%+v: %q; want %q", c.err, got, c.want)
		}
		// The summary travels with the failure and comes back.
		f := api.FailureOf(c.err)
		var back *api.StepError
		if !errors.As(f.Err(), &back) || back.Summary != c.err.Summary || back.Error() != c.want || f.Message != c.want {
			t.Errorf("%+v through a failure: %+v", c.err, f)
		}
	}

	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("plain"), "error"},
		{fmt.Errorf("charge: %v", "plain"), "error"},
		{fmt.Errorf("charge: %w", errors.New("plain")), "error"},
		{errors.Join(errors.New("a"), errors.New("b")), "error"},
		{fmt.Errorf("charge: %w", &InsufficientFunds{Amount: 3}), "InsufficientFunds"},
		{fmt.Errorf("charge: %w", declared{}), "payments.Declined"},
		{&api.ApplicationError{Type: "Fatal", Message: "m"}, "Fatal"},
	} {
		if got := api.FailureOf(c.err).Type; got != c.want {
			t.Errorf("type of %v (%T): %q; want %q", c.err, c.err, got, c.want)
		}
	}

	for _, err := range []error{
		api.InvalidArgument("queue", "longer than %d bytes", 1000),
		fmt.Errorf("%w: no task %q", api.ErrNotFound, "t1"),
		api.ErrNamespaceNotFound,
	} {
		if msg := err.Error(); strings.Contains(msg, "store:") || strings.Contains(msg, "workflow not found") {
			t.Errorf("%q speaks of the engine", msg)
		}
	}
	if got := api.InvalidArgument("queue", "longer than 1000 bytes").Error(); got != "invalid argument: queue: longer than 1000 bytes" {
		t.Errorf("invalid argument reads %q", got)
	}
}
