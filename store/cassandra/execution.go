package cassandra

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/codec"
)

// AcquireShard implements store.ExecutionStore with a lightweight
// transaction on the shard row: INSERT … IF NOT EXISTS for a new shard,
// UPDATE … IF range_id = the one read otherwise.
func (s *Store) AcquireShard(ctx context.Context, req store.AcquireShardRequest) (store.Shard, error) {
	if err := req.Validate(); err != nil {
		return store.Shard{}, err
	}
	// A serial read sees the outcome of every earlier transaction.
	cur, err := s.readShard(ctx, req.ShardID, s.serial)
	now := store.Now()
	commitID := gocql.TimeUUID()
	key := shardRow()
	switch {
	case errors.Is(err, store.ErrShardNotFound):
		if req.PrevRangeID != 0 {
			return store.Shard{}, &store.ShardOwnershipLostError{ShardID: req.ShardID, ExpectedRangeID: req.PrevRangeID}
		}
		sh := store.Shard{ID: req.ShardID, RangeID: 1, Owner: req.Owner, UpdatedAt: now}
		q := s.query(ctx, `INSERT INTO {ks}.executions (shard_id, type, namespace, workflow_id, run_id, visibility_ts, task_id,
			range_id, owner, ack_levels, commit_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
			append(key.args(req.ShardID), sh.RangeID, sh.Owner, codec.Marshal(sh.AckLevels), commitID, store.UnixMilli(now))...)
		applied, err := s.applyLWT(ctx, q, req.ShardID, commitID)
		if err != nil {
			return store.Shard{}, fmt.Errorf("cassandra: create shard %d: %w", req.ShardID, err)
		}
		if !applied {
			// Another process created it between our read and insert.
			return store.Shard{}, &store.ShardOwnershipLostError{ShardID: req.ShardID}
		}
		return sh, nil
	case err != nil:
		return store.Shard{}, err
	}
	if req.PrevRangeID != 0 && cur.RangeID != req.PrevRangeID {
		return store.Shard{}, &store.ShardOwnershipLostError{ShardID: req.ShardID, ExpectedRangeID: req.PrevRangeID, ActualRangeID: cur.RangeID}
	}
	sh := cur
	sh.RangeID++
	sh.Owner = req.Owner
	sh.UpdatedAt = now
	q := s.query(ctx, `UPDATE {ks}.executions SET range_id = ?, owner = ?, commit_id = ?, updated_at = ? WHERE `+keyWhere+` IF range_id = ?`,
		append(append([]any{sh.RangeID, sh.Owner, commitID, store.UnixMilli(now)}, key.args(req.ShardID)...), cur.RangeID)...)
	applied, err := s.applyLWT(ctx, q, req.ShardID, commitID)
	if err != nil {
		return store.Shard{}, fmt.Errorf("cassandra: acquire shard %d: %w", req.ShardID, err)
	}
	if !applied {
		return store.Shard{}, &store.ShardOwnershipLostError{ShardID: req.ShardID, ExpectedRangeID: cur.RangeID}
	}
	return sh, nil
}

// applyLWT runs a conditional statement on a shard row that sets commit_id.
// A timeout leaves the outcome unknown; it is resolved by a serial read of
// the shard row (which completes or forecloses the transaction in flight),
// never assumed failed.
func (s *Store) applyLWT(ctx context.Context, q *gocql.Query, shardID int32, commitID gocql.UUID) (bool, error) {
	applied, err := q.MapScanCAS(map[string]any{})
	if err == nil {
		return applied, nil
	}
	if !outcomeUnknown(err) {
		return false, err
	}
	return s.resolve(ctx, shardID, commitID, err)
}

// outcomeUnknown reports whether a write error leaves it unknown whether the
// write was applied.
func outcomeUnknown(err error) bool {
	var wt *gocql.RequestErrWriteTimeout
	var cu *gocql.RequestErrCASWriteUnknown
	return errors.As(err, &wt) || errors.As(err, &cu) || errors.Is(err, gocql.ErrTimeoutNoResponse) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// resolve decides whether a conditional write whose outcome is unknown was
// applied, by reading the shard row's commit_id at serial consistency.
func (s *Store) resolve(ctx context.Context, shardID int32, commitID gocql.UUID, cause error) (bool, error) {
	// The caller's context may be what expired; the read gets its own.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var got gocql.UUID
	err := s.query(rctx, `SELECT commit_id FROM {ks}.executions WHERE `+keyWhere, shardRow().args(shardID)...).
		Consistency(s.serial).Scan(&got)
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return false, fmt.Errorf("%w: %v; resolving it: %v", store.ErrOutcomeUnknown, cause, err)
	}
	if got == commitID {
		return true, nil
	}
	// Not applied, and after the serial read it never will be.
	return false, fmt.Errorf("cassandra: write not applied: %w", cause)
}

// GetShard implements store.ExecutionStore.
func (s *Store) GetShard(ctx context.Context, shardID int32) (store.Shard, error) {
	if shardID < 0 {
		return store.Shard{}, store.InvalidArgument("shard_id", "negative")
	}
	return s.readShard(ctx, shardID, 0)
}

// readShard reads the shard row, at the session's consistency or at cons.
func (s *Store) readShard(ctx context.Context, shardID int32, cons gocql.Consistency) (store.Shard, error) {
	sh := store.Shard{ID: shardID}
	var acks []byte
	var updated int64
	q := s.query(ctx, `SELECT range_id, owner, ack_levels, updated_at FROM {ks}.executions WHERE `+keyWhere, shardRow().args(shardID)...)
	if cons != 0 {
		q = q.Consistency(cons)
	}
	if err := q.Scan(&sh.RangeID, &sh.Owner, &acks, &updated); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return sh, fmt.Errorf("%w: %d", store.ErrShardNotFound, shardID)
		}
		return sh, fmt.Errorf("cassandra: read shard %d: %w", shardID, err)
	}
	if err := codec.Unmarshal(acks, &sh.AckLevels); err != nil {
		return sh, fmt.Errorf("cassandra: shard %d ack levels: %w", shardID, err)
	}
	sh.UpdatedAt = store.FromUnixMilli(updated)
	return sh, nil
}

// A check is one condition of a batch, evaluated against the rows a failed
// batch returns so that the caller gets the same typed error as on SQL.
type check struct {
	key  rowKey
	kind checkKind
	// want is the expected range_id or db_version.
	want int64
	// runID is the current run a current-row condition expects.
	runID string
	run   store.RunKey
	req   *store.Request
}

type checkKind int8

const (
	checkShard         checkKind = iota // range_id = want
	checkCurrentCreate                  // current row does not exist
	checkCurrentRun                     // current_run_id = runID (replace, update, delete)
	checkRunCreate                      // run row does not exist
	checkRunVersion                     // db_version = want
	checkRequest                        // request row absent (or, with want, expires_at = want)
)

// ttlGrace keeps a dedup row past its expiry, so PurgeExpiredRequests finds
// and counts it; the TTL only bounds what a missed purge leaves behind.
const ttlGrace = time.Hour

// maxTTL is Cassandra's largest TTL (20 years).
const maxTTL = 630720000

// pendingBatch is a Commit being put together.
type pendingBatch struct {
	stmts  []stmt
	checks []check
	bytes  int
}

type stmt struct {
	cql  string
	args []any
}

func (p *pendingBatch) add(cql string, args ...any) {
	p.stmts = append(p.stmts, stmt{cql, args})
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			p.bytes += len(v)
		case string:
			p.bytes += len(v)
		default:
			p.bytes += 8
		}
	}
}

// Commit implements store.ExecutionStore: history blocks and document bytes
// are written first, outside the partition; then one logged batch in the
// shard's partition, conditioned on the shard's range_id, each run's
// db_version and current row, and each new dedup row's absence.
func (s *Store) Commit(ctx context.Context, b *store.Batch) error {
	if b == nil {
		return store.InvalidArgument("batch", "nil")
	}
	if err := b.Validate(s.limits); err != nil {
		return err
	}
	states, err := codec.EncodeRuns(b, s.limits)
	if err != nil {
		return err
	}
	// Document bytes as stored: written ahead, their size in the batch.
	docs := make([][]byte, len(b.Documents))
	for i, d := range b.Documents {
		docs[i] = codec.Compress(d.Data, false)
	}
	for _, w := range b.Runs {
		if w.Current == store.CurrentCreate || w.Current == store.CurrentReplace {
			if err := s.namespaceExists(ctx, w.Execution.Namespace); err != nil {
				return err
			}
		}
	}
	now := store.Now()
	// One commit id names this commit's batch on the shard row and its
	// history blocks; a retry below happens only after a definite refusal.
	commitID := gocql.TimeUUID()
	// Rows a request may replace because they expired: request id → expires_at.
	expired := map[store.RequestKey]int64{}
	for attempt := 0; ; attempt++ {
		p, deleted, err := s.buildBatch(ctx, b, states, docs, expired, now, commitID)
		if err != nil {
			return err
		}
		if p.bytes > s.maxBatch {
			return store.PayloadTooLarge("batch", p.bytes, s.maxBatch)
		}
		if attempt == 0 {
			if err := s.writeAhead(ctx, b, docs, commitID); err != nil {
				return err
			}
		}
		applied, rows, err := s.execBatch(ctx, b.ShardID, p, commitID)
		if err != nil {
			return err
		}
		if applied {
			s.dropDeletedRuns(ctx, b.ShardID, deleted)
			return nil
		}
		retry, err := s.explain(ctx, b, p.checks, rows, expired)
		if err != nil {
			return err
		}
		if !retry || attempt == 3 {
			return &store.ConditionFailedError{Reason: "a condition of the batch failed"}
		}
	}
}

// buildBatch turns a store batch into the statements of one conditional
// batch and the conditions to explain a failure with.
func (s *Store) buildBatch(ctx context.Context, b *store.Batch, states []codec.EncodedExecution, docs [][]byte, expired map[store.RequestKey]int64, now time.Time, commitID gocql.UUID) (*pendingBatch, []store.RunKey, error) {
	p := &pendingBatch{}
	shard := shardRow()
	set, setArgs := "", []any{}
	if b.AckLevels != nil {
		set, setArgs = ", ack_levels = ?, updated_at = ?", []any{codec.Marshal(b.AckLevels), store.UnixMilli(now)}
	}
	p.add(`UPDATE {ks}.executions SET commit_id = ?`+set+` WHERE `+keyWhere+` IF range_id = ?`,
		append(append(append([]any{commitID}, setArgs...), shard.args(b.ShardID)...), b.RangeID)...)
	p.checks = append(p.checks, check{key: shard, kind: checkShard, want: b.RangeID})

	for i, w := range mergeCurrent(b.Runs) {
		s.addRun(p, b.ShardID, w, states[i], now, commitID)
	}
	for _, t := range b.Tasks {
		k := taskRow(t)
		p.add(`INSERT INTO {ks}.executions (shard_id, type, namespace, workflow_id, run_id, visibility_ts, task_id,
			task_type, task_namespace, task_workflow_id, task_run_id, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append(k.args(b.ShardID), int(t.Type), t.Run.Namespace, t.Run.WorkflowID, t.Run.RunID, t.Data)...)
	}
	for i := range b.Requests {
		r := &b.Requests[i]
		k := requestRow(r.Key())
		ttl := int64((r.ExpiresAt.Sub(now)+ttlGrace)/time.Second) + 1
		ttl = min(max(ttl, 1), maxTTL)
		if old, ok := expired[r.Key()]; ok {
			p.add(`UPDATE {ks}.executions USING TTL ? SET current_run_id = ?, created_at = ?, expires_at = ? WHERE `+keyWhere+` IF expires_at = ?`,
				append(append([]any{ttl, r.RunID, store.UnixMilli(r.CreatedAt), store.UnixMilli(r.ExpiresAt)}, k.args(b.ShardID)...), old)...)
			p.checks = append(p.checks, check{key: k, kind: checkRequest, want: old, req: r})
			continue
		}
		p.add(`INSERT INTO {ks}.executions (shard_id, type, namespace, workflow_id, run_id, visibility_ts, task_id,
			current_run_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`,
			append(k.args(b.ShardID), r.RunID, store.UnixMilli(r.CreatedAt), store.UnixMilli(r.ExpiresAt), ttl)...)
		p.checks = append(p.checks, check{key: k, kind: checkRequest, req: r})
	}
	for i, d := range b.Documents {
		k := documentRow(d.Run, d.ID)
		p.add(`INSERT INTO {ks}.executions (shard_id, type, namespace, workflow_id, run_id, visibility_ts, task_id,
			size, stored_size, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append(k.args(b.ShardID), int64(len(d.Data)), int64(len(docs[i])), store.UnixMilli(now))...)
	}
	for _, r := range b.CompleteTasks {
		where, args := taskRangeWhere(b.ShardID, r)
		p.add(`DELETE FROM {ks}.executions WHERE `+where, args...)
	}
	current, err := s.currentOf(ctx, b.ShardID, b.DeleteRuns)
	if err != nil {
		return nil, nil, err
	}
	var deleted []store.RunKey
	for i, k := range b.DeleteRuns {
		p.add(`DELETE FROM {ks}.executions WHERE `+keyWhere, runRow(k).args(b.ShardID)...)
		p.add(`DELETE FROM {ks}.executions WHERE shard_id = ? AND type = ? AND namespace = ? AND workflow_id = ? AND run_id >= ? AND run_id < ?`,
			b.ShardID, typeDocument, k.Namespace, k.WorkflowID, k.RunID+"\x00", k.RunID+"\x01")
		if current[i] {
			ck := currentRow(k.Namespace, k.WorkflowID)
			p.add(`DELETE FROM {ks}.executions WHERE `+keyWhere+` IF current_run_id = ?`, append(ck.args(b.ShardID), k.RunID)...)
			p.checks = append(p.checks, check{key: ck, kind: checkCurrentRun, runID: k.RunID, run: k})
		}
		deleted = append(deleted, k)
	}
	return p, deleted, nil
}

// currentOf reports for each run whether its workflow's current row points
// at it, reading the rows deleteConcurrency at a time.
func (s *Store) currentOf(ctx context.Context, shardID int32, runs []store.RunKey) ([]bool, error) {
	out := make([]bool, len(runs))
	errs := make([]error, len(runs))
	sem := make(chan struct{}, deleteConcurrency)
	var wg sync.WaitGroup
	for i, k := range runs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, fmt.Errorf("cassandra: read current runs: %w", ctx.Err())
		}
		wg.Go(func() {
			defer func() { <-sem }()
			cur, err := s.GetCurrentExecution(ctx, shardID, k.Namespace, k.WorkflowID)
			switch {
			case err == nil:
				out[i] = cur.RunID == k.RunID
			case !errors.Is(err, store.ErrNotFound):
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// mergeCurrent folds a run created in the batch and a run that replaces it
// as current in the same batch (a workflow that starts and continues as
// new in one commit) into one write of the current row: a conditional
// batch may not hold IF NOT EXISTS and IF current_run_id for one row. The
// successor creates the row; the result is what SQL gets by doing both.
func mergeCurrent(runs []store.RunWrite) []store.RunWrite {
	out := runs
	for i, w := range runs {
		if w.Current != store.CurrentReplace {
			continue
		}
		for j, c := range runs {
			if c.Current == store.CurrentCreate && c.Execution.RunID == w.PrevRunID &&
				c.Execution.Namespace == w.Execution.Namespace && c.Execution.WorkflowID == w.Execution.WorkflowID {
				if &out[0] == &runs[0] {
					out = append([]store.RunWrite(nil), runs...)
				}
				out[j].Current = store.CurrentNone
				out[i].Current, out[i].PrevRunID = store.CurrentCreate, ""
			}
		}
	}
	return out
}

// addRun adds one run's write: its current row as the write's mode says,
// then its execution row.
func (s *Store) addRun(p *pendingBatch, shardID int32, w store.RunWrite, state codec.EncodedExecution, now time.Time, commitID gocql.UUID) {
	e := w.Execution
	blocks := make(map[int64]gocql.UUID, len(w.History))
	for _, h := range w.History {
		blocks[h.FirstEventID] = commitID
	}
	key := e.RunKey
	ck := currentRow(key.Namespace, key.WorkflowID)
	start := store.UnixMilli(e.Info.StartTime)
	switch w.Current {
	case store.CurrentCreate:
		p.add(`INSERT INTO {ks}.executions (shard_id, type, namespace, workflow_id, run_id, visibility_ts, task_id,
			current_run_id, create_request_id, state, status, last_write_version, start_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
			append(ck.args(shardID), key.RunID, e.Info.CreateRequestID, int(e.State), int(e.Status), e.LastWriteVersion, start)...)
		p.checks = append(p.checks, check{key: ck, kind: checkCurrentCreate, run: key})
	case store.CurrentReplace:
		p.add(`UPDATE {ks}.executions SET current_run_id = ?, create_request_id = ?, state = ?, status = ?, last_write_version = ?, start_time = ?
			WHERE `+keyWhere+` IF current_run_id = ?`,
			append(append([]any{key.RunID, e.Info.CreateRequestID, int(e.State), int(e.Status), e.LastWriteVersion, start}, ck.args(shardID)...), w.PrevRunID)...)
		p.checks = append(p.checks, check{key: ck, kind: checkCurrentRun, runID: w.PrevRunID, run: key})
	case store.CurrentUpdate:
		p.add(`UPDATE {ks}.executions SET state = ?, status = ?, last_write_version = ? WHERE `+keyWhere+` IF current_run_id = ?`,
			append(append([]any{int(e.State), int(e.Status), e.LastWriteVersion}, ck.args(shardID)...), key.RunID)...)
		p.checks = append(p.checks, check{key: ck, kind: checkCurrentRun, runID: key.RunID, run: key})
	}
	rk := runRow(key)
	if w.ExpectedDBVersion == 0 {
		p.add(`INSERT INTO {ks}.executions (shard_id, type, namespace, workflow_id, run_id, visibility_ts, task_id,
			state, status, next_event_id, db_version, last_write_version, data, checksum, updated_at, history)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
			append(rk.args(shardID), int(e.State), int(e.Status), e.NextEventID, e.DBVersion, e.LastWriteVersion, state.Blob, state.Checksum, store.UnixMilli(now), blocks)...)
		p.checks = append(p.checks, check{key: rk, kind: checkRunCreate, run: key})
		return
	}
	p.add(`UPDATE {ks}.executions SET state = ?, status = ?, next_event_id = ?, db_version = ?, last_write_version = ?, data = ?, checksum = ?, updated_at = ?,
		history = history + ? WHERE `+keyWhere+` IF db_version = ?`,
		append(append([]any{int(e.State), int(e.Status), e.NextEventID, e.DBVersion, e.LastWriteVersion, state.Blob, state.Checksum, store.UnixMilli(now), blocks},
			rk.args(shardID)...), w.ExpectedDBVersion)...)
	p.checks = append(p.checks, check{key: rk, kind: checkRunVersion, want: w.ExpectedDBVersion, run: key})
}

// writeAhead writes what lives outside the shard's partition before the
// batch that makes it visible: history blocks (invisible until the run's
// next_event_id passes them) and document bytes (invisible until their
// metadata row is committed).
func (s *Store) writeAhead(ctx context.Context, b *store.Batch, docs [][]byte, commitID gocql.UUID) error {
	var wg sync.WaitGroup
	errs := make([]error, len(b.Runs)+len(b.Documents))
	for i, w := range b.Runs {
		if len(w.History) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := w.Execution.RunKey
			hb := s.session.Batch(gocql.UnloggedBatch).WithContext(ctx)
			for _, h := range w.History {
				hb.Query(s.cql(`INSERT INTO {ks}.history (shard_id, namespace, workflow_id, run_id, first_event_id, commit_id, txn_id, last_event_id, data)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), b.ShardID, k.Namespace, k.WorkflowID, k.RunID, h.FirstEventID, commitID, h.TxnID, h.LastEventID, codec.Compress(h.Events, false))
			}
			if err := hb.Exec(); err != nil {
				errs[i] = fmt.Errorf("cassandra: write history of %s: %w", k, err)
			}
		}()
	}
	for i, d := range b.Documents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := d.Run
			err := s.query(ctx, `INSERT INTO {ks}.document_blobs (shard_id, namespace, workflow_id, run_id, id, data) VALUES (?, ?, ?, ?, ?, ?)`,
				b.ShardID, k.Namespace, k.WorkflowID, k.RunID, d.ID, docs[i]).Exec()
			if err != nil {
				errs[len(b.Runs)+i] = fmt.Errorf("cassandra: write document %s of %s: %w", d.ID, k, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// execBatch runs the conditional batch. It returns whether it was applied
// and, if not, the current values of the rows its conditions name, by row.
func (s *Store) execBatch(ctx context.Context, shardID int32, p *pendingBatch, commitID gocql.UUID) (bool, map[string]map[string]any, error) {
	batch := s.session.Batch(gocql.LoggedBatch).WithContext(ctx)
	for _, st := range p.stmts {
		batch.Query(s.cql(st.cql), st.args...)
	}
	first := map[string]any{}
	applied, iter, err := batch.MapExecCAS(first)
	if err != nil {
		if !outcomeUnknown(err) {
			return false, nil, fmt.Errorf("cassandra: commit: %w", err)
		}
		ok, rerr := s.resolve(ctx, shardID, commitID, err)
		if rerr != nil || ok {
			return ok, nil, rerr
		}
		// Not applied: read the conditions' rows to explain why.
		return false, nil, nil
	}
	if applied {
		if iter != nil {
			_ = iter.Close()
		}
		return true, nil, nil
	}
	rows := map[string]map[string]any{}
	addRow := func(m map[string]any) {
		if len(m) == 0 {
			return
		}
		k := rowKey{typ: toInt(m["type"]), namespace: toString(m["namespace"]), workflowID: toString(m["workflow_id"]), runID: toString(m["run_id"])}
		rows[k.id()] = m
	}
	addRow(first)
	if iter != nil {
		for {
			m := map[string]any{}
			if !iter.MapScan(m) {
				break
			}
			addRow(m)
		}
		if err := iter.Close(); err != nil {
			return false, nil, fmt.Errorf("cassandra: commit result: %w", err)
		}
	}
	return false, rows, nil
}

// explain turns a failed batch into the typed error SQL would return,
// checking conditions in the order SQL applies them. It asks for a retry
// when the only failure is a dedup row that has expired (which may be
// replaced, conditioned on its expiry), recording it in expired.
func (s *Store) explain(ctx context.Context, b *store.Batch, checks []check, rows map[string]map[string]any, expired map[store.RequestKey]int64) (retry bool, err error) {
	if rows == nil {
		// A resolved timeout: read the rows the conditions name.
		if rows, err = s.readCheckedRows(ctx, b.ShardID, checks); err != nil {
			return false, err
		}
	}
	now := store.UnixMilli(store.Now())
	for _, c := range checks {
		row, exists := rows[c.key.id()]
		switch c.kind {
		case checkShard:
			if !exists {
				return false, fmt.Errorf("%w: %d", store.ErrShardNotFound, b.ShardID)
			}
			if got := toInt64(row["range_id"]); got != c.want {
				return false, &store.ShardOwnershipLostError{ShardID: b.ShardID, ExpectedRangeID: c.want, ActualRangeID: got}
			}
		case checkCurrentCreate:
			if exists && toString(row["current_run_id"]) != "" {
				cur, err := s.GetCurrentExecution(ctx, b.ShardID, c.run.Namespace, c.run.WorkflowID)
				if err != nil {
					return false, err
				}
				return false, &store.WorkflowExistsError{Current: cur}
			}
		case checkCurrentRun:
			if !exists || toString(row["current_run_id"]) != c.runID {
				if c.runID == c.run.RunID {
					return false, &store.ConditionFailedError{Run: c.run, Reason: "run is not current"}
				}
				return false, &store.ConditionFailedError{Run: c.run, Reason: fmt.Sprintf("current run is not %s", c.runID)}
			}
		case checkRunCreate:
			if exists {
				return false, &store.ConditionFailedError{Run: c.run, Reason: "run exists"}
			}
		case checkRunVersion:
			if !exists || toInt64(row["db_version"]) != c.want {
				return false, &store.ConditionFailedError{Run: c.run, Reason: fmt.Sprintf("db_version is not %d", c.want)}
			}
		case checkRequest:
			exp := toInt64(row["expires_at"])
			switch {
			case !exists && c.want == 0:
			case exists && c.want != 0 && exp == c.want:
			case exists && exp > now:
				existing := *c.req
				existing.RunID = toString(row["current_run_id"])
				existing.CreatedAt = store.FromUnixMilli(toInt64(row["created_at"]))
				existing.ExpiresAt = store.FromUnixMilli(exp)
				if existing.RunID == "" { // the result carried only the condition's columns
					got, err := s.GetRequest(ctx, b.ShardID, c.req.Key())
					if err != nil {
						return false, err
					}
					existing = got
				}
				return false, &store.DuplicateRequestError{Existing: existing}
			case exists:
				expired[c.req.Key()] = exp
				retry = true
			default:
				delete(expired, c.req.Key()) // it was purged meanwhile
				retry = true
			}
		}
	}
	return retry, nil
}

// readCheckedRows reads, at serial consistency, the rows a batch's
// conditions name.
func (s *Store) readCheckedRows(ctx context.Context, shardID int32, checks []check) (map[string]map[string]any, error) {
	rows := map[string]map[string]any{}
	for _, c := range checks {
		m := map[string]any{}
		err := s.query(ctx, `SELECT type, namespace, workflow_id, run_id, range_id, current_run_id, db_version, created_at, expires_at
			FROM {ks}.executions WHERE `+keyWhere, c.key.args(shardID)...).Consistency(s.serial).MapScan(m)
		if errors.Is(err, gocql.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cassandra: read conditions: %w", err)
		}
		rows[c.key.id()] = m
	}
	return rows, nil
}

// dropDeletedRuns removes the history and document bytes of deleted runs.
// Their execution rows are gone already, so nothing reads them; a failure
// leaves garbage, not wrong answers, and is logged.
func (s *Store) dropDeletedRuns(ctx context.Context, shardID int32, runs []store.RunKey) {
	sem := make(chan struct{}, deleteConcurrency)
	var wg sync.WaitGroup
	for _, k := range runs {
		for _, table := range []string{"history", "document_blobs"} {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				err := s.query(ctx, `DELETE FROM {ks}.`+table+` WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`,
					shardID, k.Namespace, k.WorkflowID, k.RunID).Exec()
				if err != nil {
					slog.WarnContext(ctx, "cassandra: drop deleted run's rows", "table", table, "run", k.String(), "err", err)
				}
			})
		}
	}
	wg.Wait()
}

