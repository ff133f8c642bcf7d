package worker

import (
	"container/list"
	"sync"

	"github.com/strandhq/strand/internal/sdk"
	"github.com/strandhq/strand/store"
)

// cache keeps the instances of recently advanced runs within a memory
// budget (and, when set, a count), least recently used first out. A run's
// entry is locked while a task of the run executes.
type cache struct {
	mu      sync.Mutex
	memory  int64 // budget in bytes
	size    int   // most entries; 0: no bound but the budget
	bytes   int64 // the entries' sizes
	entries map[store.RunKey]*entry
	lru     *list.List // of *entry, most recent at the front
}

type entry struct {
	key   store.RunKey
	mu    sync.Mutex
	inst  *sdk.Instance
	elem  *list.Element
	users int
	// bytes is the instance's footprint when its last task ended (guarded
	// by the cache's mu).
	bytes int64
}

func newCache(memory int64, size int) *cache {
	return &cache{memory: memory, size: size, entries: map[store.RunKey]*entry{}, lru: list.New()}
}

func (c *cache) over() bool {
	return c.bytes > c.memory || c.size > 0 && c.lru.Len() > c.size
}

func (e *entry) drop() {
	if e.inst != nil {
		e.inst.Close()
		e.inst = nil
	}
}

// lock returns the run's entry, locked.
func (c *cache) lock(k store.RunKey) *entry {
	c.mu.Lock()
	e := c.entries[k]
	if e == nil {
		e = &entry{key: k}
		c.entries[k] = e
		e.elem = c.lru.PushFront(e)
	} else {
		c.lru.MoveToFront(e.elem)
	}
	e.users++
	c.mu.Unlock()
	e.mu.Lock()
	return e
}

// unlock releases the entry and evicts the least recently used entries
// while the cache is over its budget.
func (c *cache) unlock(e *entry) {
	empty := e.inst == nil
	var size int64
	if !empty {
		size = e.inst.Footprint()
	}
	e.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.users--
	if c.entries[e.key] == e {
		c.bytes += size - e.bytes
		e.bytes = size
	}
	if empty && e.users == 0 {
		c.remove(e)
	}
	// Entries in use are passed over: their tasks are running.
	for el := c.lru.Back(); el != nil && c.over(); {
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
		c.lru.Remove(e.elem)
		c.bytes -= e.bytes
		e.bytes = 0
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
	c.lru.Init()
	c.bytes = 0
}
