package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

var _ api.QuotaService = (*Engine)(nil)

// quotaKind is the store record kind of a namespace's quotas.
const quotaKind = "quota"

// quotaTTL is how long a node believes the quotas it read, and the open
// run count it took.
const quotaTTL = time.Second

// quotaState is what a node knows of a namespace's quotas. q and starts
// are set when the state is made and not changed after; the rest is
// guarded by quotas.mu.
type quotaState struct {
	q      api.Quotas
	starts *rate.Limiter // nil: no rate

	read       time.Time
	refreshing bool // a caller is reading the quotas again: the others use these
	open       int64
	openRead   time.Time
}

// quotas holds the quota states by namespace.
type quotas struct {
	mu sync.Mutex
	m  map[string]*quotaState
}

// GetQuotas implements api.QuotaService.
func (e *Engine) GetQuotas(ctx context.Context, namespace string) (api.Quotas, error) {
	if _, err := e.DescribeNamespace(ctx, namespace); err != nil {
		return api.Quotas{}, err
	}
	rec, err := e.store.GetRecord(ctx, quotaKind, namespace)
	if errors.Is(err, store.ErrNotFound) {
		return api.Quotas{}, nil
	}
	if err != nil {
		return api.Quotas{}, fmt.Errorf("engine: read the quotas of %q: %w", namespace, err)
	}
	var q api.Quotas
	if err := json.Unmarshal(rec.Value, &q); err != nil {
		return api.Quotas{}, fmt.Errorf("engine: decode the quotas of %q: %w", namespace, err)
	}
	return q, nil
}

// SetQuotas implements api.QuotaService.
func (e *Engine) SetQuotas(ctx context.Context, namespace string, q api.Quotas) (api.Quotas, error) {
	if err := store.CheckLimits(&q); err != nil {
		return api.Quotas{}, err
	}
	switch {
	case q.StartsPerSecond < 0 || q.StartsPerSecond > 1e6 || math.IsNaN(q.StartsPerSecond):
		return api.Quotas{}, api.InvalidArgument("starts_per_second", "want 0 to 1000000, got %v", q.StartsPerSecond)
	case q.StartBurst < 0 || q.StartBurst > 1e6:
		return api.Quotas{}, api.InvalidArgument("start_burst", "want 0 to 1000000, got %d", q.StartBurst)
	case q.MaxPayload < 0 || q.MaxPayload > 16<<20:
		return api.Quotas{}, api.InvalidArgument("max_payload", "want 0 to 16777216, got %d", q.MaxPayload)
	case q.OpenRuns < 0 || q.MaxHistoryEvents < 0:
		return api.Quotas{}, api.InvalidArgument("quotas", "negative")
	}
	if _, err := e.DescribeNamespace(ctx, namespace); err != nil {
		return api.Quotas{}, err
	}
	value, _ := json.Marshal(q)
	for {
		rec, err := e.store.GetRecord(ctx, quotaKind, namespace)
		version := rec.Version
		if errors.Is(err, store.ErrNotFound) {
			version = 0
		} else if err != nil {
			return api.Quotas{}, err
		}
		_, err = e.store.PutRecord(ctx, store.Record{Kind: quotaKind, Key: namespace, Value: value, Version: version})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return api.Quotas{}, fmt.Errorf("engine: write the quotas of %q: %w", namespace, err)
		}
		e.quotas.mu.Lock()
		delete(e.quotas.m, namespace)
		e.quotas.mu.Unlock()
		return q, nil
	}
}

// quotaOf returns the namespace's quota state, read again once it is
// quotaTTL old. One caller reads it again; the others meanwhile use what
// the node knew, so a workflow task seldom waits for the store here.
func (e *Engine) quotaOf(ctx context.Context, namespace string) (*quotaState, error) {
	if namespace == "" {
		namespace = api.DefaultNamespace
	}
	now := time.Now()
	e.quotas.mu.Lock()
	st := e.quotas.m[namespace]
	if st != nil && (now.Sub(st.read) < quotaTTL || st.refreshing) {
		e.quotas.mu.Unlock()
		return st, nil
	}
	if st != nil {
		st.refreshing = true
	}
	e.quotas.mu.Unlock()
	q, err := e.GetQuotas(ctx, namespace)
	e.quotas.mu.Lock()
	defer e.quotas.mu.Unlock()
	if st != nil {
		st.refreshing = false
	}
	if err != nil {
		return nil, err
	}
	if e.quotas.m == nil {
		e.quotas.m = map[string]*quotaState{}
	}
	if cur := e.quotas.m[namespace]; cur != nil && cur.q == q {
		cur.read = now // the same quotas: keep the limiter's tokens
		return cur, nil
	}
	st = &quotaState{q: q, read: now}
	if q.StartsPerSecond > 0 {
		burst := int(q.StartBurst)
		if burst == 0 {
			burst = max(1, int(q.StartsPerSecond))
		}
		st.starts = rate.NewLimiter(rate.Limit(q.StartsPerSecond), burst)
	}
	e.quotas.m[namespace] = st
	return st, nil
}