// namespaceExists checks a namespace once; namespaces are never deleted, so
// a positive answer is kept.
func (s *Store) namespaceExists(ctx context.Context, name string) error {
	if _, ok := s.namespaces.Load(name); ok {
		return nil
	}
	var got string
	err := s.query(ctx, `SELECT name FROM {ks}.namespaces WHERE name = ?`, name).Scan(&got)
	if errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("%w: %q", store.ErrNamespaceNotFound, name)
	}
	if err != nil {
		return fmt.Errorf("cassandra: read namespace %q: %w", name, err)
	}
	s.namespaces.Store(name, true)
	return nil
}

// GetCurrentExecution implements store.ExecutionStore.
func (s *Store) GetCurrentExecution(ctx context.Context, shardID int32, namespace, workflowID string) (store.CurrentExecution, error) {
	c := store.CurrentExecution{Namespace: namespace, WorkflowID: workflowID}
	if namespace == "" || workflowID == "" {
		return c, store.InvalidArgument("workflow", "namespace and workflow id must be set")
	}
	var state, status int
	var start int64
	err := s.query(ctx, `SELECT current_run_id, create_request_id, state, status, last_write_version, start_time FROM {ks}.executions WHERE `+keyWhere,
		currentRow(namespace, workflowID).args(shardID)...).Scan(&c.RunID, &c.CreateRequestID, &state, &status, &c.LastWriteVersion, &start)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && c.RunID == "") {
		return c, fmt.Errorf("%w: current run of %s/%s", store.ErrNotFound, namespace, workflowID)
	}
	if err != nil {
		return c, fmt.Errorf("cassandra: read current run of %s/%s: %w", namespace, workflowID, err)
	}
	c.State, c.Status, c.StartTime = store.RunState(state), store.RunStatus(status), store.FromUnixMilli(start)
	return c, nil
}

// GetExecution implements store.ExecutionStore.
func (s *Store) GetExecution(ctx context.Context, shardID int32, run store.RunKey) (*store.Execution, error) {
	if err := run.Validate("run"); err != nil {
		return nil, err
	}
	next, version, data, sum, err := s.readRun(ctx, shardID, run)
	if err != nil {
		return nil, err
	}
	return codec.DecodeExecution(data, sum, run, next, version)
}

func (s *Store) readRun(ctx context.Context, shardID int32, run store.RunKey) (next, version int64, data []byte, sum int64, err error) {
	err = s.query(ctx, `SELECT next_event_id, db_version, data, checksum FROM {ks}.executions WHERE `+keyWhere, runRow(run).args(shardID)...).
		Scan(&next, &version, &data, &sum)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && version == 0) {
		return 0, 0, nil, 0, fmt.Errorf("%w: run %s", store.ErrNotFound, run)
	}
	if err != nil {
		return 0, 0, nil, 0, fmt.Errorf("cassandra: read run %s: %w", run, err)
	}
	return next, version, data, sum, nil
}

// ReadHistory implements store.ExecutionStore. The run's row names the
// committed block of each first event id (its history map, written by the
// same conditional batch that advanced next_event_id); only those blocks
// are returned, so neither a block written ahead of a failed batch nor one
// of a stale writer is ever seen.
func (s *Store) ReadHistory(ctx context.Context, req store.ReadHistoryRequest) (store.HistoryPage, error) {
	var page store.HistoryPage
	if err := req.Validate(); err != nil {
		return page, err
	}
	from := max(req.FromEventID, 1)
	curNext, err := codec.DecodeHistoryToken(req.PageToken)
	if err != nil {
		return page, err
	}
	k := req.Run
	var next, version int64
	var committed map[int64]gocql.UUID
	err = s.query(ctx, `SELECT next_event_id, db_version, history FROM {ks}.executions WHERE `+keyWhere, runRow(k).args(req.ShardID)...).
		Scan(&next, &version, &committed)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && version == 0) {
		return page, fmt.Errorf("%w: run %s", store.ErrNotFound, k)
	}
	if err != nil {
		return page, fmt.Errorf("cassandra: read run %s: %w", k, err)
	}
	firsts := make([]int64, 0, len(committed))
	for f := range committed {
		if f < next {
			firsts = append(firsts, f)
		}
	}
	slices.Sort(firsts)
	// The first block wanted: the cursor's, or the one holding from (the
	// last starting at or before it).
	i := 0
	if curNext != 0 {
		i, _ = slices.BinarySearch(firsts, curNext)
	} else if j, found := slices.BinarySearch(firsts, from); found {
		i = j
	} else if j > 0 {
		i = j - 1
	}
	size := store.PageSize(req.PageSize, 100)
	want := firsts[i:min(len(firsts), i+size)]
	if i+size < len(firsts) {
		page.NextPageToken = codec.EncodeHistoryToken(firsts[i+size])
	}
	if len(want) == 0 {
		return page, nil
	}
	iter := s.query(ctx, `SELECT first_event_id, commit_id, txn_id, last_event_id, data FROM {ks}.history
		WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ? AND first_event_id >= ? AND first_event_id <= ?`,
		req.ShardID, k.Namespace, k.WorkflowID, k.RunID, want[0], want[len(want)-1]).Iter()
	var h store.HistoryBlock
	var id gocql.UUID
	var data []byte
	found := 0
	for iter.Scan(&h.FirstEventID, &id, &h.TxnID, &h.LastEventID, &data) {
		if committed[h.FirstEventID] != id {
			continue // another attempt's block
		}
		found++
		if h.LastEventID < from {
			continue
		}
		events, err := codec.Decompress(data)
		if err != nil {
			_ = iter.Close()
			return page, fmt.Errorf("%w: history block %d of %s: %v", store.ErrChecksumMismatch, h.FirstEventID, k, err)
		}
		b := h
		b.Events = events
		page.Blocks = append(page.Blocks, b)
	}
	if err := iter.Close(); err != nil {
		return page, fmt.Errorf("cassandra: read history %s: %w", k, err)
	}
	if found != len(want) {
		return page, fmt.Errorf("%w: history of %s: %d of %d committed blocks found", store.ErrChecksumMismatch, k, found, len(want))
	}
	return page, nil
}

// taskRangeWhere selects a task range inside the shard's partition; a zero
// Max is unbounded.
func taskRangeWhere(shardID int32, r store.TaskRange) (string, []any) {
	typ, ns, wf, run := taskPartition(r.Category, r.Partition)
	where := `shard_id = ? AND type = ? AND namespace = ? AND workflow_id = ? AND run_id = ? AND (visibility_ts, task_id) >= (?, ?)`
	args := []any{shardID, typ, ns, wf, run, taskTS(r.Category, r.Min), r.Min.TaskID}
	if r.Max != (store.TaskKey{}) {
		where += ` AND (visibility_ts, task_id) < (?, ?)`
		args = append(args, taskTS(r.Category, r.Max), r.Max.TaskID)
	}
	return where, args
}

// ReadTasks implements store.ExecutionStore: a range read inside the shard's
// partition, by task id (or fire time and task id for timers).
func (s *Store) ReadTasks(ctx context.Context, req store.ReadTasksRequest) (store.TaskPage, error) {
	var page store.TaskPage
	if err := req.Validate(); err != nil {
		return page, err
	}
	r := req.Range
	if err := codec.DecodeTaskToken(req.PageToken, &r.Min); err != nil {
		return page, err
	}
	size := store.PageSize(req.PageSize, 100)
	where, args := taskRangeWhere(req.ShardID, r)
	iter := s.query(ctx, `SELECT visibility_ts, task_id, task_type, task_namespace, task_workflow_id, task_run_id, data
		FROM {ks}.executions WHERE `+where+` LIMIT ?`, append(args, size+1)...).Iter()
	for {
		t := store.Task{Category: r.Category, Partition: r.Partition}
		var ts int64
		var typ int
		if !iter.Scan(&ts, &t.Key.TaskID, &typ, &t.Run.Namespace, &t.Run.WorkflowID, &t.Run.RunID, &t.Data) {
			break
		}
		t.Type = int16(typ)
		if r.Category == store.CategoryTimer {
			t.Key.FireTime = store.FromUnixMilli(ts)
		}
		if len(t.Data) == 0 {
			t.Data = nil
		}
		if len(page.Tasks) == size {
			page.NextPageToken = codec.EncodeTaskToken(t.Key)
			break
		}
		page.Tasks = append(page.Tasks, t)
	}
	if err := iter.Close(); err != nil {
		return page, fmt.Errorf("cassandra: read tasks: %w", err)
	}
	return page, nil
}

// GetRequest implements store.ExecutionStore.
func (s *Store) GetRequest(ctx context.Context, shardID int32, key store.RequestKey) (store.Request, error) {
	r := store.Request{Kind: key.Kind, Namespace: key.Namespace, WorkflowID: key.WorkflowID, RequestID: key.RequestID}
	if err := key.Validate(); err != nil {
		return r, err
	}
	var created, expires int64
	err := s.query(ctx, `SELECT current_run_id, created_at, expires_at FROM {ks}.executions WHERE `+keyWhere, requestRow(key).args(shardID)...).
		Scan(&r.RunID, &created, &expires)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && expires <= store.UnixMilli(store.Now())) {
		return r, fmt.Errorf("%w: %s request %q", store.ErrNotFound, key.Kind, key.RequestID)
	}
	if err != nil {
		return r, fmt.Errorf("cassandra: read request: %w", err)
	}
	r.CreatedAt, r.ExpiresAt = store.FromUnixMilli(created), store.FromUnixMilli(expires)
	return r, nil
}

// PurgeExpiredRequests implements store.ExecutionStore. Each expired row is
// deleted on condition that it is still the expired one, so a row replaced
// meanwhile survives.
func (s *Store) PurgeExpiredRequests(ctx context.Context, shardID int32, now time.Time) (int, error) {
	if shardID < 0 {
		return 0, store.InvalidArgument("shard_id", "negative")
	}
	cutoff := store.UnixMilli(now)
	n := 0
	for kind := store.RequestStart; kind <= store.RequestTerminate; kind++ {
		typ := requestType(kind)
		iter := s.query(ctx, `SELECT namespace, workflow_id, run_id, expires_at FROM {ks}.executions WHERE shard_id = ? AND type = ?`, shardID, typ).Iter()
		var k rowKey
		var expires int64
		type staleRow struct {
			key     rowKey
			expires int64
		}
		var stale []staleRow
		for iter.Scan(&k.namespace, &k.workflowID, &k.runID, &expires) {
			if expires <= cutoff {
				k.typ, k.ts, k.taskID = typ, placeholderTS, 0
				stale = append(stale, staleRow{k, expires})
			}
		}
		if err := iter.Close(); err != nil {
			return n, fmt.Errorf("cassandra: purge requests: %w", err)
		}
		for _, st := range stale {
			applied, err := s.query(ctx, `DELETE FROM {ks}.executions WHERE `+keyWhere+` IF expires_at = ?`, append(st.key.args(shardID), st.expires)...).
				MapScanCAS(map[string]any{})
			if err != nil {
				return n, fmt.Errorf("cassandra: purge requests: %w", err)
			}
			if applied {
				n++
			}
		}
	}
	return n, nil
}

