package dag

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/resources"
)

// use is a task's naming of a resource, UDF or data source, at its place
// in the file, for Apply's checks.
type use struct {
	resources.Use
	field string
	pos   Pos
	// task is the index of the task that names it.
	task int
}

// UseChecker answers whether the user applying a definition may use the
// resources, UDFs and data sources it names: the server's resource centre
// (resources.Centre), or a remote client of it. A Catalog over a cluster
// that implements it checks every definition it applies.
type UseChecker interface {
	CheckUses(ctx context.Context, uses []resources.Use) ([]resources.Answer, error)
}

// checkUses checks the resource and UDF names of the tasks and keeps what
// they name in d.uses.
func (p *parser) checkUses(d *Definition) {
	for i, t := range d.Tasks {
		f := fmt.Sprintf("tasks[%d]", i)
		seen := map[string]bool{}
		for j, ref := range t.Resources {
			rf := fmt.Sprintf("%s.resources[%d]", f, j)
			name, v, err := resources.ParseRef(ref)
			if err != nil {
				p.failAt(rf, "%q: want a resource's NAME or NAME@VERSION (names: letters, digits, '_', '.', '-' and '/')", ref)
				continue
			}
			if seen[name] {
				p.failAt(rf, "resource %q is named twice", name)
				continue
			}
			seen[name] = true
			d.uses = append(d.uses, use{Use: resources.Use{Kind: resources.UseResource, Name: name, Version: v}, field: rf, pos: p.pos[rf], task: i})
		}
		if t.Type == TypeSQL && t.DataSource != "" {
			df := f + ".datasource"
			d.uses = append(d.uses, use{Use: resources.Use{Kind: resources.UseDataSource, Name: t.DataSource}, field: df, pos: p.pos[df], task: i})
		}
		for j, name := range t.UDFs {
			uf := fmt.Sprintf("%s.udfs[%d]", f, j)
			if name == "" || slices.Contains(t.UDFs[:j], name) {
				p.failAt(uf, "%q: want each UDF's name once", name)
				continue
			}
			d.uses = append(d.uses, use{Use: resources.Use{Kind: resources.UseUDF, Name: name}, field: uf, pos: p.pos[uf], task: i})
		}
	}
}

// checkUseRights asks the centre about what the definition names: one the
// applying user may not use, or a UDF on a SQLite data source, is an
// error at its line and column; one that does not exist is a warning (a
// data source may be one given to the workers by --datasource, a resource
// may be uploaded before the DAG runs).
func (c *Catalog) checkUseRights(ctx context.Context, def *Definition) (warnings []Problem, err error) {
	if c.Uses == nil || len(def.uses) == 0 {
		return nil, nil
	}
	q := make([]resources.Use, len(def.uses))
	for i, u := range def.uses {
		q[i] = u.Use
	}
	answers, err := c.Uses.CheckUses(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("dag: check the resources and data sources %s names: %w", def.Name, err)
	}
	if answers == nil {
		return nil, nil // a server without a resource centre
	}
	if len(answers) != len(q) {
		return nil, fmt.Errorf("dag: check the resources and data sources %s names: %d answers to %d questions", def.Name, len(answers), len(q))
	}
	var problems []Problem
	dsType := map[int]string{}
	for i, u := range def.uses {
		if u.Kind == resources.UseDataSource && answers[i].Exists {
			dsType[u.task] = answers[i].Type
		}
	}
	for i, u := range def.uses {
		a := answers[i]
		what := map[string]string{resources.UseResource: "resource", resources.UseDataSource: "data source", resources.UseUDF: "UDF"}[u.Kind]
		switch {
		case !a.Exists && u.Kind == resources.UseResource && u.Version > 0:
			warnings = append(warnings, Problem{Pos: u.pos, Field: u.field, Message: fmt.Sprintf("resource %q has no version %d (yet)", u.Name, u.Version)})
		case !a.Exists && u.Kind == resources.UseDataSource:
			// One given to the workers (strand worker --datasource).
		case !a.Exists:
			warnings = append(warnings, Problem{Pos: u.pos, Field: u.field, Message: fmt.Sprintf("no %s %q (yet): create it before running %s", what, u.Name, def.Name)})
		case !a.Allowed:
			problems = append(problems, Problem{Pos: u.pos, Field: u.field, Message: fmt.Sprintf("you may not use %s %q: ask its owner %s for a grant", what, u.Name, a.Owner)})
		case u.Kind == resources.UseUDF && dsType[u.task] == resources.TypeSQLite:
			problems = append(problems, Problem{Pos: u.pos, Field: u.field, Message: fmt.Sprintf("UDF %q: the task's data source is SQLite, which cannot create functions in SQL", u.Name)})
		case u.Kind == resources.UseUDF && dsType[u.task] != "" && a.Type != dsType[u.task]:
			problems = append(problems, Problem{Pos: u.pos, Field: u.field, Message: fmt.Sprintf("UDF %q is for %s data sources, the task's is %s", u.Name, a.Type, dsType[u.task])})
		}
	}
	if len(problems) > 0 {
		return nil, &DefinitionError{Problems: problems}
	}
	return warnings, nil
}

// CheckStored checks a stored definition's body before it is stored
// through the generic definitions API: for a DAG's text (type "dag/NAME")
// that parses, what its tasks name must be usable by the caller u answers
// for, as Apply checks; a tenant ("dag-tenant/NAME") may be changed only
// by a cluster admin (the caller in ctx). Other types, and texts that do
// not parse, pass.
func CheckStored(ctx context.Context, typ string, body []byte, u UseChecker) error {
	if strings.HasPrefix(typ, tenantPrefix) {
		// A tenant names the OS user tasks run as: cluster admins alone
		// change tenants, here as through /tenants.
		if id, ok := access.FromContext(ctx); ok && !id.ClusterAdmin {
			return fmt.Errorf("tenant %s: only a cluster admin may change tenants: %w", strings.TrimPrefix(typ, tenantPrefix), api.ErrPermissionDenied)
		}
		return nil
	}
	if !strings.HasPrefix(typ, typePrefix) || u == nil {
		return nil
	}
	def, err := Parse(body)
	if err != nil {
		return nil
	}
	_, err = (&Catalog{Uses: u}).checkUseRights(ctx, def)
	return err
}
