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

// AcquireShard implements store.ExecutionStore.
func (s *Store) AcquireShard(ctx context.Context, req store.AcquireShardRequest) (store.Shard, error) {
	if err := req.Validate(); err != nil {
		return store.Shard{}, err
	}
	var sh store.Shard
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		cur, err := s.lockShard(ctx, tx, req.ShardID)
		now := store.Now()
		switch {
		case errors.Is(err, store.ErrShardNotFound):
			if req.PrevRangeID != 0 {
				return &store.ShardOwnershipLostError{ShardID: req.ShardID, ExpectedRangeID: req.PrevRangeID}
			}
			sh = store.Shard{ID: req.ShardID, RangeID: 1, Owner: req.Owner, UpdatedAt: now}
			res, err := s.exec(ctx, tx, `INSERT INTO shards (shard_id, range_id, owner, ack_levels, updated_at)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT (shard_id) DO NOTHING`,
				sh.ID, sh.RangeID, sh.Owner, codec.Marshal(sh.AckLevels), store.UnixMilli(now))
			if err != nil {
				return fmt.Errorf("%s: create shard %d: %w", s.d.Name, req.ShardID, err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				// Another process created it between our read and insert.
				return &store.ShardOwnershipLostError{ShardID: req.ShardID}
			}
			return nil
		case err != nil:
			return err
		}
		if req.PrevRangeID != 0 && cur.RangeID != req.PrevRangeID {
			return &store.ShardOwnershipLostError{ShardID: req.ShardID, ExpectedRangeID: req.PrevRangeID, ActualRangeID: cur.RangeID}
		}
		sh = cur
		sh.RangeID++
		sh.Owner = req.Owner
		sh.UpdatedAt = now
		_, err = s.exec(ctx, tx, `UPDATE shards SET range_id = ?, owner = ?, updated_at = ? WHERE shard_id = ?`,
			sh.RangeID, sh.Owner, store.UnixMilli(now), sh.ID)
		if err != nil {
			return fmt.Errorf("%s: acquire shard %d: %w", s.d.Name, req.ShardID, err)
		}
		return nil
	})
	return sh, err
}

// GetShard implements store.ExecutionStore.
func (s *Store) GetShard(ctx context.Context, shardID int32) (store.Shard, error) {
	return s.scanShard(s.read.QueryRowContext(ctx, s.q(`SELECT shard_id, range_id, owner, ack_levels, updated_at FROM shards WHERE shard_id = ?`), shardID), shardID)
}

// lockShard reads the shard row inside a write transaction, locking it until
// the transaction ends, so every write of a shard is serialized behind the
// range_id check.
func (s *Store) lockShard(ctx context.Context, tx *sql.Tx, shardID int32) (store.Shard, error) {
	return s.scanShard(tx.QueryRowContext(ctx, s.q(`SELECT shard_id, range_id, owner, ack_levels, updated_at FROM shards WHERE shard_id = ?`+s.d.ForUpdate), shardID), shardID)
}

func (s *Store) scanShard(row *sql.Row, shardID int32) (store.Shard, error) {
	var sh store.Shard
	var acks []byte
	var updated int64
	if err := row.Scan(&sh.ID, &sh.RangeID, &sh.Owner, &acks, &updated); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return sh, fmt.Errorf("%w: %d", store.ErrShardNotFound, shardID)
		}
		return sh, fmt.Errorf("%s: read shard %d: %w", s.d.Name, shardID, err)
	}
	if err := codec.Unmarshal(acks, &sh.AckLevels); err != nil {
		return sh, fmt.Errorf("%s: shard %d ack levels: %w", s.d.Name, shardID, err)
	}
	sh.UpdatedAt = store.FromUnixMilli(updated)
	return sh, nil
}

