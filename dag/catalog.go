package dag

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/strandhq/strand/api"
)

// Stored definition types. A DAG's versions are the versions of the
// definition "dag/NAME" (its text as applied, with its SHA-1); its release
// (the current version, online or offline) is the latest version of
// "dag-release/NAME", so every release change is kept; an alert group is
// "dag-alert/NAME".
const (
	typePrefix    = "dag/"
	releasePrefix = "dag-release/"
	alertPrefix   = "dag-alert/"
)

// Release is a DAG's release state: which version runs, and whether it may
// be started or scheduled at all.
type Release struct {
	Current int32 `json:"current"`
	Online  bool  `json:"online"`
	// Deleted hides the DAG from lists; its versions stay, and applying it
	// again brings it back.
	Deleted bool `json:"deleted,omitempty"`
}

// Catalog keeps definitions, their versions and releases, and alert
// groups, in the store's definitions through the public API.
type Catalog struct {
	cl api.Cluster
	// Uses, when set, checks at Apply that the applying user may use the
	// resources, UDFs and data sources a definition names (NewCatalog sets
	// it to cl when cl is a UseChecker).
	Uses UseChecker
}

// NewCatalog returns the catalog over cl.
func NewCatalog(cl api.Cluster) *Catalog {
	c := &Catalog{cl: cl}
	if u, ok := cl.(UseChecker); ok {
		c.Uses = u
	}
	return c
}

// ErrOffline is what starting an offline definition fails with.
var ErrOffline = errors.New("dag: the definition is offline")

// Applied is what Apply did.
type Applied struct {
	Definition *Definition
	Version    int32
	SHA1       string
	// Changed says a new version was stored.
	Changed bool
	Release Release
	// Warnings are what may fail later but did not stop the apply: a
	// sub_process or a dependent naming a DAG that does not exist (it may
	// be applied later), each at its line and column.
	Warnings []Problem
}

// Apply checks a definition's text and stores it as a new version when it
// changed; the new version becomes current. A definition applied for the
// first time is online unless offline is set.
func (c *Catalog) Apply(ctx context.Context, text []byte, by string, offline bool) (Applied, error) {
	def, err := Parse(text)
	if err != nil {
		return Applied{}, err
	}
	// What the tasks name is checked before anything is stored.
	useWarnings, err := c.checkUseRights(ctx, def)
	if err != nil {
		return Applied{}, err
	}
	prev, err := c.cl.GetDefinition(ctx, typePrefix+def.Name, 0)
	if err != nil && !errors.Is(err, api.ErrNotFound) {
		return Applied{}, fmt.Errorf("dag: read %s: %w", def.Name, err)
	}
	d, err := c.cl.PutDefinition(ctx, api.Definition{Type: typePrefix + def.Name, Body: text, ModifiedBy: by})
	if err != nil {
		return Applied{}, fmt.Errorf("dag: store %s: %w", def.Name, err)
	}
	rel, found, err := c.release(ctx, def.Name)
	if err != nil {
		return Applied{}, err
	}
	if !found || rel.Deleted {
		rel.Online = !offline
	}
	a := Applied{Definition: def, Version: d.Version, SHA1: d.SHA1, Changed: prev.Version != d.Version}
	if rel.Current != d.Version || !found || rel.Deleted {
		rel.Current, rel.Deleted = d.Version, false
		if err := c.putRelease(ctx, def.Name, rel, by); err != nil {
			return Applied{}, err
		}
	}
	a.Release = rel
	if a.Warnings, err = c.checkReferences(ctx, def); err != nil {
		return Applied{}, err
	}
	tw, err := c.checkTenants(ctx, def) // issue 35: tenants
	if err != nil {
		return Applied{}, err
	}
	a.Warnings = append(a.Warnings, tw...)
	a.Warnings = append(a.Warnings, useWarnings...)
	return a, nil
}

// checkReferences warns of each DAG the definition names that does not
// exist, or is deleted: it may be applied later, so it is no error.
func (c *Catalog) checkReferences(ctx context.Context, def *Definition) ([]Problem, error) {
	var warnings []Problem
	exists := map[string]bool{}
	for _, r := range def.refs {
		ok, seen := exists[r.dag]
		if !seen {
			rel, found, err := c.release(ctx, r.dag)
			if err != nil {
				return nil, err
			}
			ok = found && !rel.Deleted
			exists[r.dag] = ok
		}
		if !ok {
			warnings = append(warnings, Problem{Pos: r.pos, Field: r.field,
				Message: fmt.Sprintf("no DAG %q to %s (apply it before running %s)", r.dag, r.what, def.Name)})
		}
	}
	return warnings, nil
}

