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

// Commit implements store.ExecutionStore. It turns the batch into a list of
// statements with the checks their results must pass, then runs them in one
// transaction: one statement at a time, or pipelined where the dialect can
// (PostgreSQL), so a commit of many runs costs a few round trips.
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
	return s.explain(ctx, b.ShardID, s.runInTx(ctx, s.commitOps(b, states, store.Now())))
}

// Op is one statement of a commit: an exec whose affected rows Check
// inspects, or (Scan set) a query of one row.
type Op struct {
	// Query is in the dialect's placeholders already.
	Query string
	Args  []any
	// What names the statement in errors.
	What  string
	Check func(affected int64) error
	Scan  func(row Row) error
}

// Row is a result row; Scan returns sql.ErrNoRows when there is none.
type Row interface {
	Scan(dest ...any) error
}

// runOps runs ops one at a time in tx, stopping at the first failure.
func (s *Store) runOps(ctx context.Context, tx *sql.Tx, ops []Op) error {
	for _, o := range ops {
		if o.Scan != nil {
			if err := o.Scan(s.queryRow(ctx, tx, o.Query, o.Args...)); err != nil {
				return err
			}
			continue
		}
		res, err := s.exec(ctx, tx, o.Query, o.Args...)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", s.d.Name, o.What, err)
		}
		if o.Check != nil {
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("%s: %s: %w", s.d.Name, o.What, err)
			}
			if err := o.Check(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookupError is a failed check whose typed error needs a read, done after
// the transaction rolled back.
type lookupError struct {
	current *store.RunKey     // a create met an existing current run
	request *store.RequestKey // a request id was recorded already
}

func (e *lookupError) Error() string { return "sqlstore: condition needs a lookup" }

// explain turns a lookupError into the typed error it stands for.
func (s *Store) explain(ctx context.Context, shardID int32, err error) error {
	var le *lookupError
	if !errors.As(err, &le) {
		return err
	}
	switch {
	case le.current != nil:
		cur, cerr := s.currentExecution(ctx, s.write, shardID, le.current.Namespace, le.current.WorkflowID)
		if cerr != nil {
			return cerr
		}
		return &store.WorkflowExistsError{Current: cur}
	default:
		existing, gerr := s.getRequest(ctx, s.write, shardID, *le.request, time.Time{})
		if gerr != nil {
			return gerr
		}
		return &store.DuplicateRequestError{Existing: existing}
	}
}

// commitOps lists the statements of a batch.
func (s *Store) commitOps(b *store.Batch, states []codec.EncodedExecution, now time.Time) []Op {
	var ops []Op
	add := func(what, query string, check func(int64) error, args ...any) {
		ops = append(ops, Op{Query: s.q(query), Args: args, What: what, Check: check})
	}
	shardID := b.ShardID
	ops = append(ops, Op{Query: s.q(`SELECT range_id FROM shards WHERE shard_id = ?` + s.d.ForUpdate), Args: []any{shardID}, What: "lock shard",
		Scan: func(row Row) error {
			var rangeID int64
			if err := row.Scan(&rangeID); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("%w: %d", store.ErrShardNotFound, shardID)
				}
				return fmt.Errorf("%s: read shard %d: %w", s.d.Name, shardID, err)
			}
			if rangeID != b.RangeID {
				return &store.ShardOwnershipLostError{ShardID: shardID, ExpectedRangeID: b.RangeID, ActualRangeID: rangeID}
			}
			return nil
		}})
	var history []any
	for i, w := range b.Runs {
		ops = s.runWriteOps(ops, shardID, w, states[i], now)
		for _, h := range w.History {
			k := w.Execution.RunKey
			history = append(history, shardID, k.Namespace, k.WorkflowID, k.RunID, h.FirstEventID, h.LastEventID, h.TxnID, codec.Compress(h.Events, false))
		}
	}
	// The history blocks of every run in one statement.
	for rows, args := range rowChunks(8, history) {
		add("append history", `INSERT INTO history
			(shard_id, namespace, workflow_id, run_id, first_event_id, last_event_id, txn_id, data) VALUES `+placeholders(8, rows)+`
			ON CONFLICT (shard_id, namespace, workflow_id, run_id, first_event_id)
			DO UPDATE SET last_event_id = excluded.last_event_id, txn_id = excluded.txn_id, data = excluded.data`, nil, args...)
	}
	if len(b.Tasks) > 0 {
		tasks := make([]any, 0, 10*len(b.Tasks))
		for _, t := range b.Tasks {
			tasks = append(tasks, shardID, t.Category, t.Partition, store.UnixMilli(t.Key.FireTime), t.Key.TaskID, t.Type,
				t.Run.Namespace, t.Run.WorkflowID, t.Run.RunID, nonNil(t.Data))
		}
		for rows, args := range rowChunks(10, tasks) {
			add("insert tasks", `INSERT INTO tasks
				(shard_id, category, partition, fire_time, task_id, type, namespace, workflow_id, run_id, data) VALUES `+placeholders(10, rows)+`
				ON CONFLICT (shard_id, category, partition, fire_time, task_id)
				DO UPDATE SET type = excluded.type, namespace = excluded.namespace, workflow_id = excluded.workflow_id,
				run_id = excluded.run_id, data = excluded.data`, nil, args...)
		}
	}
	for _, r := range b.Requests {
		key := r.Key()
		// An expired row is replaced; an unexpired one blocks the batch.
		add("insert request", `INSERT INTO requests
			(shard_id, namespace, workflow_id, kind, request_id, run_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (shard_id, namespace, workflow_id, kind, request_id)
			DO UPDATE SET run_id = excluded.run_id, created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE requests.expires_at <= ?`,
			func(n int64) error {
				if n == 1 {
					return nil
				}
				return &lookupError{request: &key}
			},
			shardID, r.Namespace, r.WorkflowID, r.Kind, r.RequestID, r.RunID, store.UnixMilli(r.CreatedAt), store.UnixMilli(r.ExpiresAt),
			store.UnixMilli(now))
	}
	for _, d := range b.Documents {
		// The id is the content's hash: a document stored already is the same.
		blob := codec.Compress(d.Data, false)
		k := d.Run
		add("insert document", `INSERT INTO documents (shard_id, namespace, workflow_id, run_id, id, size, stored_size, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shard_id, namespace, workflow_id, run_id, id) DO NOTHING`, nil,
			shardID, k.Namespace, k.WorkflowID, k.RunID, d.ID, len(d.Data), len(blob), store.UnixMilli(now))
		add("insert document bytes", `INSERT INTO document_blobs (shard_id, namespace, workflow_id, run_id, id, data)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (shard_id, namespace, workflow_id, run_id, id) DO NOTHING`, nil,
			shardID, k.Namespace, k.WorkflowID, k.RunID, d.ID, blob)
	}
	for _, r := range b.CompleteTasks {
		where, args := taskRangeWhere(shardID, r)
		add("complete tasks", `DELETE FROM tasks WHERE `+where, nil, args...)
	}
	if b.AckLevels != nil {
		add("update ack levels", `UPDATE shards SET ack_levels = ?, updated_at = ? WHERE shard_id = ?`, nil,
			codec.Marshal(b.AckLevels), store.UnixMilli(now), shardID)
	}
	// Deleted runs: one statement per table for up to deleteChunk runs,
	// their keys joined to the table's key (the current row's key and its
	// run_id, so a current row that points at another run stays).
	for i := 0; i < len(b.DeleteRuns); i += deleteChunk {
		keys := b.DeleteRuns[i:min(i+deleteChunk, len(b.DeleteRuns))]
		args := make([]any, 0, 3*len(keys)+1)
		for _, k := range keys {
			args = append(args, k.Namespace, k.WorkflowID, k.RunID)
		}
		args = append(args, shardID)
		for _, table := range []string{"executions", "history", "documents", "document_blobs", "current_executions"} {
			add(fmt.Sprintf("delete %d runs from %s", len(keys), table), s.deleteRunsSQL(table, len(keys)), nil, args...)
		}
	}
	return ops
}

