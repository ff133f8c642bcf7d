package worker

import (
	"container/list"
	"sync"

	"github.com/strandhq/strand/internal/sdk"
	"github.com/strandhq/strand/store"
)

// cache keeps runs between their tasks in two tiers, each least recently
// used first out:
//
//   - live instances (goroutines and state), within a memory budget and,
//     when set, a count;
//   - the journals of instances the first tier evicted (sdk.Instance.Journal:
//     a few hundred bytes each), within a budget of their own. A run that
//     comes back from this tier costs one replay of its journal and no
//     history read.
//
// A run's entry is locked while a task of the run executes. The cache's
// mu is never held while waiting for an entry's (lock takes them in turn),
// so unlock may take the cache's while it holds the entry's.
type cache struct {
	mu       sync.Mutex
	memory   int64 // live instances' budget in bytes
	size     int   // most live instances; 0: no bound but the budget
	journals int64 // journals' budget in bytes; 0: none kept
	bytes    int64 // the live instances' sizes
	jbytes   int64 // the journals' sizes
	entries  map[store.RunKey]*entry
	live     *list.List // of *entry with an instance, most recent at the front
	kept     *list.List // of *entry with a journal only, most recent at the front
}

type entry struct {
	key  store.RunKey
	mu   sync.Mutex
	inst *sdk.Instance
	// journal is an evicted instance's journal and last the event its
	// last task ended at; set only while inst is nil.
	journal []byte
	last    int64
	users   int
	// elem is the entry's place in live or kept (nil in neither), and
	// bytes what it counts there (both guarded by the cache's mu).
	elem  *list.Element
	list  *list.List
	bytes int64
}

// journalOverhead is what an entry of the journal tier holds beside its
// journal's bytes (the entry, its list element and its map slot).
const journalOverhead = 320

func newCache(memory int64, size int, journals int64) *cache {
	return &cache{memory: memory, size: size, journals: max(journals, 0), entries: map[store.RunKey]*entry{}, live: list.New(), kept: list.New()}
}

func (c *cache) liveOver() bool {
	return c.bytes > c.memory || c.size > 0 && c.live.Len() > c.size
}

func (e *entry) drop() {
	if e.inst != nil {
		e.inst.Close()
		e.inst = nil
	}
	e.journal = nil
}

// lock returns the run's entry, locked.
func (c *cache) lock(k store.RunKey) *entry {
	c.mu.Lock()
	e := c.entries[k]
	if e == nil {
		e = &entry{key: k}
		c.entries[k] = e
		c.place(e, c.live, 0)
	} else if e.elem != nil {
		e.list.MoveToFront(e.elem)
	}
	e.users++
	c.mu.Unlock()
	e.mu.Lock()
	return e
}

// unlock releases the entry, moves it to the tier its state belongs in,
// and evicts the least recently used entries while a tier is over its
// budget.
func (c *cache) unlock(e *entry) {
	var size int64
	switch {
	case e.inst != nil:
		size = e.inst.Footprint()
	case e.journal != nil:
		size = int64(len(e.journal)) + journalOverhead
	}
	inst, journal := e.inst != nil, e.journal != nil
	// The cache's lock before the entry's goes: the run's next task, which
	// may lock the entry as soon as it is free, places it after this
	// placement, never before (when it came first, an entry it had emptied
	// went back to the live tier by what this one saw).
	c.mu.Lock()
	e.mu.Unlock()
	defer c.mu.Unlock()
	e.users--
	if c.entries[e.key] == e {
		switch {
		case inst:
			c.place(e, c.live, size)
		case journal:
			c.place(e, c.kept, size)
		case e.users == 0:
			c.remove(e)
		default:
			c.place(e, nil, 0) // empty while others wait for it
		}
	}
	c.evict()
}

// place puts e at the front of l (nil: in no list) counting size.
func (c *cache) place(e *entry, l *list.List, size int64) {
	if e.list != l || e.elem == nil {
		c.unplace(e)
		if l != nil {
			e.elem, e.list = l.PushFront(e), l
		}
	} else {
		l.MoveToFront(e.elem)
	}
	c.count(e, -e.bytes)
	e.bytes = size
	c.count(e, size)
}

func (c *cache) count(e *entry, n int64) {
	switch e.list {
	case c.live:
		c.bytes += n
	case c.kept:
		c.jbytes += n
	}
}

func (c *cache) unplace(e *entry) {
	if e.elem == nil {
		return
	}
	c.count(e, -e.bytes)
	e.list.Remove(e.elem)
	e.elem, e.list, e.bytes = nil, nil, 0
}

// evict moves the least recently used idle instances to the journal tier
// (or out, when they keep no journal) and drops the least recently used
// journals, while the tiers are over their budgets. Entries in use are
// passed over: their tasks are running.
func (c *cache) evict() {
	for el := c.live.Back(); el != nil && c.liveOver(); {
		old := el.Value.(*entry)
		el = el.Prev()
		if old.users > 0 {
			continue
		}
		var journal []byte
		if c.journals > 0 && !old.inst.Closed() {
			journal, _ = old.inst.Journal()
		}
		last := old.inst.LastEventID
		old.drop()
		if journal == nil {
			c.remove(old)
			continue
		}
		old.journal, old.last = journal, last
		c.place(old, c.kept, int64(len(journal))+journalOverhead)
	}
	for el := c.kept.Back(); el != nil && c.jbytes > c.journals; {
		old := el.Value.(*entry)
		el = el.Prev()
		if old.users > 0 {
			continue
		}
		c.remove(old)
		old.drop()
	}
}

func (c *cache) remove(e *entry) {
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
		c.unplace(e)
	}
}

func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.users == 0 {
			e.drop()
		}
	}
	c.entries = map[store.RunKey]*entry{}
	c.live.Init()
	c.kept.Init()
	c.bytes, c.jbytes = 0, 0
}
