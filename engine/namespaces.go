package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

var _ api.Namespaces = (*Engine)(nil)

func validNamespace(n api.Namespace) error {
	if err := store.CheckLimits(&n); err != nil {
		return err
	}
	if strings.HasPrefix(n.Name, "strand-") {
		return api.InvalidArgument("name", "names starting with strand- are reserved")
	}
	if n.Retention < 0 || n.Retention > 0 && n.Retention < store.MinRetention {
		return api.InvalidArgument("retention", "%s: want at least %s (or 0 for the default)", n.Retention, store.MinRetention)
	}
	if strings.IndexByte(n.Name, 0) >= 0 {
		return api.InvalidArgument("name", "contains NUL") // as no id may
	}
	return nil
}

// CreateNamespace implements api.Namespaces; ErrAlreadyExists (wrapping
// store.ErrNamespaceExists) when the name is taken.
func (e *Engine) CreateNamespace(ctx context.Context, n api.Namespace) (api.Namespace, error) {
	if err := validNamespace(n); err != nil {
		return api.Namespace{}, err
	}
	if n.Retention == 0 {
		n.Retention = e.opts.DefaultRetention
	}
	got, err := e.store.CreateNamespace(ctx, store.Namespace{Name: n.Name, Description: n.Description, Retention: n.Retention, Data: n.Data})
	if errors.Is(err, store.ErrNamespaceExists) {
		return api.Namespace{}, fmt.Errorf("%w: namespace %q", api.ErrAlreadyExists, n.Name)
	}
	return got, err
}

// DescribeNamespace implements api.Namespaces.
func (e *Engine) DescribeNamespace(ctx context.Context, name string) (api.Namespace, error) {
	if name == "" {
		return api.Namespace{}, api.InvalidArgument("name", "empty")
	}
	n, err := e.store.GetNamespace(ctx, name)
	if errors.Is(err, store.ErrNamespaceNotFound) {
		return api.Namespace{}, fmt.Errorf("%w: %q", api.ErrNamespaceNotFound, name)
	}
	return n, err
}

// UpdateNamespace implements api.Namespaces: the update must carry the
// version it read (ErrConflict otherwise).
func (e *Engine) UpdateNamespace(ctx context.Context, n api.Namespace) (api.Namespace, error) {
	if err := validNamespace(n); err != nil {
		return api.Namespace{}, err
	}
	cur, err := e.store.GetNamespace(ctx, n.Name)
	if errors.Is(err, store.ErrNamespaceNotFound) {
		return api.Namespace{}, fmt.Errorf("%w: %q", api.ErrNamespaceNotFound, n.Name)
	}
	if err != nil {
		return api.Namespace{}, err
	}
	cur.Description, cur.Data, cur.Version = n.Description, n.Data, n.Version
	if n.Retention > 0 {
		cur.Retention = n.Retention
	}
	got, err := e.store.UpdateNamespace(ctx, cur)
	if errors.Is(err, store.ErrConditionFailed) {
		return api.Namespace{}, fmt.Errorf("%w: namespace %q changed since version %d", api.ErrConflict, n.Name, n.Version)
	}
	if err == nil {
		e.nsMu.Lock()
		delete(e.namespaces, n.Name)
		e.nsMu.Unlock()
	}
	return got, err
}

// ListNamespaces implements api.Namespaces (Strand's own is left out).
func (e *Engine) ListNamespaces(ctx context.Context) ([]api.Namespace, error) {
	all, err := e.store.ListNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.Namespace, 0, len(all))
	for _, n := range all {
		if n.Name != systemNamespace {
			out = append(out, n)
		}
	}
	return out, nil
}
