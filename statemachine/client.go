package statemachine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
)

// Client creates, finds and changes instances through the public API; the
// CLI, the HTTP routes and Go programs use it.
type Client struct {
	svc       Service
	namespace string
}

// NewClient returns a client of the instances of a namespace.
func NewClient(svc Service, namespace string) *Client {
	if namespace == "" {
		namespace = api.DefaultNamespace
	}
	return &Client{svc: svc, namespace: namespace}
}

// CreateRequest creates an instance.
type CreateRequest struct {
	Type string `json:"type"`
	// Version pins a definition version (default the latest).
	Version int32 `json:"version,omitempty"`
	// State is the start state (default the definition's first).
	State       string            `json:"state,omitempty"`
	Vars        map[string]string `json:"vars,omitempty"`
	BusinessKey string            `json:"business_key,omitempty"`
	// ExternalID is unique per type: a second instance with one is refused.
	ExternalID string    `json:"external_id,omitempty"`
	Activation time.Time `json:"activation,omitzero"`
	// ExecutorGroup is the task queue of the workers that run the
	// instance (default "default").
	ExecutorGroup string `json:"executor_group,omitempty"`
	// Priority orders its tasks on that queue: api.PriorityHighest (1) to
	// api.PriorityLowest (5); 0 is normal.
	Priority int8   `json:"priority,omitempty"`
	Identity string `json:"identity,omitempty"`
}

// definition reads a stored definition version (the latest for 0).
func (c *Client) definition(ctx context.Context, typ string, version int32) (*Definition, int32, error) {
	def, v, _, err := c.stored(ctx, typ, version)
	return def, v, err
}

// stored reads a stored definition version and its bytes.
func (c *Client) stored(ctx context.Context, typ string, version int32) (*Definition, int32, []byte, error) {
	d, err := getDefinition(ctx, c.svc, typ, version)
	if errors.Is(err, api.ErrNotFound) {
		if version == 0 {
			return nil, 0, nil, api.InvalidArgument("type", "no state machine %q is defined (a worker stores its definitions when it registers them)", typ)
		}
		return nil, 0, nil, api.InvalidArgument("version", "state machine %q has no version %d", typ, version)
	}
	if err != nil {
		return nil, 0, nil, err
	}
	var def Definition
	if err := json.Unmarshal(d.Body, &def); err != nil {
		return nil, 0, nil, fmt.Errorf("%w: the stored definition %s version %d is not a state machine definition: %v", api.ErrFailedPrecondition, typ, d.Version, err)
	}
	return &def, d.Version, d.Body, nil
}

// Create starts an instance and returns its id. An unknown type or state
// is an invalid argument; a type's external id given twice is
// api.ErrAlreadyStarted. Nothing is created then.
func (c *Client) Create(ctx context.Context, req CreateRequest) (string, error) {
	if req.Type == "" {
		return "", api.InvalidArgument("type", "empty")
	}
	def, version, body, err := c.stored(ctx, req.Type, req.Version)
	if err != nil {
		return "", err
	}
	if req.State != "" && def.state(req.State) == nil {
		return "", api.InvalidArgument("state", "state machine %s version %d has no state %q", req.Type, version, req.State)
	}
	// As in nFlow, an instance begins in a start state: one created in
	// another (a manual state too) would skip the start states' work.
	// Create it in a start state and move it with Update.
	if st := def.state(req.State); st != nil && st.Kind != KindStart {
		return "", api.InvalidArgument("state", "%q is a %s state of %s version %d; an instance begins in a start state (%s), and an update moves it on",
			req.State, st.Kind, req.Type, version, quoteAll(def.startStates()))
	}
	id := InstanceID(req.Type, req.ExternalID)
	if req.ExternalID == "" {
		id = InstanceID(req.Type, uuid.NewString())
	}
	input := Input{Type: req.Type, Version: version, State: req.State, Vars: req.Vars, BusinessKey: req.BusinessKey,
		ExternalID: req.ExternalID, Activation: req.Activation, Priority: req.Priority, Definition: body}
	in, _ := json.Marshal(input)
	// Listed and read as created, in its start state, before a worker
	// runs it.
	input.State = cmp.Or(input.State, firstStart(def))
	memo, attrs, err := startMemo(createdInstance(id, input, req.ExecutorGroup, time.Now()))
	if err != nil {
		return "", err
	}
	_, err = c.svc.StartWorkflow(ctx, api.StartRequest{Namespace: c.namespace, WorkflowID: id, WorkflowType: WorkflowType,
		Queue: req.ExecutorGroup, Priority: req.Priority, Input: in, BusinessKey: req.BusinessKey, IDReuse: api.RejectDuplicate,
		RequestID: uuid.NewString(), Identity: req.Identity, Memo: memo, Attributes: attrs})
	if errors.Is(err, api.ErrAlreadyStarted) && req.ExternalID != "" {
		return "", fmt.Errorf("%w: a %s instance with external id %q exists", err, req.Type, req.ExternalID)
	}
	return id, err
}

