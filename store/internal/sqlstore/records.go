package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/codec"
)

// Records and the audit log are in s's own database, never in the
// visibility one (WithVisibility routes only the VisibilityStore methods):
// on SQLite they are in the runs' file.

const recordColumns = `kind, key, value, version, updated_at`

func scanRecord(sc interface{ Scan(...any) error }) (store.Record, error) {
	var r store.Record
	var updated int64
	if err := sc.Scan(&r.Kind, &r.Key, &r.Value, &r.Version, &updated); err != nil {
		return r, err
	}
	r.Value = bytesOrNil(r.Value)
	r.UpdatedAt = store.FromUnixMilli(updated)
	return r, nil
}

// bytesOrNil is b, or nil when it is empty: an empty value reads back as
// nil on every backend.
func bytesOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// PutRecord implements store.MetadataStore: an INSERT … ON CONFLICT DO
// NOTHING creates, an UPDATE … WHERE version = ? replaces.
func (s *Store) PutRecord(ctx context.Context, r store.Record) (store.Record, error) {
	if err := r.Validate(s.limits); err != nil {
		return r, err
	}
	now := store.Now()
	want := r
	want.Value, want.Version, want.UpdatedAt = bytesOrNil(r.Value), r.Version+1, now
	var res sql.Result
	var err error
	if r.Version == 0 {
		res, err = s.write.ExecContext(ctx, s.q(`INSERT INTO records (`+recordColumns+`) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (kind, key) DO NOTHING`), r.Kind, r.Key, nonNil(r.Value), want.Version, store.UnixMilli(now))
	} else {
		res, err = s.write.ExecContext(ctx, s.q(`UPDATE records SET value = ?, version = ?, updated_at = ?
			WHERE kind = ? AND key = ? AND version = ?`), nonNil(r.Value), want.Version, store.UnixMilli(now), r.Kind, r.Key, r.Version)
	}
	if err != nil {
		return r, fmt.Errorf("%s: put record %s/%q: %w", s.d.Name, r.Kind, r.Key, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		if r.Version == 0 {
			return r, fmt.Errorf("%w: record %s/%q exists", store.ErrConditionFailed, r.Kind, r.Key)
		}
		if _, err := s.GetRecord(ctx, r.Kind, r.Key); err != nil {
			return r, err
		}
		return r, fmt.Errorf("%w: record %s/%q is not at version %d", store.ErrConditionFailed, r.Kind, r.Key, r.Version)
	}
	return want, nil
}

// GetRecord implements store.MetadataStore.
func (s *Store) GetRecord(ctx context.Context, kind, key string) (store.Record, error) {
	if err := store.ValidateRecordKey(kind, key); err != nil {
		return store.Record{}, err
	}
	r, err := scanRecord(s.read.QueryRowContext(ctx, s.q(`SELECT `+recordColumns+` FROM records WHERE kind = ? AND key = ?`), kind, key))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Record{}, fmt.Errorf("%w: record %s/%q", store.ErrNotFound, kind, key)
	}
	if err != nil {
		return store.Record{}, fmt.Errorf("%s: read record %s/%q: %w", s.d.Name, kind, key, err)
	}
	return r, nil
}

// ListRecords implements store.MetadataStore. A prefix is the range
// [prefix, PrefixEnd(prefix)) of the primary key, in byte order (the key
// column is byte-ordered on every dialect; see 0004_access.sql).
func (s *Store) ListRecords(ctx context.Context, kind, prefix string) ([]store.Record, error) {
	if err := store.ValidateRecordPrefix(kind, prefix); err != nil {
		return nil, err
	}
	query, args := `SELECT `+recordColumns+` FROM records WHERE kind = ?`, []any{kind}
	if prefix != "" {
		query, args = query+` AND key >= ?`, append(args, prefix)
		if end := store.PrefixEnd(prefix); end != "" {
			query, args = query+` AND key < ?`, append(args, end)
		}
	}
	rows, err := s.read.QueryContext(ctx, s.q(query+` ORDER BY key`), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: list records %s/%q: %w", s.d.Name, kind, prefix+"*", err)
	}
	defer rows.Close()
	out := []store.Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: list records %s/%q: %w", s.d.Name, kind, prefix+"*", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: list records %s/%q: %w", s.d.Name, kind, prefix+"*", err)
	}
	return out, nil
}

