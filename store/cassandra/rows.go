package cassandra

import (
	"fmt"
	"math"

	"github.com/strandhq/strand/store"
)

// Row types of the executions table, as seed 000 numbers them; 11 and 12
// are Strand's own (document metadata, terminate requests).
const (
	typeShard            = 0
	typeExecution        = 1
	typeTaskBase         = 1 // a task's type is typeTaskBase + its category: 2..6
	typeRequestBase      = 6 // a request's type is typeRequestBase + its kind: 7..10 (start to reset)
	typeDocument         = 11
	typeRequestTerminate = 12
)

// The seed's constant values for key columns a row type does not use.
const (
	placeholderTS         = 946684800000 // 2000-01-01 00:00:00 UTC, in ms
	currentRunID          = "30000000-0000-f000-f000-000000000001"
	shardTaskID           = -11
	executionTaskID       = -10
	shardNamespace        = "10000000-1000-f000-f000-000000000000"
	shardWorkflowID       = "20000000-1000-f000-f000-000000000000"
	shardRunID            = "30000000-1000-f000-f000-000000000000"
	minTimerTS      int64 = math.MinInt64
)

// rowKey is the primary key of one executions row, without shard_id.
type rowKey struct {
	typ        int
	namespace  string
	workflowID string
	runID      string
	ts         int64
	taskID     int64
}

// keyWhere selects one row by its whole primary key.
const keyWhere = `shard_id = ? AND type = ? AND namespace = ? AND workflow_id = ? AND run_id = ? AND visibility_ts = ? AND task_id = ?`

// args returns the values of keyWhere.
func (k rowKey) args(shardID int32) []any {
	return []any{shardID, k.typ, k.namespace, k.workflowID, k.runID, k.ts, k.taskID}
}

// id identifies a row in a conditional batch's result.
func (k rowKey) id() string {
	return fmt.Sprintf("%d\x00%s\x00%s\x00%s", k.typ, k.namespace, k.workflowID, k.runID)
}

func shardRow() rowKey {
	return rowKey{typeShard, shardNamespace, shardWorkflowID, shardRunID, placeholderTS, shardTaskID}
}

func currentRow(namespace, workflowID string) rowKey {
	return rowKey{typeExecution, namespace, workflowID, currentRunID, placeholderTS, executionTaskID}
}

func runRow(k store.RunKey) rowKey {
	return rowKey{typeExecution, k.Namespace, k.WorkflowID, k.RunID, placeholderTS, executionTaskID}
}

// taskPlaceholders returns the seed's namespace, workflow id and run id
// placeholders of a task category: 10000000-3000-… for transfer tasks,
// -4000- for timers, -5000- replication, -6000- DLQ, -7000- cross-cluster.
func taskPlaceholders(c store.TaskCategory) (namespace, workflowID, runID string) {
	n := int(c) + 2
	return fmt.Sprintf("10000000-%d000-f000-f000-000000000000", n),
		fmt.Sprintf("20000000-%d000-f000-f000-000000000000", n),
		fmt.Sprintf("30000000-%d000-f000-f000-000000000000", n)
}

// taskPartition returns the key prefix of a task queue: the DLQ's source
// cluster and the cross-cluster queue's target cluster go in workflow_id,
// as in the seed.
func taskPartition(c store.TaskCategory, partition string) (typ int, namespace, workflowID, runID string) {
	namespace, workflowID, runID = taskPlaceholders(c)
	if partition != "" {
		workflowID = partition
	}
	return typeTaskBase + int(c), namespace, workflowID, runID
}

// taskTS is the visibility_ts of a task key: the fire time of a timer, the
// placeholder for every other queue.
func taskTS(c store.TaskCategory, k store.TaskKey) int64 {
	if c != store.CategoryTimer {
		return placeholderTS
	}
	if k.FireTime.IsZero() {
		return minTimerTS
	}
	return k.FireTime.UnixMilli()
}

func taskRow(t store.Task) rowKey {
	typ, ns, wf, run := taskPartition(t.Category, t.Partition)
	return rowKey{typ, ns, wf, run, taskTS(t.Category, t.Key), t.Key.TaskID}
}

// requestType is the row type of a request kind's dedup rows.
func requestType(kind store.RequestKind) int {
	if kind == store.RequestTerminate {
		return typeRequestTerminate // typeRequestBase + 5 is typeDocument
	}
	return typeRequestBase + int(kind)
}

func requestRow(k store.RequestKey) rowKey {
	return rowKey{requestType(k.Kind), k.Namespace, k.WorkflowID, k.RequestID, placeholderTS, 0}
}

// documentRunID is the run_id column of a document's metadata row: the run
// id, NUL, the document id. Ids never contain NUL, so the documents of a run
// are the slice [run+"\x00", run+"\x01").
func documentRunID(run, id string) string { return run + "\x00" + id }

func documentRow(k store.RunKey, id string) rowKey {
	return rowKey{typeDocument, k.Namespace, k.WorkflowID, documentRunID(k.RunID, id), placeholderTS, 0}
}
