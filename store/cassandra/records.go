package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/codec"
)

// recordColumns are the columns scanRecord reads, in its order.
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

// casVersion is the version column of a conditional write's result that
// was not applied: the stored version, or 0 when the row does not exist
// (a stored record's version is at least 1).
func casVersion(m map[string]any) int64 {
	switch v := m["version"].(type) {
	case int64:
		return v
	case *int64:
		if v != nil {
			return *v
		}
	}
	return 0
}

// PutRecord implements store.MetadataStore with INSERT … IF NOT EXISTS
// (Version 0) or UPDATE … IF version = ?.
func (s *Store) PutRecord(ctx context.Context, r store.Record) (store.Record, error) {
	if err := r.Validate(s.limits); err != nil {
		return r, err
	}
	now := store.Now()
	want := r
	want.Value, want.Version, want.UpdatedAt = bytesOrNil(r.Value), r.Version+1, now
	var q *gocql.Query
	if r.Version == 0 {
		q = s.query(ctx, `INSERT INTO {ks}.records (`+recordColumns+`) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS`,
			r.Kind, r.Key, want.Value, want.Version, store.UnixMilli(now))
	} else {
		q = s.query(ctx, `UPDATE {ks}.records SET value = ?, version = ?, updated_at = ? WHERE kind = ? AND key = ? IF version = ?`,
			want.Value, want.Version, store.UnixMilli(now), r.Kind, r.Key, r.Version)
	}
	prev := map[string]any{}
	applied, err := q.MapScanCAS(prev)
	if err != nil && outcomeUnknown(err) {
		applied, err = s.resolveRecord(ctx, want, err)
		clear(prev)
	}
	if err != nil {
		return r, fmt.Errorf("cassandra: put record %s/%q: %w", r.Kind, r.Key, err)
	}
	if applied {
		return want, nil
	}
	if r.Version == 0 {
		return r, fmt.Errorf("%w: record %s/%q exists", store.ErrConditionFailed, r.Kind, r.Key)
	}
	stored := casVersion(prev)
	if stored == 0 && len(prev) == 0 {
		// Resolved after a timeout: read what is there now.
		got, err := s.GetRecord(ctx, r.Kind, r.Key)
		if err != nil {
			return r, err
		}
		stored = got.Version
	}
	if stored == 0 {
		return r, fmt.Errorf("%w: record %s/%q", store.ErrNotFound, r.Kind, r.Key)
	}
	return r, fmt.Errorf("%w: record %s/%q is at version %d, not %d", store.ErrConditionFailed, r.Kind, r.Key, stored, r.Version)
}

// resolveRecord decides whether a record write whose outcome is unknown
// was applied: a serial read completes or forecloses the transaction in
// flight, and the write was applied if the row is now what it wrote
// (times are to the millisecond, so another writer's identical row is as
// good as ours).
func (s *Store) resolveRecord(ctx context.Context, want store.Record, cause error) (bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	got, err := scanRecord(s.query(rctx, `SELECT `+recordColumns+` FROM {ks}.records WHERE kind = ? AND key = ?`, want.Kind, want.Key).
		Consistency(s.serial))
	switch {
	case errors.Is(err, gocql.ErrNotFound) && want.Version == 1:
		return false, fmt.Errorf("write not applied: %w", cause)
	case errors.Is(err, gocql.ErrNotFound):
		return false, nil // an update of a record deleted since: not found
	case err != nil:
		return false, fmt.Errorf("%w: %v; resolving it: %v", store.ErrOutcomeUnknown, cause, err)
	}
	return got.Version == want.Version && got.UpdatedAt.Equal(want.UpdatedAt) && bytes.Equal(got.Value, want.Value), nil
}

// GetRecord implements store.MetadataStore.
func (s *Store) GetRecord(ctx context.Context, kind, key string) (store.Record, error) {
	if err := store.ValidateRecordKey(kind, key); err != nil {
		return store.Record{}, err
	}
	r, err := scanRecord(s.query(ctx, `SELECT `+recordColumns+` FROM {ks}.records WHERE kind = ? AND key = ?`, kind, key))
	if errors.Is(err, gocql.ErrNotFound) {
		return store.Record{}, fmt.Errorf("%w: record %s/%q", store.ErrNotFound, kind, key)
	}
	if err != nil {
		return store.Record{}, fmt.Errorf("cassandra: read record %s/%q: %w", kind, key, err)
	}
	return r, nil
}