// deleteChunk bounds the runs one DELETE names (3 parameters each: SQLite
// allows 32766, PostgreSQL 65535).
const deleteChunk = 1000

// deleteRunsSQL deletes the rows of table that belong to n runs of one
// shard. Its parameters are the runs' namespace, workflow id and run id,
// then the shard id. The keys are a CTE joined to the table's primary key,
// so each run costs an index lookup. On SQLite the keys are the outer loop
// by CROSS JOIN: given the choice, SQLite 3.54 scans the shard's history
// and looks each row up in the keys (seconds for 1000 runs of a large
// table, against milliseconds).
func (s *Store) deleteRunsSQL(table string, n int) string {
	keys := `WITH k (namespace, workflow_id, run_id) AS (VALUES ` + placeholders(3, n) + `) `
	on := `t.shard_id = ? AND t.namespace = k.namespace AND t.workflow_id = k.workflow_id AND t.run_id = k.run_id`
	if s.d.RowIDs {
		return keys + `DELETE FROM ` + table + ` WHERE rowid IN (SELECT t.rowid FROM k CROSS JOIN ` + table + ` t WHERE ` + on + `)`
	}
	return keys + `DELETE FROM ` + table + ` t USING k WHERE ` + on
}

// runWriteOps appends the statements that write one run's current row and
// state (its history goes with every run's, in one statement).
func (s *Store) runWriteOps(ops []Op, shardID int32, w store.RunWrite, state codec.EncodedExecution, now time.Time) []Op {
	add := func(what, query string, check func(int64) error, args ...any) {
		ops = append(ops, Op{Query: s.q(query), Args: args, What: what, Check: check})
	}
	e := w.Execution
	key := e.RunKey
	one := func(fail func() error) func(int64) error {
		return func(n int64) error {
			if n != 1 {
				return fail()
			}
			return nil
		}
	}
	if w.Current == store.CurrentCreate || w.Current == store.CurrentReplace {
		ns := key.Namespace
		ops = append(ops, Op{Query: s.q(`SELECT 1 FROM namespaces WHERE name = ?`), Args: []any{ns}, What: "read namespace",
			Scan: func(row Row) error {
				var one int
				if err := row.Scan(&one); err != nil {
					if errors.Is(err, sql.ErrNoRows) {
						return fmt.Errorf("%w: %q", store.ErrNamespaceNotFound, ns)
					}
					return fmt.Errorf("%s: read namespace %q: %w", s.d.Name, ns, err)
				}
				return nil
			}})
	}
	switch w.Current {
	case store.CurrentCreate:
		add("create current "+key.String(), `INSERT INTO current_executions
			(shard_id, namespace, workflow_id, run_id, create_request_id, state, status, last_write_version, start_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shard_id, namespace, workflow_id) DO NOTHING`,
			one(func() error { return &lookupError{current: &key} }),
			shardID, key.Namespace, key.WorkflowID, key.RunID, e.Info.CreateRequestID, e.State, e.Status, e.LastWriteVersion, store.UnixMilli(e.Info.StartTime))
	case store.CurrentReplace:
		add("replace current "+key.String(), `UPDATE current_executions SET run_id = ?, create_request_id = ?, state = ?, status = ?,
			last_write_version = ?, start_time = ? WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`,
			one(func() error {
				return &store.ConditionFailedError{Run: key, Reason: fmt.Sprintf("current run is not %s", w.PrevRunID)}
			}),
			key.RunID, e.Info.CreateRequestID, e.State, e.Status, e.LastWriteVersion, store.UnixMilli(e.Info.StartTime),
			shardID, key.Namespace, key.WorkflowID, w.PrevRunID)
	case store.CurrentUpdate:
		add("update current "+key.String(), `UPDATE current_executions SET state = ?, status = ?, last_write_version = ?
			WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`,
			one(func() error { return &store.ConditionFailedError{Run: key, Reason: "run is not current"} }),
			e.State, e.Status, e.LastWriteVersion, shardID, key.Namespace, key.WorkflowID, key.RunID)
	}
	if w.ExpectedDBVersion == 0 {
		add("write run "+key.String(), `INSERT INTO executions
			(shard_id, namespace, workflow_id, run_id, state, status, next_event_id, db_version, last_write_version, data, checksum, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shard_id, namespace, workflow_id, run_id) DO NOTHING`,
			one(func() error { return &store.ConditionFailedError{Run: key, Reason: "run exists"} }),
			shardID, key.Namespace, key.WorkflowID, key.RunID, e.State, e.Status, e.NextEventID, e.DBVersion, e.LastWriteVersion, state.Blob, state.Checksum, store.UnixMilli(now))
	} else {
		add("write run "+key.String(), `UPDATE executions SET state = ?, status = ?, next_event_id = ?, db_version = ?,
			last_write_version = ?, data = ?, checksum = ?, updated_at = ?
			WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ? AND db_version = ?`,
			one(func() error {
				return &store.ConditionFailedError{Run: key, Reason: fmt.Sprintf("db_version is not %d", w.ExpectedDBVersion)}
			}),
			e.State, e.Status, e.NextEventID, e.DBVersion, e.LastWriteVersion, state.Blob, state.Checksum, store.UnixMilli(now),
			shardID, key.Namespace, key.WorkflowID, key.RunID, w.ExpectedDBVersion)
	}
	return ops
}

