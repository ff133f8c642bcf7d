package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/codec"
)

// UpsertVisibility implements store.VisibilityStore. A record's attributes
// are rewritten only while the stored record is the one written here (the
// version check inside each statement), so the statements of many records
// run in one transaction, pipelined where the dialect can. Attribute rows
// that did not change are left alone, so their counters are not touched.
// The counters of visibility and visibility_attributes are kept by the
// schema's triggers inside the same transaction.
func (s *Store) UpsertVisibility(ctx context.Context, records ...store.VisibilityRecord) error {
	return s.vis.upsertVisibility(ctx, records...)
}

// upsertVisibility is UpsertVisibility in s's database.
func (s *Store) upsertVisibility(ctx context.Context, records ...store.VisibilityRecord) error {
	for _, r := range records {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	var ops []Op
	for _, r := range records {
		start, attrs := store.UnixMilli(r.StartTime), codec.Marshal(r.Attributes)
		// Most updates of a stored record change its status, close time
		// and attributes only: the narrow update sets just those, so the
		// indexes of the columns it leaves alone are not rewritten. The
		// upsert then writes a new record, or one whose other columns
		// changed; it leaves alone a record the update wrote.
		ops = append(ops, Op{What: "update visibility " + r.Namespace + "/" + r.RunID, Query: s.q(`UPDATE visibility
			SET status = ?, close_time = ?, attributes = ?, version = ?
			WHERE namespace = ? AND run_id = ? AND version <= ?
			AND workflow_id = ? AND type = ? AND start_time = ? AND business_key = ?`),
			Args: []any{r.Status, store.UnixMilli(r.CloseTime), attrs, r.Version, r.Namespace, r.RunID, r.Version,
				r.WorkflowID, r.Type, start, r.BusinessKey}})
		ops = append(ops, Op{What: "upsert visibility " + r.Namespace + "/" + r.RunID, Query: s.q(`INSERT INTO visibility
			(namespace, run_id, workflow_id, type, status, start_time, close_time, business_key, attributes, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, run_id) DO UPDATE SET
			workflow_id = excluded.workflow_id, type = excluded.type, status = excluded.status, start_time = excluded.start_time,
			close_time = excluded.close_time, business_key = excluded.business_key, attributes = excluded.attributes,
			version = excluded.version
			WHERE visibility.version <= excluded.version AND (visibility.workflow_id <> excluded.workflow_id
			OR visibility.type <> excluded.type OR visibility.start_time <> excluded.start_time
			OR visibility.business_key <> excluded.business_key)`),
			Args: []any{r.Namespace, r.RunID, r.WorkflowID, r.Type, r.Status, start, store.UnixMilli(r.CloseTime),
				r.BusinessKey, attrs, r.Version}})
		current := ` EXISTS (SELECT 1 FROM visibility WHERE namespace = ? AND run_id = ? AND version = ?)`
		names := make([]string, 0, len(r.Attributes))
		for k := range r.Attributes {
			names = append(names, k)
		}
		sort.Strings(names)
		del := `DELETE FROM visibility_attributes WHERE namespace = ? AND run_id = ?`
		args := []any{r.Namespace, r.RunID}
		if len(names) > 0 {
			del += ` AND name NOT IN (` + marks(len(names)) + `)`
			for _, k := range names {
				args = append(args, k)
			}
		}
		ops = append(ops, Op{What: "upsert visibility attributes", Query: s.q(del + ` AND` + current),
			Args: append(args, r.Namespace, r.RunID, r.Version)})
		for _, k := range names {
			ops = append(ops, Op{What: "upsert visibility attributes", Query: s.q(`INSERT INTO visibility_attributes
				(namespace, run_id, name, value, start_time) SELECT ?, ?, ?, ?, ? WHERE` + current + `
				ON CONFLICT (namespace, run_id, name) DO UPDATE SET value = excluded.value, start_time = excluded.start_time
				WHERE visibility_attributes.value <> excluded.value OR visibility_attributes.start_time <> excluded.start_time`),
				Args: []any{r.Namespace, r.RunID, k, r.Attributes[k], start, r.Namespace, r.RunID, r.Version}})
		}
	}
	if err := s.runInTx(ctx, ops); err != nil {
		return err
	}
	s.visibilityWritten(ctx, len(records))
	return nil
}

// marks returns n comma-separated placeholders.
func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// runInTx runs ops in one write transaction, pipelined where the dialect can.
func (s *Store) runInTx(ctx context.Context, ops []Op) error {
	if s.d.Pipeline != nil {
		return s.d.Pipeline(ctx, s.write, ops)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.runOps(ctx, tx, ops) })
}