// ownPrefix starts the types and signal names of Strand's own workflows
// (schedules, batches) and the front ends' control signals, which quotas
// do not hold back: a schedule's update is no user's payload.
const ownPrefix = "strand."

// admitStart refuses a start its namespace's quotas do not allow: a
// payload too large, a rate or open runs exceeded. A start forwarded from
// another node was admitted there; Strand's own workflows are not held
// back.
func (e *Engine) admitStart(ctx context.Context, namespace, workflowType string, input int) error {
	if api.Forwarded(ctx) || strings.HasPrefix(workflowType, ownPrefix) {
		return nil
	}
	st, err := e.quotaOf(ctx, namespace)
	if err != nil || st.q == (api.Quotas{}) {
		return err
	}
	if err := st.admitPayload("input", input); err != nil {
		return err
	}
	if st.q.OpenRuns > 0 {
		open, err := e.openRuns(ctx, namespace, st)
		if err != nil {
			return err
		}
		if open >= st.q.OpenRuns {
			return &api.QuotaError{Namespace: namespace, Quota: "open_runs", RetryAfter: time.Second}
		}
	}
	if st.starts != nil {
		r := st.starts.Reserve()
		if d := r.Delay(); d > 0 {
			r.Cancel()
			return &api.QuotaError{Namespace: namespace, Quota: "starts_per_second", RetryAfter: d}
		}
	}
	return nil
}

// admitSignal refuses a signal whose value is above the namespace's
// payload quota.
func (e *Engine) admitSignal(ctx context.Context, namespace, name string, input int) error {
	if api.Forwarded(ctx) || strings.HasPrefix(name, ownPrefix) {
		return nil
	}
	st, err := e.quotaOf(ctx, namespace)
	if err != nil {
		return err
	}
	return st.admitPayload("input", input)
}

func (st *quotaState) admitPayload(field string, n int) error {
	if st.q.MaxPayload > 0 && int64(n) > st.q.MaxPayload {
		return store.PayloadTooLarge(field, n, int(st.q.MaxPayload))
	}
	return nil
}

// openRuns counts the namespace's open runs, at most quotaTTL old; starts
// admitted since the count are added to it.
func (e *Engine) openRuns(ctx context.Context, namespace string, st *quotaState) (int64, error) {
	e.quotas.mu.Lock()
	fresh := time.Since(st.openRead) < quotaTTL
	open := st.open
	e.quotas.mu.Unlock()
	if !fresh {
		n, err := e.CountWorkflows(ctx, api.ListRequest{Namespace: namespace, Statuses: []store.RunStatus{store.StatusRunning}})
		if err != nil {
			return 0, err
		}
		e.quotas.mu.Lock()
		st.open, st.openRead, open = n, time.Now(), n
		e.quotas.mu.Unlock()
	}
	e.quotas.mu.Lock()
	st.open++ // this start, until the next count
	e.quotas.mu.Unlock()
	return open, nil
}

// historyOverQuota returns why a run whose history reaches lastEventID is
// over its namespace's history quota ("" when it is not, or the quota
// cannot be read: a run is not ended on a store's hiccup).
func (e *Engine) historyOverQuota(ctx context.Context, namespace string, lastEventID int64) string {
	st, err := e.quotaOf(ctx, namespace)
	if err != nil || st.q.MaxHistoryEvents == 0 || lastEventID <= st.q.MaxHistoryEvents {
		return ""
	}
	return fmt.Sprintf("the history of %d events is over namespace %q's quota of %d (max_history_events); continue as new before it", lastEventID, namespace, st.q.MaxHistoryEvents)
}