// ListRecords implements store.MetadataStore: the kind's partition, or
// the clustering range [prefix, PrefixEnd(prefix)) of it.
func (s *Store) ListRecords(ctx context.Context, kind, prefix string) ([]store.Record, error) {
	if err := store.ValidateRecordPrefix(kind, prefix); err != nil {
		return nil, err
	}
	stmt, args := `SELECT `+recordColumns+` FROM {ks}.records WHERE kind = ?`, []any{kind}
	if prefix != "" {
		stmt, args = stmt+` AND key >= ?`, append(args, prefix)
		if end := store.PrefixEnd(prefix); end != "" {
			stmt, args = stmt+` AND key < ?`, append(args, end)
		}
	}
	iter := s.query(ctx, stmt, args...).PageSize(1000).Iter()
	out := []store.Record{}
	for {
		r, err := scanRecord(iterRow{iter})
		if err != nil {
			break
		}
		out = append(out, r)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: list records %s/%q: %w", kind, prefix+"*", err)
	}
	return out, nil
}

// DeleteRecord implements store.MetadataStore with DELETE … IF EXISTS
// (version 0) or IF version = ?.
func (s *Store) DeleteRecord(ctx context.Context, kind, key string, version int64) error {
	if err := store.ValidateRecordKey(kind, key); err != nil {
		return err
	}
	if version < 0 {
		return store.InvalidArgument("version", "negative")
	}
	q := s.query(ctx, `DELETE FROM {ks}.records WHERE kind = ? AND key = ? IF EXISTS`, kind, key)
	if version != 0 {
		q = s.query(ctx, `DELETE FROM {ks}.records WHERE kind = ? AND key = ? IF version = ?`, kind, key, version)
	}
	prev := map[string]any{}
	applied, err := q.MapScanCAS(prev)
	if err != nil && outcomeUnknown(err) {
		return s.resolveDelete(ctx, kind, key, version, err)
	}
	if err != nil {
		return fmt.Errorf("cassandra: delete record %s/%q: %w", kind, key, err)
	}
	if applied {
		return nil
	}
	stored := casVersion(prev)
	if version == 0 || stored == 0 {
		return fmt.Errorf("%w: record %s/%q", store.ErrNotFound, kind, key)
	}
	return fmt.Errorf("%w: record %s/%q is at version %d, not %d", store.ErrConditionFailed, kind, key, stored, version)
}

// resolveDelete settles a record deletion whose outcome is unknown with a
// serial read: a record that is gone was deleted (by this call or
// another); one at another version fails the condition; one still at the
// version was not deleted, and never will be by this call.
func (s *Store) resolveDelete(ctx context.Context, kind, key string, version int64, cause error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	got, err := scanRecord(s.query(rctx, `SELECT `+recordColumns+` FROM {ks}.records WHERE kind = ? AND key = ?`, kind, key).
		Consistency(s.serial))
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("%w: delete record %s/%q: %v; resolving it: %v", store.ErrOutcomeUnknown, kind, key, cause, err)
	case version != 0 && got.Version != version:
		return fmt.Errorf("%w: record %s/%q is at version %d, not %d", store.ErrConditionFailed, kind, key, got.Version, version)
	}
	return fmt.Errorf("cassandra: delete record %s/%q: write not applied: %w", kind, key, cause)
}

// auditColumns are the columns scanAudit reads, in its order.
const auditColumns = `time, id, namespace, actor, remote, action, target, run_id, status, detail`

func scanAudit(sc interface{ Scan(...any) error }) (store.AuditEntry, error) {
	var e store.AuditEntry
	var at int64
	if err := sc.Scan(&at, &e.ID, &e.Namespace, &e.Actor, &e.Remote, &e.Action, &e.Target, &e.RunID, &e.Status, &e.Detail); err != nil {
		return e, err
	}
	e.Time, e.Detail = store.FromUnixMilli(at), bytesOrNil(e.Detail)
	return e, nil
}

// auditBatchBytes and auditBatchEntries bound one batch of AppendAudit
// (the entries of one day, one partition: applied atomically, and far
// below the largest mutation Cassandra takes).
const (
	auditBatchBytes   = 1 << 20
	auditBatchEntries = 100
)

