package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/codec"
)

// UpsertVisibility implements store.VisibilityStore. A record's attributes
// are rewritten only while the stored record is the one written here (the
// version check inside each statement), so the statements of many records
// run in one transaction, pipelined where the dialect can.
func (s *Store) UpsertVisibility(ctx context.Context, records ...store.VisibilityRecord) error {
	for _, r := range records {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	var ops []Op
	for _, r := range records {
		ops = append(ops, Op{What: "upsert visibility " + r.Namespace + "/" + r.RunID, Query: s.q(`INSERT INTO visibility
			(namespace, run_id, workflow_id, type, status, start_time, close_time, business_key, attributes, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, run_id) DO UPDATE SET
			workflow_id = excluded.workflow_id, type = excluded.type, status = excluded.status, start_time = excluded.start_time,
			close_time = excluded.close_time, business_key = excluded.business_key, attributes = excluded.attributes,
			version = excluded.version
			WHERE visibility.version <= excluded.version`),
			Args: []any{r.Namespace, r.RunID, r.WorkflowID, r.Type, r.Status, store.UnixMilli(r.StartTime), store.UnixMilli(r.CloseTime),
				r.BusinessKey, codec.Marshal(r.Attributes), r.Version}})
		current := ` EXISTS (SELECT 1 FROM visibility WHERE namespace = ? AND run_id = ? AND version = ?)`
		ops = append(ops, Op{What: "upsert visibility attributes", Query: s.q(`DELETE FROM visibility_attributes
			WHERE namespace = ? AND run_id = ? AND` + current), Args: []any{r.Namespace, r.RunID, r.Namespace, r.RunID, r.Version}})
		for k, v := range r.Attributes {
			ops = append(ops, Op{What: "upsert visibility attributes", Query: s.q(`INSERT INTO visibility_attributes (namespace, run_id, name, value)
				SELECT ?, ?, ?, ? WHERE` + current), Args: []any{r.Namespace, r.RunID, k, v, r.Namespace, r.RunID, r.Version}})
		}
	}
	return s.runInTx(ctx, ops)
}

// runInTx runs ops in one write transaction, pipelined where the dialect can.
func (s *Store) runInTx(ctx context.Context, ops []Op) error {
	if s.d.Pipeline != nil {
		return s.d.Pipeline(ctx, s.write, ops)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.runOps(ctx, tx, ops) })
}

// DeleteVisibility implements store.VisibilityStore: the records and
// attributes of up to deleteChunk runs go in one statement per table, and
// all of them in one transaction.
func (s *Store) DeleteVisibility(ctx context.Context, namespace string, runIDs ...string) error {
	if namespace == "" {
		return store.InvalidArgument("run", "namespace and run id must be set")
	}
	for _, id := range runIDs {
		if id == "" {
			return store.InvalidArgument("run", "namespace and run id must be set")
		}
	}
	if len(runIDs) == 0 {
		return nil
	}
	var ops []Op
	for i := 0; i < len(runIDs); i += deleteChunk {
		ids := runIDs[i:min(i+deleteChunk, len(runIDs))]
		args := make([]any, 0, len(ids)+1)
		args = append(args, namespace)
		for _, id := range ids {
			args = append(args, id)
		}
		in := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
		for _, table := range []string{"visibility", "visibility_attributes"} {
			ops = append(ops, Op{What: "delete visibility", Query: s.q(`DELETE FROM ` + table + ` WHERE namespace = ? AND run_id IN (` + in + `)`), Args: args})
		}
	}
	return s.runInTx(ctx, ops)
}

const visibilityColumns = `namespace, run_id, workflow_id, type, status, start_time, close_time, business_key, attributes, version`

func scanVisibility(sc interface{ Scan(...any) error }) (store.VisibilityRecord, error) {
	var r store.VisibilityRecord
	var start, closed int64
	var attrs []byte
	if err := sc.Scan(&r.Namespace, &r.RunID, &r.WorkflowID, &r.Type, &r.Status, &start, &closed, &r.BusinessKey, &attrs, &r.Version); err != nil {
		return r, err
	}
	r.StartTime, r.CloseTime = store.FromUnixMilli(start), store.FromUnixMilli(closed)
	return r, codec.Unmarshal(attrs, &r.Attributes)
}

