// Package store is the contract between Strand's engine and its storage
// backends, and the types both sides share.
//
// A backend implements Store: an ExecutionStore (everything scoped to a shard:
// the shard row, runs, history, task queues, request dedup rows, documents), a
// MetadataStore (namespaces, nodes, definitions) and a VisibilityStore
// (listing and counting runs). The contract is written so that it fits SQL
// transactions and Cassandra's lightweight-transaction batches alike:
//
//   - every write of a shard is one Batch, applied atomically and only while
//     the shard's range_id equals Batch.RangeID and each run's db version is
//     the one the write expects; otherwise nothing is written and a typed error
//     is returned;
//   - no write spans two shards;
//   - range reads stay inside one shard.
//
// Package storetest holds the conformance suite every backend runs.
package store

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Store is a whole backend.
type Store interface {
	ExecutionStore
	MetadataStore
	VisibilityStore

	// Migrate creates or upgrades the schema; it is idempotent and returns
	// the schema versions before and after.
	Migrate(ctx context.Context) (from, to int, err error)
	// Limits returns the payload limits this store enforces.
	Limits() Limits
	// Close releases the backend's connections.
	Close() error
}

// SerialWriter is implemented by a backend that runs one write transaction
// at a time (SQLite). It is a hint, not a contract: the engine then uses one
// shard by default, since more shards would only split its group commits.
type SerialWriter interface {
	SerialWrites() bool
}

// ExecutionStore holds everything that belongs to a shard.
type ExecutionStore interface {
	// AcquireShard raises the shard's range_id by one and records owner,
	// creating the shard at range_id 1 if it does not exist. With
	// PrevRangeID set, it succeeds only while the shard still has that
	// range_id (an owner renewing its block of task ids); otherwise it takes
	// the shard from whoever holds it. Every write conditioned on the old
	// range_id fails from then on. An empty Owner with PrevRangeID releases
	// the shard: the next owner knows it was handed over, not abandoned.
	AcquireShard(ctx context.Context, req AcquireShardRequest) (Shard, error)
	// GetShard reads a shard row.
	GetShard(ctx context.Context, shardID int32) (Shard, error)

	// Commit applies a batch atomically, or nothing of it.
	Commit(ctx context.Context, b *Batch) error

	// GetCurrentExecution returns the latest run of a workflow id.
	GetCurrentExecution(ctx context.Context, shardID int32, namespace, workflowID string) (CurrentExecution, error)
	// GetExecution returns a run's mutable state, verified against its
	// checksum.
	GetExecution(ctx context.Context, shardID int32, run RunKey) (*Execution, error)
	// ReadHistory returns a run's history blocks in event order, in pages,
	// never past the run's committed next_event_id.
	ReadHistory(ctx context.Context, req ReadHistoryRequest) (HistoryPage, error)

	// ReadTasks returns the tasks of one queue of a shard within a range, in
	// key order, in pages.
	ReadTasks(ctx context.Context, req ReadTasksRequest) (TaskPage, error)

	// GetRequest returns an unexpired dedup row, or ErrNotFound.
	GetRequest(ctx context.Context, shardID int32, key RequestKey) (Request, error)
	// PurgeExpiredRequests deletes dedup rows that expired before now and
	// returns how many it deleted. It needs no fencing: expired rows are
	// invisible to every reader already.
	PurgeExpiredRequests(ctx context.Context, shardID int32, now time.Time) (int, error)

	// GetDocument returns a document's bytes and metadata.
	GetDocument(ctx context.Context, shardID int32, run RunKey, id string) ([]byte, DocumentInfo, error)
}