// Get returns an instance with its actions and variables.
func (c *Client) Get(ctx context.Context, id string) (*Instance, error) {
	return ReadInstance(ctx, c.svc, c.namespace, id)
}

// Update changes an instance from outside: an external change action. A
// state its definition version does not have is an invalid argument.
func (c *Client) Update(ctx context.Context, id string, u Update) error {
	inst, err := c.Get(ctx, id)
	if err != nil {
		return err
	}
	if inst.Status == StatusFinished {
		return fmt.Errorf("%w: instance %s finished", api.ErrFailedPrecondition, id)
	}
	if u.State != "" {
		def, _, err := c.definition(ctx, inst.Type, inst.Version)
		if err != nil {
			return err
		}
		if def.state(u.State) == nil {
			return api.InvalidArgument("state", "state machine %s version %d has no state %q", inst.Type, inst.Version, u.State)
		}
	}
	return c.signal(ctx, id, SignalUpdate, u, u.Identity)
}

// Wakeup wakes an instance waiting in one of states (any, when empty).
// One in another state, or finished, is not woken: api.ErrFailedPrecondition
// says why.
func (c *Client) Wakeup(ctx context.Context, id string, states []string, identity string) error {
	inst, err := c.Get(ctx, id)
	if err != nil {
		return err
	}
	if inst.Status == StatusFinished {
		return fmt.Errorf("%w: instance %s is not woken: it finished in %q", api.ErrFailedPrecondition, id, inst.State)
	}
	if len(states) > 0 && !slices.Contains(states, inst.State) {
		return fmt.Errorf("%w: instance %s is not woken: it is in %q, not in %s", api.ErrFailedPrecondition, id, inst.State, quoteAll(states))
	}
	return c.signal(ctx, id, SignalWakeup, Wakeup{States: states}, identity)
}

// Signal sets an instance's signal (nil clears it) and wakes it.
func (c *Client) Signal(ctx context.Context, id string, signal *int, reason, identity string) error {
	if _, err := c.Get(ctx, id); err != nil {
		return err
	}
	return c.signal(ctx, id, SignalSignal, SignalValue{Signal: signal, Reason: reason, Identity: identity}, identity)
}

func (c *Client) signal(ctx context.Context, id, name string, v any, identity string) error {
	in, _ := json.Marshal(v)
	return c.svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: api.RunRef{Namespace: c.namespace, WorkflowID: id},
		Name: name, Input: in, RequestID: uuid.NewString(), Identity: identity})
}

// Filter selects instances; empty fields match all.
type Filter struct {
	Type        string `json:"type,omitempty"`
	State       string `json:"state,omitempty"`
	Status      Status `json:"status,omitempty"`
	BusinessKey string `json:"business_key,omitempty"`
	ExternalID  string `json:"external_id,omitempty"`
	Parent      string `json:"parent,omitempty"`
}

// List lists instances, newest first, from the runs' attributes (which lag
// the instances by about a second).
func (c *Client) List(ctx context.Context, f Filter, pageSize int, token []byte) (api.ListResponse, error) {
	if err := checkListStatus(f.Status); err != nil {
		return api.ListResponse{}, err
	}
	attrs := map[string]string{}
	for k, v := range map[string]string{AttrType: f.Type, AttrState: f.State, AttrStatus: string(f.Status),
		AttrExternalID: f.ExternalID, AttrParent: f.Parent} {
		if v != "" {
			attrs[k] = v
		}
	}
	return c.svc.ListWorkflows(ctx, api.ListRequest{Namespace: c.namespace, WorkflowType: WorkflowType, BusinessKey: f.BusinessKey,
		Attributes: attrs, PageSize: pageSize, PageToken: token})
}