// compactEvery is how many visibility records a store writes or deletes
// between two compactions of the count deltas (PostgreSQL): a count reads
// at most about that many delta rows per writing process, several per
// record.
const compactEvery = 1000

// visibilityWritten notes n records written or deleted and, every
// compactEvery of them, folds the count deltas into the counters. A
// compaction that fails leaves the deltas to the next one: counts read
// them either way.
func (s *Store) visibilityWritten(ctx context.Context, n int) {
	if s.d.CompactCounts == nil || s.visWrites.Add(int64(n)) < compactEvery {
		return
	}
	s.visWrites.Store(0)
	if err := s.d.CompactCounts(context.WithoutCancel(ctx), s.write); err != nil {
		slog.WarnContext(ctx, "sqlstore: fold visibility count deltas; the next write will try again", "err", err)
	}
}

// DeleteVisibility implements store.VisibilityStore: the records and
// attributes of up to deleteChunk runs go in one statement per table, and
// all of them in one transaction.
func (s *Store) DeleteVisibility(ctx context.Context, namespace string, runIDs ...string) error {
	return s.vis.deleteVisibility(ctx, namespace, runIDs...)
}

// deleteVisibility is DeleteVisibility in s's database.
func (s *Store) deleteVisibility(ctx context.Context, namespace string, runIDs ...string) error {
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
	if err := s.runInTx(ctx, ops); err != nil {
		return err
	}
	s.visibilityWritten(ctx, len(runIDs))
	return nil
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
	return s.vis.getVisibility(ctx, namespace, runID)
}