// MetadataStore holds what is not scoped to a shard.
type MetadataStore interface {
	// CreateNamespace creates a namespace; ErrNamespaceExists if the name is
	// taken.
	CreateNamespace(ctx context.Context, ns Namespace) (Namespace, error)
	// GetNamespace returns a namespace or ErrNamespaceNotFound.
	GetNamespace(ctx context.Context, name string) (Namespace, error)
	// UpdateNamespace replaces a namespace's settings if its Version is still
	// the stored one (ErrConditionFailed otherwise) and returns it with the
	// new version.
	UpdateNamespace(ctx context.Context, ns Namespace) (Namespace, error)
	// ListNamespaces returns every namespace by name.
	ListNamespaces(ctx context.Context) ([]Namespace, error)

	// UpsertNode registers a node or records its heartbeat.
	UpsertNode(ctx context.Context, n Node) error
	// ListNodes returns the nodes whose heartbeat expires after aliveAt, or
	// every node when aliveAt is zero.
	ListNodes(ctx context.Context, aliveAt time.Time) ([]Node, error)
	// DeleteNode removes a node (on graceful shutdown).
	DeleteNode(ctx context.Context, id string) error

	// PutDefinition stores a workflow definition. With Version 0 it stores a
	// new version unless the latest version has the same SHA-1, which it
	// returns unchanged. With a Version set it is idempotent for the same
	// content and fails with ErrDefinitionExists for different content.
	PutDefinition(ctx context.Context, d Definition) (Definition, error)
	// GetDefinition returns one version of a definition, the latest for
	// version 0, or ErrNotFound.
	GetDefinition(ctx context.Context, typ string, version int32) (Definition, error)
	// ListDefinitions returns every version of a type, or of all types when
	// typ is empty, by type and version.
	ListDefinitions(ctx context.Context, typ string) ([]Definition, error)

	// PutRecord writes one of the server's own small documents (users,
	// access tokens, role grants). With Version 0 it creates the record and
	// fails with ErrConditionFailed if the key is taken; with a Version set
	// it replaces the record only while that is still the stored version
	// (ErrConditionFailed otherwise, ErrNotFound if it is gone). It returns
	// the record with its new version and update time.
	PutRecord(ctx context.Context, r Record) (Record, error)
	// GetRecord returns a record or ErrNotFound.
	GetRecord(ctx context.Context, kind, key string) (Record, error)
	// ListRecords returns the records of a kind whose key starts with
	// prefix ("" for all), by key. Kinds hold few records (thousands, not
	// millions): the list is whole.
	ListRecords(ctx context.Context, kind, prefix string) ([]Record, error)
	// DeleteRecord removes a record if version is its stored version, or
	// whatever version it has when version is 0. A record that does not
	// exist is ErrNotFound; one at another version ErrConditionFailed.
	DeleteRecord(ctx context.Context, kind, key string, version int64) error

	// AppendAudit records changes made through the API. An entry's ID is
	// unique and chosen by the caller; writing the same entry twice keeps
	// one.
	AppendAudit(ctx context.Context, entries ...AuditEntry) error
	// ListAudit returns the entries that match the filter, newest first, in
	// stable pages.
	ListAudit(ctx context.Context, req ListAuditRequest) (AuditPage, error)
	// PurgeAudit deletes up to limit entries older than before and returns
	// how many it deleted; a caller repeats it until it deletes fewer than
	// limit.
	PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error)
}

// VisibilityStore lists and counts runs.
type VisibilityStore interface {
	// UpsertVisibility writes runs' records, each unless a record with a
	// higher Version is stored already (updates arrive at least once, in any
	// order). Several records are written together where the backend can.
	UpsertVisibility(ctx context.Context, records ...VisibilityRecord) error
	// DeleteVisibility removes the records of runs of one namespace (the
	// runs' retention has passed), together where the backend can: a
	// record that does not exist is no error, so a deletion may be
	// repeated.
	DeleteVisibility(ctx context.Context, namespace string, runIDs ...string) error
	// GetVisibility returns a run's record or ErrNotFound.
	GetVisibility(ctx context.Context, namespace, runID string) (VisibilityRecord, error)
	// ListRuns returns the records that match the filter, newest start first,
	// in stable pages.
	ListRuns(ctx context.Context, req ListRunsRequest) (RunPage, error)
	// CountRuns counts the records that match the filter.
	CountRuns(ctx context.Context, f RunFilter) (int64, error)
}

// AcquireShardRequest is the argument of AcquireShard.
type AcquireShardRequest struct {
	ShardID     int32
	Owner       string
	PrevRangeID int64
}

// CurrentMode says what a run write does to the workflow id's current row.
type CurrentMode int8

// Current modes.
const (
	// CurrentNone leaves the current row alone (a run that is not current).
	CurrentNone CurrentMode = iota
	// CurrentCreate inserts the current row; it fails with a
	// WorkflowExistsError if the workflow id has one.
	CurrentCreate
	// CurrentReplace points the current row at this run if it still points
	// at PrevRunID (id reuse, continue-as-new).
	CurrentReplace
	// CurrentUpdate updates the current row's state; the row must point at
	// this run.
	CurrentUpdate
)

