package engine

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// What the console watches besides the runs (api.Monitoring): the task
// queues with their workers, and the runs this node started and closed in
// the last hour. Each node knows its own part; the node asked gathers the
// other live nodes' parts with a peering call each.

// Peering calls of the monitoring.
const (
	opQueues   = "queues"
	opOverview = "overview"
)

// monitorCall is the body of both peering calls.
type monitorCall struct {
	Namespace string `json:"namespace"`
}

// statsMinutes is how many minutes the overview covers.
const statsMinutes = 60

// recentStats counts the runs started and closed per namespace, minute and
// workflow type, for the last statsMinutes minutes: a ring of minutes, each
// reused when its minute comes round again.
type recentStats struct {
	mu      sync.Mutex
	since   time.Time
	minutes [statsMinutes]statsMinute
}

type statsMinute struct {
	minute int64 // Unix minute counted; an older one is stale
	ns     map[string]*nsMinute
}

type nsMinute struct {
	counts api.MinuteStats
	types  map[string]*typeMinute
}

type typeMinute struct {
	started, closed, failed int64
	total, max              time.Duration
}

func newRecentStats() *recentStats { return &recentStats{since: store.Now()} }

// at returns the counters of namespace ns and workflow type typ for the
// minute of t; the caller holds s.mu.
func (s *recentStats) at(t time.Time, ns, typ string) (*nsMinute, *typeMinute) {
	m := t.Unix() / 60
	b := &s.minutes[m%statsMinutes]
	if b.minute != m {
		*b = statsMinute{minute: m, ns: map[string]*nsMinute{}}
	}
	n := b.ns[ns]
	if n == nil {
		n = &nsMinute{types: map[string]*typeMinute{}}
		b.ns[ns] = n
	}
	tm := n.types[typ]
	if tm == nil {
		tm = &typeMinute{}
		n.types[typ] = tm
	}
	return n, tm
}

// started counts a run started at t.
func (s *recentStats) started(t time.Time, ns, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, tm := s.at(t, ns, typ)
	n.counts.Started++
	tm.started++
}

// closed counts a run closed at t with status after running for took.
func (s *recentStats) closed(t time.Time, ns, typ string, status store.RunStatus, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, tm := s.at(t, ns, typ)
	switch status {
	case store.StatusCompleted:
		n.counts.Completed++
	case store.StatusFailed:
		n.counts.Failed++
	case store.StatusTimedOut:
		n.counts.TimedOut++
	case store.StatusCanceled:
		n.counts.Canceled++
	case store.StatusTerminated:
		n.counts.Terminated++
	case store.StatusContinuedAsNew:
		n.counts.ContinuedAsNew++
	}
	tm.closed++
	if status == store.StatusFailed || status == store.StatusTimedOut {
		tm.failed++
	}
	tm.total += took
	tm.max = max(tm.max, took)
}

// overview returns namespace ns's last statsMinutes minutes up to now.
func (s *recentStats) overview(ns string, now time.Time) api.Overview {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := api.Overview{Namespace: ns, Minutes: make([]api.MinuteStats, statsMinutes), Types: []api.TypeStats{}, Since: s.since}
	types := map[string]*typeMinute{}
	last := now.Unix() / 60
	for i := range statsMinutes {
		m := last - statsMinutes + 1 + int64(i)
		o.Minutes[i].Time = time.Unix(m*60, 0).UTC()
		b := &s.minutes[m%statsMinutes]
		n := b.ns[ns]
		if b.minute != m || n == nil {
			continue
		}
		c := n.counts
		c.Time = o.Minutes[i].Time
		o.Minutes[i] = c
		for typ, tm := range n.types {
			sum := types[typ]
			if sum == nil {
				sum = &typeMinute{}
				types[typ] = sum
			}
			sum.started += tm.started
			sum.closed += tm.closed
			sum.failed += tm.failed
			sum.total += tm.total
			sum.max = max(sum.max, tm.max)
		}
	}
	for typ, sum := range types {
		ts := api.TypeStats{WorkflowType: typ, Started: sum.started, Closed: sum.closed, Failed: sum.failed, MaxDuration: sum.max}
		if sum.closed > 0 {
			ts.MeanDuration = sum.total / time.Duration(sum.closed)
		}
		o.Types = append(o.Types, ts)
	}
	slices.SortFunc(o.Types, func(a, b api.TypeStats) int { return cmp.Compare(a.WorkflowType, b.WorkflowType) })
	return o
}

// mergeOverview adds another node's overview of the same namespace into o.
func mergeOverview(o *api.Overview, other api.Overview) {
	for _, m := range other.Minutes {
		i := slices.IndexFunc(o.Minutes, func(x api.MinuteStats) bool { return x.Time.Equal(m.Time) })
		if i < 0 {
			continue // the nodes' clocks disagree by a minute: that minute is lost
		}
		x := &o.Minutes[i]
		x.Started += m.Started
		x.Completed += m.Completed
		x.Failed += m.Failed
		x.TimedOut += m.TimedOut
		x.Canceled += m.Canceled
		x.Terminated += m.Terminated
		x.ContinuedAsNew += m.ContinuedAsNew
	}
	for _, t := range other.Types {
		i := slices.IndexFunc(o.Types, func(x api.TypeStats) bool { return x.WorkflowType == t.WorkflowType })
		if i < 0 {
			o.Types = append(o.Types, t)
			continue
		}
		x := &o.Types[i]
		total := x.MeanDuration*time.Duration(x.Closed) + t.MeanDuration*time.Duration(t.Closed)
		x.Started += t.Started
		x.Closed += t.Closed
		x.Failed += t.Failed
		if x.Closed > 0 {
			x.MeanDuration = total / time.Duration(x.Closed)
		}
		x.MaxDuration = max(x.MaxDuration, t.MaxDuration)
	}
	slices.SortFunc(o.Types, func(a, b api.TypeStats) int { return cmp.Compare(a.WorkflowType, b.WorkflowType) })
	if other.Since.Before(o.Since) {
		o.Since = other.Since
	}
	o.Partial = o.Partial || other.Partial
}