// getVisibility is GetVisibility in s's database.
func (s *Store) getVisibility(ctx context.Context, namespace, runID string) (store.VisibilityRecord, error) {
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

// hourMillis is the width of a visibility_hour_counts bucket.
const hourMillis = int64(time.Hour / time.Millisecond)

// floorDiv is a/b rounded down, as the schema's hour expression computes it.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// timeRange is the start times a query covers: from lo (inclusive) to hi
// (exclusive), each only if set.
type timeRange struct {
	hasLo, hasHi bool
	lo, hi       int64
}

func rangeOf(f store.RunFilter) timeRange {
	var r timeRange
	if !f.StartedAfter.IsZero() {
		r.hasLo, r.lo = true, store.UnixMilli(f.StartedAfter)
	}
	if !f.StartedBefore.IsZero() {
		r.hasHi, r.hi = true, store.UnixMilli(f.StartedBefore)
	}
	return r
}

// runQuery is the FROM and WHERE of a query over a filter's runs.
type runQuery struct {
	from  string
	where []string
	args  []any
	// key is the table alias whose (start_time, run_id) the query is
	// ordered and bounded by: v (visibility), or a (the attribute rows a
	// query is driven by).
	key string
	// sorted says the index the query reads is not in start order (a
	// prefix's range): its rows are sorted, and no planner may read the
	// start-time index instead.
	sorted bool
	// oldest lists the oldest start first.
	oldest bool
}

// orderBy is the query's ORDER BY, newest start first (oldest first with
// q.oldest).
func (q *runQuery) orderBy() string {
	dir := direction(q.oldest)
	if q.sorted {
		return ` ORDER BY (` + q.key + `.start_time + 0)` + dir + `, ` + q.key + `.run_id` + dir
	}
	return ` ORDER BY ` + q.key + `.start_time` + dir + `, ` + q.key + `.run_id` + dir
}

// direction is the SQL of a listing's order.
func direction(oldest bool) string {
	if oldest {
		return " ASC"
	}
	return " DESC"
}

// prefixFilter is a filter's prefix of one column.
type prefixFilter struct {
	column, index, prefix string
}

// prefixes returns the prefix filters of f, workflow id first.
func prefixes(f store.RunFilter) []prefixFilter {
	var out []prefixFilter
	if f.WorkflowIDPrefix != "" {
		out = append(out, prefixFilter{"workflow_id", "visibility_workflow", f.WorkflowIDPrefix})
	}
	if f.BusinessKeyPrefix != "" {
		out = append(out, prefixFilter{"business_key", "visibility_business_key", f.BusinessKeyPrefix})
	}
	return out
}

// inRange adds to q the range of a prefix on a column expression.
func (q *runQuery) inRange(col string, p prefixFilter) {
	q.and(col+" >= ?", p.prefix)
	if end := store.PrefixEnd(p.prefix); end != "" {
		q.and(col+" < ?", end)
	}
}

func (q *runQuery) and(cond string, args ...any) {
	q.where, q.args = append(q.where, cond), append(q.args, args...)
}

func (q *runQuery) sql() string {
	return ` FROM ` + q.from + ` WHERE ` + strings.Join(q.where, " AND ")
}

// buildQuery returns the query of the runs that match f within tr (f's own
// time range is ignored) and, with c set, list after c. It picks the index
// the query reads, as the Cassandra backend picks its partitions: the
// workflow id's, else the business key's, else the first attribute's (the
// query then reads the attribute rows in start order and joins each run),
// else the one of type and status, type, status or start time alone. Every
// one of them ends with (start_time, run_id), the list order, so a page is
// a range read of the index backwards from the cursor.
//
// With indexedBy (SQLite, whose planner has no statistics) the query names
// its index; without it, SQLite read the start-time index for a status and
// a time range. With opaque (PostgreSQL) the times of the range and the
// cursor are sub-selects, whose values the planner does not see: its
// statistics are older than the newest runs, so for a recent range (the
// last day) it counted on a few runs and read the start-time index,
// scanning the range for a status, a type or a business key; not knowing
// the times, it takes the index of the filter's equality terms. Equality
// terms that another index would serve are also written so that no
// planner uses their index (text with the empty string appended, numbers
// plus 0).
//
// A prefix of the workflow id or business key is a range of its index in
// byte order (Dialect.Bytewise); with byPrefix set to its column (and no
// exact workflow id or business key), the query reads that range and
// sorts it (ListRuns says when).
func buildQuery(f store.RunFilter, tr timeRange, c *runCursor, d *Dialect, byPrefix string, oldest bool) runQuery {
	indexedBy, opaque := d.IndexedBy, d.OpaqueBounds
	q := runQuery{key: "v", oldest: oldest}
	names := make([]string, 0, len(f.Attributes))
	for k := range f.Attributes {
		names = append(names, k)
	}
	sort.Strings(names)
	hint := func(index string) string {
		if indexedBy {
			return " INDEXED BY " + index
		}
		return ""
	}
	drive := ""
	switch {
	case f.WorkflowID != "":
		drive, q.from = "workflow", "visibility v"+hint("visibility_workflow")
	case f.BusinessKey != "":
		drive, q.from = "business key", "visibility v"+hint("visibility_business_key")
	case byPrefix != "":
		for _, p := range prefixes(f) {
			if p.column == byPrefix {
				drive, q.from, q.sorted = "prefix", "visibility v"+hint(p.index), true
			}
		}
	case len(names) > 0:
		drive = "attribute"
		q.from, q.key = "visibility_attributes a"+hint("visibility_attributes_value")+" CROSS JOIN visibility v", "a"
		q.and("a.namespace = ?", f.Namespace)
		q.and("a.name = ?", names[0])
		q.and("a.value = ?", f.Attributes[names[0]])
		q.and("v.namespace = a.namespace")
		q.and("v.run_id = a.run_id")
		names = names[1:]
	case f.Type != "" && len(f.Statuses) > 0:
		q.from = "visibility v" + hint("visibility_type_status")
	case f.Type != "":
		q.from = "visibility v" + hint("visibility_type")
	case len(f.Statuses) > 0:
		q.from = "visibility v" + hint("visibility_status")
	default:
		q.from = "visibility v" + hint("visibility_start")
	}
	if drive != "attribute" {
		q.and("v.namespace = ?", f.Namespace)
	}
	off := func(col string, text bool) string {
		if drive == "" || drive == "attribute" {
			return col
		}
		if text {
			return "(" + col + " || '')"
		}
		return "(" + col + " + 0)"
	}
	if f.WorkflowID != "" {
		q.and("v.workflow_id"+d.Bytewise+" = ?", f.WorkflowID)
	}
	if f.BusinessKey != "" {
		if drive == "business key" {
			q.and("v.business_key"+d.Bytewise+" = ?", f.BusinessKey)
		} else {
			q.and(off("v.business_key", true)+" = ?", f.BusinessKey)
		}
	}
	for _, p := range prefixes(f) {
		// A prefix not driving the query is checked on the rows read, in
		// a form no index serves.
		col := "(v." + p.column + " || '')"
		if drive == "prefix" && p.column == byPrefix {
			col = "v." + p.column
		}
		q.inRange(col+d.Bytewise, p)
	}
	if f.Type != "" {
		q.and(off("v.type", true)+" = ?", f.Type)
	}
	switch statuses := distinct(f.Statuses); len(statuses) {
	case 0:
	case 1:
		q.and(off("v.status", false)+" = ?", statuses[0])
	default:
		args := make([]any, len(statuses))
		for i, st := range statuses {
			args[i] = st
		}
		q.and(off("v.status", false)+" IN ("+marks(len(statuses))+")", args...)
	}
	// Close times and excluded types no index serves: they are checked
	// on the rows the rest of the filter reads.
	if !f.ClosedAfter.IsZero() || !f.ClosedBefore.IsZero() {
		q.and("(v.close_time + 0) <> 0")
	}
	if !f.ClosedAfter.IsZero() {
		q.and("(v.close_time + 0) >= ?", store.UnixMilli(f.ClosedAfter))
	}
	if !f.ClosedBefore.IsZero() {
		q.and("(v.close_time + 0) < ?", store.UnixMilli(f.ClosedBefore))
	}
	if len(f.ExcludeTypes) > 0 {
		args := make([]any, len(f.ExcludeTypes))
		for i, t := range f.ExcludeTypes {
			args[i] = t
		}
		q.and("(v.type || '') NOT IN ("+marks(len(args))+")", args...)
	}
	k := q.key + "."
	// bound is how a time or a cursor's run id is passed: as it is, or as
	// a sub-select whose value the planner does not see (opaque).
	bound := func(cast string) string {
		if opaque {
			return "(SELECT CAST(? AS " + cast + "))"
		}
		return "?"
	}
	// A cursor inside the range implies the bound it moves from (the
	// upper one newest first, the lower one oldest first); with both, a
	// planner may take the bound and read every page before the cursor.
	if tr.hasLo && (c == nil || !oldest || c.Start < tr.lo) {
		q.and(k+"start_time >= "+bound("BIGINT"), tr.lo)
	}
	if tr.hasHi && (c == nil || oldest || c.Start >= tr.hi) {
		q.and(k+"start_time < "+bound("BIGINT"), tr.hi)
	}
	if c != nil {
		cmp := " < "
		if oldest {
			cmp = " > "
		}
		q.and("("+k+"start_time, "+k+"run_id)"+cmp+"("+bound("BIGINT")+", "+bound("TEXT")+")", c.Start, c.RunID)
	}
	for _, name := range names {
		q.and(`EXISTS (SELECT 1 FROM visibility_attributes x WHERE x.namespace = v.namespace AND x.run_id = v.run_id
			AND x.name = ? AND x.value = ?)`, name, f.Attributes[name])
	}
	return q
}

// distinct returns the statuses once each, in order.
func distinct(statuses []store.RunStatus) []store.RunStatus {
	var out []store.RunStatus
	for _, st := range statuses {
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}

type runCursor struct {
	Start int64  `json:"start"`
	RunID string `json:"run"`
}

// ListRuns implements store.VisibilityStore. A filter of several statuses
// (and no workflow id, business key or attribute) is one query per status
// merged: each is a range of the status's index (with the type's, if
// set), where one query would scan the start-time index for them.
//
// A prefix's runs are a range of its index, in the order of their values,
// not of start times: a page sorts the whole range. ListRuns first counts
// the range up to the prefix scan limit (an index-only read); a prefix
// that matches at most that many runs is listed so, in time proportional
// to its matches. One that matches more is checked on the runs the rest of
// the filter lists in start order, which in a store of N runs reads about
// page size × N / limit runs a page where its matches are spread evenly
// (a page of 100 in 10 million runs: 50,000 rows), more where the newest
// runs do not match.
func (s *Store) ListRuns(ctx context.Context, req store.ListRunsRequest) (store.RunPage, error) {
	if err := req.Validate(); err != nil {
		return store.RunPage{}, err
	}
	if _, err := s.GetNamespace(ctx, req.Namespace); err != nil {
		return store.RunPage{}, err
	}
	return s.vis.listRuns(ctx, req)
}

// prefixDrive returns the column of the prefix whose index a listing of f
// reads (see ListRuns), or "" if none: f has no prefix, an exact workflow
// id or business key, or its prefixes match more runs than the limit.
func (s *Store) prefixDrive(ctx context.Context, f store.RunFilter) (string, error) {
	if f.WorkflowID != "" || f.BusinessKey != "" {
		return "", nil
	}
	for _, p := range prefixes(f) {
		n, err := s.prefixRuns(ctx, f.Namespace, p, s.prefixScanLimit+1)
		if err != nil {
			return "", err
		}
		if n <= int64(s.prefixScanLimit) {
			return p.column, nil
		}
	}
	return "", nil
}

// listRuns is ListRuns in s's database, of a request checked already.
func (s *Store) listRuns(ctx context.Context, req store.ListRunsRequest) (store.RunPage, error) {
	var page store.RunPage
	var c *runCursor
	if len(req.PageToken) > 0 {
		c = new(runCursor)
		if err := codec.DecodeToken(req.PageToken, "runs", c); err != nil {
			return page, err
		}
	}
	size := store.PageSize(req.PageSize, 100)
	tr := rangeOf(req.RunFilter)
	var query string
	var args []any
	byPrefix, err := s.prefixDrive(ctx, req.RunFilter)
	if err != nil {
		return page, err
	}
	statuses := distinct(req.Statuses)
	if len(statuses) > 1 && req.WorkflowID == "" && req.BusinessKey == "" && len(req.Attributes) == 0 && byPrefix == "" {
		var parts []string
		for i, st := range statuses {
			f := req.RunFilter
			f.Statuses = []store.RunStatus{st}
			q := buildQuery(f, tr, c, &s.d, "", req.Oldest)
			parts = append(parts, fmt.Sprintf(`SELECT * FROM (SELECT %s%s%s LIMIT ?) s%d`,
				prefixed("v.", visibilityColumns), q.sql(), q.orderBy(), i))
			args = append(append(args, q.args...), size+1)
		}
		dir := direction(req.Oldest)
		query = strings.Join(parts, " UNION ALL ") + ` ORDER BY start_time` + dir + `, run_id` + dir + ` LIMIT ?`
	} else {
		q := buildQuery(req.RunFilter, tr, c, &s.d, byPrefix, req.Oldest)
		query = `SELECT ` + prefixed("v.", visibilityColumns) + q.sql() + q.orderBy() + ` LIMIT ?`
		args = q.args
	}
	rows, err := s.read.QueryContext(ctx, s.q(query), append(args, size+1)...)
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
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("%s: list runs: %w", s.d.Name, err)
	}
	return page, nil
}

// CountRuns implements store.VisibilityStore. Counts are exact, and read
// in one statement, so they are those of one snapshot of the store:
//
//   - a filter of namespace, type and statuses only adds the counters of
//     (namespace, type, status);
//   - with a time range too, it adds the hour counters of the hours the
//     range covers whole, and counts the runs of its partial first and
//     last hours through the index;
//   - a filter of one attribute only adds that value's counter;
//   - a filter with a prefix (and no exact workflow id or business key)
//     counts the runs of the prefix's index range, or, if the filter's
//     type and statuses have fewer runs (their counters say), those runs
//     with the prefix (countPrefixBy);
//   - a filter that excludes types (and no close times) is the count
//     without them less the counts of those types (store.CountExcluding);
//   - a filter of close times, and any other filter,
//     counts the runs through the index buildQuery picks,
//     in time proportional to the rows that index holds for the filter.
//
// On PostgreSQL each counter read adds the deltas not yet folded in.
func (s *Store) CountRuns(ctx context.Context, f store.RunFilter) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	if _, err := s.GetNamespace(ctx, f.Namespace); err != nil {
		return 0, err
	}
	return s.vis.countRuns(ctx, f)
}

