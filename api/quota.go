package api

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Quotas bound what a namespace may use; a zero field is no bound. A
// cluster admin sets them (Quotas.SetQuotas); the namespace's page shows
// them.
type Quotas struct {
	// StartsPerSecond bounds the workflows started through the API
	// (starts, signal-with-starts, schedules' fires) per second, on each
	// node; StartBurst is how many may come at once (default: the rate,
	// at least 1).
	StartsPerSecond float64 `json:"starts_per_second,omitempty" minimum:"0" maximum:"1000000"`
	StartBurst      int32   `json:"start_burst,omitempty" minimum:"0" maximum:"1000000"`
	// OpenRuns bounds the namespace's open runs: a start beyond it waits
	// for runs to close. The count is the visibility store's, at most a
	// second old, so a burst may overshoot it by what starts in that
	// second.
	OpenRuns int64 `json:"open_runs,omitempty" minimum:"0"`
	// MaxPayload bounds a start's input and a signal's value, in bytes
	// (below the store's own limit).
	MaxPayload int64 `json:"max_payload,omitempty" minimum:"0" maximum:"16777216"`
	// MaxHistoryEvents bounds a run's history: a workflow task that takes
	// it past the bound terminates the run, saying so (Temporal's history
	// limit). Runs that loop for ever should continue as new before it.
	MaxHistoryEvents int64 `json:"max_history_events,omitempty" minimum:"0"`
}

// QuotaService reads and sets namespaces' quotas.
type QuotaService interface {
	// GetQuotas returns a namespace's quotas (all zero: none).
	GetQuotas(ctx context.Context, namespace string) (Quotas, error)
	// SetQuotas replaces a namespace's quotas.
	SetQuotas(ctx context.Context, namespace string, q Quotas) (Quotas, error)
}

// ErrQuotaExceeded: the namespace is at one of its quotas; nothing
// changed. *QuotaError says which and when to try again.
var ErrQuotaExceeded = errors.New("quota exceeded")

// QuotaError is a request refused by a namespace's quota.
type QuotaError struct {
	Namespace string
	// Quota names the field of Quotas: starts_per_second, open_runs.
	Quota string
	// RetryAfter is when trying again may pass.
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%v: namespace %q is at its %s quota; try again in %v", ErrQuotaExceeded, e.Namespace, e.Quota, e.RetryAfter)
}

// Unwrap makes a QuotaError match ErrQuotaExceeded.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }
