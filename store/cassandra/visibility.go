package cassandra

// Visibility on Cassandra, without secondary indexes or ALLOW FILTERING.
//
// The record of a run is one row of visibility, partitioned by (namespace,
// run_id), for point reads and for ordering updates. Listing reads
// visibility_index, which holds a copy of every record once per term it can
// be found by (all runs, its status, its type, each attribute, its workflow
// id, its business key), partitioned by (namespace, kind, term, day) and
// clustered newest start first, so a filter reads the partitions of one
// term: of each day that has runs (visibility_days) in the time range for
// the terms many runs share, or a single partition for workflow ids and
// business keys. Whatever the chosen term does not decide (the other
// fields of the filter) is checked here on the copies, so results, order
// and counts are those of the SQL backends for any filter.
//
// Versions. Upserts of one run are serialized by lightweight transactions
// on its record row, conditioned on the write_id of the record they read:
// that way an update older than the stored one is dropped exactly as the
// SQL upsert's WHERE does, and each update knows which index rows the
// record it replaced had, so it can remove the ones that changed. Writing
// the record with USING TIMESTAMP = Version would have been cheaper but
// wrong: a write with an equal version would not replace the stored one
// (SQL's does), a deleted record could not be written again, and stale
// index rows could not be found without reading anyway.
//
// Buckets. A bucketed kind's partitions are per bucket of start times: a
// day, until the day's bucket holds about VisibilityBucketBytes; the runs
// that start in a full day go to their start hour's bucket, from a full
// hour to their minute's, and from a full minute to their second's. The
// bytes of each bucket (of its largest partition, the kind "all") are
// estimated by a counter that writers read at most once a second; the
// record row keeps the bucket its index rows are in, so updates find them.
// A day with finer buckets is marked split and lists them
// (visibility_buckets); a listing merges a day's partitions in start order,
// opening each finer one only when its time comes.
//
// The index rows of an update are written after its transaction, all with
// one timestamp, index_ts, which every update of the run raises (the clock,
// or one more than the last). Inserts of the new rows and deletions of the
// stale ones therefore resolve in update order whatever order they reach
// the replicas in. An update whose index writes fail returns the error and
// is retried by its caller; since the retry may find nothing left to
// change, the record lists the rows its last updates removed (stale_keys)
// and the next three updates delete them again.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/codec"
)

// dayMillis is the width of a visibility_index day bucket.
const dayMillis = int64(24 * time.Hour / time.Millisecond)

// levelWidths are the widths of the buckets of each level, in
// milliseconds: a day, an hour, a minute, a second.
var levelWidths = []int64{dayMillis, int64(time.Hour / time.Millisecond), int64(time.Minute / time.Millisecond), 1000}

// levelStride separates the ids of the levels' buckets: a day's bucket id
// is its day number (as before buckets split, so existing rows stay
// where they are), a finer bucket's is level*levelStride plus its number
// (start time / width, rounded down).
const levelStride = int64(1e15)

// bucketID returns the id of the bucket of a level that holds a start time.
func bucketID(level int, ms int64) int64 {
	if level == 0 {
		return dayOf(ms)
	}
	return int64(level)*levelStride + floorDiv(ms, levelWidths[level])
}

// bucketSpan returns the level of a bucket and its start times, from start
// (inclusive) to end (exclusive).
func bucketSpan(id int64) (level int, start, end int64) {
	level = int((id + levelStride/2) / levelStride)
	if id < -levelStride/2 || level >= len(levelWidths) {
		level = 0 // not a finer bucket's id
	}
	n := id - int64(level)*levelStride
	return level, n * levelWidths[level], (n + 1) * levelWidths[level]
}

// floorDiv is a/b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// DefaultVisibilityBucketBytes is the default of
// Options.VisibilityBucketBytes.
const DefaultVisibilityBucketBytes = 32 << 20

// bucketRefresh is how long a writer trusts a bucket's byte count it read
// (its own writes since are added to it).
const bucketRefresh = time.Second

// rowBytes estimates the bytes of one visibility_index row of a record:
// its text columns and attributes, plus what the clustering key, the
// numbers and the cells' headers take (measured: a row of about 110 bytes
// of text takes about 160).
func rowBytes(r store.VisibilityRecord, attrs []byte) int64 {
	return int64(64 + len(r.RunID) + len(r.WorkflowID) + len(r.Type) + len(r.BusinessKey) + len(attrs))
}

// dayOf returns the bucket of a start time in milliseconds.
func dayOf(ms int64) int64 { return floorDiv(ms, dayMillis) }

// Kinds of index terms.
const (
	kindAll         = "all"
	kindStatus      = "status"
	kindType        = "type"
	kindAttr        = "attr"
	kindWorkflow    = "workflow"
	kindBusinessKey = "business_key"
	// The kinds of visibility_values, whose term is the value itself.
	kindWorkflowValue    = "workflow_value"
	kindBusinessKeyValue = "business_key_value"
)

// valueKind reports whether a kind's rows are in visibility_values.
func valueKind(kind string) bool { return kind == kindWorkflowValue || kind == kindBusinessKeyValue }

// bucketed reports whether a kind's partitions are per day. Workflow ids
// and business keys name few runs each, so each is one partition; the
// other terms are shared by many runs.
func bucketed(kind string) bool { return kind != kindWorkflow && kind != kindBusinessKey }

// maxTerm is the longest value used as a term as it is.
const maxTerm = 256

// term returns the partition term of a value and whether it is the value
// itself (rather than its hash, which another value could share).
func term(v string) (string, bool) {
	if len(v) <= maxTerm && utf8.ValidString(v) && !strings.HasPrefix(v, "\x00") {
		return v, true
	}
	sum := sha256.Sum256([]byte(v))
	return "\x00" + hex.EncodeToString(sum[:]), false
}

func attrTerm(name, value string) (string, bool) {
	return term(strconv.Itoa(len(name)) + ":" + name + "=" + value)
}

// indexKey is the key of one visibility_index row of a run, less the
// namespace and run id. Day is the bucket id of a bucketed kind.
type indexKey struct {
	Kind  string `json:"k"`
	Term  string `json:"t"`
	Day   int64  `json:"d"`
	Start int64  `json:"s"`
}

// indexKeys returns the index rows of a record whose bucketed kinds are in
// bucket.
func indexKeys(r store.VisibilityRecord, bucket int64) []indexKey {
	start := store.UnixMilli(r.StartTime)
	key := func(kind, t string) indexKey {
		k := indexKey{Kind: kind, Term: t, Start: start}
		if bucketed(kind) {
			k.Day = bucket
		}
		return k
	}
	keys := []indexKey{key(kindAll, ""), key(kindStatus, r.Status.String())}
	wf, _ := term(r.WorkflowID)
	keys = append(keys, key(kindWorkflow, wf), key(kindWorkflowValue, r.WorkflowID))
	if r.BusinessKey != "" {
		keys = append(keys, key(kindBusinessKeyValue, r.BusinessKey))
	}
	if r.Type != "" {
		t, _ := term(r.Type)
		keys = append(keys, key(kindType, t))
	}
	if r.BusinessKey != "" {
		t, _ := term(r.BusinessKey)
		keys = append(keys, key(kindBusinessKey, t))
	}
	for name, value := range r.Attributes {
		t, _ := attrTerm(name, value)
		keys = append(keys, key(kindAttr, t))
	}
	return keys
}

// minus returns the keys of a that are not in b, once each.
func minus(a, b []indexKey) []indexKey {
	skip := make(map[indexKey]bool, len(a)+len(b))
	for _, k := range b {
		skip[k] = true
	}
	var out []indexKey
	for _, k := range a {
		if !skip[k] {
			skip[k] = true
			out = append(out, k)
		}
	}
	return out
}

// staleRetries is how many later updates of a run delete again the index
// rows an update removed, in case not all of that update's deletions
// landed (it failed after its transaction, and so may its retries).
const staleRetries = 3

// staleKey is an index row an earlier update removed, with the number of
// updates left that delete it again.
type staleKey struct {
	indexKey
	Left int `json:"n"`
}

// staleAfter returns the index rows an update from a record with keys
// oldKeys and stale rows oldStale to one with keys deletes, and the stale
// rows it records.
func staleAfter(oldKeys []indexKey, oldStale []staleKey, keys []indexKey) (del []indexKey, stale []staleKey) {
	del = minus(oldKeys, keys)
	seen := make(map[indexKey]bool, len(keys)+len(del))
	for _, k := range keys {
		seen[k] = true
	}
	for _, k := range del {
		seen[k] = true
		stale = append(stale, staleKey{k, staleRetries})
	}
	for _, k := range oldStale {
		if seen[k.indexKey] {
			continue
		}
		seen[k.indexKey] = true
		del = append(del, k.indexKey)
		if k.Left > 1 {
			stale = append(stale, staleKey{k.indexKey, k.Left - 1})
		}
	}
	return del, stale
}

// visRow is a run's record row.
type visRow struct {
	rec     store.VisibilityRecord
	writeID gocql.UUID
	indexTS int64
	stale   []staleKey
	// bucket holds the run's index rows of bucketed kinds.
	bucket int64
}

const visibilityColumns = `workflow_id, type, status, start_time, close_time, business_key, attributes, version, write_id, index_ts, stale_keys, index_bucket`

// readVisibility reads a run's record row at the session's consistency or
// at cons; found is false if there is none.
func (s *Store) readVisibility(ctx context.Context, namespace, runID string, cons gocql.Consistency) (row visRow, found bool, err error) {
	q := s.query(ctx, `SELECT `+visibilityColumns+` FROM {ks}.visibility WHERE namespace = ? AND run_id = ?`, namespace, runID)
	if cons != 0 {
		q = q.Consistency(cons)
	}
	var d visDest
	err = q.Scan(d.dest()...)
	if errors.Is(err, gocql.ErrNotFound) {
		return row, false, nil
	}
	if err == nil {
		row, err = d.row(namespace, runID)
	}
	if err != nil {
		return row, false, fmt.Errorf("cassandra: read visibility of %s/%s: %w", namespace, runID, err)
	}
	return row, true, nil
}

// visDest receives the visibilityColumns of a record row.
type visDest struct {
	rec           store.VisibilityRecord
	writeID       gocql.UUID
	indexTS       int64
	status        int
	start, closed int64
	attrs, stale  []byte
	bucket        *int64
}

func (d *visDest) dest() []any {
	r := &d.rec
	return []any{&r.WorkflowID, &r.Type, &d.status, &d.start, &d.closed, &r.BusinessKey, &d.attrs, &r.Version,
		&d.writeID, &d.indexTS, &d.stale, &d.bucket}
}

// row returns the row read, of a run.
func (d *visDest) row(namespace, runID string) (visRow, error) {
	row := visRow{rec: d.rec, writeID: d.writeID, indexTS: d.indexTS}
	r := &row.rec
	r.Namespace, r.RunID = namespace, runID
	r.Status, r.StartTime, r.CloseTime = store.RunStatus(d.status), store.FromUnixMilli(d.start), store.FromUnixMilli(d.closed)
	row.bucket = dayOf(d.start) // a record written before buckets split
	if d.bucket != nil {
		row.bucket = *d.bucket
	}
	if err := codec.Unmarshal(d.attrs, &r.Attributes); err != nil {
		return row, fmt.Errorf("attributes: %w", err)
	}
	if err := codec.Unmarshal(d.stale, &row.stale); err != nil {
		return row, fmt.Errorf("stale keys: %w", err)
	}
	return row, nil
}

// indexValues writes the visibility_values rows of every record (schema
// version 3, for the records written before it), each at its record's
// index_ts, so that any later update of the run wins. Writing them again
// changes nothing, so an interrupted migration starts over.
func (s *Store) indexValues(ctx context.Context) error {
	// The first failed write stops the scan (gctx) and is returned.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(indexConcurrency)
	iter := s.query(gctx, `SELECT namespace, run_id, `+visibilityColumns+` FROM {ks}.visibility`).PageSize(1000).Iter()
	var namespace, runID string
	var d visDest
	for iter.Scan(append([]any{&namespace, &runID}, d.dest()...)...) {
		row, err := d.row(namespace, runID)
		if err != nil {
			iter.Close()
			return fmt.Errorf("cassandra: read visibility of %s/%s: %w", namespace, runID, err)
		}
		var keys []indexKey
		for _, k := range indexKeys(row.rec, row.bucket) {
			if valueKind(k.Kind) {
				keys = append(keys, k)
			}
		}
		g.Go(func() error {
			return s.writeIndex(ctx, &row.rec, row.rec.Namespace, row.rec.RunID, row.indexTS, keys, nil)
		})
		d = visDest{}
	}
	return errors.Join(g.Wait(), iter.Close())
}

