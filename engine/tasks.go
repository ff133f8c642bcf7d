package engine

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Transfer task types: effects that leave a run, written in the same batch
// as the transition that caused them (an outbox) and processed at least
// once; each receiver deduplicates.
const (
	transferWorkflowTask int16 = 1 // offer the run's workflow task to its queue
	transferStep         int16 = 2 // offer a step attempt to its queue
	transferStartChild   int16 = 3 // start a child run
	transferCloseParent  int16 = 4 // tell the parent its child closed
	transferSignal       int16 = 5 // signal another run
	transferCancel       int16 = 6 // ask another run to cancel
	transferParentClose  int16 = 7 // apply a parent-close policy to a child
	transferVisibility   int16 = 8 // write the run's visibility record
)

// Timer task types, ordered by fire time.
const (
	timerUser        int16 = 1 // a workflow timer
	timerStepTimeout int16 = 2 // a step's timeout of kind taskData.Kind
	timerStepRetry   int16 = 3 // a step's next attempt after back-off
	timerRunTimeout  int16 = 4 // the run's timeout
	timerStartDelay  int16 = 5 // the run's first workflow task after a start delay
	timerRetention   int16 = 6 // delete a closed run
)

// taskData is the payload of a task; each type uses some fields.
type taskData struct {
	Seq      int64         `json:"seq,omitempty"`
	Attempt  int32         `json:"attempt,omitempty"`
	Kind     string        `json:"kind,omitempty"`
	Queue    string        `json:"queue,omitempty"`
	Priority int8          `json:"priority,omitempty"`
	Name     string        `json:"name,omitempty"`
	Input    store.Payload `json:"input,omitzero"`
	// Started is when a running step attempt started, in the dispatch a
	// checkpoint writes anew (checkpointStep).
	Started time.Time `json:"started,omitzero"`
	// Target is the other run (child, parent, signal or cancel target).
	Target    *store.RunKey     `json:"target,omitempty"`
	Child     *api.ChildOptions `json:"child,omitempty"`
	RequestID string            `json:"request_id,omitempty"`
	Status    store.RunStatus   `json:"status,omitempty"`
	Failure   *api.Failure      `json:"failure,omitempty"`
	// SignalStart starts a signal's target when it has no open run.
	SignalStart *api.SignalStart `json:"signal_start,omitempty"`
}

func encodeTaskData(d *taskData) []byte {
	b, err := api.MarshalStored(d)
	if err != nil {
		panic(fmt.Sprintf("engine: encode task data: %v", err))
	}
	return b
}

func decodeTaskData(b []byte) (*taskData, error) {
	var d taskData
	if len(b) == 0 {
		return &d, nil
	}
	if err := api.UnmarshalStored(b, &d); err != nil {
		return nil, fmt.Errorf("engine: decode task data: %w", err)
	}
	return &d, nil
}

// ackTracker computes a queue's ack level: everything below the smallest
// key still pending has been processed. Keys are registered when they are
// allocated, before their batch commits, so the level never passes a task
// that is about to be written. A key may be registered more than once (a
// timer written past the horizon, then read back from the store); it is
// pending until it was finished as often, and finishing it more often than
// it was registered changes nothing.
//
// It holds every queued task's key (a million at once in a burst of a
// million signals), so it holds them without pointers: a store.TaskKey's
// time carries its location's, and the collector would mark each.
type ackTracker struct {
	pending keyHeap // each pending key once
	counts  map[ackKey]ackCount
	// max is the highest key ever registered.
	max store.TaskKey
}

// ackKey is a store.TaskKey without pointers, ordered as its key.
type ackKey struct {
	sec  int64 // FireTime's Unix seconds (a zero FireTime's too)
	nsec int32
	id   int64
}

func toAckKey(k store.TaskKey) ackKey {
	return ackKey{sec: k.FireTime.Unix(), nsec: int32(k.FireTime.Nanosecond()), id: k.TaskID}
}

// taskKey returns the key, its time in UTC (a zero time stays zero).
func (k ackKey) taskKey() store.TaskKey {
	return store.TaskKey{FireTime: time.Unix(k.sec, int64(k.nsec)).UTC(), TaskID: k.id}
}

func (k ackKey) less(o ackKey) bool {
	if k.sec != o.sec {
		return k.sec < o.sec
	}
	if k.nsec != o.nsec {
		return k.nsec < o.nsec
	}
	return k.id < o.id
}

// ackCount is how often a key was registered and finished.
type ackCount struct{ added, done int32 }

func newAckTracker(level store.TaskKey) *ackTracker {
	return &ackTracker{counts: map[ackKey]ackCount{}, max: level}
}

func (a *ackTracker) add(k store.TaskKey) {
	ak := toAckKey(k)
	c := a.counts[ak]
	if c.added == 0 {
		heap.Push(&a.pending, ak)
	}
	c.added++
	a.counts[ak] = c
	if a.max.Less(k) {
		a.max = k
	}
}

func (a *ackTracker) finish(k store.TaskKey) {
	ak := toAckKey(k)
	if c, ok := a.counts[ak]; ok && c.done < c.added {
		c.done++
		a.counts[ak] = c
	}
}

// level returns the key below which everything is processed.
func (a *ackTracker) level() store.TaskKey {
	for len(a.pending) > 0 {
		k := a.pending[0]
		if c := a.counts[k]; c.done < c.added {
			return k.taskKey()
		}
		delete(a.counts, k)
		heap.Pop(&a.pending)
	}
	return store.TaskKey{FireTime: a.max.FireTime, TaskID: a.max.TaskID + 1}
}

type keyHeap []ackKey

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i].less(h[j]) }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(ackKey)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// timerEntry is a durable timer task waiting to fire. (In-memory timers,
// which a new owner re-creates, are time.AfterFunc: shard.afterFunc.)
type timerEntry struct {
	key   store.TaskKey
	typ   int16
	run   store.RunKey
	data  *taskData
	index int
}

type timerHeap []*timerEntry

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].key.Less(h[j].key) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *timerHeap) Push(x any)        { e := x.(*timerEntry); e.index = len(*h); *h = append(*h, e) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	x.index = -1
	return x
}

// backoffDelay is the delay before attempt (attempt >= 2) under policy p.
func backoffDelay(p *api.RetryPolicy, attempt int32) time.Duration {
	initial, coef, maxI := time.Second, 2.0, time.Duration(0)
	if p != nil {
		if p.InitialInterval > 0 {
			initial = p.InitialInterval
		}
		if p.BackoffCoefficient >= 1 {
			coef = p.BackoffCoefficient
		}
		maxI = p.MaximumInterval
	}
	if maxI <= 0 {
		maxI = 100 * initial
	}
	d := float64(initial)
	for i := int32(2); i < attempt; i++ {
		d *= coef
		if d >= float64(maxI) {
			return maxI
		}
	}
	return min(time.Duration(d), maxI)
}
