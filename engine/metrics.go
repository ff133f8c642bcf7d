package engine

import (
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
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.commitSeconds, m.commitRuns, m.closed, m.recovered, m.evicted,
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
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_timers_in_memory",
			Help: "Durable timers held in memory (those due within the timer window)."}, func() float64 { return float64(e.Stats().TimersInMemory) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strand_queries_waiting",
			Help: "Queries of this node's runs waiting for a worker's answer."}, func() float64 { return float64(e.Stats().QueriesWaiting) }),
		queueDepth{e},
	)
	return m
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
