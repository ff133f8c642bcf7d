package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strandhq/strand/store/sqlite"
)

// TestCheckpointerKeepsTheLogSmall writes 30 MiB in transactions of
// 100 KiB with pauses between groups of them. The writer's own automatic
// checkpoint waits for some 80 MiB of log (writerCheckpointPages), so the
// log stays small only if the store's checkpointer copies it into the
// database file, letting the writer start it over.
func TestCheckpointerKeepsTheLogSmall(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(ctx, sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	db := st.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE blobs (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	blob := bytes.Repeat([]byte("x"), 100<<10)
	for i := range 300 {
		if _, err := db.ExecContext(ctx, `INSERT INTO blobs (b) VALUES (?)`, blob); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			time.Sleep(250 * time.Millisecond) // more than a checkpoint interval
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 10<<20 {
		t.Fatalf("the log holds %d MiB after 30 MiB of writes: it is not checkpointed beside the writer", fi.Size()>>20)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM blobs`).Scan(&n); err != nil || n != 300 {
		t.Fatalf("%d rows, %v", n, err)
	}
}
