package server

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/statemachine"
	"github.com/strandhq/strand/store"
)

// SMDefinitionList is the state machine definitions, their latest
// versions.
type SMDefinitionList struct {
	Definitions []statemachine.StoredDefinition `json:"definitions"`
}

// SMCreate creates a state machine instance.
type SMCreate struct {
	Type          string            `json:"type" max:"200" required:"true" text:"true"`
	Version       int32             `json:"version,omitempty" minimum:"0" maximum:"2147483646"`
	State         string            `json:"state,omitempty" max:"200" text:"true"`
	Vars          map[string]string `json:"vars,omitempty" max:"1000" maxkey:"200" maxvalue:"1048576"`
	BusinessKey   string            `json:"business_key,omitempty" max:"250" text:"true"`
	ExternalID    string            `json:"external_id,omitempty" max:"200" text:"true"`
	Activation    time.Time         `json:"activation,omitzero"`
	ExecutorGroup string            `json:"executor_group,omitempty" max:"1000"`
	Priority      int8              `json:"priority,omitempty" minimum:"0" maximum:"5"`
	Identity      string            `json:"identity,omitempty" max:"256"`
}

// SMCreated names a created instance.
type SMCreated struct {
	ID string `json:"id"`
}

// SMUpdate changes an instance from outside.
type SMUpdate struct {
	State      string            `json:"state,omitempty" max:"200" text:"true"`
	Activation *time.Time        `json:"activation,omitempty"`
	Vars       map[string]string `json:"vars,omitempty" max:"1000" maxkey:"200" maxvalue:"1048576"`
	Reason     string            `json:"reason,omitempty" max:"32768"`
	Identity   string            `json:"identity,omitempty" max:"256"`
}

// SMWakeup wakes an instance.
type SMWakeup struct {
	States   []string `json:"states,omitempty" max:"1000" maxvalue:"200"`
	Identity string   `json:"identity,omitempty" max:"256"`
}

