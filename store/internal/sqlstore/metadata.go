package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/codec"
)

// CreateNamespace implements store.MetadataStore.
func (s *Store) CreateNamespace(ctx context.Context, ns store.Namespace) (store.Namespace, error) {
	if err := ns.Validate(); err != nil {
		return ns, err
	}
	now := store.Now()
	ns.Version, ns.CreatedAt, ns.UpdatedAt = 1, now, now
	res, err := s.write.ExecContext(ctx, s.q(`INSERT INTO namespaces (name, description, retention_ms, data, version, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`),
		ns.Name, ns.Description, ns.Retention.Milliseconds(), codec.Marshal(ns.Data), ns.Version, store.UnixMilli(now), store.UnixMilli(now))
	if err != nil {
		return ns, fmt.Errorf("%s: create namespace %q: %w", s.d.Name, ns.Name, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ns, fmt.Errorf("%w: %q", store.ErrNamespaceExists, ns.Name)
	}
	return ns, nil
}

const namespaceColumns = `name, description, retention_ms, data, version, created_at, updated_at`

func scanNamespace(sc interface{ Scan(...any) error }) (store.Namespace, error) {
	var ns store.Namespace
	var retention, created, updated int64
	var data []byte
	if err := sc.Scan(&ns.Name, &ns.Description, &retention, &data, &ns.Version, &created, &updated); err != nil {
		return ns, err
	}
	ns.Retention = time.Duration(retention) * time.Millisecond
	ns.CreatedAt, ns.UpdatedAt = store.FromUnixMilli(created), store.FromUnixMilli(updated)
	return ns, codec.Unmarshal(data, &ns.Data)
}

// GetNamespace implements store.MetadataStore.
func (s *Store) GetNamespace(ctx context.Context, name string) (store.Namespace, error) {
	if name == "" {
		return store.Namespace{}, store.InvalidArgument("name", "empty")
	}
	ns, err := scanNamespace(s.read.QueryRowContext(ctx, s.q(`SELECT `+namespaceColumns+` FROM namespaces WHERE name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return ns, fmt.Errorf("%w: %q", store.ErrNamespaceNotFound, name)
	}
	if err != nil {
		return ns, fmt.Errorf("%s: read namespace %q: %w", s.d.Name, name, err)
	}
	return ns, nil
}

// UpdateNamespace implements store.MetadataStore.
func (s *Store) UpdateNamespace(ctx context.Context, ns store.Namespace) (store.Namespace, error) {
	if err := ns.Validate(); err != nil {
		return ns, err
	}
	now := store.Now()
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE namespaces SET description = ?, retention_ms = ?, data = ?, version = ?, updated_at = ?
		WHERE name = ? AND version = ?`),
		ns.Description, ns.Retention.Milliseconds(), codec.Marshal(ns.Data), ns.Version+1, store.UnixMilli(now), ns.Name, ns.Version)
	if err != nil {
		return ns, fmt.Errorf("%s: update namespace %q: %w", s.d.Name, ns.Name, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		if _, err := s.GetNamespace(ctx, ns.Name); err != nil {
			return ns, err
		}
		return ns, fmt.Errorf("%w: namespace %q is not at version %d", store.ErrConditionFailed, ns.Name, ns.Version)
	}
	return s.GetNamespace(ctx, ns.Name)
}

// ListNamespaces implements store.MetadataStore.
func (s *Store) ListNamespaces(ctx context.Context) ([]store.Namespace, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+namespaceColumns+` FROM namespaces ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("%s: list namespaces: %w", s.d.Name, err)
	}
	defer rows.Close()
	var out []store.Namespace
	for rows.Next() {
		ns, err := scanNamespace(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: list namespaces: %w", s.d.Name, err)
		}
		out = append(out, ns)
	}
	return out, rows.Err()
}

// UpsertNode implements store.MetadataStore.
func (s *Store) UpsertNode(ctx context.Context, n store.Node) error {
	if err := n.Validate(); err != nil {
		return err
	}
	_, err := s.write.ExecContext(ctx, s.q(`INSERT INTO nodes (id, host, pid, grp, address, started_at, heartbeat_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, grp = excluded.grp,
		address = excluded.address, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at`),
		n.ID, n.Host, n.PID, n.Group, n.Address, store.UnixMilli(n.StartedAt), store.UnixMilli(n.HeartbeatAt), store.UnixMilli(n.ExpiresAt))
	if err != nil {
		return fmt.Errorf("%s: upsert node %q: %w", s.d.Name, n.ID, err)
	}
	return nil
}

// ListNodes implements store.MetadataStore.
func (s *Store) ListNodes(ctx context.Context, aliveAt time.Time) ([]store.Node, error) {
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT id, host, pid, grp, address, started_at, heartbeat_at, expires_at FROM nodes
		WHERE expires_at > ? ORDER BY id`), store.UnixMilli(aliveAt))
	if err != nil {
		return nil, fmt.Errorf("%s: list nodes: %w", s.d.Name, err)
	}
	defer rows.Close()
	var out []store.Node
	for rows.Next() {
		var n store.Node
		var started, hb, expires int64
		if err := rows.Scan(&n.ID, &n.Host, &n.PID, &n.Group, &n.Address, &started, &hb, &expires); err != nil {
			return nil, fmt.Errorf("%s: list nodes: %w", s.d.Name, err)
		}
		n.StartedAt, n.HeartbeatAt, n.ExpiresAt = store.FromUnixMilli(started), store.FromUnixMilli(hb), store.FromUnixMilli(expires)
		out = append(out, n)
	}
	return out, rows.Err()
}

// DeleteNode implements store.MetadataStore.
func (s *Store) DeleteNode(ctx context.Context, id string) error {
	if id == "" {
		return store.InvalidArgument("id", "empty")
	}
	if _, err := s.write.ExecContext(ctx, s.q(`DELETE FROM nodes WHERE id = ?`), id); err != nil {
		return fmt.Errorf("%s: delete node %q: %w", s.d.Name, id, err)
	}
	return nil
}

const definitionColumns = `type, version, sha1, body, grp, created_at, modified_at, modified_by`

func scanDefinition(sc interface{ Scan(...any) error }) (store.Definition, error) {
	var d store.Definition
	var created, modified int64
	if err := sc.Scan(&d.Type, &d.Version, &d.SHA1, &d.Body, &d.Group, &created, &modified, &d.ModifiedBy); err != nil {
		return d, err
	}
	d.CreatedAt, d.ModifiedAt = store.FromUnixMilli(created), store.FromUnixMilli(modified)
	return d, nil
}

// PutDefinition implements store.MetadataStore.
func (s *Store) PutDefinition(ctx context.Context, d store.Definition) (store.Definition, error) {
	if err := d.Validate(s.limits); err != nil {
		return d, err
	}
	d.SHA1 = d.BodySHA1()
	// Two writers may pick the same next version; the loser retries.
	for range 5 {
		want := d
		if d.Version == 0 {
			latest, err := s.GetDefinition(ctx, d.Type, 0)
			switch {
			case err == nil && latest.SHA1 == d.SHA1:
				return latest, nil
			case err == nil:
				want.Version = latest.Version + 1
			case errors.Is(err, store.ErrNotFound):
				want.Version = 1
			default:
				return d, err
			}
		}
		now := store.Now()
		want.CreatedAt, want.ModifiedAt = now, now
		res, err := s.write.ExecContext(ctx, s.q(`INSERT INTO definitions (`+definitionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (type, version) DO NOTHING`),
			want.Type, want.Version, want.SHA1, want.Body, want.Group, store.UnixMilli(now), store.UnixMilli(now), want.ModifiedBy)
		if err != nil {
			return d, fmt.Errorf("%s: put definition %q: %w", s.d.Name, d.Type, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return want, nil
		}
		existing, err := s.GetDefinition(ctx, want.Type, want.Version)
		if err != nil {
			return d, err
		}
		if existing.SHA1 == want.SHA1 {
			return existing, nil
		}
		if d.Version != 0 {
			return d, fmt.Errorf("%w: %s version %d has sha1 %s", store.ErrDefinitionExists, d.Type, d.Version, existing.SHA1)
		}
	}
	return d, fmt.Errorf("%w: could not allocate a version of %q", store.ErrConditionFailed, d.Type)
}

// GetDefinition implements store.MetadataStore.
func (s *Store) GetDefinition(ctx context.Context, typ string, version int32) (store.Definition, error) {
	if typ == "" {
		return store.Definition{}, store.InvalidArgument("type", "empty")
	}
	query, args := `SELECT `+definitionColumns+` FROM definitions WHERE type = ? AND version = ?`, []any{typ, version}
	if version == 0 {
		query, args = `SELECT `+definitionColumns+` FROM definitions WHERE type = ? ORDER BY version DESC LIMIT 1`, []any{typ}
	}
	d, err := scanDefinition(s.read.QueryRowContext(ctx, s.q(query), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("%w: definition %s version %d", store.ErrNotFound, typ, version)
	}
	if err != nil {
		return d, fmt.Errorf("%s: read definition %q: %w", s.d.Name, typ, err)
	}
	return d, nil
}

// ListDefinitions implements store.MetadataStore.
func (s *Store) ListDefinitions(ctx context.Context, typ string) ([]store.Definition, error) {
	query, args := `SELECT `+definitionColumns+` FROM definitions ORDER BY type, version`, []any(nil)
	if typ != "" {
		query, args = `SELECT `+definitionColumns+` FROM definitions WHERE type = ? ORDER BY type, version`, []any{typ}
	}
	rows, err := s.read.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: list definitions: %w", s.d.Name, err)
	}
	defer rows.Close()
	var out []store.Definition
	for rows.Next() {
		d, err := scanDefinition(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: list definitions: %w", s.d.Name, err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
