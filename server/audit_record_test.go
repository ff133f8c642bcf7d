package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
)

// TestAuditEntryOfALeftCaller: the entry of a call whose caller had gone
// (its request's context done) is written while the queue has room.
// Before, record chose at random between the queue and the ended context,
// and dropped about half of them, saying the log was full.
func TestAuditEntryOfALeftCaller(t *testing.T) {
	st := testdb.SQLite(t)
	a := NewAuditLog(st, AuditOptions{})
	a.Start()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	const n = 200
	now := store.Now()
	for i := range n {
		a.record(gone, store.AuditEntry{ID: fmt.Sprintf("left-%03d", i), Time: now, Actor: "alice",
			Action: "POST /namespaces/{namespace}/workflows/{workflow_id}/signals", Target: "order-1", Status: 200})
	}
	a.Close()
	page, err := st.ListAudit(context.Background(), store.ListAuditRequest{Actor: "alice", Since: now.Add(-time.Minute), PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != n {
		t.Fatalf("%d of %d entries of callers that had gone were written", len(page.Entries), n)
	}
	if d := a.dropped.Load(); d != 0 {
		t.Fatalf("%d entries counted as dropped", d)
	}
}