func (c *Catalog) release(ctx context.Context, name string) (Release, bool, error) {
	d, err := c.cl.GetDefinition(ctx, releasePrefix+name, 0)
	if errors.Is(err, api.ErrNotFound) {
		return Release{}, false, nil
	}
	if err != nil {
		return Release{}, false, fmt.Errorf("dag: read the release of %s: %w", name, err)
	}
	var r Release
	if err := json.Unmarshal(d.Body, &r); err != nil {
		return Release{}, false, fmt.Errorf("dag: the release of %s: %w", name, err)
	}
	return r, true, nil
}

func (c *Catalog) putRelease(ctx context.Context, name string, r Release, by string) error {
	body, _ := json.Marshal(r)
	if _, err := c.cl.PutDefinition(ctx, api.Definition{Type: releasePrefix + name, Body: body, ModifiedBy: by}); err != nil {
		return fmt.Errorf("dag: store the release of %s: %w", name, err)
	}
	return nil
}

// Release returns a DAG's release state.
func (c *Catalog) Release(ctx context.Context, name string) (Release, error) {
	r, found, err := c.release(ctx, name)
	if err == nil && !found {
		err = fmt.Errorf("dag: no definition %q: %w", name, api.ErrNotFound)
	}
	return r, err
}

// SetOnline puts a DAG online or offline.
func (c *Catalog) SetOnline(ctx context.Context, name string, online bool, by string) error {
	r, err := c.Release(ctx, name)
	if err != nil {
		return err
	}
	if r.Online == online {
		return nil
	}
	r.Online = online
	return c.putRelease(ctx, name, r, by)
}

// Delete takes a DAG offline and out of the lists; its instances and
// versions stay.
func (c *Catalog) Delete(ctx context.Context, name string, by string) error {
	r, err := c.Release(ctx, name)
	if err != nil {
		return err
	}
	r.Online, r.Deleted = false, true
	return c.putRelease(ctx, name, r, by)
}

// SetCurrent makes version v the one instances start with.
func (c *Catalog) SetCurrent(ctx context.Context, name string, v int32, by string) error {
	r, err := c.Release(ctx, name)
	if err != nil {
		return err
	}
	if _, err := c.cl.GetDefinition(ctx, typePrefix+name, v); err != nil {
		return fmt.Errorf("dag: version %d of %s: %w", v, name, err)
	}
	r.Current = v
	return c.putRelease(ctx, name, r, by)
}

// Get returns version v of a DAG's text (the current version for 0).
func (c *Catalog) Get(ctx context.Context, name string, v int32) (api.Definition, error) {
	if v == 0 {
		r, err := c.Release(ctx, name)
		if err != nil {
			return api.Definition{}, err
		}
		v = r.Current
	}
	d, err := c.cl.GetDefinition(ctx, typePrefix+name, v)
	if err != nil {
		return api.Definition{}, fmt.Errorf("dag: version %d of %s: %w", v, name, err)
	}
	return d, nil
}

// Versions returns every version of a DAG, oldest first.
func (c *Catalog) Versions(ctx context.Context, name string) ([]api.Definition, error) {
	all, err := c.cl.ListDefinitions(ctx, typePrefix+name)
	if err != nil {
		return nil, fmt.Errorf("dag: versions of %s: %w", name, err)
	}
	slices.SortFunc(all, func(a, b api.Definition) int { return int(a.Version - b.Version) })
	return all, nil
}

// Diff returns the unified diff of two versions' texts ("" when they are
// the same).
func (c *Catalog) Diff(ctx context.Context, name string, from, to int32) (string, error) {
	a, err := c.Get(ctx, name, from)
	if err != nil {
		return "", err
	}
	b, err := c.Get(ctx, name, to)
	if err != nil {
		return "", err
	}
	return udiff.Unified(fmt.Sprintf("%s version %d", name, a.Version), fmt.Sprintf("%s version %d", name, b.Version),
		string(a.Body), string(b.Body)), nil
}

// Summary is a DAG in a list.
type Summary struct {
	Name     string `json:"name"`
	Versions int    `json:"versions"`
	Release
}

