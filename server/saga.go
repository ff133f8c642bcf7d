package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/saga"
)

// SagaAction is an operator's decision on a failed compensation: retry,
// done or skip.
type SagaAction string

// SagaBatchAction is what a saga batch does: a decision, or terminate.
type SagaBatchAction string

// SagaFilterState is a state sagas are listed by: any of saga.States.
type SagaFilterState string

// sagaFilterStates are the SagaFilterState values.
var sagaFilterStates = func() []any {
	out := []any{""}
	for _, s := range saga.States {
		out = append(out, s)
	}
	return out
}()

// SagaDecision is an operator's decision on a saga's failed compensation.
type SagaDecision struct {
	Action SagaAction `json:"action" required:"true"`
	// Step is the saga step (empty: every failed compensation).
	Step     string `json:"step,omitempty" max:"500"`
	Note     string `json:"note,omitempty" max:"32768"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// SagaRun starts a saga of a definition (strand saga run): a run of the
// latest version (or Version) with Input. ID is the saga's id, the
// business's key (default NAME-TIME-RANDOM); it runs once unless IDReuse
// (never, failed or always) lets it run again, as a new transaction.
type SagaRun struct {
	Name     string          `json:"name" required:"true" max:"100" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"`
	Version  int32           `json:"version,omitempty" minimum:"0"`
	Input    json.RawMessage `json:"input,omitempty" max:"16777216"`
	ID       string          `json:"id,omitempty" max:"250"`
	IDReuse  string          `json:"id_reuse,omitempty" pattern:"^(|never|failed|always)$"`
	Identity string          `json:"identity,omitempty" max:"256"`
}

// SagaChange is an operator's terminate, disable or enable of a saga.
type SagaChange struct {
	Reason   string `json:"reason,omitempty" max:"32768"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// SagaBatch acts on every saga a filter selects.
type SagaBatch struct {
	Name          string          `json:"name,omitempty" max:"500" text:"true"` // a run attribute: no NUL
	State         SagaFilterState `json:"state,omitempty" enum:",started,in_progress,completed,failed,compensating,compensated,compensation_failed,terminated"`
	StartedAfter  time.Time       `json:"started_after,omitzero"`
	StartedBefore time.Time       `json:"started_before,omitzero"`
	Action        SagaBatchAction `json:"action" required:"true"`
	Note          string          `json:"note,omitempty" max:"32768"`
	Identity      string          `json:"identity,omitempty" max:"256"`
}

// sagaRoutes are the routes of sagas (package saga): their records and
// the operators' actions, over the client.
func sagaRoutes(h *handler) []Route {
	list := prefix + "/namespaces/{namespace}/sagas"
	one := list + "/{id}"
	client := func(r *http.Request) *saga.Client { return saga.NewClient(h.svc, r.PathValue("namespace")) }
	change := func(do func(c *saga.Client, ctx context.Context, id, reason, identity string) error) endpoint {
		return call(h, func(ctx context.Context, r *http.Request, req SagaChange) (struct{}, error) {
			return struct{}{}, do(client(r), ctx, r.PathValue("id"), req.Reason, req.Identity)
		})
	}
	routes := []Route{
		{"GET", list, "Find sagas by name, state and start time, newest first", get(h, func(ctx context.Context, r *http.Request) (api.ListResponse, error) {
			size, token, err := pageParams(r)
			if err != nil {
				return api.ListResponse{}, err
			}
			q := r.URL.Query()
			f := saga.Filter{Name: q.Get("name"), State: saga.State(q.Get("state"))}
			if f.StartedAfter, err = timeParam(q, "started_after"); err != nil {
				return api.ListResponse{}, err
			}
			if f.StartedBefore, err = timeParam(q, "started_before"); err != nil {
				return api.ListResponse{}, err
			}
			return client(r).List(ctx, f, size, token)
		}).with(param{"name", map[string]any{"type": "string", "maxLength": 500, "pattern": "^[^\\x00]*$"}, "only sagas of this name"}, param{"state", map[string]any{"type": "string", "enum": sagaFilterStates}, "only sagas in this state"},
			param{"started_after", map[string]any{"type": "string", "format": "date-time"}, "only sagas started at or after this time (RFC 3339)"},
			param{"started_before", map[string]any{"type": "string", "format": "date-time"}, "only sagas started before this time (RFC 3339)"},
			intQuery("page_size", 0, 1000, "sagas per page (0: 100)"), bytesQuery("page_token", "next_page_token of the page before"))},
		{"GET", one, "A saga's record: its steps with their forward and compensation states, every tryout, the operators' decisions (its id with '/' escaped as %2F)",
			get(h, func(ctx context.Context, r *http.Request) (*saga.Record, error) {
				return client(r).Get(ctx, r.PathValue("id"))
			})},
		{"POST", one + "/resolve", "Decide a failed compensation: retry it, mark it done by hand, or skip it", call(h, func(ctx context.Context, r *http.Request, req SagaDecision) (struct{}, error) {
			return struct{}{}, client(r).Resolve(ctx, r.PathValue("id"), saga.Operator{Action: string(req.Action), Step: req.Step, Note: req.Note, Identity: req.Identity})
		})},
		{"POST", one + "/terminate", "Terminate a saga where it is, without compensating", change((*saga.Client).Terminate)},
	}
	if fe, ok := h.svc.(api.FrontEndService); ok {
		routes = append(routes, Route{"POST", list, "Run a saga of a definition (its id runs once unless id_reuse lets it run again)",
			call(h, func(ctx context.Context, r *http.Request, req SagaRun) (saga.Started, error) {
				c := saga.NewCatalog(fe, r.PathValue("namespace"))
				c.Identity, c.Reuse = req.Identity, saga.Reuse(req.IDReuse)
				return c.Run(ctx, req.Name, req.Version, req.Input, req.ID)
			})})
	}
	if _, ok := h.svc.(api.Operator); ok {
		routes = append(routes,
			Route{"POST", one + "/disable", "Disable a saga: its run is paused until enabled", change((*saga.Client).Disable)},
			Route{"POST", one + "/enable", "Enable a disabled saga", change((*saga.Client).Enable)})
	}
	if b, ok := h.svc.(api.Batches); ok {
		routes = append(routes, Route{"POST", prefix + "/namespaces/{namespace}/saga-batches",
			"Act on every saga a filter selects: retry, done or skip their failed compensations, or terminate them (a kernel batch)",
			call(h, func(ctx context.Context, r *http.Request, req SagaBatch) (api.BatchRef, error) {
				f := saga.Filter{Name: req.Name, State: saga.State(req.State), StartedAfter: req.StartedAfter, StartedBefore: req.StartedBefore}
				return client(r).Batch(ctx, b, f, string(req.Action), req.Note, req.Identity)
			})})
	}
	return routes
}

// timeParam reads an optional RFC 3339 time of a query: absent is the
// zero time, present and empty is invalid.
func timeParam(q url.Values, name string) (time.Time, error) {
	if !q.Has(name) {
		return time.Time{}, nil
	}
	v := q.Get(name)
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, api.InvalidArgument(name, "want an RFC 3339 time, got %q", v)
	}
	return t, nil
}
