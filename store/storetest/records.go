package storetest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

// testRecords: records are created once, replaced only at their stored
// version, listed by kind and key prefix in byte order, and deleted at
// their version or any; bad input is refused with a typed error and
// writes nothing.
func testRecords(t *testing.T, s *suite) {
	alice, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "alice", Value: []byte(`{"name":"Alice"}`)})
	s.must(err)
	if alice.Kind != "user" || alice.Key != "alice" || string(alice.Value) != `{"name":"Alice"}` || alice.Version != 1 || alice.UpdatedAt.IsZero() {
		t.Fatalf("created: %+v", alice)
	}
	if alice.UpdatedAt != store.Time(alice.UpdatedAt) {
		t.Fatalf("update time %v is not at the store's precision", alice.UpdatedAt)
	}
	got, err := s.st.GetRecord(s.ctx, "user", "alice")
	s.must(err)
	equal(t, "read after create", got, alice)

	// Creating it again fails and changes nothing.
	_, err = s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "alice", Value: []byte("other")})
	s.wantErr(err, store.ErrConditionFailed)
	got, err = s.st.GetRecord(s.ctx, "user", "alice")
	s.must(err)
	equal(t, "after a second create", got, alice)

	// An update at the stored version replaces it and raises the version.
	alice2, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "alice", Value: []byte(`{"name":"Alice B."}`), Version: 1})
	s.must(err)
	if alice2.Version != 2 || string(alice2.Value) != `{"name":"Alice B."}` || alice2.UpdatedAt.Before(alice.UpdatedAt) {
		t.Fatalf("updated: %+v", alice2)
	}
	got, err = s.st.GetRecord(s.ctx, "user", "alice")
	s.must(err)
	equal(t, "read after update", got, alice2)
	// A stale version is refused and changes nothing.
	_, err = s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "alice", Value: []byte("stale"), Version: 1})
	s.wantErr(err, store.ErrConditionFailed)
	_, err = s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "alice", Value: []byte("ahead"), Version: 7})
	s.wantErr(err, store.ErrConditionFailed)
	got, err = s.st.GetRecord(s.ctx, "user", "alice")
	s.must(err)
	equal(t, "after stale updates", got, alice2)
	// Updating a record that does not exist is ErrNotFound, and creates
	// nothing.
	_, err = s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "ghost", Value: []byte("x"), Version: 1})
	s.wantErr(err, store.ErrNotFound)
	_, err = s.st.GetRecord(s.ctx, "user", "ghost")
	s.wantErr(err, store.ErrNotFound)
	_, err = s.st.GetRecord(s.ctx, "nokind", "alice")
	s.wantErr(err, store.ErrNotFound)

	// Keys in byte order, which is not a locale's: "aL" sorts before every
	// "al…", "al-x" before "alice", "alé" after "alz".
	keys := []string{"bob", "al", "alicia", "al-x", "alz", "alé", "aL", "b", "al\U0010FFFF", "ak\U0010FFFF", "am"}
	byKey := map[string]store.Record{"alice": alice2}
	for i, k := range keys {
		r, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: k, Value: []byte(fmt.Sprint(i))})
		s.must(err)
		byKey[k] = r
	}
	// Another kind with the same keys stays apart.
	token, err := s.st.PutRecord(s.ctx, store.Record{Kind: "token", Key: "alice", Value: []byte("t")})
	s.must(err)
	// An empty value, and the longest key (four bytes a character).
	empty, err := s.st.PutRecord(s.ctx, store.Record{Kind: "grant", Key: strings.Repeat("\U0001F511", 512)})
	s.must(err)
	got, err = s.st.GetRecord(s.ctx, "grant", empty.Key)
	s.must(err)
	if len(got.Value) != 0 || got.Version != 1 {
		t.Fatalf("empty record: %+v", got)
	}
	// The largest value.
	big := bytes.Repeat([]byte("v"), min(store.MaxRecordValue, s.st.Limits().MaxPayload))
	_, err = s.st.PutRecord(s.ctx, store.Record{Kind: "grant", Key: "big", Value: big})
	s.must(err)
	got, err = s.st.GetRecord(s.ctx, "grant", "big")
	s.must(err)
	sameBytes(t, "largest value", got.Value, big)

	listed := func(kind, prefix string) []string {
		t.Helper()
		rs, err := s.st.ListRecords(s.ctx, kind, prefix)
		s.must(err)
		var out []string
		for _, r := range rs {
			if r.Kind != kind {
				t.Fatalf("list %s/%q: a record of kind %s", kind, prefix, r.Kind)
			}
			if want, ok := byKey[r.Key]; kind == "user" && (!ok || !equalRecord(r, want)) {
				t.Fatalf("list %s/%q: %+v, stored %+v", kind, prefix, r, want)
			}
			out = append(out, r.Key)
		}
		return out
	}
	wantKeys := func(prefix string) []string {
		var out []string
		for k := range byKey {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k)
			}
		}
		slices.Sort(out) // Go compares strings byte by byte
		return out
	}
	for _, prefix := range []string{"", "al", "ali", "alice", "a", "b", "al\U0010FFFF", "\U0010FFFF", "zzz", "é"} {
		equal(t, fmt.Sprintf("user keys with prefix %q", prefix), listed("user", prefix), wantKeys(prefix))
	}
	equal(t, "token keys", listed("token", ""), []string{"alice"})
	if rs, err := s.st.ListRecords(s.ctx, "nokind", ""); err != nil || len(rs) != 0 {
		t.Fatalf("listing a kind without records: %v, %v", rs, err)
	}

	// Deletion: a stale version is refused; the stored one deletes.
	s.wantErr(s.st.DeleteRecord(s.ctx, "user", "alice", 1), store.ErrConditionFailed)
	got, err = s.st.GetRecord(s.ctx, "user", "alice")
	s.must(err)
	equal(t, "after a stale delete", got, alice2)
	s.must(s.st.DeleteRecord(s.ctx, "user", "alice", 2))
	_, err = s.st.GetRecord(s.ctx, "user", "alice")
	s.wantErr(err, store.ErrNotFound)
	delete(byKey, "alice")
	// Version 0 deletes whatever version is stored.
	s.must(s.st.DeleteRecord(s.ctx, "user", "bob", 0))
	delete(byKey, "bob")
	// A record that does not exist is ErrNotFound, at any version.
	s.wantErr(s.st.DeleteRecord(s.ctx, "user", "alice", 0), store.ErrNotFound)
	s.wantErr(s.st.DeleteRecord(s.ctx, "user", "alice", 2), store.ErrNotFound)
	s.wantErr(s.st.DeleteRecord(s.ctx, "nokind", "x", 0), store.ErrNotFound)
	// The kind's other records and the other kinds' stay.
	equal(t, "user keys after deletes", listed("user", ""), wantKeys(""))
	got, err = s.st.GetRecord(s.ctx, "token", "alice")
	s.must(err)
	equal(t, "other kind's record", got, token)
	// A deleted key can be created again, from version 1.
	again, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "alice", Value: []byte("new")})
	s.must(err)
	if again.Version != 1 {
		t.Fatalf("re-created: %+v", again)
	}
	byKey["alice"] = again

	// Bad input: a typed error, and nothing written.
	before := s.recordSnapshot("user", "token", "grant", "")
	l := s.st.Limits()
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"put without kind", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Key: "k", Value: []byte("v")})
			return err
		}, store.ErrInvalidArgument},
		{"put without key", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Value: []byte("v")})
			return err
		}, store.ErrInvalidArgument},
		{"put oversize value", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "huge", Value: make([]byte, min(store.MaxRecordValue, l.MaxPayload)+1)})
			return err
		}, store.ErrPayloadTooLarge},
		{"update with oversize value", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "alice", Version: 1, Value: make([]byte, store.MaxRecordValue+1)})
			return err
		}, store.ErrPayloadTooLarge},
		{"put negative version", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "neg", Version: -1})
			return err
		}, store.ErrInvalidArgument},
		{"put key with NUL", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "a\x00b"})
			return err
		}, store.ErrInvalidArgument},
		{"put key not UTF-8", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: "a\xffb"})
			return err
		}, store.ErrInvalidArgument},
		{"put key too long", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Kind: "user", Key: strings.Repeat("k", 513)})
			return err
		}, store.ErrInvalidArgument},
		{"put kind too long", func() error {
			_, err := s.st.PutRecord(s.ctx, store.Record{Kind: strings.Repeat("k", 65), Key: "k"})
			return err
		}, store.ErrInvalidArgument},
		{"get without kind", func() error {
			_, err := s.st.GetRecord(s.ctx, "", "alice")
			return err
		}, store.ErrInvalidArgument},
		{"get without key", func() error {
			_, err := s.st.GetRecord(s.ctx, "user", "")
			return err
		}, store.ErrInvalidArgument},
		{"list without kind", func() error {
			_, err := s.st.ListRecords(s.ctx, "", "a")
			return err
		}, store.ErrInvalidArgument},
		{"list prefix not UTF-8", func() error {
			_, err := s.st.ListRecords(s.ctx, "user", "\xff")
			return err
		}, store.ErrInvalidArgument},
		{"delete without kind", func() error { return s.st.DeleteRecord(s.ctx, "", "alice", 0) }, store.ErrInvalidArgument},
		{"delete without key", func() error { return s.st.DeleteRecord(s.ctx, "user", "", 0) }, store.ErrInvalidArgument},
		{"delete negative version", func() error { return s.st.DeleteRecord(s.ctx, "user", "alice", -1) }, store.ErrInvalidArgument},
	}
	s.badInput(cases)
	equal(t, "records after bad input", s.recordSnapshot("user", "token", "grant", ""), before)
	_, err = s.st.GetRecord(s.ctx, "", "k")
	s.wantErr(err, store.ErrInvalidArgument)
}

