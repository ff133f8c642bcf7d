package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
)

// typePrefix is the stored definition type of a defined saga: its
// versions are the versions of "saga/NAME" (its text as applied, with its
// SHA-1).
const typePrefix = "saga/"

// Catalog keeps saga definitions, in the store's definitions through the
// public API, and starts runs of them in a namespace.
type Catalog struct {
	svc       api.FrontEndService
	namespace string
	// Identity names who applies definitions and starts runs, in their
	// records (default "").
	Identity string
	// Reuse says whether Run runs an id again whose saga ended (default
	// ReuseNever: an id runs once).
	Reuse Reuse
}

// NewCatalog returns the catalog over svc, starting runs in namespace (""
// is the default namespace).
func NewCatalog(svc api.FrontEndService, namespace string) *Catalog {
	if namespace == "" {
		namespace = api.DefaultNamespace
	}
	return &Catalog{svc: svc, namespace: namespace}
}

// Applied is what Apply did.
type Applied struct {
	Definition *Definition `json:"definition"`
	Version    int32       `json:"version"`
	SHA1       string      `json:"sha1"`
	// Changed says a new version was stored.
	Changed bool `json:"changed"`
}

// Apply checks a definition's text (Parse) and stores it as a new version
// when it changed; runs started after it use it. A bad definition is a
// *DefinitionError, and nothing is stored.
func (c *Catalog) Apply(ctx context.Context, text []byte) (Applied, error) {
	def, err := Parse(text)
	if err != nil {
		return Applied{}, err
	}
	prev, err := c.svc.GetDefinition(ctx, typePrefix+def.Name, 0)
	if err != nil && !errors.Is(err, api.ErrNotFound) {
		return Applied{}, fmt.Errorf("saga: read %s: %w", def.Name, err)
	}
	d, err := c.svc.PutDefinition(ctx, api.Definition{Type: typePrefix + def.Name, Body: text, ModifiedBy: c.Identity})
	if err != nil {
		return Applied{}, fmt.Errorf("saga: store %s: %w", def.Name, err)
	}
	return Applied{Definition: def, Version: d.Version, SHA1: d.SHA1, Changed: prev.Version != d.Version}, nil
}

// Summary is a definition in a list: its latest version.
type Summary struct {
	Name        string    `json:"name"`
	Version     int32     `json:"version"`
	Versions    int       `json:"versions"`
	SHA1        string    `json:"sha1"`
	Description string    `json:"description,omitempty"`
	Steps       int       `json:"steps"`
	Modified    time.Time `json:"modified,omitzero"`
	ModifiedBy  string    `json:"modified_by,omitempty"`
}

