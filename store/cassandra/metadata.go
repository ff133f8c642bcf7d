package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/codec"
)

// listBucket is the one partition of the tables that list a whole set
// (namespace_names, nodes, definition_types).
const listBucket = 0

// namespaceColumns are the columns scanNamespace reads, in its order.
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

// CreateNamespace implements store.MetadataStore with INSERT … IF NOT
// EXISTS. The name is added to namespace_names first, so that a namespace
// is always listed once it exists.
func (s *Store) CreateNamespace(ctx context.Context, ns store.Namespace) (store.Namespace, error) {
	if err := ns.Validate(); err != nil {
		return ns, err
	}
	if err := s.query(ctx, `INSERT INTO {ks}.namespace_names (bucket, name) VALUES (?, ?)`, listBucket, ns.Name).Exec(); err != nil {
		return ns, fmt.Errorf("cassandra: create namespace %q: list name: %w", ns.Name, err)
	}
	now := store.Now()
	ns.Version, ns.CreatedAt, ns.UpdatedAt = 1, now, now
	data := codec.Marshal(ns.Data)
	applied, err := s.query(ctx, `INSERT INTO {ks}.namespaces (`+namespaceColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
		ns.Name, ns.Description, ns.Retention.Milliseconds(), data, ns.Version, store.UnixMilli(now), store.UnixMilli(now)).
		MapScanCAS(map[string]any{})
	if err != nil && outcomeUnknown(err) {
		applied, err = s.resolveNamespace(ctx, ns, data, err)
	}
	if err != nil {
		return ns, fmt.Errorf("cassandra: create namespace %q: %w", ns.Name, err)
	}
	if !applied {
		return ns, fmt.Errorf("%w: %q", store.ErrNamespaceExists, ns.Name)
	}
	return ns, nil
}

// resolveNamespace decides whether a namespace write whose outcome is
// unknown was applied: a serial read completes or forecloses the
// transaction in flight, and the write was applied if the row is now what
// it wrote (times are to the millisecond, so another writer's identical row
// is as good as ours).
func (s *Store) resolveNamespace(ctx context.Context, want store.Namespace, data []byte, cause error) (bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var got store.Namespace
	var retention, created, updated int64
	var gotData []byte
	err := s.query(rctx, `SELECT `+namespaceColumns+` FROM {ks}.namespaces WHERE name = ?`, want.Name).Consistency(s.serial).
		Scan(&got.Name, &got.Description, &retention, &gotData, &got.Version, &created, &updated)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		return false, fmt.Errorf("write not applied: %w", cause)
	case err != nil:
		return false, fmt.Errorf("%w: %v; resolving it: %v", store.ErrOutcomeUnknown, cause, err)
	}
	same := got.Description == want.Description && retention == want.Retention.Milliseconds() &&
		bytes.Equal(gotData, data) && got.Version == want.Version && updated == store.UnixMilli(want.UpdatedAt)
	return same, nil
}

// GetNamespace implements store.MetadataStore.
func (s *Store) GetNamespace(ctx context.Context, name string) (store.Namespace, error) {
	if name == "" {
		return store.Namespace{}, store.InvalidArgument("name", "empty")
	}
	ns, err := scanNamespace(s.query(ctx, `SELECT `+namespaceColumns+` FROM {ks}.namespaces WHERE name = ?`, name))
	if errors.Is(err, gocql.ErrNotFound) {
		return ns, fmt.Errorf("%w: %q", store.ErrNamespaceNotFound, name)
	}
	if err != nil {
		return ns, fmt.Errorf("cassandra: read namespace %q: %w", name, err)
	}
	return ns, nil
}

