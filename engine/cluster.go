package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

var _ api.Cluster = (*Engine)(nil)

// nodeTTL is how long a node's heartbeat keeps it alive; it beats at a
// third of that.
const nodeTTL = 30 * time.Second

// heartbeat registers the engine in the nodes table and keeps it alive
// until ctx ends, then removes it.
func (e *Engine) heartbeat(ctx context.Context) {
	host, _ := os.Hostname()
	started := store.Now()
	beat := func() {
		now := store.Now()
		n := store.Node{ID: e.opts.Identity, Host: host, PID: int32(os.Getpid()), StartedAt: started, HeartbeatAt: now, ExpiresAt: now.Add(nodeTTL)}
		if err := e.store.UpsertNode(ctx, n); err != nil && ctx.Err() == nil {
			e.log.Warn("node heartbeat", "err", err)
		}
	}
	beat()
	t := time.NewTicker(nodeTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := e.store.DeleteNode(dctx, e.opts.Identity); err != nil && !errors.Is(err, store.ErrNotFound) {
				e.log.Warn("remove node", "err", err)
			}
			return
		case <-t.C:
			beat()
		}
	}
}

// ListNodes implements api.Cluster.
func (e *Engine) ListNodes(ctx context.Context, all bool) ([]api.Node, error) {
	var alive time.Time
	if !all {
		alive = store.Now()
	}
	return e.store.ListNodes(ctx, alive)
}

// PutDefinition implements api.Cluster.
func (e *Engine) PutDefinition(ctx context.Context, d api.Definition) (api.Definition, error) {
	// The store computes the hash and the times; what the caller sent of them is ignored.
	got, err := e.store.PutDefinition(ctx, api.Definition{Type: d.Type, Version: d.Version, Body: d.Body, Group: d.Group, ModifiedBy: d.ModifiedBy})
	if errors.Is(err, store.ErrDefinitionExists) {
		return api.Definition{}, fmt.Errorf("%w: definition %s version %d has other content", api.ErrConflict, d.Type, d.Version)
	}
	return got, err
}

// GetDefinition implements api.Cluster.
func (e *Engine) GetDefinition(ctx context.Context, typ string, version int32) (api.Definition, error) {
	d, err := e.store.GetDefinition(ctx, typ, version)
	if errors.Is(err, store.ErrNotFound) {
		return api.Definition{}, fmt.Errorf("%w: definition %s version %d", api.ErrNotFound, typ, version)
	}
	return d, err
}

// ListDefinitions implements api.Cluster.
func (e *Engine) ListDefinitions(ctx context.Context, typ string) ([]api.Definition, error) {
	return e.store.ListDefinitions(ctx, typ)
}
