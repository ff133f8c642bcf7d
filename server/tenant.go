package server

import (
	"context"
	"net/http"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/dag"
)

// TenantCreate creates a tenant: the OS user its DAG tasks run as on the
// workers allowed to, and its default queue.
type TenantCreate struct {
	Name        string `json:"name" required:"true" max:"100" pattern:"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"`
	User        string `json:"user" required:"true" max:"32" pattern:"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$"`
	Queue       string `json:"queue,omitempty" max:"100" pattern:"^([A-Za-z0-9_][A-Za-z0-9_.-]{0,99})?$"`
	Description string `json:"description,omitempty" max:"1000"`
	Identity    string `json:"identity,omitempty" max:"256"`
}

// TenantUpdate changes the fields of a tenant that it sets.
type TenantUpdate struct {
	User        *string `json:"user,omitempty" max:"32" pattern:"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$"`
	Queue       *string `json:"queue,omitempty" max:"100" pattern:"^([A-Za-z0-9_][A-Za-z0-9_.-]{0,99})?$"`
	Description *string `json:"description,omitempty" max:"1000"`
	Identity    string  `json:"identity,omitempty" max:"256"`
}

// TenantList is the tenants, by name.
type TenantList struct {
	Tenants []dag.Tenant `json:"tenants"`
}

// tenantRoutes are the routes of DAG tenants (DolphinScheduler's
// t_ds_tenant): read by anyone known, changed by cluster admins, since a
// tenant names an OS user of the workers.
func tenantRoutes(h *handler, svc dag.Service) []Route {
	all := prefix + "/tenants"
	one := all + "/{name}"
	catalog := dag.NewCatalog(svc)
	return []Route{
		{"GET", all, "List the tenants: the OS users DAG tasks run as, and their queues", get(h, func(ctx context.Context, _ *http.Request) (TenantList, error) {
			ts, err := catalog.Tenants(ctx)
			return TenantList{Tenants: ts}, err
		})},
		{"POST", all, "Create a tenant", call(h, func(ctx context.Context, _ *http.Request, req TenantCreate) (dag.Tenant, error) {
			return catalog.CreateTenant(ctx, dag.Tenant{Name: req.Name, User: req.User, Queue: req.Queue, Description: req.Description}, req.Identity)
		})},
		{"GET", one, "Get a tenant", get(h, func(ctx context.Context, r *http.Request) (dag.Tenant, error) {
			return catalog.Tenant(ctx, r.PathValue("name"))
		})},
		{"PUT", one, "Change a tenant's OS user, queue or description", call(h, func(ctx context.Context, r *http.Request, req TenantUpdate) (dag.Tenant, error) {
			return catalog.UpdateTenant(ctx, r.PathValue("name"), dag.TenantChange{User: req.User, Queue: req.Queue, Description: req.Description}, req.Identity)
		})},
		{"DELETE", one, "Delete a tenant (tasks naming it fail from then on)", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			by := ""
			if id, ok := access.FromContext(ctx); ok {
				by = id.Name
			}
			return struct{}{}, catalog.DeleteTenant(ctx, r.PathValue("name"), by)
		})},
	}
}
