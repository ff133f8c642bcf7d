// Package engine is Strand's workflow engine: it keeps runs' state in
// memory, turns workflow commands and step outcomes into atomic store
// batches, and runs the transfer and timer queues of every shard it owns.
// It implements api.Service, so workers and clients use it in-process
// exactly as they would use a server.
//
// It uses only the store contract (package store), so it runs unchanged on
// every backend.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Options configure an engine.
type Options struct {
	// NumShards is how many shards the store's runs are spread over. It is
	// fixed when a store is first used: the engine records it and refuses
	// to open the store with another value. Zero means the recorded value,
	// or for a new store 4, or 1 on a store that serialises all writes
	// (SQLite), where more shards would only split group commits.
	NumShards int
	// Identity names this engine as shard owner; default host:pid.
	Identity string
	Logger   *slog.Logger
	// WorkflowTaskTimeout is how long a worker may hold a workflow task
	// before it is offered again (default 10s).
	WorkflowTaskTimeout time.Duration
	// EagerCommitDelay is how long inputs handed to a waiting worker may
	// stay uncommitted, waiting to share one commit with the task's
	// commands (default DefaultEagerCommitDelay).
	EagerCommitDelay time.Duration
	// DefaultStartToClose is a step's start-to-close timeout when it sets
	// neither start-to-close nor schedule-to-close (default 10m).
	DefaultStartToClose time.Duration
	// MaxBatchRuns bounds how many runs' transitions share one commit
	// (default 256).
	MaxBatchRuns int
	// CacheMemory is how many bytes of run state the node keeps cached in
	// memory, over all the shards it owns (default 256 MiB). Runs nobody
	// uses are let go of, least recently used first, beyond it; one that
	// comes back costs a store read. Runs in use are never let go of, so
	// the cache may hold more while more than that are busy at once. Under
	// a soft memory limit (debug.SetMemoryLimit) the cache holds less, down
	// to a sixteenth of this, while the rest of the live heap would
	// otherwise take it past 60% of the limit.
	CacheMemory int64
	// RunCacheSize, when positive, also bounds how many runs each shard
	// keeps cached.
	RunCacheSize int
	// DefaultRetention is how long closed runs are kept in a namespace that
	// sets none (default 72h).
	DefaultRetention time.Duration
	// TimerWindow is how far ahead of now each shard holds durable timers
	// in memory (default 5m); later ones stay in the store until the window
	// reaches them, so runs that sleep for days cost no memory meanwhile.
	TimerWindow time.Duration
	// Metrics, when set, receives the engine's Prometheus metrics.
	Metrics prometheus.Registerer
	// QueryTimeout is the longest a query waits for a worker's answer
	// (default 30s); a caller's earlier deadline applies first. A query
	// whose time runs out, or whose caller leaves, is withdrawn from its
	// queue: no worker receives it after that.
	QueryTimeout time.Duration
	// QueryPollerWindow: a query fails at once with api.ErrNoWorker when
	// no worker has polled its run's workflow queue within this window
	// (default 10s), and a waiting query fails so once the window passes
	// without one. A poll in progress counts as a worker seen now.
	QueryPollerWindow time.Duration

	// NodeTTL is how long this node's heartbeat keeps it alive in the
	// nodes table (default 30s). It beats at a third of that; the nodes
	// take over a silent node's shards once its heartbeat has expired.
	NodeTTL time.Duration
	// Address is where other nodes reach this node's API
	// (http://host:port); empty for an engine no other node calls.
	Address string
	// Dial returns the API of the node at an address: the engine forwards
	// to it calls for shards that node owns and polls for its tasks. Nil
	// for an engine alone over its store.
	Dial func(address string) api.Peer

	// RedeliveryDelay is the least a step attempt that was in flight when
	// its shard changed hands (a restart, a takeover, a write whose outcome
	// was unknown) waits before it is offered again. Past it, the attempt
	// waits until its worker's liveness is gone: its heartbeat timeout,
	// counted from the takeover, or else its start-to-close timeout. Until
	// then the worker that still runs it can report its outcome or heartbeat
	// (which claims the attempt back) through the shard's new owner, and no
	// second worker runs it (default 5s; negative: offer at once, for an
	// engine whose workers die with it).
	RedeliveryDelay time.Duration

	// PurgeBatch is how many runs past their retention a shard purges
	// together (default 1000): their visibility records in one store call
	// per namespace, their executions, history, documents and current rows
	// in one batch.
	PurgeBatch int
	// PurgeShare is the most of the time the retention purge takes while
	// the node has live work (default 0.2): after a batch during which the
	// node committed runs' transitions, the next batch of any shard waits
	// long enough that the batches fill at most that share of the time. A
	// node with nothing else to do purges its shards side by side without
	// waiting.
	PurgeShare float64

	// stepCheckpoint is how often a running step attempt's dispatch is
	// written anew (default 1m); tests shorten it.
	stepCheckpoint time.Duration
	// retentionOf, when set, gives the retention of a namespace's runs
	// that close from then on, in place of the namespace's (tests expire
	// runs at once).
	retentionOf func(namespace string) (time.Duration, bool)
	// purgeSettle replaces PurgeSettle when set (tests: 1ns).
	purgeSettle time.Duration
	// purgeHook, when set, runs before a purger reads its due timers
	// (tests hold the purge there).
	purgeHook func(ctx context.Context, shardID int32)
}

