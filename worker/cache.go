package worker

import (
	"container/list"
	"sync"

	"github.com/strandhq/strand/internal/sdk"
	"github.com/strandhq/strand/store"
)

// cache keeps the instances of recently advanced runs, least recently used
// first out. A run's entry is locked while a task of the run executes.
type cache struct {
	mu      sync.Mutex
	size    int
	entries map[store.RunKey]*entry
	lru     *list.List // of *entry, most recent at the front
}

type entry struct {
	key   store.RunKey
	mu    sync.Mutex
	inst  *sdk.Instance
	elem  *list.Element
	users int
}

func newCache(size int) *cache {
	return &cache{size: size, entries: map[store.RunKey]*entry{}, lru: list.New()}
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
// over the cache's size.
func (c *cache) unlock(e *entry) {
	empty := e.inst == nil
	e.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.users--
	if empty && e.users == 0 {
		c.remove(e)
	}
	for c.lru.Len() > c.size {
		old := c.lru.Back().Value.(*entry)
		if old.users > 0 {
			break
		}
		c.remove(old)
		old.drop()
	}
}

func (c *cache) remove(e *entry) {
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
		c.lru.Remove(e.elem)
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
}