// DeleteRecord implements store.MetadataStore.
func (s *Store) DeleteRecord(ctx context.Context, kind, key string, version int64) error {
	if err := store.ValidateRecordKey(kind, key); err != nil {
		return err
	}
	if version < 0 {
		return store.InvalidArgument("version", "negative")
	}
	query, args := `DELETE FROM records WHERE kind = ? AND key = ?`, []any{kind, key}
	if version != 0 {
		query, args = query+` AND version = ?`, append(args, version)
	}
	res, err := s.write.ExecContext(ctx, s.q(query), args...)
	if err != nil {
		return fmt.Errorf("%s: delete record %s/%q: %w", s.d.Name, kind, key, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if version == 0 {
		return fmt.Errorf("%w: record %s/%q", store.ErrNotFound, kind, key)
	}
	if _, err := s.GetRecord(ctx, kind, key); err != nil {
		return err
	}
	return fmt.Errorf("%w: record %s/%q is not at version %d", store.ErrConditionFailed, kind, key, version)
}

const auditColumns = `time_ms, id, namespace, actor, remote, action, target, run_id, status, detail`

// auditWidth is the number of auditColumns.
const auditWidth = 10

func scanAudit(sc interface{ Scan(...any) error }) (store.AuditEntry, error) {
	var e store.AuditEntry
	var at int64
	if err := sc.Scan(&at, &e.ID, &e.Namespace, &e.Actor, &e.Remote, &e.Action, &e.Target, &e.RunID, &e.Status, &e.Detail); err != nil {
		return e, err
	}
	e.Time, e.Detail = store.FromUnixMilli(at), bytesOrNil(e.Detail)
	return e, nil
}

// AppendAudit implements store.MetadataStore: the entries are inserted in
// one transaction, an entry whose (time, id) is stored already skipped.
func (s *Store) AppendAudit(ctx context.Context, entries ...store.AuditEntry) error {
	if err := store.ValidateAudit(entries); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	args := make([]any, 0, auditWidth*len(entries))
	for _, e := range entries {
		args = append(args, store.UnixMilli(e.Time), e.ID, e.Namespace, e.Actor, e.Remote, e.Action, e.Target, e.RunID, e.Status, nonNil(e.Detail))
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for rows, chunk := range rowChunks(auditWidth, args) {
			if _, err := s.exec(ctx, tx, `INSERT INTO audit_log (`+auditColumns+`) VALUES `+placeholders(auditWidth, rows)+`
				ON CONFLICT (time_ms, id) DO NOTHING`, chunk...); err != nil {
				return fmt.Errorf("%s: append audit: %w", s.d.Name, err)
			}
		}
		return nil
	})
}

// ListAudit implements store.MetadataStore. Pages are keyset pages on
// (time_ms DESC, id DESC), read backwards through the primary key, or
// through the namespace's or the actor's index when the filter names one.
func (s *Store) ListAudit(ctx context.Context, req store.ListAuditRequest) (store.AuditPage, error) {
	var page store.AuditPage
	if err := req.Validate(); err != nil {
		return page, err
	}
	var c *codec.AuditCursor
	if len(req.PageToken) > 0 {
		c = new(codec.AuditCursor)
		if err := codec.DecodeToken(req.PageToken, "audit", c); err != nil {
			return page, err
		}
	}
	var where []string
	var args []any
	and := func(cond string, a ...any) { where, args = append(where, cond), append(args, a...) }
	if req.Namespace != "" {
		and(`namespace = ?`, req.Namespace)
	}
	if req.Actor != "" {
		and(`actor = ?`, req.Actor)
	}
	if !req.Since.IsZero() {
		and(`time_ms >= ?`, codec.CeilMilli(req.Since))
	}
	// A cursor inside the range implies its upper bound.
	if until := codec.CeilMilli(req.Until); !req.Until.IsZero() && (c == nil || c.Time >= until) {
		and(`time_ms < ?`, until)
	}
	if c != nil {
		and(`(time_ms, id) < (?, ?)`, c.Time, c.ID)
	}
	query := `SELECT ` + auditColumns + ` FROM audit_log`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	size := store.PageSize(req.PageSize, 100)
	rows, err := s.read.QueryContext(ctx, s.q(query+` ORDER BY time_ms DESC, id DESC LIMIT ?`), append(args, size+1)...)
	if err != nil {
		return page, fmt.Errorf("%s: list audit: %w", s.d.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return page, fmt.Errorf("%s: list audit: %w", s.d.Name, err)
		}
		if len(page.Entries) == size {
			last := page.Entries[size-1]
			page.NextPageToken = codec.EncodeToken("audit", codec.AuditCursor{Time: store.UnixMilli(last.Time), ID: last.ID})
			break
		}
		page.Entries = append(page.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("%s: list audit: %w", s.d.Name, err)
	}
	return page, nil
}

// PurgeAudit implements store.MetadataStore: one statement deletes the
// oldest entries before the bound, up to limit.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := store.ValidatePurgeAudit(before, limit); err != nil {
		return 0, err
	}
	query := `DELETE FROM audit_log WHERE (time_ms, id) IN
		(SELECT time_ms, id FROM audit_log WHERE time_ms < ? ORDER BY time_ms, id LIMIT ?)`
	if s.d.RowIDs {
		query = `DELETE FROM audit_log WHERE rowid IN
			(SELECT rowid FROM audit_log WHERE time_ms < ? ORDER BY time_ms, id LIMIT ?)`
	}
	res, err := s.write.ExecContext(ctx, s.q(query), codec.CeilMilli(before), limit)
	if err != nil {
		return 0, fmt.Errorf("%s: purge audit before %s: %w", s.d.Name, before.UTC().Format(time.RFC3339Nano), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: purge audit before %s: %w", s.d.Name, before.UTC().Format(time.RFC3339Nano), err)
	}
	return int(n), nil
}