// DefaultCacheMemory is Options.CacheMemory's default.
const DefaultCacheMemory = 256 << 20

// DefaultEagerCommitDelay is Options.EagerCommitDelay's default.
const DefaultEagerCommitDelay = 100 * time.Millisecond

func (o *Options) setDefaults() {
	if o.Identity == "" {
		host, _ := os.Hostname()
		o.Identity = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.WorkflowTaskTimeout <= 0 {
		o.WorkflowTaskTimeout = 10 * time.Second
	}
	if o.EagerCommitDelay <= 0 {
		o.EagerCommitDelay = DefaultEagerCommitDelay
	}
	if o.DefaultStartToClose <= 0 {
		o.DefaultStartToClose = 10 * time.Minute
	}
	if o.MaxBatchRuns <= 0 {
		o.MaxBatchRuns = 256
	}
	if o.CacheMemory <= 0 {
		o.CacheMemory = DefaultCacheMemory
	}
	if o.DefaultRetention <= 0 {
		o.DefaultRetention = 72 * time.Hour
	}
	if o.NodeTTL <= 0 {
		o.NodeTTL = 30 * time.Second
	}
	if o.TimerWindow <= 0 {
		o.TimerWindow = 5 * time.Minute
	}
	if o.RedeliveryDelay == 0 {
		o.RedeliveryDelay = 5 * time.Second
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = 30 * time.Second
	}
	if o.QueryPollerWindow <= 0 {
		o.QueryPollerWindow = 10 * time.Second
	}
	if o.PurgeBatch <= 0 {
		o.PurgeBatch = 1000
	}
	if o.PurgeShare <= 0 {
		o.PurgeShare = 0.2
	}
	o.PurgeShare = min(o.PurgeShare, 1)
	if o.stepCheckpoint <= 0 {
		o.stepCheckpoint = time.Minute
	}
}

// systemNamespace holds the engine's own settings.
const systemNamespace = "strand-system"

// Engine runs workflows over a store. It implements api.Service.
type Engine struct {
	store  store.Store
	limits store.Limits
	opts   Options
	log    *slog.Logger
	match  *matcher
	// stats count the runs started and closed lately, for the overview.
	stats *recentStats

	// shards are this node's shards by id (nil: another node's, or none's
	// yet); the controller (cluster.go) alone adds and removes them.
	shardMu sync.RWMutex
	shards  []*shard
	cluster cluster

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	nsMu       sync.Mutex
	namespaces map[string]cachedNamespace
	quotas     quotas

	metrics *metrics

	queryMu sync.Mutex
	queries map[string]*pendingQuery // by id, until answered or withdrawn
	nonce   atomic.Int64             // flight, step start and query ids
	// cacheBytes is what the shards' run caches hold (cache.go), and
	// cacheBudget what they may hold now (budget.go).
	cacheBytes  atomic.Int64
	cacheBudget atomic.Int64

	// runsCommitted counts the runs' transitions this node's shards
	// committed: the live work the retention purge yields to, which
	// purgePace spaces out across the shards.
	runsCommitted atomic.Int64
	purgePace     purgePace
}

var _ api.Service = (*Engine)(nil)

// Open starts an engine over st: it checks the shard count, creates the
// default namespace if needed, acquires every shard and recovers their
// queues. Close stops it; Open does not close st.
func Open(ctx context.Context, st store.Store, opts Options) (*Engine, error) {
	opts.setDefaults()
	e := &Engine{
		store: st, limits: st.Limits(), opts: opts, log: opts.Logger.With("engine", opts.Identity),
		match: newMatcher(), stats: newRecentStats(), namespaces: map[string]cachedNamespace{}, queries: map[string]*pendingQuery{},
	}
	// Tokens carry nonces: starting from the clock keeps a token handed out
	// by an earlier life of this node from matching one of this life's.
	e.nonce.Store(time.Now().UnixNano())
	e.metrics = newMetrics(e, opts.Metrics)
	if err := e.checkShardCount(ctx); err != nil {
		return nil, err
	}
	opts = e.opts
	if _, err := st.CreateNamespace(ctx, store.Namespace{Name: api.DefaultNamespace, Retention: opts.DefaultRetention}); err != nil && !errors.Is(err, store.ErrNamespaceExists) {
		return nil, fmt.Errorf("engine: create default namespace: %w", err)
	}
	e.ctx, e.cancel = context.WithCancel(context.WithoutCancel(ctx))
	e.cacheBudget.Store(opts.CacheMemory)
	e.wg.Go(func() { e.governCache(e.ctx) })
	e.shards = make([]*shard, opts.NumShards)
	if err := e.join(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close stops the engine: its shards stop processing and polls return;
// it hands its shards back and leaves the nodes table, so the other nodes
// take its shards at once. Work acknowledged before is durable; work in
// flight is retried by the next owner of the shards.
func (e *Engine) Close() error {
	if e.cancel != nil {
		e.cancel()
	}
	// Legs start from callers' goroutines: none starts once closing is
	// set, and those that did are counted in wg before it is.
	e.cluster.legMu.Lock()
	e.cluster.closing = true
	e.cluster.legMu.Unlock()
	e.wg.Wait()
	e.leave()
	return nil
}

// checkShardCount records the shard count on first use and refuses another.
func (e *Engine) checkShardCount(ctx context.Context) error {
	if e.opts.NumShards < 0 {
		return store.InvalidArgument("num_shards", "negative")
	}
	ns, err := e.store.GetNamespace(ctx, systemNamespace)
	if errors.Is(err, store.ErrNamespaceNotFound) {
		n := e.opts.NumShards
		if n == 0 {
			n = 4
			if sw, ok := e.store.(store.SerialWriter); ok && sw.SerialWrites() {
				n = 1
			}
		}
		ns, err = e.store.CreateNamespace(ctx, store.Namespace{Name: systemNamespace, Description: "Strand's own settings",
			Data: map[string]string{"num_shards": strconv.Itoa(n)}})
		if errors.Is(err, store.ErrNamespaceExists) {
			ns, err = e.store.GetNamespace(ctx, systemNamespace)
		}
	}
	if err != nil {
		return fmt.Errorf("engine: read shard count: %w", err)
	}
	got, err := strconv.Atoi(ns.Data["num_shards"])
	if err != nil || got <= 0 {
		return fmt.Errorf("engine: the store records an invalid shard count %q", ns.Data["num_shards"])
	}
	if e.opts.NumShards != 0 && e.opts.NumShards != got {
		return store.InvalidArgument("num_shards", "the store was set up with %d shards, not %d", got, e.opts.NumShards)
	}
	e.opts.NumShards = got
	return nil
}

// shardID maps a workflow id to its shard.
func (e *Engine) shardID(ns, workflowID string) int32 {
	return ShardOf(ns, workflowID, e.opts.NumShards)
}

// ShardOf returns the shard of a workflow id (of namespace ns) in a store
// of shards shards (api.ShardOf).
func ShardOf(ns, workflowID string, shards int) int32 { return api.ShardOf(ns, workflowID, shards) }

// local returns shard id when this node owns and serves it, else nil.
func (e *Engine) local(id int32) *shard {
	e.shardMu.RLock()
	s := e.shards[id]
	e.shardMu.RUnlock()
	if s == nil || s.isLost() || s.ctx.Err() != nil {
		return nil
	}
	return s
}

// owned returns the shards this node holds now.
func (e *Engine) owned() []*shard {
	e.shardMu.RLock()
	defer e.shardMu.RUnlock()
	var out []*shard
	for _, s := range e.shards {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// namespaceTTL is how long a namespace's settings are cached: another
// node's update reaches this one within it.
const namespaceTTL = 10 * time.Second

// cachedNamespace is a namespace's settings as read at some time.
type cachedNamespace struct {
	store.Namespace
	read time.Time
}

// namespace returns a namespace's settings, cached for namespaceTTL.
func (e *Engine) namespace(ctx context.Context, name string) (store.Namespace, error) {
	e.nsMu.Lock()
	c, ok := e.namespaces[name]
	e.nsMu.Unlock()
	if ok && time.Since(c.read) < namespaceTTL {
		return c.Namespace, nil
	}
	ns, err := e.store.GetNamespace(ctx, name)
	if err != nil {
		if errors.Is(err, store.ErrNamespaceNotFound) {
			return ns, fmt.Errorf("%w: %q", api.ErrNamespaceNotFound, name)
		}
		return ns, err
	}
	e.nsMu.Lock()
	e.namespaces[name] = cachedNamespace{Namespace: ns, read: time.Now()}
	e.nsMu.Unlock()
	return ns, nil
}

func (e *Engine) retention(ns string) time.Duration {
	if f := e.opts.retentionOf; f != nil {
		if d, ok := f(ns); ok {
			return d
		}
	}
	e.nsMu.Lock()
	n, ok := e.namespaces[ns]
	e.nsMu.Unlock()
	if ok && n.Retention > 0 {
		return n.Retention
	}
	return e.opts.DefaultRetention
}

func nsOrDefault(ns string) string {
	if ns == "" {
		return api.DefaultNamespace
	}
	return ns
}

func queueOrDefault(q string) string {
	if q == "" {
		return api.DefaultQueue
	}
	return q
}

// Stats are counters an operator (and the benchmark) reads.
type Stats struct {
	Commits     int64
	CommitParts int64
	SyncMatched int64
	Backlogged  int64
	ShardsOwned int
	// CachedRuns are the runs the shards hold in memory, CacheBytes their
	// estimated size, CacheBudget what they may hold now; ParkedRuns the
	// runs let go of whose queued tasks' keys are kept.
	CachedRuns  int
	CacheBytes  int64
	CacheBudget int64
	ParkedRuns  int
	// Waiters are the callers waiting for runs to close (or to run their
	// first workflow task): they hold no run in the cache.
	Waiters int
	// TimersInMemory are the durable timers held in memory: those due
	// within the timer window.
	TimersInMemory int
	// QueriesWaiting are the queries of this node's runs waiting for a
	// worker's answer; QueryTasksQueued the query tasks (of any node's
	// runs) waiting here for a worker to take them.
	QueriesWaiting   int
	QueryTasksQueued int
	// RunsPurged counts the runs this engine deleted past their retention
	// since it opened; PurgeLag is how late the oldest retention timer of
	// its shards still to purge is (zero when the purge keeps up).
	RunsPurged int64
	PurgeLag   time.Duration
}

// Ready reports whether the engine owns every shard the placement over the
// live nodes gives it.
func (e *Engine) Ready() bool {
	if !e.clustered() {
		return e.Stats().ShardsOwned == e.opts.NumShards
	}
	return e.cluster.ready.Load()
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	var st Stats
	for _, s := range e.owned() {
		s.mu.Lock()
		st.Commits += s.commits
		st.CommitParts += s.partsCommitted
		st.CachedRuns += len(s.runs)
		st.ParkedRuns += len(s.parked)
		for _, ws := range s.waiters {
			st.Waiters += len(ws)
		}
		st.TimersInMemory += len(s.timers)
		st.PurgeLag = max(st.PurgeLag, s.purge.lag)
		if !s.lost {
			st.ShardsOwned++
		}
		s.mu.Unlock()
	}
	st.CacheBytes = e.cacheBytes.Load()
	st.CacheBudget = e.cacheBudget.Load()
	st.SyncMatched, st.Backlogged = e.match.matched()
	st.QueryTasksQueued = e.match.queries()
	st.RunsPurged = e.metrics.runsPurged.Load()
	e.queryMu.Lock()
	st.QueriesWaiting = len(e.queries)
	e.queryMu.Unlock()
	return st
}