// RunWrite is one run's part of a batch.
type RunWrite struct {
	// Execution is the run's new state. Its DBVersion must be above
	// ExpectedDBVersion.
	Execution *Execution
	// ExpectedDBVersion is the version the stored state must have; 0 creates
	// the run, which must not exist.
	ExpectedDBVersion int64
	Current           CurrentMode
	// PrevRunID is the current run that CurrentReplace expects.
	PrevRunID string
	// History is appended; the blocks must be contiguous and end at
	// Execution.NextEventID-1.
	History []HistoryBlock
}

// Batch is one atomic write of a shard.
type Batch struct {
	ShardID int32
	RangeID int64

	Runs      []RunWrite
	Tasks     []Task
	Requests  []Request
	Documents []Document
	// CompleteTasks deletes the tasks in each range (processed tasks).
	CompleteTasks []TaskRange
	// AckLevels, when set, replaces the shard's ack levels.
	AckLevels *AckLevels
	// DeleteRuns removes runs with their history and documents (retention).
	// A run's current row is removed too if it points at the run. A run
	// that does not exist is skipped, so a deletion may be repeated; many
	// runs may go in one batch (the engine purges hundreds at a time).
	DeleteRuns []RunKey
}

// ReadHistoryRequest is the argument of ReadHistory.
type ReadHistoryRequest struct {
	ShardID int32
	Run     RunKey
	// FromEventID is the first event wanted; blocks that end before it are
	// skipped. 0 means 1.
	FromEventID int64
	// PageSize is the most blocks a page holds; 0 means 100.
	PageSize  int
	PageToken []byte
}

// HistoryPage is a page of history.
type HistoryPage struct {
	Blocks        []HistoryBlock
	NextPageToken []byte
}

// ReadTasksRequest is the argument of ReadTasks.
type ReadTasksRequest struct {
	ShardID int32
	Range   TaskRange
	// PageSize is the most tasks a page holds; 0 means 100.
	PageSize  int
	PageToken []byte
}

// TaskPage is a page of tasks.
type TaskPage struct {
	Tasks         []Task
	NextPageToken []byte
}