// UpdateNamespace implements store.MetadataStore with UPDATE … IF version
// = the caller's version.
func (s *Store) UpdateNamespace(ctx context.Context, ns store.Namespace) (store.Namespace, error) {
	if err := ns.Validate(); err != nil {
		return ns, err
	}
	now := store.Now()
	data := codec.Marshal(ns.Data)
	applied, err := s.query(ctx, `UPDATE {ks}.namespaces SET description = ?, retention_ms = ?, data = ?, version = ?, updated_at = ?
		WHERE name = ? IF version = ?`,
		ns.Description, ns.Retention.Milliseconds(), data, ns.Version+1, store.UnixMilli(now), ns.Name, ns.Version).
		MapScanCAS(map[string]any{})
	if err != nil && outcomeUnknown(err) {
		want := ns
		want.Version, want.UpdatedAt = ns.Version+1, now
		applied, err = s.resolveNamespace(ctx, want, data, err)
	}
	if err != nil {
		return ns, fmt.Errorf("cassandra: update namespace %q: %w", ns.Name, err)
	}
	if !applied {
		if _, err := s.GetNamespace(ctx, ns.Name); err != nil {
			return ns, err
		}
		return ns, fmt.Errorf("%w: namespace %q is not at version %d", store.ErrConditionFailed, ns.Name, ns.Version)
	}
	return s.GetNamespace(ctx, ns.Name)
}