// Definitions lists the definitions, by name, each with its latest
// version.
func (c *Catalog) Definitions(ctx context.Context) ([]Summary, error) {
	all, err := c.svc.ListDefinitions(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("saga: list definitions: %w", err)
	}
	byName := map[string]*Summary{}
	latest := map[string][]byte{}
	for _, d := range all {
		name, ok := strings.CutPrefix(d.Type, typePrefix)
		if !ok {
			continue
		}
		s := byName[name]
		if s == nil {
			s = &Summary{Name: name}
			byName[name] = s
		}
		s.Versions++
		if d.Version > s.Version {
			s.Version, s.SHA1, s.Modified, s.ModifiedBy = d.Version, d.SHA1, d.CreatedAt, d.ModifiedBy
			latest[name] = d.Body
		}
	}
	out := make([]Summary, 0, len(byName))
	for name, s := range byName {
		if def, err := Parse(latest[name]); err == nil {
			s.Description, s.Steps = def.Description, countSteps(def)
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Summary) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func countSteps(d *Definition) int {
	n := 0
	for _, e := range d.Steps {
		n += max(1, len(e.Parallel))
	}
	return n
}

// StoredDefinition is a version of a definition as stored: its text, and
// the definition it holds.
type StoredDefinition struct {
	Name       string      `json:"name"`
	Version    int32       `json:"version"`
	SHA1       string      `json:"sha1"`
	Created    time.Time   `json:"created,omitzero"`
	ModifiedBy string      `json:"modified_by,omitempty"`
	Text       string      `json:"text"`
	Definition *Definition `json:"definition"`
}

// Definition returns version v of a definition (the latest for 0); one
// that does not exist is api.ErrNotFound.
func (c *Catalog) Definition(ctx context.Context, name string, v int32) (*StoredDefinition, error) {
	if !validName.MatchString(name) {
		return nil, api.InvalidArgument("name", "%q is not a saga name", name)
	}
	if v < 0 {
		return nil, api.InvalidArgument("version", "want a version (1 or more), or 0 for the latest; got %d", v)
	}
	d, err := c.svc.GetDefinition(ctx, typePrefix+name, v)
	if errors.Is(err, api.ErrNotFound) {
		what := "no saga definition " + name
		if v > 0 {
			what += " version " + strconv.Itoa(int(v))
		}
		return nil, fmt.Errorf("%w: %s (strand saga apply -f FILE stores one)", api.ErrNotFound, what)
	}
	if err != nil {
		return nil, fmt.Errorf("saga: read %s: %w", name, err)
	}
	def, err := Parse(d.Body)
	if err != nil {
		return nil, fmt.Errorf("saga: %s version %d: %w", name, d.Version, err)
	}
	return &StoredDefinition{Name: name, Version: d.Version, SHA1: d.SHA1, Created: d.CreatedAt, ModifiedBy: d.ModifiedBy,
		Text: string(d.Body), Definition: def}, nil
}

// Started names a started run of a defined saga.
type Started struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Version is the definition's version the run pins.
	Version int32 `json:"version"`
}

// Run starts a saga of version v of a definition (the latest for 0) with
// input, a JSON value ({} when empty), as a run of WorkflowType with
// workflow id id (default NAME-yyyyMMddHHmmss-XXXXXXXX) and the saga's
// name as its business key. The run pins the version. An input that is
// not JSON, or lacks a value the definition reads (${input.…}), is
// api.ErrInvalidArgument and an unknown definition api.ErrNotFound; an
// id that has a saga already is an *AlreadyRanError, unless c.Reuse lets
// it run again; nothing is started then.
func (c *Catalog) Run(ctx context.Context, name string, v int32, input json.RawMessage, id string) (Started, error) {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	in, err := decodeJSON(input)
	if err != nil {
		return Started{}, api.InvalidArgument("input", "not JSON: %v", err)
	}
	sd, err := c.Definition(ctx, name, v)
	if err != nil {
		return Started{}, err
	}
	if err := checkInput(sd.Definition, in); err != nil {
		return Started{}, err
	}
	ri, err := json.Marshal(RunInput{Name: name, Version: sd.Version, Input: input})
	if err != nil {
		return Started{}, err
	}
	if id == "" {
		id = fmt.Sprintf("%s-%s-%s", name, time.Now().UTC().Format("20060102150405"), uuid.NewString()[:8])
	}
	res, err := startRun(ctx, c.svc, api.StartRequest{Namespace: c.namespace, WorkflowID: id, WorkflowType: WorkflowType, Queue: Queue,
		Input: api.Value(ri), BusinessKey: name, Attributes: map[string]string{AttrName: sd.Definition.Name, AttrVersion: strconv.Itoa(int(sd.Version))},
		RequestID: uuid.NewString(), Identity: c.Identity}, c.Reuse)
	if err != nil {
		return Started{}, err
	}
	return Started{WorkflowID: id, RunID: res.RunID, Version: sd.Version}, nil
}

// checkInput checks that input has every value the definition reads of
// it.
func checkInput(d *Definition, input any) error {
	var problems []string
	check := func(step, what string, c *Call) {
		if c == nil {
			return
		}
		refs, err := callRefs(c)
		if err != nil {
			return // Parse checked the templates
		}
		for _, r := range refs {
			if r.root != refInput {
				continue
			}
			if _, err := lookup(input, r.path, "input"); err != nil {
				problems = append(problems, fmt.Sprintf("step %s's %s reads ${%s}: %v", step, what, r.raw, err))
			}
		}
	}
	for _, e := range d.Steps {
		for _, s := range append([]StepSpec{e}, e.Parallel...) {
			check(s.Name, "call", s.Call)
			check(s.Name, "compensation", s.Compensate)
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return api.InvalidArgument("input", "%s", strings.Join(slices.Compact(problems), "; "))
	}
	return nil
}