// ListedStatuses are the statuses lists find. An instance whose method
// runs now (executing, in its read) is listed as inProgress.
var ListedStatuses = []Status{StatusCreated, StatusInProgress, StatusManual, StatusFinished}

func checkListStatus(st Status) error {
	if st == "" || slices.Contains(ListedStatuses, st) {
		return nil
	}
	valid := make([]string, len(ListedStatuses))
	for i, v := range ListedStatuses {
		valid[i] = string(v)
	}
	if st == StatusExecuting {
		return api.InvalidArgument("status", "lists do not tell executing apart: an instance whose method runs is listed as inProgress; want one of %s", strings.Join(valid, ", "))
	}
	return api.InvalidArgument("status", "%q is not a status; want one of %s", st, strings.Join(valid, ", "))
}

// Definitions returns the current version of every state machine's
// definition (of one type, when typ is set), with its version: the one
// new instances get, the latest unless the workers went back to an
// earlier one.
func (c *Client) Definitions(ctx context.Context, typ string) ([]StoredDefinition, error) {
	prefix, filter := DefinitionType(""), ""
	if typ != "" {
		filter = DefinitionType(typ)
	}
	list, err := c.svc.ListDefinitions(ctx, filter)
	if err != nil {
		return nil, err
	}
	latest := map[string]api.Definition{}
	for _, d := range list {
		if !strings.HasPrefix(d.Type, prefix) {
			continue
		}
		if d.Version > latest[d.Type].Version {
			latest[d.Type] = d
		}
	}
	out := make([]StoredDefinition, 0, len(latest))
	for t, d := range latest {
		// The current version, when the workers went back to an earlier one.
		if cur, err := currentVersion(ctx, c.svc, strings.TrimPrefix(t, prefix)); err != nil {
			return nil, err
		} else if cur != 0 && cur != d.Version {
			if d, err = c.svc.GetDefinition(ctx, t, cur); err != nil {
				return nil, err
			}
		}
		out = append(out, storedDefinition(d))
	}
	slices.SortFunc(out, func(a, b StoredDefinition) int { return strings.Compare(a.Type, b.Type) })
	return out, nil
}

// Definition returns a version of a state machine's definition (the
// latest for 0): the one an instance pinned, say.
func (c *Client) Definition(ctx context.Context, typ string, version int32) (StoredDefinition, error) {
	d, err := getDefinition(ctx, c.svc, typ, version)
	if errors.Is(err, api.ErrNotFound) {
		if version == 0 {
			return StoredDefinition{}, fmt.Errorf("%w: no state machine %q is defined", api.ErrNotFound, typ)
		}
		return StoredDefinition{}, fmt.Errorf("%w: state machine %q has no version %d", api.ErrNotFound, typ, version)
	}
	if err != nil {
		return StoredDefinition{}, err
	}
	return storedDefinition(d), nil
}

// storedDefinition reads a stored body; one stored through the generic
// API, not by a worker, is shown with why it is not used.
func storedDefinition(d api.Definition) StoredDefinition {
	sd := StoredDefinition{Version: d.Version, SHA1: d.SHA1, Modified: d.ModifiedAt}
	if err := json.Unmarshal(d.Body, &sd.Definition); err != nil {
		sd.Type, sd.Error = strings.TrimPrefix(d.Type, DefinitionType("")), "not a state machine definition: "+err.Error()
	}
	return sd
}

// StoredDefinition is a definition as stored: a version of it.
type StoredDefinition struct {
	Definition
	Version  int32     `json:"version"`
	SHA1     string    `json:"sha1"`
	Modified time.Time `json:"modified"`
	// Error says why a stored body is not a definition.
	Error string `json:"error,omitempty"`
}

// StateCount is how many instances of a type are in a state with a status.
type StateCount struct {
	State  string `json:"state"`
	Status Status `json:"status"`
	Count  int64  `json:"count"`
	// Queued counts those of them whose next activation has come (nFlow's
	// queued instances): they run as soon as an executor takes them.
	Queued int64 `json:"queued"`
}