// Overview implements api.Monitoring.
func (e *Engine) Overview(ctx context.Context, namespace string) (api.Overview, error) {
	ns := nsOrDefault(namespace)
	if _, err := e.namespace(ctx, ns); err != nil {
		return api.Overview{}, err
	}
	o := e.stats.overview(ns, store.Now())
	e.eachPeer(ctx, opOverview, monitorCall{Namespace: ns}, func() any { return new(api.Overview) }, func(out any, err error) {
		if err != nil {
			o.Partial = true
			return
		}
		mergeOverview(&o, *out.(*api.Overview))
	})
	return o, nil
}

// ListQueues implements api.Monitoring.
func (e *Engine) ListQueues(ctx context.Context, namespace string) (api.QueueList, error) {
	ns := nsOrDefault(namespace)
	if _, err := e.namespace(ctx, ns); err != nil {
		return api.QueueList{}, err
	}
	l := api.QueueList{Queues: e.match.queueInfo(ns, e.opts.Identity, store.Now())}
	e.eachPeer(ctx, opQueues, monitorCall{Namespace: ns}, func() any { return new(api.QueueList) }, func(out any, err error) {
		if err != nil {
			l.Partial = true
			return
		}
		other := out.(*api.QueueList)
		l.Queues = mergeQueues(l.Queues, other.Queues)
		l.Partial = l.Partial || other.Partial
	})
	return l, nil
}

// eachPeer makes peering call op to every other live node (when ctx is not
// a forwarded call already) and hands each answer, decoded into a value
// newOut makes, to got, one at a time.
func (e *Engine) eachPeer(ctx context.Context, op string, in any, newOut func() any, got func(out any, err error)) {
	if !e.clustered() || api.Forwarded(ctx) {
		return
	}
	v := e.cluster.view.Load()
	if v == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, node := range v.nodes {
		if node == e.opts.Identity || v.addr[node] == "" {
			continue
		}
		p := e.peer(v.addr[node])
		wg.Go(func() {
			out := newOut()
			err := peerCall(ctx, p, op, in, out)
			mu.Lock()
			defer mu.Unlock()
			got(out, err)
		})
	}
	wg.Wait()
}

// mergeQueues adds another node's queues into qs.
func mergeQueues(qs, other []api.QueueInfo) []api.QueueInfo {
	for _, q := range other {
		i := slices.IndexFunc(qs, func(x api.QueueInfo) bool { return x.Name == q.Name && x.Kind == q.Kind })
		if i < 0 {
			qs = append(qs, q)
			continue
		}
		x := &qs[i]
		x.Backlog += q.Backlog
		x.SyncMatched += q.SyncMatched
		x.Backlogged += q.Backlogged
		x.Pollers = append(x.Pollers, q.Pollers...)
		sortPollers(x.Pollers)
	}
	sortQueues(qs)
	return qs
}

func sortQueues(qs []api.QueueInfo) {
	slices.SortFunc(qs, func(a, b api.QueueInfo) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
}

func sortPollers(ps []api.PollerInfo) {
	slices.SortFunc(ps, func(a, b api.PollerInfo) int {
		return cmp.Or(b.LastSeen.Compare(a.LastSeen), cmp.Compare(a.Identity, b.Identity), cmp.Compare(a.Node, b.Node))
	})
}

// pollerSeen is a worker that polled a queue lately.
type pollerSeen struct {
	last    time.Time
	polling int // polls of the worker waiting now
}

// maxPollersSeen bounds the workers a queue remembers; past it, the ones
// not seen within api.PollerHorizon are forgotten.
const maxPollersSeen = 1000

// see records a worker's poll beginning (delta 1) or ending (-1) at now;
// the caller holds the matcher's lock.
func (q *taskQueue) see(identity string, now time.Time, delta int) {
	if q.seen == nil {
		q.seen = map[string]*pollerSeen{}
	}
	p := q.seen[identity]
	if p == nil {
		if len(q.seen) >= maxPollersSeen {
			q.forget(now)
		}
		p = &pollerSeen{}
		q.seen[identity] = p
	}
	p.last = now
	p.polling += delta
}

// forget drops the workers not seen within api.PollerHorizon.
func (q *taskQueue) forget(now time.Time) {
	for id, p := range q.seen {
		if p.polling == 0 && now.Sub(p.last) > api.PollerHorizon {
			delete(q.seen, id)
		}
	}
}

// queueInfo returns namespace ns's queues as this node (node) sees them.
func (m *matcher) queueInfo(ns, node string, now time.Time) []api.QueueInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []api.QueueInfo{}
	for k, q := range m.queues {
		if k.ns != ns {
			continue
		}
		q.forget(now)
		info := api.QueueInfo{Namespace: ns, Name: k.name, Kind: k.kind.String(), Backlog: q.size,
			Pollers: []api.PollerInfo{}, SyncMatched: q.syncMatched, Backlogged: q.backlogged}
		for id, p := range q.seen {
			info.Pollers = append(info.Pollers, api.PollerInfo{Identity: id, Node: node, LastSeen: p.last, Polling: p.polling > 0})
		}
		sortPollers(info.Pollers)
		out = append(out, info)
	}
	sortQueues(out)
	return out
}