// GetVisibility implements store.VisibilityStore.
func (s *Store) GetVisibility(ctx context.Context, namespace, runID string) (store.VisibilityRecord, error) {
	if namespace == "" || runID == "" {
		return store.VisibilityRecord{}, store.InvalidArgument("run", "namespace and run id must be set")
	}
	r, err := scanVisibility(s.read.QueryRowContext(ctx, s.q(`SELECT `+visibilityColumns+` FROM visibility WHERE namespace = ? AND run_id = ?`), namespace, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("%w: visibility of %s/%s", store.ErrNotFound, namespace, runID)
	}
	if err != nil {
		return r, fmt.Errorf("%s: read visibility: %w", s.d.Name, err)
	}
	return r, nil
}

// filterWhere builds the WHERE clause of a filter.
func filterWhere(f store.RunFilter) (string, []any) {
	conds := []string{"v.namespace = ?"}
	args := []any{f.Namespace}
	if f.WorkflowID != "" {
		conds, args = append(conds, "v.workflow_id = ?"), append(args, f.WorkflowID)
	}
	if f.Type != "" {
		conds, args = append(conds, "v.type = ?"), append(args, f.Type)
	}
	if len(f.Statuses) > 0 {
		conds = append(conds, "v.status IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(f.Statuses)), ", ")+")")
		for _, st := range f.Statuses {
			args = append(args, st)
		}
	}
	if !f.StartedAfter.IsZero() {
		conds, args = append(conds, "v.start_time >= ?"), append(args, store.UnixMilli(f.StartedAfter))
	}
	if !f.StartedBefore.IsZero() {
		conds, args = append(conds, "v.start_time < ?"), append(args, store.UnixMilli(f.StartedBefore))
	}
	if f.BusinessKey != "" {
		conds, args = append(conds, "v.business_key = ?"), append(args, f.BusinessKey)
	}
	names := make([]string, 0, len(f.Attributes))
	for k := range f.Attributes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		conds = append(conds, `EXISTS (SELECT 1 FROM visibility_attributes a WHERE a.namespace = v.namespace AND a.run_id = v.run_id
			AND a.name = ? AND a.value = ?)`)
		args = append(args, k, f.Attributes[k])
	}
	return strings.Join(conds, " AND "), args
}

type runCursor struct {
	Start int64  `json:"start"`
	RunID string `json:"run"`
}

// ListRuns implements store.VisibilityStore.
func (s *Store) ListRuns(ctx context.Context, req store.ListRunsRequest) (store.RunPage, error) {
	var page store.RunPage
	if err := req.Validate(); err != nil {
		return page, err
	}
	if _, err := s.GetNamespace(ctx, req.Namespace); err != nil {
		return page, err
	}
	where, args := filterWhere(req.RunFilter)
	if len(req.PageToken) > 0 {
		var c runCursor
		if err := codec.DecodeToken(req.PageToken, "runs", &c); err != nil {
			return page, err
		}
		where += ` AND (v.start_time, v.run_id) < (?, ?)`
		args = append(args, c.Start, c.RunID)
	}
	size := store.PageSize(req.PageSize, 100)
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT `+prefixed("v.", visibilityColumns)+` FROM visibility v WHERE `+where+`
		ORDER BY v.start_time DESC, v.run_id DESC LIMIT ?`), append(args, size+1)...)
	if err != nil {
		return page, fmt.Errorf("%s: list runs: %w", s.d.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanVisibility(rows)
		if err != nil {
			return page, fmt.Errorf("%s: list runs: %w", s.d.Name, err)
		}
		if len(page.Runs) == size {
			last := page.Runs[size-1]
			page.NextPageToken = codec.EncodeToken("runs", runCursor{Start: store.UnixMilli(last.StartTime), RunID: last.RunID})
			break
		}
		page.Runs = append(page.Runs, r)
	}
	return page, rows.Err()
}

// CountRuns implements store.VisibilityStore.
func (s *Store) CountRuns(ctx context.Context, f store.RunFilter) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	if _, err := s.GetNamespace(ctx, f.Namespace); err != nil {
		return 0, err
	}
	where, args := filterWhere(f)
	var n int64
	if err := s.read.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM visibility v WHERE `+where), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: count runs: %w", s.d.Name, err)
	}
	return n, nil
}

func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ", ")
	for i, p := range parts {
		parts[i] = prefix + p
	}
	return strings.Join(parts, ", ")
}
