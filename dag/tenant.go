package dag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/strandhq/strand/api"
)

// tenantPrefix is the stored definition type of a tenant: "dag-tenant/NAME",
// whose versions are its changes (a deletion is a version too).
const tenantPrefix = "dag-tenant/"

// Tenant is DolphinScheduler's tenant: the OS user that a task naming it
// runs as on a worker allowed to (strand worker --tenant), and the (YARN)
// queue its tasks carry unless they name their own.
type Tenant struct {
	Name string `json:"name" max:"100"`
	// User is the OS user on the workers.
	User string `json:"user" max:"32"`
	// Queue is the default queue of the tenant's tasks.
	Queue       string `json:"queue,omitempty" max:"100"`
	Description string `json:"description,omitempty" max:"1000"`
	// Version counts the tenant's changes.
	Version int32 `json:"version,omitempty"`
}

// storedTenant is a tenant's stored body.
type storedTenant struct {
	User        string `json:"user"`
	Queue       string `json:"queue,omitempty"`
	Description string `json:"description,omitempty"`
	Deleted     bool   `json:"deleted,omitempty"`
}

// osUserRE is what an OS user's name may be (POSIX portable names).
var osUserRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}$`)

// checkTenant checks a tenant's fields.
func checkTenant(t Tenant) error {
	switch {
	case !validName.MatchString(t.Name):
		return api.InvalidArgument("name", "%q is not a tenant name: letters, digits, '_', '.' and '-', starting with a letter or digit, at most 100", t.Name)
	case !osUserRE.MatchString(t.User):
		return api.InvalidArgument("user", "%q is not an OS user's name: letters, digits, '_', '.' and '-', at most 32", t.User)
	case t.Queue != "" && !queueRE.MatchString(t.Queue):
		return api.InvalidArgument("queue", "%q is not a queue name: letters, digits, '_', '.' and '-', at most 100", t.Queue)
	case len(t.Description) > 1000:
		return api.InvalidArgument("description", "at most 1000 bytes")
	}
	return nil
}

// tenant reads a tenant; found is false for one never created or deleted.
func (c *Catalog) tenant(ctx context.Context, name string) (Tenant, bool, error) {
	d, err := c.cl.GetDefinition(ctx, tenantPrefix+name, 0)
	if errors.Is(err, api.ErrNotFound) {
		return Tenant{}, false, nil
	}
	if err != nil {
		return Tenant{}, false, fmt.Errorf("dag: read tenant %s: %w", name, err)
	}
	var s storedTenant
	if err := json.Unmarshal(d.Body, &s); err != nil {
		return Tenant{}, false, fmt.Errorf("dag: tenant %s: %w", name, err)
	}
	return Tenant{Name: name, User: s.User, Queue: s.Queue, Description: s.Description, Version: d.Version}, !s.Deleted, nil
}

func (c *Catalog) putTenant(ctx context.Context, t Tenant, deleted bool, by string) (Tenant, error) {
	body, _ := json.Marshal(storedTenant{User: t.User, Queue: t.Queue, Description: t.Description, Deleted: deleted})
	d, err := c.cl.PutDefinition(ctx, api.Definition{Type: tenantPrefix + t.Name, Body: body, ModifiedBy: by})
	if err != nil {
		return Tenant{}, fmt.Errorf("dag: store tenant %s: %w", t.Name, err)
	}
	t.Version = d.Version
	return t, nil
}

// Tenant returns the tenant called name; one that does not exist is
// api.ErrNotFound.
func (c *Catalog) Tenant(ctx context.Context, name string) (Tenant, error) {
	t, found, err := c.tenant(ctx, name)
	if err == nil && !found {
		err = fmt.Errorf("no tenant %q: %w", name, api.ErrNotFound)
	}
	return t, err
}

// CreateTenant stores a new tenant; one of that name that exists is
// api.ErrAlreadyExists.
func (c *Catalog) CreateTenant(ctx context.Context, t Tenant, by string) (Tenant, error) {
	if err := checkTenant(t); err != nil {
		return Tenant{}, err
	}
	old, found, err := c.tenant(ctx, t.Name)
	if err != nil {
		return Tenant{}, err
	}
	if found {
		return Tenant{}, fmt.Errorf("tenant %q exists (OS user %s): %w", t.Name, old.User, api.ErrAlreadyExists)
	}
	return c.putTenant(ctx, t, false, by)
}

// TenantChange is what UpdateTenant changes: the fields that are set.
type TenantChange struct {
	User        *string `json:"user,omitempty" max:"32"`
	Queue       *string `json:"queue,omitempty" max:"100"`
	Description *string `json:"description,omitempty" max:"1000"`
}

// UpdateTenant changes a tenant's OS user, queue or description; tasks
// that run after it see the change.
func (c *Catalog) UpdateTenant(ctx context.Context, name string, ch TenantChange, by string) (Tenant, error) {
	t, err := c.Tenant(ctx, name)
	if err != nil {
		return Tenant{}, err
	}
	if ch.User != nil {
		t.User = *ch.User
	}
	if ch.Queue != nil {
		t.Queue = *ch.Queue
	}
	if ch.Description != nil {
		t.Description = *ch.Description
	}
	if err := checkTenant(t); err != nil {
		return Tenant{}, err
	}
	return c.putTenant(ctx, t, false, by)
}

// DeleteTenant deletes a tenant: tasks that name it fail from then on;
// its versions stay.
func (c *Catalog) DeleteTenant(ctx context.Context, name string, by string) error {
	t, err := c.Tenant(ctx, name)
	if err != nil {
		return err
	}
	_, err = c.putTenant(ctx, t, true, by)
	return err
}

// Tenants returns every tenant, by name.
func (c *Catalog) Tenants(ctx context.Context) ([]Tenant, error) {
	all, err := c.cl.ListDefinitions(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("dag: list tenants: %w", err)
	}
	var names []string
	for _, d := range all {
		if name, ok := strings.CutPrefix(d.Type, tenantPrefix); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := []Tenant{}
	for _, n := range names {
		t, found, err := c.tenant(ctx, n)
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, t)
		}
	}
	return out, nil
}

// checkTenants warns of each tenant the definition names that does not
// exist: it may be created later, so it is no error; a task naming it
// fails until it is.
func (c *Catalog) checkTenants(ctx context.Context, def *Definition) ([]Problem, error) {
	var warnings []Problem
	exists := map[string]bool{}
	for _, r := range def.tenantRefs {
		ok, seen := exists[r.dag]
		if !seen {
			_, found, err := c.tenant(ctx, r.dag)
			if err != nil {
				return nil, err
			}
			ok, exists[r.dag] = found, found
		}
		if !ok {
			warnings = append(warnings, Problem{Pos: r.pos, Field: r.field,
				Message: fmt.Sprintf("no tenant %q (create it with strand tenant create %s --user OS_USER before running %s)", r.dag, r.dag, def.Name)})
		}
	}
	return warnings, nil
}
