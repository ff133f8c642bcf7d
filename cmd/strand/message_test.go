package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
)

// TestMessageVerbs drives strand message against a server: bad input
// refused, a message sent and kept, listed and shown, and a rule set,
// listed and deleted.
func TestMessageVerbs(t *testing.T) {
	url := systemServer(t)
	cli := func(args ...string) string {
		t.Helper()
		out, code := run(t, append(args, "--server", url)...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"message", "send", "paid", "o-1", "--payload", "{"}, 2, "--payload: not valid JSON"},
		{[]string{"message", "send", "paid", "o-1", "--ttl", "-1s"}, 2, "ttl: -1s"},
		{[]string{"message", "send", "paid", "o-1", "--priority", "9"}, 2, "priority: 9"},
		{[]string{"message", "send", "paid"}, 2, "accepts 2 arg(s)"},
		{[]string{"message", "rule", "set", "x"}, 2, "--workflow-type is required"},
		{[]string{"message", "rule", "delete", "none"}, 1, "no message rule"},
	} {
		out, code := run(t, append(c.args, "--server", url)...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Fatalf("strand %s: exit %d: %s; want exit %d and %q", strings.Join(c.args, " "), code, out, c.code, c.want)
		}
	}

	if out := cli("message", "send", "paid", "o-1", "--payload", `{"amount": 5}`, "--id", "m-1"); !strings.Contains(out, "sent message m-1") {
		t.Fatalf("send: %s", out)
	}

	t.Log("--payload @FILE sends the file's JSON; a missing file or one that is not JSON is refused, and nothing is sent")
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "order.json"), filepath.Join(dir, "order.txt")
	if err := os.WriteFile(good, []byte(`{"amount": 7}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("amount: 7"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{
		{filepath.Join(dir, "none.json"), "--payload: no file " + filepath.Join(dir, "none.json")},
		{bad, "--payload: " + bad + " is not valid JSON"},
	} {
		out, code := run(t, "message", "send", "paid", "o-2", "--payload", "@"+c.file, "--server", url)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Fatalf("send --payload @%s: exit %d: %s; want exit 2 and %q", c.file, code, out, c.want)
		}
	}
	if out := cli("message", "send", "paid", "o-2", "--payload", "@"+good, "--id", "m-2"); !strings.Contains(out, "sent message m-2") {
		t.Fatalf("send --payload @file: %s", out)
	}
	var kept api.MailboxDescription
	if err := json.Unmarshal([]byte(cli("message", "show", "paid", "o-2", "-o", "json")), &kept); err != nil {
		t.Fatal(err)
	}
	var amount struct{ Amount int }
	if len(kept.Kept) != 1 || kept.Kept[0].MessageID != "m-2" || json.Unmarshal(kept.Kept[0].Payload, &amount) != nil || amount.Amount != 7 {
		t.Fatalf("the mailbox of paid/o-2 keeps %+v; want m-2 alone, with the file's payload", kept.Kept)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out := cli("message", "list")
		if strings.Contains(out, "paid") && strings.Contains(out, "o-1") {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), "paid o-1 1 0") {
				t.Fatalf("list: %s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mailbox is not listed: %s", out)
		}
	}
	if out := cli("message", "show", "paid", "o-1"); !strings.Contains(out, "Kept (1)") || !strings.Contains(out, "m-1") || !strings.Contains(out, `{"amount":5}`) {
		t.Fatalf("show: %s", out)
	}

	cli("message", "rule", "set", "report-due", "--workflow-type", "Report", "--queue", "reports")
	if out := cli("message", "rule", "list"); !strings.Contains(strings.Join(strings.Fields(out), " "), "report-due Report reports") {
		t.Fatalf("rule list: %s", out)
	}
	cli("message", "rule", "delete", "report-due")
	if out := cli("message", "rule", "list", "-o", "json"); strings.Contains(out, "report-due") {
		t.Fatalf("rule list after delete: %s", out)
	}
}
