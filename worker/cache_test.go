package worker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/sdk"
	"github.com/strandhq/strand/store"
)

// waitForGo blocks on a "go" signal.
func waitForGo(ctx sdk.Context, _ []byte) ([]byte, error) {
	sdk.GetSignalChannel[int](ctx, "go").Receive(ctx)
	return nil, nil
}

func started(t *testing.T, id string) *sdk.Instance {
	t.Helper()
	inst := sdk.NewInstance(sdk.Info{WorkflowID: id, RunID: id}, waitForGo, nil)
	if _, err := inst.Execute([]api.Event{{ID: 1, Type: api.EventWorkflowStarted, Payload: api.Payload{Data: []byte("null")}}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	inst.LastEventID = 3
	return inst
}

// check verifies the cache's accounting against its entries and returns
// how many entries each tier holds.
func (c *cache) check(t *testing.T) (live, kept int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var bytes, jbytes int64
	for _, e := range c.entries {
		switch {
		case e.list == c.live && e.inst != nil:
			live++
			bytes += e.bytes
		case e.list == c.kept && e.inst == nil && e.journal != nil:
			kept++
			jbytes += e.bytes
		default:
			t.Fatalf("entry %s: in list %p (live %p, kept %p), instance %v, journal %d bytes", e.key.RunID, e.list, c.live, c.kept, e.inst != nil, len(e.journal))
		}
	}
	if live != c.live.Len() || kept != c.kept.Len() || bytes != c.bytes || jbytes != c.jbytes {
		t.Fatalf("counted %d live (%d bytes), %d kept (%d bytes); the cache says %d (%d), %d (%d)",
			live, bytes, kept, jbytes, c.live.Len(), c.bytes, c.kept.Len(), c.jbytes)
	}
	if c.bytes > c.memory || c.jbytes > c.journals {
		t.Fatalf("over budget: %d of %d live bytes, %d of %d journal bytes", c.bytes, c.memory, c.jbytes, c.journals)
	}
	return live, kept
}

// TestCacheTiers: instances beyond the live budget leave their journals,
// journals beyond theirs go, the least recently used first; a journal
// brought back to life moves back to the live tier, and the accounting
// holds throughout.
func TestCacheTiers(t *testing.T) {
	one := started(t, "probe")
	size := one.Footprint()
	journal, ok := one.Journal()
	one.Close()
	if !ok {
		t.Fatal("no journal")
	}
	// Room for two instances and three journals.
	c := newCache(2*size+size/2, 0, 3*(int64(len(journal))+journalOverhead)+journalOverhead/2)
	defer c.clear()
	key := func(i int) store.RunKey {
		return store.RunKey{Namespace: "ns", WorkflowID: fmt.Sprint(i), RunID: fmt.Sprint(i)}
	}
	for i := range 8 {
		e := c.lock(key(i))
		e.inst = started(t, fmt.Sprint(i))
		c.unlock(e)
		c.check(t)
	}
	if live, kept := c.check(t); live != 2 || kept != 3 {
		t.Fatalf("%d live, %d kept; want 2 and 3", live, kept)
	}
	// The most recent two are live, the three before keep journals, the
	// oldest are gone.
	for i := range 8 {
		c.mu.Lock()
		e := c.entries[key(i)]
		c.mu.Unlock()
		switch {
		case i >= 6 && (e == nil || e.inst == nil),
			i >= 3 && i < 6 && (e == nil || e.journal == nil),
			i < 3 && e != nil:
			t.Fatalf("entry %d in the wrong tier: %+v", i, e)
		}
	}
	// Run 3 comes back from its journal: it is live again, and the least
	// recently used live instance leaves its journal in turn.
	e := c.lock(key(3))
	if e.journal == nil || e.last != 3 {
		t.Fatalf("run 3: journal %d bytes, last event %d", len(e.journal), e.last)
	}
	inst, err := sdk.Resume(sdk.Info{WorkflowID: "3", RunID: "3"}, waitForGo, nil, e.journal)
	if err != nil {
		t.Fatal(err)
	}
	e.inst, e.journal = inst, nil
	c.unlock(e)
	if live, kept := c.check(t); live != 2 || kept != 3 {
		t.Fatalf("%d live, %d kept; want 2 and 3", live, kept)
	}
	c.mu.Lock()
	if e := c.entries[key(6)]; e == nil || e.journal == nil {
		t.Errorf("run 6, the least recently used live one, did not leave its journal: %+v", e)
	}
	c.mu.Unlock()
}

// TestCacheHandOver: a run's next task may lock its entry while the last
// task's unlock is still placing it. Two handlers take turns on each of a
// few runs, one leaving an instance, the other dropping it (as a closed
// run does), while other runs push the cache over its budget. Each
// entry's final place must be what its last holder left (an entry in the
// live tier without an instance crashed the eviction).
func TestCacheHandOver(t *testing.T) {
	c := newCache(64<<10, 0, 1<<20)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				k := store.RunKey{Namespace: "ns", WorkflowID: fmt.Sprint("run-", i%8), RunID: fmt.Sprint("run-", i%8)}
				if g >= 2 {
					// Fillers: other runs that evict.
					k.WorkflowID = fmt.Sprint("fill-", g, "-", i)
					k.RunID = k.WorkflowID
				}
				e := c.lock(k)
				switch {
				case g == 0 || g >= 2:
					if e.inst == nil {
						e.drop()
						e.inst = started(t, k.RunID)
					}
				default:
					e.drop()
				}
				c.unlock(e)
			}
		})
	}
	wg.Wait()
	c.check(t)
	c.clear() // closes the instances still cached
}
