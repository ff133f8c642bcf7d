package storetest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

func testNamespaces(t *testing.T, s *suite) {
	ns, err := s.st.CreateNamespace(s.ctx, store.Namespace{Name: "payments", Description: "money", Retention: 24 * time.Hour, Data: map[string]string{"team": "a"}})
	s.must(err)
	if ns.Version != 1 || ns.CreatedAt.IsZero() {
		t.Fatalf("created: %+v", ns)
	}
	_, err = s.st.CreateNamespace(s.ctx, store.Namespace{Name: "payments"})
	s.wantErr(err, store.ErrNamespaceExists)
	got, err := s.st.GetNamespace(s.ctx, "payments")
	s.must(err)
	equal(t, "namespace", got, ns)

	got.Description = "payments team"
	updated, err := s.st.UpdateNamespace(s.ctx, got)
	s.must(err)
	if updated.Version != 2 || updated.Description != "payments team" || updated.Retention != 24*time.Hour {
		t.Fatalf("updated: %+v", updated)
	}
	// A stale version is refused and changes nothing.
	got.Description = "stale"
	_, err = s.st.UpdateNamespace(s.ctx, got)
	s.wantErr(err, store.ErrConditionFailed)
	again, err := s.st.GetNamespace(s.ctx, "payments")
	s.must(err)
	equal(t, "after stale update", again, updated)

	_, err = s.st.UpdateNamespace(s.ctx, store.Namespace{Name: "ghost", Version: 1})
	s.wantErr(err, store.ErrNamespaceNotFound)
	_, err = s.st.GetNamespace(s.ctx, "ghost")
	s.wantErr(err, store.ErrNamespaceNotFound)

	all, err := s.st.ListNamespaces(s.ctx)
	s.must(err)
	if len(all) != 2 || all[0].Name != "default" || all[1].Name != "payments" {
		t.Fatalf("list: %+v", all)
	}
}

func testUnknownNamespace(t *testing.T, s *suite) {
	sh := s.acquire(1, "n")
	k := store.RunKey{Namespace: "nowhere", WorkflowID: "wf", RunID: "r"}
	err := s.st.Commit(s.ctx, &store.Batch{ShardID: 1, RangeID: sh.RangeID,
		Runs:  []store.RunWrite{{Execution: newExecution(k), Current: store.CurrentCreate, History: []store.HistoryBlock{block(1, 2, "x")}}},
		Tasks: []store.Task{transfer(1, k)},
	})
	s.wantErr(err, store.ErrNamespaceNotFound)
	s.wantNoRun(sh, k)
	if ts := s.tasks(1, transferRange()); len(ts) != 0 {
		t.Fatalf("tasks written: %v", ts)
	}
	_, err = s.st.ListRuns(s.ctx, store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "nowhere"}})
	s.wantErr(err, store.ErrNamespaceNotFound)
	_, err = s.st.CountRuns(s.ctx, store.RunFilter{Namespace: "nowhere"})
	s.wantErr(err, store.ErrNamespaceNotFound)
}

func testNodes(t *testing.T, s *suite) {
	now := store.Now()
	a := store.Node{ID: "a", Host: "h1", PID: 10, Group: "g", Address: "127.0.0.1:7233", StartedAt: now, HeartbeatAt: now, ExpiresAt: now.Add(10 * time.Second)}
	b := store.Node{ID: "b", Host: "h2", PID: 11, Group: "g", StartedAt: now, HeartbeatAt: now, ExpiresAt: now.Add(-time.Second)}
	s.must(s.st.UpsertNode(s.ctx, a))
	s.must(s.st.UpsertNode(s.ctx, b))
	alive, err := s.st.ListNodes(s.ctx, now)
	s.must(err)
	equal(t, "alive", alive, []store.Node{a})
	all, err := s.st.ListNodes(s.ctx, time.Time{})
	s.must(err)
	equal(t, "all", all, []store.Node{a, b})
	// A heartbeat revives b.
	b.HeartbeatAt, b.ExpiresAt = now.Add(time.Second), now.Add(20*time.Second)
	s.must(s.st.UpsertNode(s.ctx, b))
	alive, err = s.st.ListNodes(s.ctx, now)
	s.must(err)
	equal(t, "alive after heartbeat", alive, []store.Node{a, b})
	s.must(s.st.DeleteNode(s.ctx, "a"))
	all, err = s.st.ListNodes(s.ctx, time.Time{})
	s.must(err)
	equal(t, "after delete", all, []store.Node{b})
}

func testDefinitions(t *testing.T, s *suite) {
	d1, err := s.st.PutDefinition(s.ctx, store.Definition{Type: "etl", Body: []byte(`{"nodes":["a","b"]}`), Group: "g", ModifiedBy: "node-1"})
	s.must(err)
	if d1.Version != 1 || d1.SHA1 != sha1Hex(`{"nodes":["a","b"]}`) || d1.ModifiedBy != "node-1" || d1.Group != "g" {
		t.Fatalf("first version: %+v", d1)
	}
	same, err := s.st.PutDefinition(s.ctx, store.Definition{Type: "etl", Body: []byte(`{"nodes":["a","b"]}`)})
	s.must(err)
	equal(t, "same content", same, d1)
	d2, err := s.st.PutDefinition(s.ctx, store.Definition{Type: "etl", Body: []byte(`{"nodes":["a","b","c"]}`)})
	s.must(err)
	if d2.Version != 2 || d2.SHA1 == d1.SHA1 {
		t.Fatalf("second version: %+v", d2)
	}
	// An explicit version with other content is refused.
	_, err = s.st.PutDefinition(s.ctx, store.Definition{Type: "etl", Version: 1, Body: []byte("other")})
	s.wantErr(err, store.ErrDefinitionExists)
	// With the same content it is idempotent.
	again, err := s.st.PutDefinition(s.ctx, store.Definition{Type: "etl", Version: 1, Body: []byte(`{"nodes":["a","b"]}`)})
	s.must(err)
	equal(t, "explicit same version", again, d1)

	latest, err := s.st.GetDefinition(s.ctx, "etl", 0)
	s.must(err)
	equal(t, "latest", latest, d2)
	v1, err := s.st.GetDefinition(s.ctx, "etl", 1)
	s.must(err)
	equal(t, "v1", v1, d1)
	_, err = s.st.GetDefinition(s.ctx, "etl", 9)
	s.wantErr(err, store.ErrNotFound)
	_, err = s.st.GetDefinition(s.ctx, "nope", 0)
	s.wantErr(err, store.ErrNotFound)

	_, err = s.st.PutDefinition(s.ctx, store.Definition{Type: "approval", Body: []byte("sm")})
	s.must(err)
	all, err := s.st.ListDefinitions(s.ctx, "")
	s.must(err)
	var names []string
	for _, d := range all {
		names = append(names, fmt.Sprintf("%s@%d", d.Type, d.Version))
	}
	equal(t, "all definitions", names, []string{"approval@1", "etl@1", "etl@2"})
	etl, err := s.st.ListDefinitions(s.ctx, "etl")
	s.must(err)
	equal(t, "etl definitions", etl, []store.Definition{d1, d2})
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