// equalRecord compares records, an empty value as nil.
func equalRecord(a, b store.Record) bool {
	return a.Kind == b.Kind && a.Key == b.Key && bytes.Equal(a.Value, b.Value) && a.Version == b.Version && a.UpdatedAt.Equal(b.UpdatedAt)
}

// recordSnapshot lists the records of kinds (an empty kind is skipped).
func (s *suite) recordSnapshot(kinds ...string) map[string][]store.Record {
	s.t.Helper()
	out := map[string][]store.Record{}
	for _, k := range kinds {
		if k == "" {
			continue
		}
		rs, err := s.st.ListRecords(s.ctx, k, "")
		s.must(err)
		out[k] = rs
	}
	return out
}

// badInput runs calls that must fail with a typed error that names the
// field at fault, and must not panic.
func (s *suite) badInput(cases []struct {
	name string
	call func() error
	want error
}) {
	s.t.Helper()
	for _, c := range cases {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return c.call()
		}()
		if !errors.Is(err, c.want) {
			s.t.Errorf("%s: got %v, want %v", c.name, err, c.want)
			continue
		}
		var ia *store.InvalidArgumentError
		if !errors.As(err, &ia) {
			s.t.Errorf("%s: %v is not a *store.InvalidArgumentError", c.name, err)
		}
	}
}