// SMSignal sets an instance's signal.
type SMSignal struct {
	Signal   *int   `json:"signal"`
	Reason   string `json:"reason,omitempty" max:"32768"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// SMStats counts a type's instances per state and status.
type SMStats struct {
	Type   string                    `json:"type"`
	States []statemachine.StateCount `json:"states"`
}

// stateMachineRoutes are the routes of state machines (package
// statemachine), nFlow's REST API over the client.
func stateMachineRoutes(h *handler, svc statemachine.Service) []Route {
	defs := prefix + "/statemachines"
	insts := prefix + "/namespaces/{namespace}/statemachine-instances"
	one := insts + "/{id}"
	client := func(r *http.Request) *statemachine.Client {
		return statemachine.NewClient(svc, r.PathValue("namespace"))
	}
	definitions := func(ctx context.Context, r *http.Request, typ string) (SMDefinitionList, error) {
		all, err := statemachine.NewClient(svc, "").Definitions(ctx, typ)
		if all == nil {
			all = []statemachine.StoredDefinition{}
		}
		return SMDefinitionList{Definitions: all}, err
	}
	routes := []Route{
		{"GET", defs, "List the state machine definitions (their latest versions: states, transitions)", get(h, func(ctx context.Context, r *http.Request) (SMDefinitionList, error) {
			return definitions(ctx, r, "")
		})},
		{"GET", defs + "/{type}", "A state machine definition's latest version", get(h, func(ctx context.Context, r *http.Request) (SMDefinitionList, error) {
			return definitions(ctx, r, r.PathValue("type"))
		})},
		{"GET", defs + "/{type}/versions/{version}", "A version of a state machine definition (the one an instance runs on; 0 or latest: the latest)", get(h, func(ctx context.Context, r *http.Request) (statemachine.StoredDefinition, error) {
			pv := r.PathValue("version")
			if pv == "latest" {
				pv = "0"
			}
			v, err := strconv.ParseInt(pv, 10, 32)
			if err != nil || !digits.MatchString(pv) {
				return statemachine.StoredDefinition{}, api.InvalidArgument("version", "want a version number (1 to %d) or latest, got %q", math.MaxInt32, r.PathValue("version"))
			}
			return statemachine.NewClient(svc, "").Definition(ctx, r.PathValue("type"), int32(v))
		})},
		{"GET", prefix + "/namespaces/{namespace}/statemachines/{type}/stats", "Count a state machine's instances per state and status", get(h, func(ctx context.Context, r *http.Request) (SMStats, error) {
			counts, err := client(r).Stats(ctx, r.PathValue("type"))
			if counts == nil {
				counts = []statemachine.StateCount{}
			}
			return SMStats{Type: r.PathValue("type"), States: counts}, err
		})},
		{"POST", insts, "Create a state machine instance", call(h, func(ctx context.Context, r *http.Request, req SMCreate) (SMCreated, error) {
			id, err := client(r).Create(ctx, statemachine.CreateRequest{Type: req.Type, Version: req.Version, State: req.State, Vars: req.Vars,
				BusinessKey: req.BusinessKey, ExternalID: req.ExternalID, Activation: req.Activation, ExecutorGroup: req.ExecutorGroup, Priority: req.Priority, Identity: req.Identity})
			return SMCreated{ID: id}, err
		})},
		{"GET", insts, "Find state machine instances by type, state, status, business key, external id or parent", get(h, func(ctx context.Context, r *http.Request) (api.ListResponse, error) {
			size, token, err := pageParams(r)
			if err != nil {
				return api.ListResponse{}, err
			}
			q := r.URL.Query()
			return client(r).List(ctx, statemachine.Filter{Type: q.Get("type"), State: q.Get("state"), Status: statemachine.Status(q.Get("status")),
				BusinessKey: q.Get("business_key"), ExternalID: q.Get("external_id"), Parent: q.Get("parent")}, size, token)
		}).with(textParam("type", "only this type", store.MaxAttributeValue), textParam("state", "only this state", store.MaxAttributeValue),
			param{"status", map[string]any{"type": "string", "enum": smListedStatuses()}, "only this status: created, inProgress (also while its method runs), manual or finished"},
			textParam("business_key", "only this business key", store.MaxIndexedChars),
			textParam("external_id", "only this external id", store.MaxAttributeValue),
			textParam("parent", "only children of this instance", store.MaxAttributeValue),
			intQuery("page_size", 0, 1000, "instances per page (0: 100)"), bytesQuery("page_token", "next_page_token of the page before"))},
		{"GET", one, "A state machine instance with its actions and variables (its id with '/' escaped as %2F)", get(h, func(ctx context.Context, r *http.Request) (*statemachine.Instance, error) {
			return client(r).Get(ctx, r.PathValue("id"))
		})},
		{"PUT", one, "Change an instance from outside: move it to a state, set its next activation or variables", call(h, func(ctx context.Context, r *http.Request, req SMUpdate) (struct{}, error) {
			return struct{}{}, client(r).Update(ctx, r.PathValue("id"), statemachine.Update{State: req.State, Activation: req.Activation,
				Vars: req.Vars, Reason: req.Reason, Identity: req.Identity})
		})},
		{"POST", one + "/wakeup", "Wake an instance up (only from the states named, when some are)", call(h, func(ctx context.Context, r *http.Request, req SMWakeup) (struct{}, error) {
			return struct{}{}, client(r).Wakeup(ctx, r.PathValue("id"), req.States, req.Identity)
		})},
		{"POST", one + "/signal", "Set an instance's signal (null clears it) and wake it", call(h, func(ctx context.Context, r *http.Request, req SMSignal) (struct{}, error) {
			return struct{}{}, client(r).Signal(ctx, r.PathValue("id"), req.Signal, req.Reason, req.Identity)
		})},
	}
	if mon, ok := h.svc.(api.Monitoring); ok {
		routes = append(routes, Route{"GET", prefix + "/namespaces/{namespace}/statemachine-executors",
			"The executors: the live nodes, and per executor group (task queue) the workers that polled it lately",
			get(h, func(ctx context.Context, r *http.Request) (statemachine.Executors, error) {
				return client(r).Executors(ctx, mon)
			})})
	}
	return routes
}

// smListedStatuses are the values of a state machine list's status
// parameter: none ("") or a status lists find.
func smListedStatuses() []any {
	out := []any{""}
	for _, st := range statemachine.ListedStatuses {
		out = append(out, string(st))
	}
	return out
}