// maxVisibilityAttempts bounds the transactions one upsert or delete tries
// while other writers of the same run keep winning.
const maxVisibilityAttempts = 10

// UpsertVisibility implements store.VisibilityStore. It replaces the record
// with a lightweight transaction conditioned on the record it read, unless
// that has a higher Version, then writes the new index rows and deletes the
// stale ones.
func (s *Store) UpsertVisibility(ctx context.Context, records ...store.VisibilityRecord) error {
	for _, r := range records {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	for _, r := range records {
		if err := s.upsertVisibility(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) upsertVisibility(ctx context.Context, r store.VisibilityRecord) error {
	r.StartTime, r.CloseTime = store.Time(r.StartTime), store.Time(r.CloseTime)
	start := store.UnixMilli(r.StartTime)
	attrs := codec.Marshal(r.Attributes)
	cons := gocql.Consistency(0)
	for range maxVisibilityAttempts {
		old, found, err := s.readVisibility(ctx, r.Namespace, r.RunID, cons)
		if err != nil {
			return err
		}
		// After a lost race, read what won: a serial read sees it.
		cons = s.serial
		if found && old.rec.Version > r.Version {
			return nil // a newer record is stored
		}
		// A run stays in its bucket while its start time does; the
		// bucket's bytes grow by what its rows grow.
		var bucket, grow int64
		if found && old.rec.StartTime.Equal(r.StartTime) {
			bucket = old.bucket
			grow = max(0, rowBytes(r, attrs)-rowBytes(old.rec, codec.Marshal(old.rec.Attributes)))
		} else {
			if bucket, err = s.bucketFor(ctx, r.Namespace, start); err != nil {
				return err
			}
			grow = rowBytes(r, attrs)
		}
		keys := indexKeys(r, bucket)
		ts := time.Now().UnixMicro()
		var del []indexKey
		var stale []staleKey
		if found {
			ts = max(ts, old.indexTS+1)
			del, stale = staleAfter(indexKeys(old.rec, old.bucket), old.stale, keys)
		}
		writeID := gocql.TimeUUID()
		args := []any{r.WorkflowID, r.Type, int(r.Status), start, store.UnixMilli(r.CloseTime), r.BusinessKey,
			attrs, r.Version, writeID, ts, codec.Marshal(stale), bucket}
		var q *gocql.Query
		if found {
			q = s.query(ctx, `UPDATE {ks}.visibility SET workflow_id = ?, type = ?, status = ?, start_time = ?, close_time = ?,
				business_key = ?, attributes = ?, version = ?, write_id = ?, index_ts = ?, stale_keys = ?, index_bucket = ?
				WHERE namespace = ? AND run_id = ? IF write_id = ?`, append(args, r.Namespace, r.RunID, old.writeID)...)
		} else {
			q = s.query(ctx, `INSERT INTO {ks}.visibility (`+visibilityColumns+`, namespace, run_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`, append(args, r.Namespace, r.RunID)...)
		}
		applied, err := q.MapScanCAS(map[string]any{})
		if err != nil {
			if !outcomeUnknown(err) {
				return fmt.Errorf("cassandra: upsert visibility of %s/%s: %w", r.Namespace, r.RunID, err)
			}
			if applied, err = s.resolveVisibility(ctx, r.Namespace, r.RunID, writeID, err); err != nil {
				return fmt.Errorf("cassandra: upsert visibility of %s/%s: %w", r.Namespace, r.RunID, err)
			}
		}
		if !applied {
			continue
		}
		if err := s.markBucket(ctx, r.Namespace, bucket, ts); err != nil {
			return err
		}
		if err := s.writeIndex(ctx, &r, r.Namespace, r.RunID, ts, keys, del); err != nil {
			return err
		}
		return s.addBucketBytes(ctx, r.Namespace, bucket, grow)
	}
	return fmt.Errorf("cassandra: upsert visibility of %s/%s: lost %d transactions to other writers", r.Namespace, r.RunID, maxVisibilityAttempts)
}

// bucketKey names a namespace's bucket.
type bucketKey struct {
	namespace string
	id        int64
}

// bucketSize is what a writer knows of a bucket's bytes: the count it read
// at read, and what it added since.
type bucketSize struct {
	bytes, added int64
	read         time.Time
}

// bucketSizes caches the bucket byte counts a writer read, and the finer
// buckets it marked (until when it trusts the marks).
type bucketSizes struct {
	mu     sync.Mutex
	sizes  map[bucketKey]*bucketSize
	marked map[bucketKey]time.Time
}

// maxCachedBuckets bounds the bucket counts and marks a store keeps.
const maxCachedBuckets = 4096

// markTrust is how long a writer takes a finer bucket's marks as written:
// far less than the hour after which a listing may drop a day's marker
// (pruneAfter), so a day dropped and written again is marked again.
const markTrust = 10 * time.Minute

// bucketFor returns the bucket a run that starts at start goes to: its
// start day's, unless that is full, then its hour's, its minute's, its
// second's (the last level takes what comes).
func (s *Store) bucketFor(ctx context.Context, namespace string, start int64) (int64, error) {
	last := len(levelWidths) - 1
	for level := range last {
		id := bucketID(level, start)
		n, err := s.bucketBytes(ctx, bucketKey{namespace, id})
		if err != nil {
			return 0, err
		}
		if n < s.maxBucketBytes {
			return id, nil
		}
	}
	return bucketID(last, start), nil
}

// bucketBytes returns the estimated bytes of a bucket: the count read at
// most bucketRefresh ago plus this writer's additions since.
func (s *Store) bucketBytes(ctx context.Context, k bucketKey) (int64, error) {
	c := &s.buckets
	c.mu.Lock()
	e := c.sizes[k]
	if e != nil && time.Since(e.read) < bucketRefresh {
		n := e.bytes + e.added
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	var n int64
	err := s.query(ctx, `SELECT bytes FROM {ks}.visibility_bucket_bytes WHERE namespace = ? AND bucket = ?`, k.namespace, k.id).Scan(&n)
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return 0, fmt.Errorf("cassandra: read size of visibility bucket %d of %q: %w", k.id, k.namespace, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sizes == nil {
		c.sizes = map[bucketKey]*bucketSize{}
	}
	if len(c.sizes) >= maxCachedBuckets {
		for key, e := range c.sizes {
			if time.Since(e.read) >= bucketRefresh {
				delete(c.sizes, key)
			}
		}
	}
	c.sizes[k] = &bucketSize{bytes: n, read: time.Now()}
	return n, nil
}

// addBucketBytes adds a run's growth to its bucket's count.
func (s *Store) addBucketBytes(ctx context.Context, namespace string, bucket, n int64) error {
	if n <= 0 {
		return nil
	}
	k := bucketKey{namespace, bucket}
	s.buckets.mu.Lock()
	if e := s.buckets.sizes[k]; e != nil {
		e.added += n
	}
	s.buckets.mu.Unlock()
	// Counters take no write timestamp; this is not an index row.
	err := s.query(ctx, `UPDATE {ks}.visibility_bucket_bytes SET bytes = bytes + ? WHERE namespace = ? AND bucket = ?`, n, namespace, bucket).Exec()
	if err != nil {
		return fmt.Errorf("cassandra: count visibility bucket %d of %q: %w", bucket, namespace, err)
	}
	return nil
}

// markBucket records a finer bucket in its day before any index row is
// written to it, so a listing that finds the row finds the bucket.
func (s *Store) markBucket(ctx context.Context, namespace string, bucket, ts int64) error {
	level, start, _ := bucketSpan(bucket)
	if level == 0 {
		return nil
	}
	k := bucketKey{namespace, bucket}
	c := &s.buckets
	c.mu.Lock()
	at, ok := c.marked[k]
	c.mu.Unlock()
	if ok && time.Since(at) < markTrust {
		return nil
	}
	day := dayOf(start)
	for _, st := range []struct {
		cql  string
		args []any
	}{
		{`INSERT INTO {ks}.visibility_buckets (namespace, day, bucket) VALUES (?, ?, ?)`, []any{namespace, day, bucket}},
		{`UPDATE {ks}.visibility_days SET split = true WHERE namespace = ? AND day = ?`, []any{namespace, day}},
	} {
		if err := s.query(ctx, st.cql, st.args...).WithTimestamp(ts).Exec(); err != nil {
			return fmt.Errorf("cassandra: mark visibility bucket %d of %q: %w", bucket, namespace, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marked == nil || len(c.marked) >= maxCachedBuckets {
		c.marked = map[bucketKey]time.Time{}
	}
	c.marked[k] = time.Now()
	return nil
}

// resolveVisibility decides whether a record transaction whose outcome is
// unknown was applied: a serial read completes or forecloses the
// transaction in flight; it was applied if the row carries its write_id.
// A deletion (writeID nil) was applied if the row is gone.
func (s *Store) resolveVisibility(ctx context.Context, namespace, runID string, writeID gocql.UUID, cause error) (bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	row, found, err := s.readVisibility(rctx, namespace, runID, s.serial)
	if err != nil {
		return false, fmt.Errorf("%w: %v; resolving it: %v", store.ErrOutcomeUnknown, cause, err)
	}
	if writeID == (gocql.UUID{}) {
		return !found, nil
	}
	return found && row.writeID == writeID, nil
}

// indexConcurrency bounds the index writes of one update in flight.
const indexConcurrency = 16

// writeIndex writes the index rows keys of r and deletes the rows del of
// the run, all at timestamp ts, and marks r's start day (r may be nil when
// only deleting).
func (s *Store) writeIndex(ctx context.Context, r *store.VisibilityRecord, namespace, runID string, ts int64, keys, del []indexKey) error {
	type stmt struct {
		cql  string
		args []any
	}
	var stmts []stmt
	if r != nil {
		attrs := codec.Marshal(r.Attributes)
		for _, k := range keys {
			table, cols := "visibility_index", "namespace, kind, term, day"
			if valueKind(k.Kind) {
				table, cols = "visibility_values", "namespace, kind, value, bucket"
			}
			stmts = append(stmts, stmt{`INSERT INTO {ks}.` + table + ` (` + cols + `, start_time, run_id,
				workflow_id, type, status, close_time, business_key, attributes, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				[]any{namespace, k.Kind, k.Term, k.Day, k.Start, runID,
					r.WorkflowID, r.Type, int(r.Status), store.UnixMilli(r.CloseTime), r.BusinessKey, attrs, r.Version}})
		}
		stmts = append(stmts, stmt{`INSERT INTO {ks}.visibility_days (namespace, day, seen) VALUES (?, ?, true)`,
			[]any{namespace, dayOf(store.UnixMilli(r.StartTime))}})
	}
	for _, k := range del {
		table, cols := "visibility_index", "term = ? AND day = ?"
		if valueKind(k.Kind) {
			table, cols = "visibility_values", "value = ? AND bucket = ?"
		}
		stmts = append(stmts, stmt{`DELETE FROM {ks}.` + table + `
			WHERE namespace = ? AND kind = ? AND ` + cols + ` AND start_time = ? AND run_id = ?`,
			[]any{namespace, k.Kind, k.Term, k.Day, k.Start, runID}})
	}
	errs := make([]error, len(stmts))
	sem := make(chan struct{}, indexConcurrency)
	var wg sync.WaitGroup
	for i, st := range stmts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = s.query(ctx, st.cql, st.args...).WithTimestamp(ts).Exec()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cassandra: index visibility of %s/%s: %w", namespace, runID, err)
	}
	return nil
}

// DeleteVisibility implements store.VisibilityStore: the runs' records are
// deleted deleteConcurrency at a time, each as deleteVisibility says.
func (s *Store) DeleteVisibility(ctx context.Context, namespace string, runIDs ...string) error {
	if namespace == "" {
		return store.InvalidArgument("run", "namespace and run id must be set")
	}
	for _, id := range runIDs {
		if id == "" {
			return store.InvalidArgument("run", "namespace and run id must be set")
		}
	}
	errs := make([]error, len(runIDs))
	sem := make(chan struct{}, deleteConcurrency)
	var wg sync.WaitGroup
	for i, id := range runIDs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return fmt.Errorf("cassandra: delete visibility: %w", ctx.Err())
		}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = s.deleteVisibility(ctx, namespace, id)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deleteConcurrency bounds the runs whose records one DeleteVisibility
// deletes at once (and the deleted runs' partitions Commit drops at once).
const deleteConcurrency = 32

// deleteVisibility deletes a run's index rows first and then its record,
// conditioned on the record it read, so that a failure leaves a record
// whose deletion can be retried.
func (s *Store) deleteVisibility(ctx context.Context, namespace, runID string) error {
	cons := gocql.Consistency(0)
	for range maxVisibilityAttempts {
		old, found, err := s.readVisibility(ctx, namespace, runID, cons)
		if err != nil || !found {
			return err
		}
		cons = s.serial
		ts := max(time.Now().UnixMicro(), old.indexTS+1)
		del, _ := staleAfter(indexKeys(old.rec, old.bucket), old.stale, nil)
		if err := s.writeIndex(ctx, nil, namespace, runID, ts, nil, del); err != nil {
			return err
		}
		applied, err := s.query(ctx, `DELETE FROM {ks}.visibility WHERE namespace = ? AND run_id = ? IF write_id = ?`,
			namespace, runID, old.writeID).MapScanCAS(map[string]any{})
		if err != nil {
			if !outcomeUnknown(err) {
				return fmt.Errorf("cassandra: delete visibility of %s/%s: %w", namespace, runID, err)
			}
			if applied, err = s.resolveVisibility(ctx, namespace, runID, gocql.UUID{}, err); err != nil {
				return fmt.Errorf("cassandra: delete visibility of %s/%s: %w", namespace, runID, err)
			}
		}
		if applied {
			return nil
		}
		// Updated in between: delete what the update indexed.
	}
	return fmt.Errorf("cassandra: delete visibility of %s/%s: lost %d transactions to other writers", namespace, runID, maxVisibilityAttempts)
}

// GetVisibility implements store.VisibilityStore.
func (s *Store) GetVisibility(ctx context.Context, namespace, runID string) (store.VisibilityRecord, error) {
	if namespace == "" || runID == "" {
		return store.VisibilityRecord{}, store.InvalidArgument("run", "namespace and run id must be set")
	}
	row, found, err := s.readVisibility(ctx, namespace, runID, 0)
	if err != nil {
		return store.VisibilityRecord{}, err
	}
	if !found {
		return store.VisibilityRecord{}, fmt.Errorf("%w: visibility of %s/%s", store.ErrNotFound, namespace, runID)
	}
	return row.rec, nil
}

// plan is how a filter is served: the index kind and terms whose
// partitions are read (several terms are merged), and whether those alone
// decide a match, so counting needs no rows.
type plan struct {
	kind  string
	terms []string
	exact bool
	// prefix, for a kind of visibility_values, is the start of the values
	// read; rest is the plan of the filter without its prefixes, which
	// reads a bucket where the prefix matches more than the prefix scan
	// limit.
	prefix string
	rest   *plan
}

// planFor picks the index a filter reads: the most selective of its
// fields, in the order workflow id, business key, a workflow id prefix, a
// business key prefix, an attribute, type, statuses; all runs without any
// of them.
func planFor(f store.RunFilter) plan {
	p := planOf(f)
	if f.Residual() {
		// Close times and excluded types are checked on the rows read.
		p.exact = false
	}
	return p
}

// planOf is planFor of the fields an index term can decide.
func planOf(f store.RunFilter) plan {
	fields := 0
	for _, set := range []bool{f.WorkflowID != "", f.BusinessKey != "", f.Type != "", len(f.Statuses) > 0,
		f.WorkflowIDPrefix != "", f.BusinessKeyPrefix != ""} {
		if set {
			fields++
		}
	}
	fields += len(f.Attributes)
	one := func(kind, t string, raw bool) plan {
		return plan{kind: kind, terms: []string{t}, exact: raw && fields == 1}
	}
	switch {
	case f.WorkflowID != "":
		t, raw := term(f.WorkflowID)
		return one(kindWorkflow, t, raw)
	case f.BusinessKey != "":
		t, raw := term(f.BusinessKey)
		return one(kindBusinessKey, t, raw)
	case f.WorkflowIDPrefix != "" || f.BusinessKeyPrefix != "":
		p := plan{kind: kindWorkflowValue, prefix: f.WorkflowIDPrefix, exact: fields == 1}
		if p.prefix == "" {
			p.kind, p.prefix = kindBusinessKeyValue, f.BusinessKeyPrefix
		}
		rest := f
		rest.WorkflowIDPrefix, rest.BusinessKeyPrefix = "", ""
		r := planFor(rest)
		p.rest = &r
		return p
	case len(f.Attributes) > 0:
		names := make([]string, 0, len(f.Attributes))
		for name := range f.Attributes {
			names = append(names, name)
		}
		sort.Strings(names)
		t, raw := attrTerm(names[0], f.Attributes[names[0]])
		return one(kindAttr, t, raw)
	case f.Type != "":
		t, raw := term(f.Type)
		return one(kindType, t, raw)
	case len(f.Statuses) > 0:
		p := plan{kind: kindStatus, exact: fields == 1}
		for _, st := range f.Statuses {
			if t := st.String(); !slices.Contains(p.terms, t) {
				p.terms = append(p.terms, t)
			}
		}
		return p
	}
	return plan{kind: kindAll, terms: []string{""}, exact: true}
}

// bounds is the range of (start_time, run_id) a read covers: below upper
// (exclusive), from lower (inclusive) on.
type bounds struct {
	hasUpper   bool
	upperStart int64
	upperRun   string
	hasLower   bool
	lowerStart int64
	// lowerAfter makes the lower bound (start_time, run_id) > (lowerStart,
	// lowerRun): an oldest-first listing's cursor.
	lowerAfter bool
	lowerRun   string
	// oldest reads the oldest start first.
	oldest bool
}

// runCursor is the position after a page: the last run listed. It is the
// SQL backends' cursor, so tokens have one form.
type runCursor struct {
	Start int64  `json:"start"`
	RunID string `json:"run"`
}

func boundsFor(f store.RunFilter, c *runCursor, oldest bool) bounds {
	b := bounds{oldest: oldest}
	if !f.StartedBefore.IsZero() {
		// start < before is (start, run) < (before, "").
		b.hasUpper, b.upperStart = true, store.UnixMilli(f.StartedBefore)
	}
	if c != nil && !oldest && (!b.hasUpper || c.Start < b.upperStart || c.Start == b.upperStart && c.RunID < b.upperRun) {
		b.hasUpper, b.upperStart, b.upperRun = true, c.Start, c.RunID
	}
	if !f.StartedAfter.IsZero() {
		b.hasLower, b.lowerStart = true, store.UnixMilli(f.StartedAfter)
	}
	if c != nil && oldest && (!b.hasLower || c.Start >= b.lowerStart) {
		b.hasLower, b.lowerStart, b.lowerAfter, b.lowerRun = true, c.Start, true, c.RunID
	}
	return b
}

// holds reports whether a record's (start_time, run_id) is in the bounds.
func (b bounds) holds(r store.VisibilityRecord) bool {
	start := store.UnixMilli(r.StartTime)
	return (!b.hasUpper || start < b.upperStart || start == b.upperStart && r.RunID < b.upperRun) &&
		(!b.hasLower || start > b.lowerStart || start == b.lowerStart && (!b.lowerAfter || r.RunID > b.lowerRun))
}

// empty reports whether no start time is in the bounds.
func (b bounds) empty() bool {
	return b.hasUpper && b.hasLower && (b.upperStart < b.lowerStart ||
		b.upperStart == b.lowerStart && (b.upperRun == "" || b.lowerAfter && b.upperRun <= b.lowerRun))
}

// covers reports whether the bounds hold every start time of a day.
func (b bounds) covers(day int64) bool { return b.spans(day*dayMillis, (day+1)*dayMillis) }

// spans reports whether the bounds hold every start time from start
// (inclusive) to end (exclusive).
func (b bounds) spans(start, end int64) bool {
	return (!b.hasLower || b.lowerStart <= start) && (!b.hasUpper || b.upperStart >= end)
}

// where returns the clustering restrictions of the bounds.
func (b bounds) where() (string, []any) {
	var cond string
	var args []any
	if b.hasUpper {
		cond, args = cond+` AND (start_time, run_id) < (?, ?)`, append(args, b.upperStart, b.upperRun)
	}
	switch {
	case b.hasLower && b.lowerAfter:
		cond, args = cond+` AND (start_time, run_id) > (?, ?)`, append(args, b.lowerStart, b.lowerRun)
	case b.hasLower:
		cond, args = cond+` AND (start_time) >= (?)`, append(args, b.lowerStart)
	}
	return cond, args
}

// pruneAfter is how old a day's marker must be before a listing that finds
// the day empty drops it: older than any index write still in flight.
const pruneAfter = time.Hour

// forDays calls fn with the days a plan reads within the bounds, newest
// first, until fn returns false: the days of the namespace that have runs
// (and whether some of a day's runs are in finer buckets) for bucketed
// kinds, day 0 otherwise. fn reports whether the day's "all" partitions
// were read whole and found empty; such a day is dropped from
// visibility_days.
func (s *Store) forDays(ctx context.Context, namespace string, p plan, b bounds, fn func(day int64, split bool) (more, empty bool, err error)) error {
	if !bucketed(p.kind) {
		_, _, err := fn(0, false)
		return err
	}
	stmt := `SELECT day, WRITETIME(seen), split FROM {ks}.visibility_days WHERE namespace = ?`
	args := []any{namespace}
	if b.hasUpper {
		stmt, args = stmt+` AND day <= ?`, append(args, dayOf(b.upperStart))
	}
	if b.hasLower {
		stmt, args = stmt+` AND day >= ?`, append(args, dayOf(b.lowerStart))
	}
	if b.oldest {
		stmt += ` ORDER BY day ASC`
	}
	iter := s.query(ctx, stmt, args...).PageSize(1000).Iter()
	var day, written int64
	var split bool
	for iter.Scan(&day, &written, &split) {
		more, empty, err := fn(day, split)
		if err != nil {
			iter.Close()
			return err
		}
		if empty && p.kind == kindAll && b.covers(day) && written > 0 {
			s.pruneDay(ctx, namespace, day, written)
		}
		if !more {
			break
		}
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("cassandra: read visibility days of %q: %w", namespace, err)
	}
	return nil
}

// part is one bucket a read covers: its id and its start times, from start
// (inclusive) to end (exclusive).
type part struct{ id, start, end int64 }

// dayParts returns the buckets of a day a plan reads within the bounds,
// latest end first: the day's own and, if the day is split, its finer
// buckets; for a kind without buckets, the one partition.
func (s *Store) dayParts(ctx context.Context, namespace string, p plan, day int64, split bool, b bounds) ([]part, error) {
	if !bucketed(p.kind) {
		return []part{{0, math.MinInt64, math.MaxInt64}}, nil
	}
	parts := []part{{day, day * dayMillis, (day + 1) * dayMillis}}
	if split {
		iter := s.query(ctx, `SELECT bucket FROM {ks}.visibility_buckets WHERE namespace = ? AND day = ?`, namespace, day).Iter()
		var id int64
		for iter.Scan(&id) {
			if _, start, end := bucketSpan(id); (!b.hasLower || end > b.lowerStart) && (!b.hasUpper || start <= b.upperStart) {
				parts = append(parts, part{id, start, end})
			}
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("read visibility buckets of day %d: %w", day, err)
		}
	}
	if b.oldest {
		sort.SliceStable(parts, func(i, j int) bool { return parts[i].start < parts[j].start })
	} else {
		sort.SliceStable(parts, func(i, j int) bool { return parts[i].end > parts[j].end })
	}
	return parts, nil
}

// pruneDay drops an empty day from visibility_days, at the timestamp of the
// marker read, so that a day marked again since is kept. It is best
// effort: a day left behind costs one empty read.
func (s *Store) pruneDay(ctx context.Context, namespace string, day, written int64) {
	if written >= time.Now().Add(-pruneAfter).UnixMicro() {
		return
	}
	err := s.query(ctx, `DELETE FROM {ks}.visibility_days WHERE namespace = ? AND day = ?`, namespace, day).WithTimestamp(written).Exec()
	if err != nil {
		slog.WarnContext(ctx, "cassandra: drop empty visibility day", "namespace", namespace, "day", day, "err", err)
	}
}

// indexIter reads one visibility_index partition in clustering order.
type indexIter struct {
	iter *gocql.Iter
	cur  store.VisibilityRecord
	ok   bool
	err  error
}

func (s *Store) openIndex(ctx context.Context, namespace, kind, t string, day int64, b bounds, fetch int) *indexIter {
	cond, args := b.where()
	if b.oldest {
		cond += ` ORDER BY start_time ASC, run_id ASC`
	}
	it := &indexIter{iter: s.query(ctx, `SELECT run_id, start_time, workflow_id, type, status, close_time, business_key, attributes, version
		FROM {ks}.visibility_index WHERE namespace = ? AND kind = ? AND term = ? AND day = ?`+cond,
		append([]any{namespace, kind, t, day}, args...)...).PageSize(fetch).Iter()}
	it.cur.Namespace = namespace
	it.next()
	return it
}

// next moves to the next row; ok is false at the end or on an error.
func (it *indexIter) next() {
	r := store.VisibilityRecord{Namespace: it.cur.Namespace}
	var status int
	var start, closed int64
	var attrs []byte
	it.ok = it.iter.Scan(&r.RunID, &start, &r.WorkflowID, &r.Type, &status, &closed, &r.BusinessKey, &attrs, &r.Version)
	if !it.ok {
		return
	}
	r.Status, r.StartTime, r.CloseTime = store.RunStatus(status), store.FromUnixMilli(start), store.FromUnixMilli(closed)
	if err := codec.Unmarshal(attrs, &r.Attributes); err != nil {
		it.ok, it.err = false, fmt.Errorf("attributes of %s: %w", r.RunID, err)
		return
	}
	it.cur = r
}

func (it *indexIter) close() error {
	if err := it.iter.Close(); err != nil {
		return err
	}
	return it.err
}

// newer reports whether a lists before b: later start, then higher run id.
func newer(a, b store.VisibilityRecord) bool {
	if !a.StartTime.Equal(b.StartTime) {
		return a.StartTime.After(b.StartTime)
	}
	return a.RunID > b.RunID
}

// scan calls fn with the records that match f within b, newest start
// first, until fn returns false. fetch is the driver's page size. It reads
// day by day, newest first: scanDay reads a day's partitions of the plan's
// index, scanPrefix a day's ranges of a prefix.
func (s *Store) scan(ctx context.Context, f store.RunFilter, p plan, b bounds, fetch int, fn func(store.VisibilityRecord) bool) error {
	if b.empty() {
		return nil
	}
	err := s.forDays(ctx, f.Namespace, p, b, func(day int64, split bool) (more, empty bool, err error) {
		if p.prefix != "" {
			return s.scanPrefix(ctx, f, p, day, split, b, fetch, fn)
		}
		return s.scanDay(ctx, f, p, day, split, b, fetch, fn)
	})
	if err != nil {
		return fmt.Errorf("cassandra: list runs of %q: %w", f.Namespace, err)
	}
	return nil
}

// scanDay calls fn with the records of a day that match f within b,
// newest start first, until fn returns false (more is then false); empty
// says the day's partitions held no rows within b.
//
// A day's partitions are merged: those of each term of the plan, in each
// of the day's buckets. A finer bucket is opened only once the merge has
// nothing newer than the bucket's end left, so a listing that stops early
// reads few of them.
func (s *Store) scanDay(ctx context.Context, f store.RunFilter, p plan, day int64, split bool, b bounds, fetch int,
	fn func(store.VisibilityRecord) bool) (more, empty bool, err error) {
	parts, err := s.dayParts(ctx, f.Namespace, p, day, split, b)
	if err != nil {
		return false, false, err
	}
	var iters []*indexIter
	defer func() {
		for _, it := range iters {
			if cerr := it.close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	empty, more = true, true
	for more {
		// Merge the partitions: take the newest of their heads (the
		// oldest, oldest first), once every bucket that may hold a newer
		// (older) run is open.
		var best *indexIter
		for {
			best = nil
			for _, it := range iters {
				if it.ok && (best == nil || newer(it.cur, best.cur) != b.oldest) {
					best = it
				}
			}
			if len(parts) == 0 || best != nil && !b.oldest && parts[0].end <= store.UnixMilli(best.cur.StartTime) ||
				best != nil && b.oldest && parts[0].start > store.UnixMilli(best.cur.StartTime) {
				break
			}
			for _, t := range p.terms {
				iters = append(iters, s.openIndex(ctx, f.Namespace, p.kind, t, parts[0].id, b, fetch))
			}
			parts = parts[1:]
		}
		if best == nil {
			break
		}
		// While an update moves a run from one status to another, both
		// partitions may hold it for a moment: list it once, as the
		// newer version.
		r := best.cur
		for _, it := range iters {
			if it.ok && it.cur.RunID == r.RunID && it.cur.StartTime.Equal(r.StartTime) {
				if it.cur.Version > r.Version {
					r = it.cur
				}
				it.next()
			}
		}
		empty = false
		if f.Matches(r) {
			more = fn(r)
		}
	}
	return more, empty, nil
}

// scanPrefix is scanDay for a prefix plan: it reads the prefix's range of
// each of the day's buckets, up to the prefix scan limit of rows each, and
// lists the rows within b in start order. If a bucket's range holds more,
// the prefix matches too many of the day's runs to sort them: the day is
// read by the rest of the filter's plan, in start order, and the prefix is
// checked on each run.
func (s *Store) scanPrefix(ctx context.Context, f store.RunFilter, p plan, day int64, split bool, b bounds, fetch int,
	fn func(store.VisibilityRecord) bool) (more, empty bool, err error) {
	parts, err := s.dayParts(ctx, f.Namespace, p, day, split, b)
	if err != nil {
		return false, false, err
	}
	latest := map[string]store.VisibilityRecord{} // by run id
	for _, pt := range parts {
		rows, whole, err := s.readValues(ctx, f.Namespace, p, pt.id, s.prefixLimit)
		if err != nil {
			return false, false, err
		}
		if !whole {
			return s.scanDay(ctx, f, *p.rest, day, split, b, fetch, fn)
		}
		for _, r := range rows {
			// While an update moves a run from one value to another, both
			// rows may be in the range: list it once, as the newer version.
			if b.holds(r) {
				if old, ok := latest[r.RunID]; !ok || r.Version > old.Version {
					latest[r.RunID] = r
				}
			}
		}
	}
	runs := slices.SortedFunc(maps.Values(latest), func(x, y store.VisibilityRecord) int {
		if newer(x, y) != b.oldest {
			return -1
		}
		return 1
	})
	for _, r := range runs {
		if f.Matches(r) && !fn(r) {
			return false, false, nil
		}
	}
	return true, false, nil
}

// readValues reads the rows of a prefix plan's range in one bucket, at
// most limit: whole is false if the range holds more.
func (s *Store) readValues(ctx context.Context, namespace string, p plan, bucket int64, limit int) (rows []store.VisibilityRecord, whole bool, err error) {
	from, args := valueRange(namespace, p, bucket)
	it := &indexIter{iter: s.query(ctx, `SELECT run_id, start_time, workflow_id, type, status, close_time, business_key, attributes, version`+
		from+` LIMIT ?`, append(args, limit+1)...).PageSize(min(limit+1, 5000)).Iter()}
	it.cur.Namespace = namespace
	for it.next(); it.ok; it.next() {
		if len(rows) == limit {
			return nil, false, it.close()
		}
		rows = append(rows, it.cur)
	}
	if err := it.close(); err != nil {
		return nil, false, fmt.Errorf("read %s range %q of bucket %d: %w", p.kind, p.prefix, bucket, err)
	}
	return rows, true, nil
}

// countExact counts the rows of the plan's partitions within b without
// reading them, for a plan whose terms decide a match alone.
func (s *Store) countExact(ctx context.Context, namespace string, p plan, b bounds) (int64, error) {
	if b.empty() {
		return 0, nil
	}
	cond, args := b.where()
	var total int64
	err := s.forDays(ctx, namespace, p, b, func(day int64, split bool) (bool, bool, error) {
		parts, err := s.dayParts(ctx, namespace, p, day, split, b)
		if err != nil {
			return false, false, err
		}
		var inDay int64
		for _, pt := range parts {
			if p.prefix != "" {
				n, err := s.countValues(ctx, namespace, p, pt, b)
				if err != nil {
					return false, false, err
				}
				inDay += n
				continue
			}
			for _, t := range p.terms {
				var n int64
				err := s.query(ctx, `SELECT COUNT(*) FROM {ks}.visibility_index WHERE namespace = ? AND kind = ? AND term = ? AND day = ?`+cond,
					append([]any{namespace, p.kind, t, pt.id}, args...)...).Scan(&n)
				if err != nil {
					return false, false, err
				}
				inDay += n
			}
		}
		total += inDay
		return true, inDay == 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("cassandra: count runs of %q: %w", namespace, err)
	}
	return total, nil
}

// valueRange returns the FROM and WHERE of a prefix plan's range of
// visibility_values in one bucket, and its arguments.
func valueRange(namespace string, p plan, bucket int64) (string, []any) {
	from, args := ` FROM {ks}.visibility_values WHERE namespace = ? AND kind = ? AND bucket = ? AND value >= ?`,
		[]any{namespace, p.kind, bucket, p.prefix}
	if end := store.PrefixEnd(p.prefix); end != "" {
		from, args = from+` AND value < ?`, append(args, end)
	}
	return from, args
}

// countValues counts the runs of a prefix plan's range in one bucket
// within b: Cassandra counts a bucket the bounds hold whole; the start
// times of another's rows are read and checked.
func (s *Store) countValues(ctx context.Context, namespace string, p plan, pt part, b bounds) (int64, error) {
	from, args := valueRange(namespace, p, pt.id)
	var n int64
	if b.spans(pt.start, pt.end) {
		err := s.query(ctx, `SELECT COUNT(*)`+from, args...).Scan(&n)
		return n, err
	}
	iter := s.query(ctx, `SELECT start_time, run_id`+from, args...).PageSize(5000).Iter()
	var r store.VisibilityRecord
	var start int64
	for iter.Scan(&start, &r.RunID) {
		r.StartTime = store.FromUnixMilli(start)
		if b.holds(r) {
			n++
		}
	}
	return n, iter.Close()
}

// ListRuns implements store.VisibilityStore: it reads the plan's
// partitions newest first, keeps the records that match the whole filter
// and stops one past the page, whose last record is the cursor.
func (s *Store) ListRuns(ctx context.Context, req store.ListRunsRequest) (store.RunPage, error) {
	var page store.RunPage
	if err := req.Validate(); err != nil {
		return page, err
	}
	if err := s.namespaceExists(ctx, req.Namespace); err != nil {
		return page, err
	}
	var cursor *runCursor
	if len(req.PageToken) > 0 {
		cursor = new(runCursor)
		if err := codec.DecodeToken(req.PageToken, "runs", cursor); err != nil {
			return page, err
		}
	}
	size := store.PageSize(req.PageSize, 100)
	err := s.scan(ctx, req.RunFilter, planFor(req.RunFilter), boundsFor(req.RunFilter, cursor, req.Oldest), min(max(size+1, 100), 5000),
		func(r store.VisibilityRecord) bool {
			page.Runs = append(page.Runs, r)
			return len(page.Runs) <= size
		})
	if err != nil {
		return store.RunPage{}, err
	}
	if len(page.Runs) > size {
		page.Runs = page.Runs[:size]
		last := page.Runs[size-1]
		page.NextPageToken = codec.EncodeToken("runs", runCursor{Start: store.UnixMilli(last.StartTime), RunID: last.RunID})
	}
	return page, nil
}

// CountRuns implements store.VisibilityStore. A filter that one index term
// decides (namespace and time range only, one status set, one type, ...)
// is counted by Cassandra; any other reads the rows and checks them.
func (s *Store) CountRuns(ctx context.Context, f store.RunFilter) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	if err := s.namespaceExists(ctx, f.Namespace); err != nil {
		return 0, err
	}
	return s.countRuns(ctx, f)
}

// countRuns is CountRuns of a filter checked already.
func (s *Store) countRuns(ctx context.Context, f store.RunFilter) (int64, error) {
	if n, ok, err := store.CountExcluding(ctx, f, s.countRuns); ok {
		return n, err
	}
	p, b := planFor(f), boundsFor(f, nil, false)
	if p.exact {
		return s.countExact(ctx, f.Namespace, p, b)
	}
	var n int64
	err := s.scan(ctx, f, p, b, 5000, func(store.VisibilityRecord) bool {
		n++
		return true
	})
	return n, err
}