// countRuns is CountRuns in s's database, of a filter checked already.
func (s *Store) countRuns(ctx context.Context, f store.RunFilter) (int64, error) {
	if n, ok, err := store.CountExcluding(ctx, f, s.countRuns); ok {
		return n, err
	}
	byPrefix, err := s.countPrefixBy(ctx, f)
	if err != nil {
		return 0, err
	}
	query, args := s.countQuery(f, byPrefix)
	var n int64
	if err := s.read.QueryRowContext(ctx, s.q(query), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: count runs: %w", s.d.Name, err)
	}
	return n, nil
}

// countPrefixBy returns the column of the prefix whose index counts f's
// runs, or "" if f is counted through another index. A prefix (the
// workflow id's, if both are set) is counted through its range, unless
// the filter's type and statuses (counted by their counters) have fewer
// runs than the prefix: those are then read and the prefix checked on
// each. Finding out reads at most that many entries of the prefix's range.
func (s *Store) countPrefixBy(ctx context.Context, f store.RunFilter) (string, error) {
	ps := prefixes(f)
	if len(ps) == 0 || f.WorkflowID != "" || f.BusinessKey != "" {
		return "", nil
	}
	if len(f.Attributes) > 0 || f.Type == "" && len(f.Statuses) == 0 {
		return ps[0].column, nil
	}
	rest := f
	rest.WorkflowIDPrefix, rest.BusinessKeyPrefix = "", ""
	n, err := s.countRuns(ctx, rest)
	if err != nil {
		return "", err
	}
	m, err := s.prefixRuns(ctx, f.Namespace, ps[0], int(min(n, math.MaxInt32))+1)
	if err != nil || m > n {
		return "", err
	}
	return ps[0].column, nil
}

