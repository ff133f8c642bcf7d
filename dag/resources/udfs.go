package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// UDF is a user-defined function for sql tasks (DolphinScheduler's
// t_ds_udfs): the text of a resource, run in an sql task's session before
// its statements, on data sources of its type. For PostgreSQL the text is
// a CREATE [OR REPLACE] FUNCTION statement. SQLite cannot create functions
// in SQL, so a UDF is PostgreSQL's alone.
type UDF struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Resource is NAME or NAME@VERSION of the resource holding its text
	// (no version: the latest when a task runs).
	Resource    string `json:"resource"`
	Description string `json:"description,omitempty"`
	Owned
	CreatedAt time.Time `json:"created_at"`
}

func (c *Centre) udf(ctx context.Context, name string) (UDF, int64, error) {
	rec, err := c.st.GetRecord(ctx, kindUDF, name)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidArgument) { // (a name no record can have)
		return UDF{}, 0, fmt.Errorf("%w: no UDF %q", api.ErrNotFound, name)
	}
	if err != nil {
		return UDF{}, 0, fmt.Errorf("resources: read UDF %s: %w", name, err)
	}
	var u UDF
	if err := json.Unmarshal(rec.Value, &u); err != nil {
		return UDF{}, 0, fmt.Errorf("resources: UDF %s: %w", name, err)
	}
	return u, rec.Version, nil
}

// PutUDF creates a UDF, or changes one the caller owns, over a resource
// the caller may use.
func (c *Centre) PutUDF(ctx context.Context, u UDF) (UDF, error) {
	id := caller(ctx)
	if err := checkPlainName("UDF", u.Name); err != nil {
		return UDF{}, err
	}
	switch u.Type {
	case TypePostgreSQL:
	case TypeSQLite:
		return UDF{}, api.InvalidArgument("type", "SQLite cannot create functions in SQL: a UDF is for postgresql data sources")
	default:
		return UDF{}, api.InvalidArgument("type", "%q: want postgresql", u.Type)
	}
	name, v, err := ParseRef(u.Resource)
	if err != nil {
		return UDF{}, api.InvalidArgument("resource", "%v", err)
	}
	r, err := c.Resource(ctx, name)
	if err != nil {
		return UDF{}, err
	}
	if _, err := r.version(v); err != nil {
		return UDF{}, err
	}
	prev, rv, err := c.udf(ctx, u.Name)
	switch {
	case errors.Is(err, api.ErrNotFound):
		u.Owned, u.CreatedAt = Owned{Owner: id.Name}, time.Now().UTC()
	case err != nil:
		return UDF{}, err
	case !prev.MayManage(id):
		return UDF{}, denied(id, "change UDF "+u.Name+" (its owner is "+prev.Owner+")")
	default:
		u.Owned, u.CreatedAt = prev.Owned, prev.CreatedAt
	}
	if _, err := c.st.PutRecord(ctx, store.Record{Kind: kindUDF, Key: u.Name, Value: mustJSON(u), Version: rv}); err != nil {
		return UDF{}, fmt.Errorf("resources: store UDF %s: %w", u.Name, conflict(err))
	}
	return u, nil
}

// UDFs lists every UDF (what one is, not its text).
func (c *Centre) UDFs(ctx context.Context) ([]UDF, error) {
	recs, err := c.st.ListRecords(ctx, kindUDF, "")
	if err != nil {
		return nil, fmt.Errorf("resources: list UDFs: %w", err)
	}
	out := []UDF{}
	for _, rec := range recs {
		var u UDF
		if err := json.Unmarshal(rec.Value, &u); err != nil {
			return nil, fmt.Errorf("resources: UDF %s: %w", rec.Key, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// UDF describes a UDF.
func (c *Centre) UDF(ctx context.Context, name string) (UDF, error) {
	u, _, err := c.udf(ctx, name)
	return u, err
}

// DeleteUDF deletes a UDF the caller owns.
func (c *Centre) DeleteUDF(ctx context.Context, name string) error {
	id := caller(ctx)
	u, _, err := c.udf(ctx, name)
	if err != nil {
		return err
	}
	if !u.MayManage(id) {
		return denied(id, "delete UDF "+name+" (its owner is "+u.Owner+")")
	}
	if err := c.st.DeleteRecord(ctx, kindUDF, name, 0); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("resources: delete UDF %s: %w", name, err)
	}
	return nil
}

// Kinds of Use.
const (
	UseResource   = "resource"
	UseDataSource = "datasource"
	UseUDF        = "udf"
)

// Use is a task's naming of a resource (at a version, 0 the latest), a
// data source or a UDF.
type Use struct {
	Kind    string `json:"kind" enum:"resource,datasource,udf" required:"true"`
	Name    string `json:"name" max:"200" required:"true"`
	Version int32  `json:"version,omitempty" minimum:"0" maximum:"2147483647"`
}

// Answer is what the centre says of a Use for the caller.
type Answer struct {
	// Exists says it is there (for a resource, at the version named).
	Exists bool `json:"exists"`
	// Allowed says the caller may use it.
	Allowed bool `json:"allowed"`
	// Type is a data source's or UDF's type.
	Type string `json:"type,omitempty"`
	// Owner is who to ask for a grant.
	Owner string `json:"owner,omitempty"`
}

// CheckUses answers, for each use, whether it exists and the caller may
// use it: what dag apply checks of a definition. A use named more than once
// (the data source of many tasks) is looked up once.
func (c *Centre) CheckUses(ctx context.Context, uses []Use) ([]Answer, error) {
	id := caller(ctx)
	out := make([]Answer, len(uses))
	answered := make(map[Use]int, len(uses))
	for i, u := range uses {
		if u.Version < 0 {
			return nil, api.InvalidArgument("uses.version", "%d: want a version from 1, or 0 for the latest", u.Version)
		}
		if u.Name == "" {
			return nil, api.InvalidArgument("uses.name", "empty: want the name of what the task uses")
		}
		if j, ok := answered[u]; ok {
			out[i] = out[j]
			continue
		}
		answered[u] = i
		var (
			o   Owned
			err error
		)
		switch u.Kind {
		case UseResource:
			var r Resource
			if r, _, err = c.resource(ctx, u.Name); err == nil {
				o = r.Owned
				_, verr := r.version(u.Version)
				out[i].Exists = verr == nil
			}
		case UseDataSource:
			var d storedDataSource
			if d, _, err = c.dataSource(ctx, u.Name); err == nil {
				o, out[i].Exists, out[i].Type = d.Owned, true, d.Type
			}
		case UseUDF:
			var f UDF
			if f, _, err = c.udf(ctx, u.Name); err == nil {
				out[i].Exists, out[i].Type = true, f.Type
				// A UDF is used through its resource.
				name, _, _ := ParseRef(f.Resource)
				var r Resource
				if r, _, err = c.resource(ctx, name); err == nil {
					o = r.Owned
				} else if errors.Is(err, api.ErrNotFound) {
					out[i].Exists, err = false, nil
					continue
				}
			}
		default:
			return nil, api.InvalidArgument("kind", "%q: want resource, datasource or udf", u.Kind)
		}
		if errors.Is(err, api.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i].Allowed, out[i].Owner = o.MayUse(id), o.Owner
	}
	return out, nil
}