// Stats counts a type's instances per state and status (from the lists),
// and of those created or in progress, the ones whose next activation is
// before now. That part reads the listed instances of each such state, so
// it costs a page per thousand waiting instances.
func (c *Client) Stats(ctx context.Context, typ string) ([]StateCount, error) {
	def, _, err := c.definition(ctx, typ, 0)
	if errors.Is(err, api.ErrInvalidArgument) {
		return nil, fmt.Errorf("%w: no state machine %q is defined", api.ErrNotFound, typ)
	}
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC().Format(ActivationFormat)
	var out []StateCount
	for _, s := range def.States {
		statuses := []Status{StatusCreated, StatusInProgress}
		switch s.Kind {
		case KindManual:
			statuses = []Status{StatusManual}
		case KindError:
			// Waiting for an operator; finished in it before the error
			// state became a manual one.
			statuses = []Status{StatusManual, StatusFinished}
		case KindEnd:
			statuses = []Status{StatusFinished}
		}
		for _, st := range statuses {
			f := api.ListRequest{Namespace: c.namespace, WorkflowType: WorkflowType,
				Attributes: map[string]string{AttrType: typ, AttrState: s.Name, AttrStatus: string(st)}}
			n, err := c.svc.CountWorkflows(ctx, f)
			if err != nil {
				return nil, err
			}
			if n == 0 {
				continue
			}
			sc := StateCount{State: s.Name, Status: st, Count: n}
			if st == StatusCreated || st == StatusInProgress {
				if sc.Queued, err = c.queued(ctx, f, now); err != nil {
					return nil, err
				}
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// queued counts the instances f lists whose next activation is at or
// before now (as ActivationFormat writes it).
func (c *Client) queued(ctx context.Context, f api.ListRequest, now string) (int64, error) {
	f.PageSize = 1000
	var n int64
	for {
		page, err := c.svc.ListWorkflows(ctx, f)
		if err != nil {
			return 0, err
		}
		for _, r := range page.Runs {
			if at := r.Attributes[AttrActivation]; at != "" && at <= now {
				n++
			}
		}
		if len(page.NextPageToken) == 0 {
			return n, nil
		}
		f.PageToken = page.NextPageToken
	}
}

// ExecutorGroup is an executor group (a task queue) and the workers
// polling it: nFlow's executors of that group.
type ExecutorGroup struct {
	Group string `json:"group"`
	// Backlog counts the tasks waiting for an executor now.
	Backlog   int              `json:"backlog"`
	Executors []api.PollerInfo `json:"executors"`
}

// Executors are what runs instances: the cluster's nodes, which keep
// them, and per executor group the workers that run their states.
type Executors struct {
	Nodes  []api.Node      `json:"nodes"`
	Groups []ExecutorGroup `json:"groups"`
	// Partial says a node did not answer: its workers are missing.
	Partial bool `json:"partial,omitempty"`
}

// Executors lists the live nodes and, per task queue of the namespace,
// the workers that polled it lately. The queues come from mon (the
// engine, which watches them).
func (c *Client) Executors(ctx context.Context, mon api.Monitoring) (Executors, error) {
	nodes, err := c.svc.ListNodes(ctx, false)
	if err != nil {
		return Executors{}, err
	}
	queues, err := mon.ListQueues(ctx, c.namespace)
	if err != nil {
		return Executors{}, err
	}
	out := Executors{Nodes: nodes, Groups: []ExecutorGroup{}, Partial: queues.Partial}
	if out.Nodes == nil {
		out.Nodes = []api.Node{}
	}
	// A group is a queue of workflow tasks and one of steps by one name;
	// a worker polling both is one executor.
	byName := map[string]*ExecutorGroup{}
	for _, q := range queues.Queues {
		g := byName[q.Name]
		if g == nil {
			g = &ExecutorGroup{Group: q.Name, Executors: []api.PollerInfo{}}
			byName[q.Name] = g
		}
		g.Backlog += q.Backlog
		for _, p := range q.Pollers {
			i := slices.IndexFunc(g.Executors, func(e api.PollerInfo) bool { return e.Identity == p.Identity && e.Node == p.Node })
			switch {
			case i < 0:
				g.Executors = append(g.Executors, p)
			case p.LastSeen.After(g.Executors[i].LastSeen):
				p.Polling = p.Polling || g.Executors[i].Polling
				g.Executors[i] = p
			default:
				g.Executors[i].Polling = g.Executors[i].Polling || p.Polling
			}
		}
	}
	for _, g := range byName {
		out.Groups = append(out.Groups, *g)
	}
	slices.SortFunc(out.Groups, func(a, b ExecutorGroup) int { return strings.Compare(a.Group, b.Group) })
	return out, nil
}