// GetDocument implements store.ExecutionStore: the metadata row in the
// shard's partition says the document was committed; the bytes come from
// document_blobs.
func (s *Store) GetDocument(ctx context.Context, shardID int32, run store.RunKey, id string) ([]byte, store.DocumentInfo, error) {
	info := store.DocumentInfo{Run: run, ID: id}
	if err := run.Validate("run"); err != nil {
		return nil, info, err
	}
	if id == "" {
		return nil, info, store.InvalidArgument("id", "empty")
	}
	var created int64
	err := s.query(ctx, `SELECT size, stored_size, created_at FROM {ks}.executions WHERE `+keyWhere, documentRow(run, id).args(shardID)...).
		Scan(&info.Size, &info.StoredSize, &created)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, info, fmt.Errorf("%w: document %s of %s", store.ErrNotFound, id, run)
	}
	if err != nil {
		return nil, info, fmt.Errorf("cassandra: read document: %w", err)
	}
	info.CreatedAt = store.FromUnixMilli(created)
	var blob []byte
	err = s.query(ctx, `SELECT data FROM {ks}.document_blobs WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ? AND id = ?`,
		shardID, run.Namespace, run.WorkflowID, run.RunID, id).Scan(&blob)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, info, fmt.Errorf("%w: document %s of %s: bytes missing", store.ErrChecksumMismatch, id, run)
	}
	if err != nil {
		return nil, info, fmt.Errorf("cassandra: read document: %w", err)
	}
	data, err := codec.Decompress(blob)
	if err != nil || int64(len(data)) != info.Size {
		return nil, info, fmt.Errorf("%w: document %s of %s", store.ErrChecksumMismatch, id, run)
	}
	return data, info, nil
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case time.Time:
		return x.UnixMilli()
	}
	return 0
}

func toInt(v any) int { return int(toInt64(v)) }

func toString(v any) string {
	s, _ := v.(string)
	return s
}