// List returns every DAG with its release state.
func (c *Catalog) List(ctx context.Context) ([]Summary, error) {
	all, err := c.cl.ListDefinitions(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("dag: list definitions: %w", err)
	}
	byName := map[string]*Summary{}
	var names []string
	for _, d := range all {
		name, ok := strings.CutPrefix(d.Type, typePrefix)
		if !ok {
			continue
		}
		s := byName[name]
		if s == nil {
			s = &Summary{Name: name}
			byName[name] = s
			names = append(names, name)
		}
		s.Versions++
	}
	slices.Sort(names)
	out := make([]Summary, 0, len(names))
	for _, n := range names {
		s := byName[n]
		r, _, err := c.release(ctx, n)
		if err != nil {
			return nil, err
		}
		if r.Deleted {
			continue
		}
		s.Release = r
		out = append(out, *s)
	}
	return out, nil
}

// resolve returns the text an instance runs: the pinned version, or the
// current one; an offline DAG is refused.
func (c *Catalog) resolve(ctx context.Context, in RunInput) (Resolved, error) {
	r, err := c.Release(ctx, in.DAG)
	if err != nil {
		return Resolved{}, err
	}
	if r.Deleted {
		return Resolved{}, fmt.Errorf("%w: %s was deleted", api.ErrNotFound, in.DAG)
	}
	if !r.Online {
		return Resolved{}, fmt.Errorf("%w: %s", ErrOffline, in.DAG)
	}
	d, err := c.Get(ctx, in.DAG, in.Version)
	if err != nil {
		return Resolved{}, err
	}
	return Resolved{Version: d.Version, Body: string(d.Body)}, nil
}

// groupWarnings warns of each worker group (or, for step tasks, task
// queue) of the definition's tasks that no worker of namespace ns polled
// lately (in api.PollerHorizon): its tasks would wait for one, submitted,
// until their fail timeout (or forever). group is the instance's worker
// group ("": the definition's). Without the kernel's queue monitor (svc
// is no api.Monitoring), or with a partial answer, it warns of nothing.
func groupWarnings(ctx context.Context, svc any, ns string, def *Definition, group string) ([]Problem, error) {
	polled, err := polledQueues(ctx, svc, ns)
	if err != nil || polled == nil {
		return nil, err
	}
	group = cmp.Or(group, def.WorkerGroup, DefaultGroup)
	type waiting struct {
		group, queue string
		tasks        []string
		pos          Pos
		field        string
	}
	var order []*waiting
	byQueue := map[string]*waiting{}
	for i := range def.Tasks {
		t := &def.Tasks[i]
		q, g := queueOf(t, group)
		if q == "" || t.Forbidden || polled[q] {
			continue
		}
		w := byQueue[q]
		if w == nil {
			w = &waiting{group: g, queue: q}
			// Its place: the task's worker_group (or queue), else the
			// definition's worker_group, else the task.
			for _, f := range []string{fmt.Sprintf("tasks[%d].worker_group", i), fmt.Sprintf("tasks[%d].queue", i), "worker_group", fmt.Sprintf("tasks[%d]", i)} {
				if p, ok := def.pos[f]; ok && (f != "worker_group" || g == def.WorkerGroup) {
					w.pos, w.field = p, f
					break
				}
			}
			byQueue[q] = w
			order = append(order, w)
		}
		w.tasks = append(w.tasks, t.Name)
	}
	var out []Problem
	for _, w := range order {
		what := "task " + w.tasks[0] + " waits"
		if len(w.tasks) > 1 {
			what = "tasks " + strings.Join(w.tasks, ", ") + " wait"
		}
		msg := fmt.Sprintf("no worker polls worker group %s in namespace %s: %s for one (start one with strand worker --group %s)", w.group, ns, what, w.group)
		if w.group == "" {
			msg = fmt.Sprintf("no worker polls task queue %s in namespace %s: %s for one", w.queue, ns, what)
		}
		out = append(out, Problem{Pos: w.pos, Field: w.field, Message: msg})
	}
	return out, nil
}

// polledQueues returns the step queues of namespace ns that a worker
// polled lately (in api.PollerHorizon); nil when it cannot tell: svc is
// no api.Monitoring, or its answer is partial.
func polledQueues(ctx context.Context, svc any, ns string) (map[string]bool, error) {
	mon, ok := svc.(api.Monitoring)
	if !ok {
		return nil, nil
	}
	queues, err := mon.ListQueues(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("dag: the workers of the task queues: %w", err)
	}
	if queues.Partial {
		return nil, nil
	}
	polled := map[string]bool{}
	for _, q := range queues.Queues {
		if q.Kind == api.QueueKindStep && len(q.Pollers) > 0 {
			polled[q.Name] = true
		}
	}
	return polled, nil
}
