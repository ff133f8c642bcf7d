package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandlers: the pollers' tasks run on at most as many goroutines as
// there are slots, each taking task after task, and every task runs once;
// once the pollers' context ends, the goroutines leave.
func TestHandlers(t *testing.T) {
	const slots, pollers, tasks = 4, 3, 2000
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var running, most, done atomic.Int64
	seen := make([]atomic.Int32, tasks)
	hs := newHandlers(slots, &wg, func(i *int) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if *i%100 == 0 {
			time.Sleep(time.Millisecond) // some tasks take a while
		}
		seen[*i].Add(1)
		running.Add(-1)
		done.Add(1)
	})
	var next atomic.Int64
	var pwg sync.WaitGroup
	for range pollers {
		pwg.Go(func() {
			poll(ctx, nil, "test", hs, func(context.Context) (*int, error) {
				i := int(next.Add(1)) - 1
				if i >= tasks {
					<-ctx.Done()
					return nil, nil
				}
				return &i, nil
			})
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for done.Load() < tasks && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := hs.n.Load(); got > slots {
		t.Errorf("%d goroutines for %d slots", got, slots)
	}
	cancel()
	pwg.Wait()
	wg.Wait()
	if n := hs.n.Load(); n != 0 {
		t.Errorf("%d goroutines left after the context ended", n)
	}
	if m := most.Load(); m > slots {
		t.Errorf("%d tasks ran at once; %d slots", m, slots)
	}
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("task %d ran %d times", i, n)
		}
	}
}
