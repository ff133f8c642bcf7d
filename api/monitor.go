package api

import (
	"context"
	"time"
)

// Monitoring is what the console and operators watch besides the runs: the
// task queues with their workers, and what the engine did lately. The
// engine implements it; in a cluster the node asked gathers every live
// node's part.
type Monitoring interface {
	// ListQueues returns the task queues of a namespace that have had
	// pollers or tasks since the answering nodes started.
	ListQueues(ctx context.Context, namespace string) (QueueList, error)
	// Overview returns a namespace's runs started and closed per minute
	// over the last hour, and per workflow type.
	Overview(ctx context.Context, namespace string) (Overview, error)
}

// Queue kinds, as QueueInfo.Kind names them.
const (
	QueueKindWorkflow = "workflow"
	QueueKindStep     = "step"
)

// QueueList is a namespace's task queues.
type QueueList struct {
	Queues []QueueInfo `json:"queues"`
	// Partial says a node of the cluster did not answer: its workers and
	// the backlogs of its shards are missing.
	Partial bool `json:"partial,omitempty"`
}

// QueueInfo is one task queue: its backlog, its workers and how its tasks
// met them.
type QueueInfo struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Kind is QueueKindWorkflow or QueueKindStep.
	Kind string `json:"kind"`
	// Backlog counts the tasks waiting for a worker now.
	Backlog int `json:"backlog"`
	// Pollers are the workers that polled the queue in the last
	// PollerHorizon, the latest first.
	Pollers []PollerInfo `json:"pollers"`
	// SyncMatched counts the tasks handed straight to a waiting worker,
	// Backlogged those that waited in the backlog first.
	SyncMatched int64 `json:"sync_matched"`
	Backlogged  int64 `json:"backlogged"`
}

// PollerHorizon is how long a worker that stopped polling a queue is still
// listed among its pollers.
const PollerHorizon = 5 * time.Minute

// PollerInfo is a worker polling a queue.
type PollerInfo struct {
	// Identity is what the worker calls itself (worker.Options.Identity).
	Identity string `json:"identity"`
	// Node is the node the worker polls.
	Node string `json:"node,omitempty"`
	// LastSeen is when a poll of the worker last began or ended.
	LastSeen time.Time `json:"last_seen"`
	// Polling says a poll of the worker waits now.
	Polling bool `json:"polling"`
}

// Overview is what the engine did in a namespace lately, from its own
// counters (kept in memory by each node, for the last hour).
type Overview struct {
	Namespace string `json:"namespace"`
	// Minutes are the last 60 minutes, the oldest first; each is the
	// minute that starts at its Time.
	Minutes []MinuteStats `json:"minutes"`
	// Types are the workflow types started or closed in the last hour.
	Types []TypeStats `json:"types"`
	// Since is when the oldest answering node started counting: minutes
	// before it are empty for want of counts, not of runs.
	Since time.Time `json:"since"`
	// Partial says a node of the cluster did not answer: the counts miss
	// its shards' runs.
	Partial bool `json:"partial,omitempty"`
}

// MinuteStats counts the runs started and closed in a minute, by how they
// closed.
type MinuteStats struct {
	Time       time.Time `json:"time"`
	Started    int64     `json:"started"`
	Completed  int64     `json:"completed"`
	Failed     int64     `json:"failed"`
	TimedOut   int64     `json:"timed_out"`
	Canceled   int64     `json:"canceled"`
	Terminated int64     `json:"terminated"`
	// ContinuedAsNew counts runs closed by continuing as a new run.
	ContinuedAsNew int64 `json:"continued_as_new"`
}

// TypeStats sums a workflow type's runs over the last hour.
type TypeStats struct {
	WorkflowType string `json:"workflow_type"`
	Started      int64  `json:"started"`
	// Closed counts the runs that closed, Failed those of them that failed
	// or timed out.
	Closed int64 `json:"closed"`
	Failed int64 `json:"failed"`
	// MeanDuration and MaxDuration are over the closed runs, from start to
	// close.
	MeanDuration time.Duration `json:"mean_duration"`
	MaxDuration  time.Duration `json:"max_duration"`
}
