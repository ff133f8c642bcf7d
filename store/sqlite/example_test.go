package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/sqlite"
)

// This example opens a store on an SQLite file, takes ownership of a shard
// and commits a run's first transition: its state, a history block and a
// task, as one atomic batch. A second owner then takes the shard over, and
// the first owner's next write is refused.
func Example() {
	dir, err := os.MkdirTemp("", "strand-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "strand.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := st.CreateNamespace(ctx, store.Namespace{Name: "shop", Retention: 7 * 24 * time.Hour}); err != nil {
		log.Fatal(err)
	}

	shard, err := st.AcquireShard(ctx, store.AcquireShardRequest{ShardID: 7, Owner: "node-a"})
	if err != nil {
		log.Fatal(err)
	}
	run := store.RunKey{Namespace: "shop", WorkflowID: "order-42", RunID: "run-1"}
	firstTaskID, _ := shard.TaskIDBlock()
	err = st.Commit(ctx, &store.Batch{
		ShardID: shard.ID,
		RangeID: shard.RangeID,
		Runs: []store.RunWrite{{
			Execution: &store.Execution{
				RunKey: run, State: store.StateRunning, Status: store.StatusRunning,
				NextEventID: 3, DBVersion: 1,
				Info: store.RunInfo{Type: "order", BusinessKey: "42"},
			},
			Current: store.CurrentCreate,
			History: []store.HistoryBlock{{FirstEventID: 1, LastEventID: 2, TxnID: firstTaskID, Events: []byte("started,scheduled")}},
		}},
		Tasks: []store.Task{{Category: store.CategoryTransfer, Key: store.TaskKey{TaskID: firstTaskID}, Type: 1, Run: run}},
	})
	if err != nil {
		log.Fatal(err)
	}

	cur, err := st.GetCurrentExecution(ctx, shard.ID, "shop", "order-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("current run:", cur.RunID)

	// node-b takes the shard; node-a's range_id is now stale.
	if _, err := st.AcquireShard(ctx, store.AcquireShardRequest{ShardID: 7, Owner: "node-b", PrevRangeID: shard.RangeID}); err != nil {
		log.Fatal(err)
	}
	err = st.Commit(ctx, &store.Batch{ShardID: shard.ID, RangeID: shard.RangeID,
		Tasks: []store.Task{{Category: store.CategoryTransfer, Key: store.TaskKey{TaskID: firstTaskID + 1}, Type: 1, Run: run}}})
	fmt.Println("stale owner refused:", errors.Is(err, store.ErrShardOwnershipLost))
	// Output:
	// current run: run-1
	// stale owner refused: true
}