// prefixRuns counts the runs of a prefix's index range, up to limit.
func (s *Store) prefixRuns(ctx context.Context, namespace string, p prefixFilter, limit int) (int64, error) {
	q := runQuery{from: "visibility v"}
	if s.d.IndexedBy {
		q.from += " INDEXED BY " + p.index
	}
	q.and("v.namespace = ?", namespace)
	q.inRange("v."+p.column+s.d.Bytewise, p)
	var n int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM (SELECT 1`+q.sql()+` LIMIT ?) c`), append(q.args, limit)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("%s: count runs of prefix %q: %w", s.d.Name, p.prefix, err)
	}
	return n, nil
}

// countQuery returns the statement that counts f's runs (see CountRuns),
// through the index of the prefix byPrefix if set (countPrefixBy).
func (s *Store) countQuery(f store.RunFilter, byPrefix string) (string, []any) {
	tr := rangeOf(f)
	index := func(tr timeRange) (string, []any) {
		q := buildQuery(f, tr, nil, &s.d, byPrefix, false)
		return `SELECT COUNT(*)` + q.sql(), q.args
	}
	// sum adds column n of table and, where the dialect has them, of its
	// deltas, over the rows that match cond.
	sum := func(table, deltas, cond string, args []any) (string, []any) {
		query := `SELECT n FROM ` + table + ` WHERE ` + cond
		if s.d.CompactCounts != nil {
			query += ` UNION ALL SELECT n FROM ` + deltas + ` WHERE ` + cond
			args = append(args, args...)
		}
		return `SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM (` + query + `) c`, args
	}
	if f.WorkflowID != "" || f.BusinessKey != "" || len(prefixes(f)) > 0 || f.Residual() {
		return index(tr)
	}
	if len(f.Attributes) > 0 {
		if len(f.Attributes) > 1 || f.Type != "" || len(f.Statuses) > 0 || tr.hasLo || tr.hasHi {
			return index(tr)
		}
		for name, value := range f.Attributes {
			return sum("visibility_attribute_counts", "visibility_attribute_count_deltas", "namespace = ? AND name = ? AND value = ?",
				[]any{f.Namespace, name, value})
		}
	}
	cond, args := "namespace = ?", []any{f.Namespace}
	if f.Type != "" {
		cond, args = cond+" AND type = ?", append(args, f.Type)
	}
	if statuses := distinct(f.Statuses); len(statuses) > 0 {
		cond += " AND status IN (" + marks(len(statuses)) + ")"
		for _, st := range statuses {
			args = append(args, st)
		}
	}
	if !tr.hasLo && !tr.hasHi {
		return sum("visibility_counts", "visibility_count_deltas", cond, args)
	}
	// The whole hours [first, last) in the range are counted by their
	// counters, the partial hours at its ends through the index.
	var first, last int64
	if tr.hasLo {
		first = floorDiv(tr.lo+hourMillis-1, hourMillis)
	}
	if tr.hasHi {
		last = floorDiv(tr.hi, hourMillis)
	}
	if tr.hasLo && tr.hasHi && first >= last {
		return index(tr)
	}
	if tr.hasLo {
		cond, args = cond+" AND start_hour >= ?", append(args, first)
	}
	if tr.hasHi {
		cond, args = cond+" AND start_hour < ?", append(args, last)
	}
	query, args := sum("visibility_hour_counts", "visibility_count_deltas", cond, args)
	query = "(" + query + ")"
	if tr.hasLo && tr.lo < first*hourMillis {
		q, a := index(timeRange{hasLo: true, lo: tr.lo, hasHi: true, hi: first * hourMillis})
		query, args = query+" + ("+q+")", append(args, a...)
	}
	if tr.hasHi && last*hourMillis < tr.hi {
		q, a := index(timeRange{hasLo: true, lo: last * hourMillis, hasHi: true, hi: tr.hi})
		query, args = query+" + ("+q+")", append(args, a...)
	}
	return "SELECT " + query, args
}

func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ", ")
	for i, p := range parts {
		parts[i] = prefix + p
	}
	return strings.Join(parts, ", ")
}

// moveBatch is how many records moveVisibility moves per transaction.
const moveBatch = 500

// moveVisibility moves the visibility records kept in s's own database
// into s.vis's, for a database written before its records had a database
// of their own (WithVisibility). Each batch is written there, then deleted
// here, so a move cut short is taken up by the next Migrate, and writing a
// record twice leaves it as it was.
func (s *Store) moveVisibility(ctx context.Context) error {
	for {
		rows, err := s.write.QueryContext(ctx, s.q(`SELECT `+visibilityColumns+` FROM visibility LIMIT ?`), moveBatch)
		if err != nil {
			return fmt.Errorf("%s: read visibility to move: %w", s.d.Name, err)
		}
		var recs []store.VisibilityRecord
		for rows.Next() {
			r, err := scanVisibility(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("%s: read visibility to move: %w", s.d.Name, err)
			}
			recs = append(recs, r)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("%s: read visibility to move: %w", s.d.Name, err)
		}
		if len(recs) == 0 {
			return nil
		}
		if err := s.vis.upsertVisibility(ctx, recs...); err != nil {
			return err
		}
		byNamespace := map[string][]string{}
		for _, r := range recs {
			byNamespace[r.Namespace] = append(byNamespace[r.Namespace], r.RunID)
		}
		for ns, ids := range byNamespace {
			if err := s.deleteVisibility(ctx, ns, ids...); err != nil {
				return err
			}
		}
	}
}