// GetCurrentExecution implements store.ExecutionStore.
func (s *Store) GetCurrentExecution(ctx context.Context, shardID int32, namespace, workflowID string) (store.CurrentExecution, error) {
	if namespace == "" || workflowID == "" {
		return store.CurrentExecution{}, store.InvalidArgument("workflow", "namespace and workflow id must be set")
	}
	return s.currentExecution(ctx, readQueryer{s}, shardID, namespace, workflowID)
}

// readQueryer reads one row on the read pool, prepared (Store.queryReadRow).
type readQueryer struct{ s *Store }

func (r readQueryer) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return r.s.queryReadRow(ctx, query, args...)
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
	err := s.queryReadRow(ctx, `SELECT next_event_id, db_version, data, checksum FROM executions
		WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`, shardID, run.Namespace, run.WorkflowID, run.RunID).
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
	rows, err := s.query(ctx, `SELECT first_event_id, last_event_id, txn_id, data FROM history
		WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ? AND last_event_id >= ? AND first_event_id >= ?
		AND last_event_id < (SELECT next_event_id FROM executions WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?)
		ORDER BY first_event_id LIMIT ?`,
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
		err := s.queryReadRow(ctx, `SELECT 1 FROM executions WHERE shard_id = ? AND namespace = ? AND workflow_id = ? AND run_id = ?`,
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
	err := s.queryReadRow(ctx, `SELECT d.size, d.stored_size, d.created_at, b.data FROM documents d
		JOIN document_blobs b ON b.shard_id = d.shard_id AND b.namespace = d.namespace AND b.workflow_id = d.workflow_id
		AND b.run_id = d.run_id AND b.id = d.id
		WHERE d.shard_id = ? AND d.namespace = ? AND d.workflow_id = ? AND d.run_id = ? AND d.id = ?`,
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