// ListNamespaces implements store.MetadataStore: the names come from one
// partition, the namespaces from their rows.
func (s *Store) ListNamespaces(ctx context.Context) ([]store.Namespace, error) {
	names, err := s.listBucket(ctx, `SELECT name FROM {ks}.namespace_names WHERE bucket = ?`)
	if err != nil {
		return nil, fmt.Errorf("cassandra: list namespaces: %w", err)
	}
	var out []store.Namespace
	for chunk := range slices.Chunk(names, 100) {
		iter := s.query(ctx, `SELECT `+namespaceColumns+` FROM {ks}.namespaces WHERE name IN ?`, chunk).Iter()
		for {
			ns, err := scanNamespace(iterRow{iter})
			if err != nil {
				break
			}
			out = append(out, ns)
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("cassandra: list namespaces: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b store.Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// iterRow gives an Iter the Scan method of a one-row query, so one scan
// function serves both; its error at the end of the rows is errNoRow.
type iterRow struct{ iter *gocql.Iter }

var errNoRow = errors.New("no more rows")

func (r iterRow) Scan(dest ...any) error {
	if r.iter.Scan(dest...) {
		return nil
	}
	return errNoRow
}

// listBucket returns the text keys of a list partition, in key order.
func (s *Store) listBucket(ctx context.Context, stmt string) ([]string, error) {
	iter := s.query(ctx, stmt, listBucket).Iter()
	var out []string
	var v string
	for iter.Scan(&v) {
		out = append(out, v)
	}
	return out, iter.Close()
}

// UpsertNode implements store.MetadataStore.
func (s *Store) UpsertNode(ctx context.Context, n store.Node) error {
	if err := n.Validate(); err != nil {
		return err
	}
	err := s.query(ctx, `INSERT INTO {ks}.nodes (bucket, id, host, pid, grp, address, started_at, heartbeat_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		listBucket, n.ID, n.Host, n.PID, n.Group, n.Address, store.UnixMilli(n.StartedAt), store.UnixMilli(n.HeartbeatAt), store.UnixMilli(n.ExpiresAt)).Exec()
	if err != nil {
		return fmt.Errorf("cassandra: upsert node %q: %w", n.ID, err)
	}
	return nil
}

// ListNodes implements store.MetadataStore. The nodes are one partition,
// by id; the expiry filter is applied here.
func (s *Store) ListNodes(ctx context.Context, aliveAt time.Time) ([]store.Node, error) {
	iter := s.query(ctx, `SELECT id, host, pid, grp, address, started_at, heartbeat_at, expires_at FROM {ks}.nodes WHERE bucket = ?`, listBucket).Iter()
	after := store.UnixMilli(aliveAt)
	var out []store.Node
	var n store.Node
	var started, hb, expires int64
	for iter.Scan(&n.ID, &n.Host, &n.PID, &n.Group, &n.Address, &started, &hb, &expires) {
		if expires <= after {
			continue
		}
		n.StartedAt, n.HeartbeatAt, n.ExpiresAt = store.FromUnixMilli(started), store.FromUnixMilli(hb), store.FromUnixMilli(expires)
		out = append(out, n)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: list nodes: %w", err)
	}
	return out, nil
}

// DeleteNode implements store.MetadataStore.
func (s *Store) DeleteNode(ctx context.Context, id string) error {
	if id == "" {
		return store.InvalidArgument("id", "empty")
	}
	if err := s.query(ctx, `DELETE FROM {ks}.nodes WHERE bucket = ? AND id = ?`, listBucket, id).Exec(); err != nil {
		return fmt.Errorf("cassandra: delete node %q: %w", id, err)
	}
	return nil
}

// definitionColumns are the columns scanDefinition reads, in its order.
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

// PutDefinition implements store.MetadataStore. A version is taken with
// INSERT … IF NOT EXISTS, so two writers never both get one; with Version
// 0 the loser of a race reads the new latest version and tries the next.
func (s *Store) PutDefinition(ctx context.Context, d store.Definition) (store.Definition, error) {
	if err := d.Validate(s.limits); err != nil {
		return d, err
	}
	d.SHA1 = d.BodySHA1()
	if err := s.query(ctx, `INSERT INTO {ks}.definition_types (bucket, type) VALUES (?, ?)`, listBucket, d.Type).Exec(); err != nil {
		return d, fmt.Errorf("cassandra: put definition %q: list type: %w", d.Type, err)
	}
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
		applied, err := s.query(ctx, `INSERT INTO {ks}.definitions (`+definitionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
			want.Type, want.Version, want.SHA1, want.Body, want.Group, store.UnixMilli(now), store.UnixMilli(now), want.ModifiedBy).
			MapScanCAS(map[string]any{})
		if err == nil && applied {
			return want, nil
		}
		// The version exists now, ours or another's; after a timeout a
		// serial read settles which.
		cons := gocql.Consistency(0)
		if err != nil {
			if !outcomeUnknown(err) {
				return d, fmt.Errorf("cassandra: put definition %q version %d: %w", d.Type, want.Version, err)
			}
			cons = s.serial
		}
		existing, rerr := s.getDefinition(ctx, want.Type, want.Version, cons)
		switch {
		case rerr == nil:
		case err != nil && errors.Is(rerr, store.ErrNotFound):
			return d, fmt.Errorf("cassandra: put definition %q version %d: write not applied: %w", d.Type, want.Version, err)
		case err != nil:
			return d, fmt.Errorf("%w: put definition %q version %d: %v; resolving it: %v", store.ErrOutcomeUnknown, d.Type, want.Version, err, rerr)
		default:
			return d, rerr
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
	return s.getDefinition(ctx, typ, version, 0)
}

// getDefinition reads one version, or the latest for 0, at the session's
// consistency or at cons.
func (s *Store) getDefinition(ctx context.Context, typ string, version int32, cons gocql.Consistency) (store.Definition, error) {
	q := s.query(ctx, `SELECT `+definitionColumns+` FROM {ks}.definitions WHERE type = ? AND version = ?`, typ, version)
	if version == 0 {
		q = s.query(ctx, `SELECT `+definitionColumns+` FROM {ks}.definitions WHERE type = ? LIMIT 1`, typ)
	}
	if cons != 0 {
		q = q.Consistency(cons)
	}
	d, err := scanDefinition(q)
	if errors.Is(err, gocql.ErrNotFound) {
		return d, fmt.Errorf("%w: definition %s version %d", store.ErrNotFound, typ, version)
	}
	if err != nil {
		return d, fmt.Errorf("cassandra: read definition %q: %w", typ, err)
	}
	return d, nil
}

// ListDefinitions implements store.MetadataStore. Without a type it reads
// the types from definition_types and then each type's partition.
func (s *Store) ListDefinitions(ctx context.Context, typ string) ([]store.Definition, error) {
	types := []string{typ}
	if typ == "" {
		var err error
		if types, err = s.listBucket(ctx, `SELECT type FROM {ks}.definition_types WHERE bucket = ?`); err != nil {
			return nil, fmt.Errorf("cassandra: list definition types: %w", err)
		}
	}
	var out []store.Definition
	for _, t := range types {
		iter := s.query(ctx, `SELECT `+definitionColumns+` FROM {ks}.definitions WHERE type = ? ORDER BY version ASC`, t).PageSize(100).Iter()
		for {
			d, err := scanDefinition(iterRow{iter})
			if err != nil {
				break
			}
			out = append(out, d)
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("cassandra: list definitions of %q: %w", t, err)
		}
	}
	return out, nil
}