// Commit implements store.ExecutionStore.
func (s *Store) Commit(ctx context.Context, b *store.Batch) error {
	if b == nil {
		return store.InvalidArgument("batch", "nil")
	}
	if err := b.Validate(s.limits); err != nil {
		return err
	}
	// Encode outside the transaction: it holds the shard lock.
	states, err := codec.EncodeRuns(b, s.limits)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		sh, err := s.lockShard(ctx, tx, b.ShardID)
		if err != nil {
			return err
		}
		if sh.RangeID != b.RangeID {
			return &store.ShardOwnershipLostError{ShardID: b.ShardID, ExpectedRangeID: b.RangeID, ActualRangeID: sh.RangeID}
		}
		now := store.Now()
		for i, w := range b.Runs {
			if err := s.writeRun(ctx, tx, b.ShardID, w, states[i], now); err != nil {
				return err
			}
		}
		if err := s.insertTasks(ctx, tx, b.ShardID, b.Tasks); err != nil {
			return err
		}
		for _, r := range b.Requests {
			if err := s.insertRequest(ctx, tx, b.ShardID, r); err != nil {
				return err
			}
		}
		for _, d := range b.Documents {
			if err := s.insertDocument(ctx, tx, b.ShardID, d, now); err != nil {
				return err
			}
		}
		for _, r := range b.CompleteTasks {
			where, args := taskRangeWhere(b.ShardID, r)
			if _, err := s.exec(ctx, tx, `DELETE FROM tasks WHERE `+where, args...); err != nil {
				return fmt.Errorf("%s: complete tasks: %w", s.d.Name, err)
			}
		}
		if b.AckLevels != nil {
			if _, err := s.exec(ctx, tx, `UPDATE shards SET ack_levels = ?, updated_at = ? WHERE shard_id = ?`,
				codec.Marshal(b.AckLevels), store.UnixMilli(now), b.ShardID); err != nil {
				return fmt.Errorf("%s: update ack levels: %w", s.d.Name, err)
			}
		}
		for _, k := range b.DeleteRuns {
			if err := s.deleteRun(ctx, tx, b.ShardID, k); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) writeRun(ctx context.Context, tx *sql.Tx, shardID int32, w store.RunWrite, state codec.EncodedExecution, now time.Time) error {
	e := w.Execution
	key := e.RunKey
	if w.Current == store.CurrentCreate || w.Current == store.CurrentReplace {
		if err := s.namespaceExists(ctx, tx, key.Namespace); err != nil {
			return err
		}
	}
	switch w.Current {
	case store.CurrentCreate:
		res, err := s.exec(ctx, tx, `INSERT INTO current_executions
			(shard_id, namespace, workflow_id, run_id, create_request_id, state, status, last_write_version, start_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shard_id, namespace, workflow_id) DO NOTHING`,
			shardID, key.Namespace, key.WorkflowID, key.RunID, e.Info.CreateRequestID, e.State, e.Status, e.LastWriteVersion, store.UnixMilli(e.Info.StartTime))
		if err != nil {
			return fmt.Errorf("%s: create current %s: %w", s.d.Name, key, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			cur, err := s.currentExecution(ctx, tx, shardID, key.Namespace, key.WorkflowID)
			if err != nil {
				return err
			}
			return &store.WorkflowExistsError{Current: cur}
		}
	case store.CurrentReplace:
		res, err := s.exec(ctx, tx, `UPDATE current_executions SET run_id = ?, create_request_id = ?, state = ?, status = ?,
			last_write_version = ?, start_time = ? WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`,
			key.RunID, e.Info.CreateRequestID, e.State, e.Status, e.LastWriteVersion, store.UnixMilli(e.Info.StartTime),
			shardID, key.Namespace, key.WorkflowID, w.PrevRunID)
		if err != nil {
			return fmt.Errorf("%s: replace current %s: %w", s.d.Name, key, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return &store.ConditionFailedError{Run: key, Reason: fmt.Sprintf("current run is not %s", w.PrevRunID)}
		}
	case store.CurrentUpdate:
		res, err := s.exec(ctx, tx, `UPDATE current_executions SET state = ?, status = ?, last_write_version = ?
			WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`,
			e.State, e.Status, e.LastWriteVersion, shardID, key.Namespace, key.WorkflowID, key.RunID)
		if err != nil {
			return fmt.Errorf("%s: update current %s: %w", s.d.Name, key, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return &store.ConditionFailedError{Run: key, Reason: "run is not current"}
		}
	}

	var res sql.Result
	var err error
	if w.ExpectedDBVersion == 0 {
		res, err = s.exec(ctx, tx, `INSERT INTO executions
			(shard_id, namespace, workflow_id, run_id, state, status, next_event_id, db_version, last_write_version, data, checksum, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shard_id, namespace, workflow_id, run_id) DO NOTHING`,
			shardID, key.Namespace, key.WorkflowID, key.RunID, e.State, e.Status, e.NextEventID, e.DBVersion, e.LastWriteVersion, state.Blob, state.Checksum, store.UnixMilli(now))
	} else {
		res, err = s.exec(ctx, tx, `UPDATE executions SET state = ?, status = ?, next_event_id = ?, db_version = ?,
			last_write_version = ?, data = ?, checksum = ?, updated_at = ?
			WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ? AND db_version = ?`,
			e.State, e.Status, e.NextEventID, e.DBVersion, e.LastWriteVersion, state.Blob, state.Checksum, store.UnixMilli(now),
			shardID, key.Namespace, key.WorkflowID, key.RunID, w.ExpectedDBVersion)
	}
	if err != nil {
		return fmt.Errorf("%s: write run %s: %w", s.d.Name, key, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		if w.ExpectedDBVersion == 0 {
			return &store.ConditionFailedError{Run: key, Reason: "run exists"}
		}
		return &store.ConditionFailedError{Run: key, Reason: fmt.Sprintf("db_version is not %d", w.ExpectedDBVersion)}
	}

	if len(w.History) > 0 {
		args := make([]any, 0, 8*len(w.History))
		for _, h := range w.History {
			args = append(args, shardID, key.Namespace, key.WorkflowID, key.RunID, h.FirstEventID, h.LastEventID, h.TxnID, codec.Compress(h.Events, true))
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO history
			(shard_id, namespace, workflow_id, run_id, first_event_id, last_event_id, txn_id, data) VALUES `+placeholders(8, len(w.History))+`
			ON CONFLICT (shard_id, namespace, workflow_id, run_id, first_event_id)
			DO UPDATE SET last_event_id = excluded.last_event_id, txn_id = excluded.txn_id, data = excluded.data`, args...); err != nil {
			return fmt.Errorf("%s: append history %s: %w", s.d.Name, key, err)
		}
	}
	return nil
}

func (s *Store) namespaceExists(ctx context.Context, tx *sql.Tx, name string) error {
	var one int
	err := tx.QueryRowContext(ctx, s.q(`SELECT 1 FROM namespaces WHERE name = ?`), name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %q", store.ErrNamespaceNotFound, name)
	}
	if err != nil {
		return fmt.Errorf("%s: read namespace %q: %w", s.d.Name, name, err)
	}
	return nil
}

func (s *Store) insertTasks(ctx context.Context, tx *sql.Tx, shardID int32, tasks []store.Task) error {
	if len(tasks) == 0 {
		return nil
	}
	args := make([]any, 0, 10*len(tasks))
	for _, t := range tasks {
		args = append(args, shardID, t.Category, t.Partition, store.UnixMilli(t.Key.FireTime), t.Key.TaskID, t.Type,
			t.Run.Namespace, t.Run.WorkflowID, t.Run.RunID, nonNil(t.Data))
	}
	_, err := s.exec(ctx, tx, `INSERT INTO tasks
		(shard_id, category, partition, fire_time, task_id, type, namespace, workflow_id, run_id, data) VALUES `+placeholders(10, len(tasks))+`
		ON CONFLICT (shard_id, category, partition, fire_time, task_id)
		DO UPDATE SET type = excluded.type, namespace = excluded.namespace, workflow_id = excluded.workflow_id,
		run_id = excluded.run_id, data = excluded.data`, args...)
	if err != nil {
		return fmt.Errorf("%s: insert tasks: %w", s.d.Name, err)
	}
	return nil
}

func (s *Store) insertRequest(ctx context.Context, tx *sql.Tx, shardID int32, r store.Request) error {
	// An expired row is replaced; an unexpired one blocks the batch.
	res, err := s.exec(ctx, tx, `INSERT INTO requests
		(shard_id, namespace, workflow_id, kind, request_id, run_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (shard_id, namespace, workflow_id, kind, request_id)
		DO UPDATE SET run_id = excluded.run_id, created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE requests.expires_at <= ?`,
		shardID, r.Namespace, r.WorkflowID, r.Kind, r.RequestID, r.RunID, store.UnixMilli(r.CreatedAt), store.UnixMilli(r.ExpiresAt),
		store.UnixMilli(store.Now()))
	if err != nil {
		return fmt.Errorf("%s: insert request: %w", s.d.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	existing, err := s.getRequest(ctx, tx, shardID, r.Key(), time.Time{})
	if err != nil {
		return err
	}
	return &store.DuplicateRequestError{Existing: existing}
}

func (s *Store) insertDocument(ctx context.Context, tx *sql.Tx, shardID int32, d store.Document, now time.Time) error {
	blob := codec.Compress(d.Data, false)
	k := d.Run
	res, err := s.exec(ctx, tx, `INSERT INTO documents (shard_id, namespace, workflow_id, run_id, id, size, stored_size, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shard_id, namespace, workflow_id, run_id, id) DO NOTHING`,
		shardID, k.Namespace, k.WorkflowID, k.RunID, d.ID, len(d.Data), len(blob), store.UnixMilli(now))
	if err != nil {
		return fmt.Errorf("%s: insert document: %w", s.d.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // stored already: its id is its content hash
	}
	if _, err := s.exec(ctx, tx, `INSERT INTO document_blobs (shard_id, namespace, workflow_id, run_id, id, data)
		VALUES (?, ?, ?, ?, ?, ?)`, shardID, k.Namespace, k.WorkflowID, k.RunID, d.ID, blob); err != nil {
		return fmt.Errorf("%s: insert document bytes: %w", s.d.Name, err)
	}
	return nil
}

func (s *Store) deleteRun(ctx context.Context, tx *sql.Tx, shardID int32, k store.RunKey) error {
	for _, table := range []string{"executions", "history", "documents", "document_blobs", "current_executions"} {
		if _, err := s.exec(ctx, tx, `DELETE FROM `+table+` WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`,
			shardID, k.Namespace, k.WorkflowID, k.RunID); err != nil {
			return fmt.Errorf("%s: delete run %s from %s: %w", s.d.Name, k, table, err)
		}
	}
	return nil
}

// GetCurrentExecution implements store.ExecutionStore.
func (s *Store) GetCurrentExecution(ctx context.Context, shardID int32, namespace, workflowID string) (store.CurrentExecution, error) {
	if namespace == "" || workflowID == "" {
		return store.CurrentExecution{}, store.InvalidArgument("workflow", "namespace and workflow id must be set")
	}
	return s.currentExecution(ctx, s.read, shardID, namespace, workflowID)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) currentExecution(ctx context.Context, q queryer, shardID int32, namespace, workflowID string) (store.CurrentExecution, error) {
	c := store.CurrentExecution{Namespace: namespace, WorkflowID: workflowID}
	var start int64
	err := q.QueryRowContext(ctx, s.q(`SELECT run_id, create_request_id, state, status, last_write_version, start_time
		FROM current_executions WHERE shard_id = ? AND namespace = ? AND workflow_id = ?`), shardID, namespace, workflowID).
		Scan(&c.RunID, &c.CreateRequestID, &c.State, &c.Status, &c.LastWriteVersion, &start)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%w: current run of %s/%s", store.ErrNotFound, namespace, workflowID)
	}
	if err != nil {
		return c, fmt.Errorf("%s: read current run of %s/%s: %w", s.d.Name, namespace, workflowID, err)
	}
	c.StartTime = store.FromUnixMilli(start)
	return c, nil
}

// GetExecution implements store.ExecutionStore.
func (s *Store) GetExecution(ctx context.Context, shardID int32, run store.RunKey) (*store.Execution, error) {
	if err := run.Validate("run"); err != nil {
		return nil, err
	}
	var next, version, sum int64
	var data []byte
	err := s.read.QueryRowContext(ctx, s.q(`SELECT next_event_id, db_version, data, checksum FROM executions
		WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`), shardID, run.Namespace, run.WorkflowID, run.RunID).
		Scan(&next, &version, &data, &sum)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: run %s", store.ErrNotFound, run)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read run %s: %w", s.d.Name, run, err)
	}
	return codec.DecodeExecution(data, sum, run, next, version)
}

// ReadHistory implements store.ExecutionStore.
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
	size := store.PageSize(req.PageSize, 100)
	k := req.Run
	// The bound on next_event_id hides blocks that no committed write
	// confirmed.
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT first_event_id, last_event_id, txn_id, data FROM history
		WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ? AND last_event_id >= ? AND first_event_id >= ?
		AND last_event_id < (SELECT next_event_id FROM executions WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?)
		ORDER BY first_event_id LIMIT ?`),
		req.ShardID, k.Namespace, k.WorkflowID, k.RunID, from, curNext,
		req.ShardID, k.Namespace, k.WorkflowID, k.RunID, size+1)
	if err != nil {
		return page, fmt.Errorf("%s: read history %s: %w", s.d.Name, k, err)
	}
	defer rows.Close()
	for rows.Next() {
		var h store.HistoryBlock
		var data []byte
		if err := rows.Scan(&h.FirstEventID, &h.LastEventID, &h.TxnID, &data); err != nil {
			return page, fmt.Errorf("%s: read history %s: %w", s.d.Name, k, err)
		}
		if len(page.Blocks) == size {
			page.NextPageToken = codec.EncodeHistoryToken(h.FirstEventID)
			break
		}
		if h.Events, err = codec.Decompress(data); err != nil {
			return page, fmt.Errorf("%w: history block %d of %s: %v", store.ErrChecksumMismatch, h.FirstEventID, k, err)
		}
		page.Blocks = append(page.Blocks, h)
	}
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("%s: read history %s: %w", s.d.Name, k, err)
	}
	if len(page.Blocks) == 0 && len(req.PageToken) == 0 {
		var one int
		err := s.read.QueryRowContext(ctx, s.q(`SELECT 1 FROM executions WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`),
			req.ShardID, k.Namespace, k.WorkflowID, k.RunID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return page, fmt.Errorf("%w: run %s", store.ErrNotFound, k)
		}
		if err != nil {
			return page, fmt.Errorf("%s: read run %s: %w", s.d.Name, k, err)
		}
	}
	return page, nil
}

// taskRangeWhere selects a task range; a zero Max is unbounded.
func taskRangeWhere(shardID int32, r store.TaskRange) (string, []any) {
	where := `shard_id = ? AND category = ? AND partition = ? AND (fire_time, task_id) >= (?, ?)`
	args := []any{shardID, r.Category, r.Partition, store.UnixMilli(r.Min.FireTime), r.Min.TaskID}
	if r.Max != (store.TaskKey{}) {
		where += ` AND (fire_time, task_id) < (?, ?)`
		args = append(args, store.UnixMilli(r.Max.FireTime), r.Max.TaskID)
	}
	return where, args
}

// ReadTasks implements store.ExecutionStore.
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
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT fire_time, task_id, type, namespace, workflow_id, run_id, data FROM tasks
		WHERE `+where+` ORDER BY fire_time, task_id LIMIT ?`), append(args, size+1)...)
	if err != nil {
		return page, fmt.Errorf("%s: read tasks: %w", s.d.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		t := store.Task{Category: r.Category, Partition: r.Partition}
		var fire int64
		if err := rows.Scan(&fire, &t.Key.TaskID, &t.Type, &t.Run.Namespace, &t.Run.WorkflowID, &t.Run.RunID, &t.Data); err != nil {
			return page, fmt.Errorf("%s: read tasks: %w", s.d.Name, err)
		}
		t.Key.FireTime = store.FromUnixMilli(fire)
		if len(t.Data) == 0 {
			t.Data = nil // empty reads back as nil on every backend
		}
		if len(page.Tasks) == size {
			page.NextPageToken = codec.EncodeTaskToken(t.Key)
			break
		}
		page.Tasks = append(page.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("%s: read tasks: %w", s.d.Name, err)
	}
	return page, nil
}

// GetRequest implements store.ExecutionStore.
func (s *Store) GetRequest(ctx context.Context, shardID int32, key store.RequestKey) (store.Request, error) {
	if err := key.Validate(); err != nil {
		return store.Request{}, err
	}
	return s.getRequest(ctx, s.read, shardID, key, store.Now())
}

// getRequest reads a dedup row; with a non-zero now, expired rows are not
// found.
func (s *Store) getRequest(ctx context.Context, q queryer, shardID int32, key store.RequestKey, now time.Time) (store.Request, error) {
	r := store.Request{Kind: key.Kind, Namespace: key.Namespace, WorkflowID: key.WorkflowID, RequestID: key.RequestID}
	var created, expires int64
	err := q.QueryRowContext(ctx, s.q(`SELECT run_id, created_at, expires_at FROM requests
		WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND kind = ? AND request_id = ? AND expires_at > ?`),
		shardID, key.Namespace, key.WorkflowID, key.Kind, key.RequestID, store.UnixMilli(now)).Scan(&r.RunID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("%w: %s request %q", store.ErrNotFound, key.Kind, key.RequestID)
	}
	if err != nil {
		return r, fmt.Errorf("%s: read request: %w", s.d.Name, err)
	}
	r.CreatedAt, r.ExpiresAt = store.FromUnixMilli(created), store.FromUnixMilli(expires)
	return r, nil
}

// PurgeExpiredRequests implements store.ExecutionStore.
func (s *Store) PurgeExpiredRequests(ctx context.Context, shardID int32, now time.Time) (int, error) {
	res, err := s.write.ExecContext(ctx, s.q(`DELETE FROM requests WHERE shard_id = ? AND expires_at <= ?`), shardID, store.UnixMilli(now))
	if err != nil {
		return 0, fmt.Errorf("%s: purge requests: %w", s.d.Name, err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// GetDocument implements store.ExecutionStore.
func (s *Store) GetDocument(ctx context.Context, shardID int32, run store.RunKey, id string) ([]byte, store.DocumentInfo, error) {
	info := store.DocumentInfo{Run: run, ID: id}
	if err := run.Validate("run"); err != nil {
		return nil, info, err
	}
	if id == "" {
		return nil, info, store.InvalidArgument("id", "empty")
	}
	var created int64
	var blob []byte
	err := s.read.QueryRowContext(ctx, s.q(`SELECT d.size, d.stored_size, d.created_at, b.data FROM documents d
		JOIN document_blobs b ON b.shard_id = d.shard_id AND b.namespace = d.namespace AND b.workflow_id = d.workflow_id
		AND b.run_id = d.run_id AND b.id = d.id
		WHERE d.shard_id = ? AND d.namespace = ? AND d.workflow_id = ? AND d.run_id = ? AND d.id = ?`),
		shardID, run.Namespace, run.WorkflowID, run.RunID, id).Scan(&info.Size, &info.StoredSize, &created, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, info, fmt.Errorf("%w: document %s of %s", store.ErrNotFound, id, run)
	}
	if err != nil {
		return nil, info, fmt.Errorf("%s: read document: %w", s.d.Name, err)
	}
	info.CreatedAt = store.FromUnixMilli(created)
	data, err := codec.Decompress(blob)
	if err != nil || int64(len(data)) != info.Size {
		return nil, info, fmt.Errorf("%w: document %s of %s", store.ErrChecksumMismatch, id, run)
	}
	return data, info, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