// auditEntry is the i-th entry of the audit test: three namespaces (one
// of them none), two actors, about two hours apart over four days, with
// some entries at the same time as the one before.
func auditEntry(i int, base time.Time) store.AuditEntry {
	at := base.Add(time.Duration(i)*2*time.Hour + time.Duration(i)*time.Millisecond)
	if i%5 == 1 {
		at = base.Add(time.Duration(i-1)*2*time.Hour + time.Duration(i-1)*time.Millisecond) // the time of entry i-1
	}
	e := store.AuditEntry{
		// Ids unique, not in the order of the entries: ties sort by id.
		ID:        fmt.Sprintf("id-%03d", (i*37)%100),
		Time:      at,
		Namespace: []string{"default", "payments", ""}[i%3],
		Actor:     []string{"alice", "bob"}[(i/2)%2],
		Remote:    "10.0.0.1:5000",
		Action:    "POST /namespaces/{namespace}/workflows",
		Target:    fmt.Sprint("wf-", i),
		Status:    []int32{200, 201, 404}[i%3],
	}
	if i%2 == 0 {
		e.RunID, e.Detail = fmt.Sprint("run-", i), []byte(fmt.Sprintf(`{"i":%d}`, i))
	}
	return e
}

// newestFirst sorts entries as ListAudit lists them.
func newestFirst(entries []store.AuditEntry) []store.AuditEntry {
	out := slices.Clone(entries)
	slices.SortFunc(out, func(a, b store.AuditEntry) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

func filterAudit(all []store.AuditEntry, keep func(store.AuditEntry) bool) []store.AuditEntry {
	var out []store.AuditEntry
	for _, e := range all {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// listAudit reads every page of a listing.
func (s *suite) listAudit(req store.ListAuditRequest) []store.AuditEntry {
	s.t.Helper()
	var out []store.AuditEntry
	for pages := 0; ; pages++ {
		if pages > 1000 {
			s.t.Fatal("paging does not end")
		}
		p, err := s.st.ListAudit(s.ctx, req)
		s.must(err)
		if len(p.Entries) > store.PageSize(req.PageSize, 100) {
			s.t.Fatalf("a page of %d entries, page size %d", len(p.Entries), req.PageSize)
		}
		out = append(out, p.Entries...)
		if p.NextPageToken == nil {
			return out
		}
		req.PageToken = p.NextPageToken
	}
}

// testAudit: entries are kept once each, listed newest first (ties by id)
// across days, filtered by namespace, actor and time, in pages that stay
// stable while entries are added, and purged oldest first, exactly the
// entries before the bound.
func testAudit(t *testing.T, s *suite) {
	// Midnight (UTC) five days ago: the entries span four days and a bit,
	// all in the past.
	base := store.Time(time.Now().UTC().Truncate(24 * time.Hour).Add(-5 * 24 * time.Hour))
	const n = 50
	var all []store.AuditEntry
	for i := range n {
		all = append(all, auditEntry(i, base))
	}
	// Two calls, the second with an entry of the first (written twice, kept
	// once) and one entry twice in the same call.
	s.must(s.st.AppendAudit(s.ctx, all[:30]...))
	s.must(s.st.AppendAudit(s.ctx, append([]store.AuditEntry{all[3], all[40]}, all[30:]...)...))
	s.must(s.st.AppendAudit(s.ctx))
	want := newestFirst(all)

	s.wantAudit("all, default page size", s.listAudit(store.ListAuditRequest{}), want)
	for _, size := range []int{1, 7, n, n + 1} {
		s.wantAudit(fmt.Sprintf("all, pages of %d", size), s.listAudit(store.ListAuditRequest{PageSize: size}), want)
	}
	at := func(i int) time.Time { return all[i].Time }
	for _, c := range []struct {
		name string
		req  store.ListAuditRequest
		keep func(store.AuditEntry) bool
	}{
		{"namespace", store.ListAuditRequest{Namespace: "payments"}, func(e store.AuditEntry) bool { return e.Namespace == "payments" }},
		{"actor", store.ListAuditRequest{Actor: "bob"}, func(e store.AuditEntry) bool { return e.Actor == "bob" }},
		{"namespace and actor", store.ListAuditRequest{Namespace: "default", Actor: "alice"},
			func(e store.AuditEntry) bool { return e.Namespace == "default" && e.Actor == "alice" }},
		{"unknown namespace", store.ListAuditRequest{Namespace: "nowhere"}, func(store.AuditEntry) bool { return false }},
		// Since is inclusive; entry 11 has entry 10's time.
		{"since", store.ListAuditRequest{Since: at(10)}, func(e store.AuditEntry) bool { return !e.Time.Before(at(10)) }},
		// Until is exclusive.
		{"until", store.ListAuditRequest{Until: at(31)}, func(e store.AuditEntry) bool { return e.Time.Before(at(31)) }},
		{"since and until", store.ListAuditRequest{Since: at(7), Until: at(36)},
			func(e store.AuditEntry) bool { return !e.Time.Before(at(7)) && e.Time.Before(at(36)) }},
		{"since and until in one day", store.ListAuditRequest{Since: at(13), Until: at(16)},
			func(e store.AuditEntry) bool { return !e.Time.Before(at(13)) && e.Time.Before(at(16)) }},
		{"since equals until", store.ListAuditRequest{Since: at(20), Until: at(20)}, func(store.AuditEntry) bool { return false }},
		{"a day without entries", store.ListAuditRequest{Since: base.Add(-48 * time.Hour), Until: base},
			func(store.AuditEntry) bool { return false }},
		{"between two entries", store.ListAuditRequest{Since: at(21).Add(time.Millisecond), Until: at(22)},
			func(store.AuditEntry) bool { return false }},
		{"all filters", store.ListAuditRequest{Namespace: "payments", Actor: "bob", Since: at(4), Until: at(45)},
			func(e store.AuditEntry) bool {
				return e.Namespace == "payments" && e.Actor == "bob" && !e.Time.Before(at(4)) && e.Time.Before(at(45))
			}},
	} {
		w := filterAudit(want, c.keep)
		for _, size := range []int{0, 3} {
			req := c.req
			req.PageSize = size
			s.wantAudit(fmt.Sprintf("%s, pages of %d", c.name, size), s.listAudit(req), w)
		}
	}
	if got := s.listAudit(store.ListAuditRequest{Namespace: "payments"}); len(got) == 0 {
		t.Fatal("no entries of namespace payments")
	}

	// Pages stay stable while entries are added: newer ones, and one at
	// the time of the last entry listed with a greater id, go above the
	// cursor.
	latest := want[0].Time
	var paged []store.AuditEntry
	req := store.ListAuditRequest{PageSize: 6}
	var added []store.AuditEntry
	for pages := 0; ; pages++ {
		p, err := s.st.ListAudit(s.ctx, req)
		s.must(err)
		paged = append(paged, p.Entries...)
		if p.NextPageToken == nil {
			break
		}
		last := p.Entries[len(p.Entries)-1]
		more := []store.AuditEntry{auditEntry(100+pages, latest.Add(time.Hour)), {
			ID: last.ID + "~", Time: last.Time, Actor: "carol", Action: "DELETE /x",
		}}
		more[0].ID = fmt.Sprintf("new-%03d", pages)
		s.must(s.st.AppendAudit(s.ctx, more...))
		added = append(added, more...)
		req.PageToken = p.NextPageToken
	}
	s.wantAudit("pages while entries are added", paged, want)
	all = append(all, added...)
	want = newestFirst(all)
	s.wantAudit("all after adding", s.listAudit(store.ListAuditRequest{PageSize: 9}), want)

	// Bad input: a typed error, and nothing written.
	tok := func() []byte {
		p, err := s.st.ListAudit(s.ctx, store.ListAuditRequest{PageSize: 1})
		s.must(err)
		return p.NextPageToken
	}()
	good := auditEntry(99, latest.Add(48*time.Hour))
	good.ID = "good"
	bad := func(mut func(*store.AuditEntry)) func() error {
		return func() error {
			e := auditEntry(98, latest.Add(48*time.Hour))
			mut(&e)
			// With a valid entry before it: neither is written.
			return s.st.AppendAudit(s.ctx, good, e)
		}
	}
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"entry without id", bad(func(e *store.AuditEntry) { e.ID = "" }), store.ErrInvalidArgument},
		{"entry without time", bad(func(e *store.AuditEntry) { e.Time = time.Time{} }), store.ErrInvalidArgument},
		{"entry id too long", bad(func(e *store.AuditEntry) { e.ID = strings.Repeat("x", 65) }), store.ErrInvalidArgument},
		{"entry actor with NUL", bad(func(e *store.AuditEntry) { e.Actor = "a\x00" }), store.ErrInvalidArgument},
		{"entry target not UTF-8", bad(func(e *store.AuditEntry) { e.Target = "\xfe" }), store.ErrInvalidArgument},
		{"entry oversize detail", bad(func(e *store.AuditEntry) { e.Detail = make([]byte, 65537) }), store.ErrPayloadTooLarge},
		{"list negative page size", func() error {
			_, err := s.st.ListAudit(s.ctx, store.ListAuditRequest{PageSize: -1})
			return err
		}, store.ErrInvalidArgument},
		{"list page size too large", func() error {
			_, err := s.st.ListAudit(s.ctx, store.ListAuditRequest{PageSize: store.MaxPageSize + 1})
			return err
		}, store.ErrInvalidArgument},
		{"list since after until", func() error {
			_, err := s.st.ListAudit(s.ctx, store.ListAuditRequest{Since: at(5), Until: at(4)})
			return err
		}, store.ErrInvalidArgument},
		{"list bad token", func() error {
			_, err := s.st.ListAudit(s.ctx, store.ListAuditRequest{PageToken: []byte("not a token")})
			return err
		}, store.ErrInvalidPageToken},
		{"list token of another listing", func() error {
			r := store.ListRunsRequest{RunFilter: store.RunFilter{Namespace: "default"}, PageToken: tok}
			_, err := s.st.ListRuns(s.ctx, r)
			return err
		}, store.ErrInvalidPageToken},
		{"purge without limit", func() error {
			_, err := s.st.PurgeAudit(s.ctx, time.Now(), 0)
			return err
		}, store.ErrInvalidArgument},
		{"purge without bound", func() error {
			_, err := s.st.PurgeAudit(s.ctx, time.Time{}, 10)
			return err
		}, store.ErrInvalidArgument},
	}
	s.badInput(cases)
	equal(t, "after bad input", auditIDs(s.listAudit(store.ListAuditRequest{})), auditIDs(want))

	// Purge in steps of 4: each deletes the 4 oldest entries before the
	// bound, until fewer than 4 are left, and nothing else. The bound is
	// in the middle of a day, the time of two entries, which stay.
	bound := at(26)
	older := func(e store.AuditEntry) bool { return e.Time.Before(bound) }
	var old []store.AuditEntry
	for _, e := range want {
		if older(e) {
			old = append(old, e)
		}
	}
	slices.Reverse(old) // oldest first
	if len(old) < 20 {
		t.Fatalf("test data: %d entries before the bound", len(old))
	}
	const limit = 4
	deleted := 0
	for calls := 0; ; calls++ {
		if calls > len(old) {
			t.Fatal("purge does not end")
		}
		k, err := s.st.PurgeAudit(s.ctx, bound, limit)
		s.must(err)
		if k != min(limit, len(old)-deleted) {
			t.Fatalf("purge call %d deleted %d, want %d (%d of %d deleted so far)", calls, k, min(limit, len(old)-deleted), deleted, len(old))
		}
		deleted += k
		left := filterAudit(want, func(e store.AuditEntry) bool {
			return !older(e) || slices.ContainsFunc(old[deleted:], func(o store.AuditEntry) bool { return o.ID == e.ID })
		})
		equal(t, fmt.Sprintf("left after purge call %d", calls), auditIDs(s.listAudit(store.ListAuditRequest{PageSize: 13})), auditIDs(left))
		if k < limit {
			break
		}
	}
	if k, err := s.st.PurgeAudit(s.ctx, bound, limit); err != nil || k != 0 {
		t.Fatalf("purge with nothing left: %d, %v", k, err)
	}
	equal(t, "after the purge", auditIDs(s.listAudit(store.ListAuditRequest{})), auditIDs(filterAudit(want, func(e store.AuditEntry) bool { return !older(e) })))
	equal(t, "after the purge, since the start", auditIDs(s.listAudit(store.ListAuditRequest{Since: base.Add(-24 * time.Hour), PageSize: 5})),
		auditIDs(filterAudit(want, func(e store.AuditEntry) bool { return !older(e) })))
	// A purge with a large limit takes the rest up to a later bound, whole
	// days at once.
	bound2 := at(45)
	rest := filterAudit(want, func(e store.AuditEntry) bool { return e.Time.Before(bound2) && !older(e) })
	k, err := s.st.PurgeAudit(s.ctx, bound2, 1000)
	s.must(err)
	if k != len(rest) {
		t.Fatalf("second purge deleted %d, want %d", k, len(rest))
	}
	equal(t, "after the second purge", auditIDs(s.listAudit(store.ListAuditRequest{})),
		auditIDs(filterAudit(want, func(e store.AuditEntry) bool { return !e.Time.Before(bound2) })))
	// Entries can be added to a purged day again.
	s.must(s.st.AppendAudit(s.ctx, all[0]))
	got := s.listAudit(store.ListAuditRequest{Until: bound2})
	if len(got) != 1 || !equalAudit(got[0], all[0]) {
		t.Fatalf("an entry added to a purged day: %v", auditIDs(got))
	}
}

// wantAudit fails unless got holds the entries of want, in order.
func (s *suite) wantAudit(what string, got, want []store.AuditEntry) {
	s.t.Helper()
	if len(got) != len(want) || !slices.EqualFunc(got, want, equalAudit) {
		s.t.Fatalf("%s:\n got %v\nwant %v", what, auditIDs(got), auditIDs(want))
	}
}

// equalAudit compares entries, an empty detail as nil and times as
// instants.
func equalAudit(a, b store.AuditEntry) bool {
	a.Time, b.Time = a.Time.UTC(), b.Time.UTC()
	if len(a.Detail) == 0 {
		a.Detail = nil
	}
	if len(b.Detail) == 0 {
		b.Detail = nil
	}
	return a.Time.Equal(b.Time) && fmt.Sprint(a) == fmt.Sprint(b)
}

// auditIDs lists entries as "id@time" for comparisons that print well.
func auditIDs(entries []store.AuditEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID + "@" + e.Time.UTC().Format("2006-01-02T15:04:05.000")
	}
	return out
}
