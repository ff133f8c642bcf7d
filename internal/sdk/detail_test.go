package sdk

import (
	"strings"
	"testing"
)

func TestAuditDetailsSet(t *testing.T) {
	var d AuditDetails
	if err := d.Set("", 1); err == nil {
		t.Fatal("a detail without a name was taken")
	}
	if err := d.Set(strings.Repeat("é", maxDetailName+1), 1); err == nil {
		t.Fatal("a detail with a name too long was taken")
	}
	if err := d.Set("c", make(chan int)); err == nil || !strings.Contains(err.Error(), `"c"`) {
		t.Fatalf("an unencodable value: %v", err)
	}
	if err := d.Set("a", "text"); err != nil {
		t.Fatal(err)
	}
	if err := d.Set("b", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := d.Set("a", "again"); err != nil {
		t.Fatal(err)
	}
	got := d.Take()
	if len(got) != 2 || got[0].Name != "a" || string(got[0].Value) != `"again"` || got[1].Name != "b" || string(got[1].Value) != `{"n":1}` {
		t.Fatalf("details %+v; want a replaced in place, then b", got)
	}
	if len(d.Take()) != 0 {
		t.Fatal("Take kept the details")
	}
	for i := range maxDetails {
		if err := d.Set(strings.Repeat("x", i+1), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Set("one more", 1); err == nil {
		t.Fatalf("detail %d was taken; at most %d", maxDetails+1, maxDetails)
	}
	if err := d.Set("x", "replacing is fine"); err != nil {
		t.Fatal(err)
	}
}
