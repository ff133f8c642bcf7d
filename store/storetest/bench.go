package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

// RawCommitter commits rows of an empty-ish table directly on the backend's
// database, with the same durability settings as the store: the limit the
// store's write path is measured against.
type RawCommitter interface {
	// Prepare creates the table; it is called once per benchmark.
	Prepare(ctx context.Context) error
	// Commit inserts rows rows in one transaction.
	Commit(ctx context.Context, rows int) error
}

// Bench measures the hot write path of the store next to the backend's raw
// commit rate, in one run so the figures share the machine's state:
//
//   - raw/1: one single-row insert per transaction;
//   - raw/batch16: 16 rows per transaction;
//   - raw/parallel8: one row per transaction from 8 goroutines;
//   - transition/1: one run's transition per batch (update the run, append a
//     history block, insert two tasks);
//   - transition/group16: 16 runs' transitions per batch (group commit);
//   - transition/parallel8: one transition per batch from 8 goroutines, each
//     on a shard of its own.
//
// Each reports commits/s and rows/s or transitions/s.
func Bench(b *testing.B, open func(b *testing.B) (store.Store, RawCommitter)) {
	ctx := context.Background()
	BenchRaw(b, "raw", func(b *testing.B) RawCommitter { _, rc := open(b); return rc })
	transition := func(runs, workers int) func(b *testing.B) {
		return func(b *testing.B) {
			st, _ := open(b)
			ws := make([]*writer, workers)
			for i := range ws {
				ws[i] = newWriter(b, st, int32(i), runs)
			}
			parallel(b, workers, func(w int) error { return ws[w].step(ctx) })
			report(b, workers, runs, "transitions/s")
		}
	}
	b.Run("transition/1", transition(1, 1))
	b.Run("transition/group16", transition(16, 1))
	b.Run("transition/parallel8", transition(1, 8))
}

// BenchRaw runs the raw commit benchmarks (name/1, name/batch16,
// name/parallel8) on committers made by open, for backends with more than
// one notion of a raw commit.
func BenchRaw(b *testing.B, name string, open func(b *testing.B) RawCommitter) {
	ctx := context.Background()
	raw := func(rows, workers int) func(b *testing.B) {
		return func(b *testing.B) {
			rc := open(b)
			if err := rc.Prepare(ctx); err != nil {
				b.Fatal(err)
			}
			parallel(b, workers, func(int) error { return rc.Commit(ctx, rows) })
			report(b, workers, rows, "rows/s")
		}
	}
	b.Run(name+"/1", raw(1, 1))
	b.Run(name+"/batch16", raw(16, 1))
	b.Run(name+"/parallel8", raw(1, 8))
}

// parallel runs b.N calls of fn spread over workers goroutines.
func parallel(b *testing.B, workers int, fn func(worker int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ResetTimer()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := fn(w); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func report(b *testing.B, workers, perCommit int, unit string) {
	secs := b.Elapsed().Seconds()
	if secs == 0 {
		return
	}
	b.ReportMetric(float64(b.N)/secs, "commits/s")
	b.ReportMetric(float64(b.N*perCommit)/secs, unit)
	_ = workers
}

// writer advances runs of one shard, one transition per run per batch.
type writer struct {
	st     store.Store
	shard  store.Shard
	runs   []*store.Execution
	nextID int64
}

func newWriter(b *testing.B, st store.Store, shardID int32, runs int) *writer {
	ctx := context.Background()
	if _, err := st.CreateNamespace(ctx, store.Namespace{Name: "default"}); err != nil && shardID == 0 {
		b.Fatal(err)
	}
	sh, err := st.AcquireShard(ctx, store.AcquireShardRequest{ShardID: shardID, Owner: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	w := &writer{st: st, shard: sh}
	w.nextID, _ = sh.TaskIDBlock()
	batch := &store.Batch{ShardID: shardID, RangeID: sh.RangeID}
	for i := range runs {
		e := newExecution(store.RunKey{Namespace: "default", WorkflowID: fmt.Sprintf("bench-%d-%d", shardID, i), RunID: "r"})
		batch.Runs = append(batch.Runs, store.RunWrite{Execution: e, Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "started")}})
		w.runs = append(w.runs, e)
	}
	if err := st.Commit(ctx, batch); err != nil {
		b.Fatal(err)
	}
	return w
}

// events is a typical transition's history: a step completed and the next
// one scheduled, about 300 bytes encoded.
var events = []byte(`[{"id":0,"type":"StepCompleted","time":"2026-11-22T10:00:00Z","scheduled":5,"result":"eyJvayI6dHJ1ZX0="},` +
	`{"id":0,"type":"StepScheduled","time":"2026-11-22T10:00:00Z","name":"charge-card","queue":"default","input":"eyJvcmRlciI6NDJ9"}]`)

func (w *writer) step(ctx context.Context) error {
	batch := &store.Batch{ShardID: w.shard.ID, RangeID: w.shard.RangeID}
	now := store.Now()
	for i, e := range w.runs {
		n := next(e, 2)
		batch.Runs = append(batch.Runs, store.RunWrite{Execution: n, ExpectedDBVersion: e.DBVersion,
			History: []store.HistoryBlock{{FirstEventID: e.NextEventID, LastEventID: e.NextEventID + 1, TxnID: w.nextID, Events: events}}})
		batch.Tasks = append(batch.Tasks,
			store.Task{Category: store.CategoryTransfer, Key: store.TaskKey{TaskID: w.nextID}, Type: 1, Run: e.RunKey, Data: []byte(`{"step":5}`)},
			store.Task{Category: store.CategoryTimer, Key: store.TaskKey{FireTime: now.Add(time.Minute), TaskID: w.nextID + 1}, Type: 2, Run: e.RunKey, Data: []byte(`{"timeout":5}`)})
		w.nextID += 2
		w.runs[i] = n
	}
	return w.st.Commit(ctx, batch)
}