// Namespace isolates workflows and carries their retention.
type Namespace struct {
	Name        string `json:"name" max:"63" required:"true" pattern:"^(?!strand-)[^\\x00]*$"`
	Description string `json:"description,omitempty" max:"4096" text:"true"`
	// Retention is how long closed runs are kept: at least MinRetention;
	// zero means the engine's default.
	Retention time.Duration     `json:"retention,omitempty" minimum:"60000000000" zero:"default"`
	Data      map[string]string `json:"data,omitempty" max:"64" maxkey:"128" maxvalue:"4096"`
	// Version guards updates: an update must carry the version it read.
	Version   int64     `json:"version,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Node is a live Strand process (nFlow's executor).
type Node struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	PID         int32     `json:"pid"`
	Group       string    `json:"group,omitempty"`
	Address     string    `json:"address,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Definition is a stored workflow definition (a DAG, a state machine).
type Definition struct {
	Type       string    `json:"type" max:"250" required:"true" text:"true"`
	Version    int32     `json:"version,omitempty" minimum:"0" maximum:"2147483646"`
	SHA1       string    `json:"sha1,omitempty" max:"64"`
	Body       []byte    `json:"body" max:"16777216" required:"true"`
	Group      string    `json:"group,omitempty" max:"1000" text:"true"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
	ModifiedAt time.Time `json:"modified_at,omitzero"`
	ModifiedBy string    `json:"modified_by,omitempty" max:"256" text:"true"`
}

// Record is one of the server's own small documents, kept by kind and key:
// a user, an access token, a grant of a role. The store keeps its value as
// bytes; the access package gives it meaning.
type Record struct {
	Kind      string    `json:"kind" max:"64" required:"true" text:"true"`
	Key       string    `json:"key" max:"512" required:"true" text:"true"`
	Value     []byte    `json:"value" max:"1048576"`
	Version   int64     `json:"version,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// AuditEntry is one change made through the API: who asked, from where,
// what, on which namespace and run, and how it ended.
type AuditEntry struct {
	// ID is unique; entries written at the same Time are ordered by it.
	ID        string    `json:"id" max:"64" required:"true" text:"true"`
	Time      time.Time `json:"time"`
	Namespace string    `json:"namespace,omitempty" max:"256" text:"true"`
	Actor     string    `json:"actor" max:"256" text:"true"`
	Remote    string    `json:"remote,omitempty" max:"256" text:"true"`
	// Action names the API route ("POST /namespaces/{namespace}/workflows").
	Action string `json:"action" max:"512" text:"true"`
	// Target names what it acted on (a workflow id, a schedule id).
	Target string `json:"target,omitempty" max:"1000" text:"true"`
	RunID  string `json:"run_id,omitempty" max:"64" text:"true"`
	// Status is the HTTP status the request was answered with.
	Status int32 `json:"status"`
	// Detail is the request's parameters, with secrets removed.
	Detail []byte `json:"detail,omitempty" max:"65536"`
}

// ListAuditRequest is the argument of ListAudit. Each set field narrows the
// list: entries of a namespace, of an actor, at or after Since, before
// Until.
type ListAuditRequest struct {
	Namespace string
	Actor     string
	Since     time.Time
	Until     time.Time
	PageSize  int
	PageToken []byte
}

// AuditPage is a page of ListAudit.
type AuditPage struct {
	Entries       []AuditEntry
	NextPageToken []byte
}

// VisibilityRecord is what listing shows of a run.
type VisibilityRecord struct {
	Namespace   string            `json:"namespace"`
	WorkflowID  string            `json:"workflow_id"`
	RunID       string            `json:"run_id"`
	Type        string            `json:"workflow_type"`
	Status      RunStatus         `json:"status"`
	StartTime   time.Time         `json:"start_time"`
	CloseTime   time.Time         `json:"close_time,omitzero"`
	BusinessKey string            `json:"business_key,omitempty"`
	Attributes  map[string]string `json:"attributes,omitempty"`
	// Version orders updates of one run; a lower one never overwrites.
	Version int64 `json:"version"`
}

// RunFilter selects visibility records. Namespace is required; every other
// field left empty matches everything.
type RunFilter struct {
	Namespace     string
	WorkflowID    string
	Type          string
	Statuses      []RunStatus
	StartedAfter  time.Time // inclusive
	StartedBefore time.Time // exclusive
	BusinessKey   string
	// WorkflowIDPrefix and BusinessKeyPrefix keep the runs whose workflow
	// id or business key starts with them (byte for byte, so "order-1"
	// also matches "order-10"); with the exact field too, a run must
	// match both. They are valid UTF-8 without NUL.
	WorkflowIDPrefix  string
	BusinessKeyPrefix string
	// Attributes must all be equal.
	Attributes map[string]string
	// ClosedAfter (inclusive) and ClosedBefore (exclusive) keep the runs
	// that closed in that range; either one set leaves out the runs still
	// open.
	ClosedAfter  time.Time
	ClosedBefore time.Time
	// ExcludeTypes leaves out the runs of these workflow types (Strand's
	// own runs, for one).
	ExcludeTypes []string
}

// Residual reports whether f has fields that no index or counter serves
// (close times, excluded types): stores read the runs the rest of the
// filter selects and check those on each.
func (f RunFilter) Residual() bool {
	return !f.ClosedAfter.IsZero() || !f.ClosedBefore.IsZero() || len(f.ExcludeTypes) > 0
}

// Matches reports whether a record satisfies the filter, namespace and
// time range included. Stores index what they can and check the rest of
// a filter with it.
func (f RunFilter) Matches(r VisibilityRecord) bool {
	if r.Namespace != f.Namespace ||
		f.WorkflowID != "" && r.WorkflowID != f.WorkflowID ||
		f.Type != "" && r.Type != f.Type ||
		f.BusinessKey != "" && r.BusinessKey != f.BusinessKey ||
		!strings.HasPrefix(r.WorkflowID, f.WorkflowIDPrefix) ||
		!strings.HasPrefix(r.BusinessKey, f.BusinessKeyPrefix) {
		return false
	}
	if !f.StartedAfter.IsZero() && r.StartTime.Before(f.StartedAfter) ||
		!f.StartedBefore.IsZero() && !r.StartTime.Before(f.StartedBefore) {
		return false
	}
	if len(f.Statuses) > 0 && !slices.Contains(f.Statuses, r.Status) {
		return false
	}
	// Close times compare in milliseconds, as stores keep them.
	if (!f.ClosedAfter.IsZero() || !f.ClosedBefore.IsZero()) && r.CloseTime.IsZero() ||
		!f.ClosedAfter.IsZero() && UnixMilli(r.CloseTime) < UnixMilli(f.ClosedAfter) ||
		!f.ClosedBefore.IsZero() && UnixMilli(r.CloseTime) >= UnixMilli(f.ClosedBefore) ||
		slices.Contains(f.ExcludeTypes, r.Type) {
		return false
	}
	for name, value := range f.Attributes {
		if v, ok := r.Attributes[name]; !ok || v != value {
			return false
		}
	}
	return true
}

// PrefixEnd returns the least string greater than every string that
// starts with prefix, in byte (and so code point) order, or "" if there is
// none (prefix is all U+10FFFF): a prefix is the range [prefix, end). The
// end is valid UTF-8 when the prefix is.
func PrefixEnd(prefix string) string {
	runes := []rune(prefix)
	for i := len(runes) - 1; i >= 0; i-- {
		switch r := runes[i]; {
		case r == utf8.MaxRune:
			continue
		case r == 0xD7FF:
			runes[i] = 0xE000 // past the surrogates, which UTF-8 cannot hold
		default:
			runes[i] = r + 1
		}
		return string(runes[:i+1])
	}
	return ""
}

// ListRunsRequest is the argument of ListRuns.
type ListRunsRequest struct {
	RunFilter
	// PageSize is the most records a page holds; 0 means 100.
	PageSize  int
	PageToken []byte
	// Oldest lists the oldest start first (then the lowest run id);
	// by default the newest start comes first. A page token goes on in
	// the order of the listing that gave it.
	Oldest bool
}

// RunPage is a page of visibility records.
type RunPage struct {
	Runs          []VisibilityRecord
	NextPageToken []byte
}

// Limits are the payload sizes a store accepts.
type Limits struct {
	// DocumentThreshold is the size above which Batch.AddPayload stores a
	// payload as a document.
	DocumentThreshold int
	// MaxPayload is the hard limit on any single value: a document, a
	// history block, a run's encoded state, a task's data.
	MaxPayload int
}

// DefaultLimits returns the limits a store uses unless told otherwise.
func DefaultLimits() Limits {
	return Limits{DocumentThreshold: 256 << 10, MaxPayload: 16 << 20}
}

// MaxPageSize bounds every PageSize.
const MaxPageSize = 10000

// MinRetention is the shortest retention a namespace may have: a run
// deleted sooner than that could vanish between a caller's start and its
// first look at the run (or its result).
const MinRetention = time.Minute

// CountExcluding counts the runs of a filter whose only field no index
// serves is ExcludeTypes, with count (a store's own count of a filter
// without residual fields): the runs of the filter without the exclusion,
// less those of each excluded type, so that a store counts them by its
// counters rather than by reading every run. The reads are several, so
// a count taken while runs start may be off by the runs started between
// them (never below zero). ok is false for any other filter, which the
// store counts itself.
func CountExcluding(ctx context.Context, f RunFilter, count func(context.Context, RunFilter) (int64, error)) (n int64, ok bool, err error) {
	if len(f.ExcludeTypes) == 0 || !f.ClosedAfter.IsZero() || !f.ClosedBefore.IsZero() {
		return 0, false, nil
	}
	if f.Type != "" && slices.Contains(f.ExcludeTypes, f.Type) {
		return 0, true, nil
	}
	all := f
	all.ExcludeTypes = nil
	if n, err = count(ctx, all); err != nil || f.Type != "" {
		return n, true, err
	}
	var seen []string
	for _, t := range f.ExcludeTypes {
		if t == "" || slices.Contains(seen, t) {
			continue // "" excludes nothing: no run is of no type
		}
		seen = append(seen, t)
		one := all
		one.Type = t
		m, err := count(ctx, one)
		if err != nil {
			return 0, true, err
		}
		n -= m
	}
	return max(n, 0), true, nil
}
