package engine

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus instruments.
type metrics struct {
	commitSeconds prometheus.Histogram
	commitRuns    prometheus.Histogram
	closed        *prometheus.CounterVec
	recovered     *prometheus.CounterVec
	evicted       prometheus.Counter
	purgeSeconds  prometheus.Histogram
	purged        prometheus.Counter
	runsPurged    atomic.Int64
}

func newMetrics(e *Engine, reg prometheus.Registerer) *metrics {
	m := &metrics{
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strand_store_commit_seconds",
			Help: "Latency of a store commit (one group commit of a shard).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		commitRuns: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strand_store_commit_runs",
			Help: "Runs' transitions in one store commit (group commit size).", Buckets: prometheus.ExponentialBuckets(1, 2, 9)}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strand_workflows_closed_total",
			Help: "Workflow runs closed, by status."}, []string{"status"}),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strand_runs_recovered_total",
			Help: "Runs that had work in flight on a shard this node acquired without a handover, by how it came (restart of this node, takeover from another)."}, []string{"from"}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{Name: "strand_runs_evicted_total",
			Help: "Runs the run cache let go of to stay within its memory budget (each costs a store read when used again)."}),
		purgeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strand_purge_batch_seconds",
			Help: "Latency of a retention purge batch (the visibility deletes and the batch that deletes the runs).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{Name: "strand_runs_purged_total",
			Help: "Closed runs deleted past their namespace's retention (a run purged again after a crash counts twice)."}),
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.commitSeconds, m.commitRuns, m.closed, m.recovered, m.evicted, m.purgeSeconds, m.purged,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_purge_lag_seconds",
			Help: "How late the oldest retention timer still to purge is, over this node's shards (0: the purge keeps up)."}, func() float64 { return e.Stats().PurgeLag.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strand_task_sync_matched_total",
			Help: "Tasks handed straight to a polling worker."}, func() float64 { return float64(e.Stats().SyncMatched) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strand_task_backlogged_total",
			Help: "Tasks that waited in a queue for a worker."}, func() float64 { return float64(e.Stats().Backlogged) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_shards_owned",
			Help: "Shards this engine owns."}, func() float64 { return float64(e.Stats().ShardsOwned) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_runs_cached",
			Help: "Runs held in memory."}, func() float64 { return float64(e.Stats().CachedRuns) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_run_cache_bytes",
			Help: "Estimated bytes of run state held in memory (bounded by the cache's memory budget while runs are idle)."}, func() float64 { return float64(e.Stats().CacheBytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_run_cache_budget_bytes",
			Help: "What the run cache may hold now: its memory budget, less while the rest of the heap nears the soft memory limit."}, func() float64 { return float64(e.Stats().CacheBudget) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_timers_in_memory",
			Help: "Durable timers held in memory (those due within the timer window)."}, func() float64 { return float64(e.Stats().TimersInMemory) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_queries_waiting",
			Help: "Queries of this node's runs waiting for a worker's answer."}, func() float64 { return float64(e.Stats().QueriesWaiting) }),
		queueDepth{e},
	)
	return m
}

func (m *metrics) observePurge(took time.Duration, runs int) {
	m.purgeSeconds.Observe(took.Seconds())
	m.purged.Add(float64(runs))
	m.runsPurged.Add(int64(runs))
}

func (m *metrics) observeCommit(start time.Time, runs int) {
	m.commitSeconds.Observe(time.Since(start).Seconds())
	m.commitRuns.Observe(float64(runs))
}

// queueDepth reports each task queue's backlog when scraped.
type queueDepth struct{ e *Engine }

var queueDepthDesc = prometheus.NewDesc("strand_task_queue_depth", "Tasks waiting for a worker, by queue.", []string{"namespace", "queue", "kind"}, nil)

func (q queueDepth) Describe(ch chan<- *prometheus.Desc) { ch <- queueDepthDesc }

func (q queueDepth) Collect(ch chan<- prometheus.Metric) {
	m := q.e.match
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tq := range m.queues {
		kind := "workflow"
		if k.kind == stepQueue {
			kind = "step"
		}
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(tq.size), k.ns, k.name, kind)
	}
}