// auditSize is about the bytes an entry takes in a batch.
func auditSize(e store.AuditEntry) int {
	return 64 + len(e.ID) + len(e.Namespace) + len(e.Actor) + len(e.Remote) + len(e.Action) + len(e.Target) + len(e.RunID) + len(e.Detail)
}

// AppendAudit implements store.MetadataStore. The entries of each day go
// in unlogged batches of that day's partition, after the day's marker in
// audit_days; the marker and the entries are written at one timestamp
// (see PurgeAudit). Writing an entry again overwrites it with itself.
func (s *Store) AppendAudit(ctx context.Context, entries ...store.AuditEntry) error {
	if err := store.ValidateAudit(entries); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	ts := time.Now().UnixMicro()
	var days []int64
	byDay := map[int64][]store.AuditEntry{}
	for _, e := range entries {
		d := dayOf(store.UnixMilli(e.Time))
		if _, ok := byDay[d]; !ok {
			days = append(days, d)
		}
		byDay[d] = append(byDay[d], e)
	}
	for _, d := range days {
		if err := s.query(ctx, `INSERT INTO {ks}.audit_days (bucket, day, seen) VALUES (?, ?, true)`, listBucket, d).
			WithTimestamp(ts).Exec(); err != nil {
			return fmt.Errorf("cassandra: append audit: mark day %d: %w", d, err)
		}
		b := s.session.Batch(gocql.UnloggedBatch).WithContext(ctx).WithTimestamp(ts)
		size := 0
		flush := func() error {
			if b.Size() == 0 {
				return nil
			}
			if err := b.Exec(); err != nil {
				return fmt.Errorf("cassandra: append audit: day %d: %w", d, err)
			}
			b, size = s.session.Batch(gocql.UnloggedBatch).WithContext(ctx).WithTimestamp(ts), 0
			return nil
		}
		for _, e := range byDay[d] {
			if b.Size() >= auditBatchEntries || size+auditSize(e) > auditBatchBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			b.Query(s.cql(`INSERT INTO {ks}.audit_log (day, `+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
				d, store.UnixMilli(e.Time), e.ID, e.Namespace, e.Actor, e.Remote, e.Action, e.Target, e.RunID, e.Status, e.Detail)
			size += auditSize(e)
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// ListAudit implements store.MetadataStore. It reads the days of
// audit_days within the time range (and the cursor), newest first, and
// each day's partition from the upper bound down, keeping the rows of the
// namespace and actor asked for, until a page and one more entry are
// found. Pages are keyset pages on (time DESC, id DESC), with the SQL
// backends' token.
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
	size := store.PageSize(req.PageSize, 100)
	// The bounds: time >= lower; (time, id) < (upper, upperID), or time <
	// upper when upperID is unset.
	hasLower, lower := !req.Since.IsZero(), codec.CeilMilli(req.Since)
	hasUpper, upper, upperID, byID := false, int64(0), "", false
	if !req.Until.IsZero() {
		hasUpper, upper = true, codec.CeilMilli(req.Until)
	}
	if c != nil && (!hasUpper || c.Time < upper) {
		hasUpper, upper, upperID, byID = true, c.Time, c.ID, true
	}
	if hasLower && hasUpper && (lower > upper || lower == upper && !byID) {
		return page, nil
	}
	dayStmt, dayArgs := `SELECT day FROM {ks}.audit_days WHERE bucket = ?`, []any{listBucket}
	if hasUpper {
		last := upper
		if !byID {
			last-- // time < upper
		}
		dayStmt, dayArgs = dayStmt+` AND day <= ?`, append(dayArgs, dayOf(last))
	}
	if hasLower {
		dayStmt, dayArgs = dayStmt+` AND day >= ?`, append(dayArgs, dayOf(lower))
	}
	var days []int64
	iter := s.query(ctx, dayStmt, dayArgs...).PageSize(1000).Iter()
	var day int64
	for iter.Scan(&day) {
		days = append(days, day)
	}
	if err := iter.Close(); err != nil {
		return page, fmt.Errorf("cassandra: list audit: read days: %w", err)
	}

	stmt, args := `SELECT `+auditColumns+` FROM {ks}.audit_log WHERE day = ?`, []any(nil)
	switch {
	case byID:
		stmt, args = stmt+` AND (time, id) < (?, ?)`, append(args, upper, upperID)
	case hasUpper:
		stmt, args = stmt+` AND (time) < (?)`, append(args, upper)
	}
	if hasLower {
		stmt, args = stmt+` AND (time) >= (?)`, append(args, lower)
	}
	fetch := size + 1
	if req.Namespace != "" || req.Actor != "" {
		fetch = max(fetch, 1000) // rows of others are read and skipped
	}
	for _, d := range days {
		iter := s.query(ctx, stmt, append([]any{d}, args...)...).PageSize(min(fetch, 5000)).Iter()
		for len(page.Entries) <= size {
			e, err := scanAudit(iterRow{iter})
			if err != nil {
				break
			}
			if req.Namespace != "" && e.Namespace != req.Namespace || req.Actor != "" && e.Actor != req.Actor {
				continue
			}
			page.Entries = append(page.Entries, e)
		}
		if err := iter.Close(); err != nil {
			return store.AuditPage{}, fmt.Errorf("cassandra: list audit: day %d: %w", d, err)
		}
		if len(page.Entries) > size {
			page.Entries = page.Entries[:size]
			last := page.Entries[size-1]
			page.NextPageToken = codec.EncodeToken("audit", codec.AuditCursor{Time: store.UnixMilli(last.Time), ID: last.ID})
			break
		}
	}
	return page, nil
}

// PurgeAudit implements store.MetadataStore. It visits the days of
// audit_days up to the bound's, oldest first. A day wholly before the
// bound whose entries fit in what is left of limit is dropped whole: its
// partition and its marker are deleted at the marker's timestamp, so the
// entries of a call that marked the day again since (and the marker) stay.
// Otherwise the day's oldest entries before the bound, up to what is left
// of limit, are deleted as one clustering range.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := store.ValidatePurgeAudit(before, limit); err != nil {
		return 0, err
	}
	bound := codec.CeilMilli(before)
	type marked struct{ day, written int64 }
	var days []marked
	iter := s.query(ctx, `SELECT day, WRITETIME(seen) FROM {ks}.audit_days WHERE bucket = ? AND day <= ? ORDER BY day ASC`,
		listBucket, dayOf(bound-1)).PageSize(1000).Iter()
	var m marked
	for iter.Scan(&m.day, &m.written) {
		days = append(days, m)
	}
	if err := iter.Close(); err != nil {
		return 0, fmt.Errorf("cassandra: purge audit: read days: %w", err)
	}
	deleted := 0
	for _, d := range days {
		left := limit - deleted
		if left == 0 {
			break
		}
		whole := (d.day+1)*dayMillis <= bound
		stmt, args := `SELECT time, id, WRITETIME(status) FROM {ks}.audit_log WHERE day = ?`, []any{d.day}
		if !whole {
			stmt, args = stmt+` AND (time) < (?)`, append(args, bound)
		}
		type key struct {
			time    int64
			id      string
			written int64
		}
		var keys []key
		iter := s.query(ctx, stmt+` ORDER BY time ASC, id ASC LIMIT ?`, append(args, left+1)...).PageSize(min(left+1, 5000)).Iter()
		var k key
		for iter.Scan(&k.time, &k.id, &k.written) {
			keys = append(keys, k)
		}
		if err := iter.Close(); err != nil {
			return deleted, fmt.Errorf("cassandra: purge audit: read day %d: %w", d.day, err)
		}
		if whole && len(keys) <= left {
			n := 0
			for _, k := range keys {
				if k.written <= d.written {
					n++
				}
			}
			if err := s.query(ctx, `DELETE FROM {ks}.audit_log WHERE day = ?`, d.day).WithTimestamp(d.written).Exec(); err != nil {
				return deleted, fmt.Errorf("cassandra: purge audit: drop day %d: %w", d.day, err)
			}
			deleted += n
			if err := s.query(ctx, `DELETE FROM {ks}.audit_days WHERE bucket = ? AND day = ?`, listBucket, d.day).
				WithTimestamp(d.written).Exec(); err != nil {
				return deleted, fmt.Errorf("cassandra: purge audit: unmark day %d: %w", d.day, err)
			}
			continue
		}
		n := min(len(keys), left)
		if n == 0 {
			continue
		}
		last := keys[n-1]
		if err := s.query(ctx, `DELETE FROM {ks}.audit_log WHERE day = ? AND (time, id) <= (?, ?)`, d.day, last.time, last.id).Exec(); err != nil {
			return deleted, fmt.Errorf("cassandra: purge audit: day %d: %w", d.day, err)
		}
		deleted += n
	}
	return deleted, nil
}
