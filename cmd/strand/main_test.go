package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run executes the CLI in-process and returns its output and exit code.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		return out.String() + err.Error(), exitCode(err)
	}
	return out.String(), 0
}

func TestMigrateIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "strand.db")
	out, code := run(t, "migrate", "--store", "sqlite://"+path)
	if code != 0 || !strings.Contains(out, "migrated from version 0 to 4") {
		t.Fatalf("first migrate: code %d, output %q", code, out)
	}
	out, code = run(t, "migrate", "--store", "sqlite://"+path)
	if code != 0 || !strings.Contains(out, "nothing to do") {
		t.Fatalf("second migrate: code %d, output %q", code, out)
	}
}

func TestMigrateDefaultsToStrandDB(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if out, code := run(t, "migrate"); code != 0 {
		t.Fatalf("migrate: code %d, output %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "strand.db")); err != nil {
		t.Fatalf("default store file: %v", err)
	}
}

func TestBadInputExitsTwoAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"migrate", "--store", "nonsense"},
		{"migrate", "--store", "mysql://x"},
		{"migrate", "--store", "sqlite://"},
		{"migrate", "--store", "sqlite://x.db?journal=off"},
		{"migrate", "--store", "sqlite://x.db?synchronous=sometimes"},
		{"migrate", "--no-such-flag"},
		{"version", "extra"},
		{"no-such-command"},
		{"migrate", "--store", "cassandra://"},
		{"migrate", "--store", "cassandra://127.0.0.1:1/ks?consistency=SOMETIMES"},
		{"migrate", "--store", "cassandra://127.0.0.1:1/ks?replication_factor=0"},
		{"migrate", "--store", "cassandra://127.0.0.1:1/bad-keyspace"},
		{"migrate", "--store", "cassandra://127.0.0.1:1/ks?color=blue"},
		{"server", "--node-ttl", "10ms"},
		{"server", "--shards", "-1"},
		{"server", "--advertise", "ftp://127.0.0.1:8233"},
		{"server", "--advertise", "http://"},
		{"server", "--node-ttl", "soon"},
		{"server", "--smtp-server", "mail.example.com", "--smtp-from", "strand@example.com"},
		{"server", "--smtp-server", "mail.example.com:25"},
		{"server", "--smtp-server", "mail.example.com:25", "--smtp-from", "Strand <strand@example.com>"},
		{"server", "--smtp-server", "mail.example.com:25", "--smtp-from", "strand@example.com", "--smtp-tls", "maybe"},
		{"server", "--smtp-server", "mail.example.com:25", "--smtp-from", "strand@example.com", "--smtp-user", "strand"},
		{"server", "--min-body-rate", "-1"},
		{"server", "--min-body-rate-window", "0s"},
		{"server", "--max-idle-conns-per-address", "-1"},
		{"bench", "visibility"},
		{"bench", "visibility", "--store", "sqlite://x.db", "--rows", "0"},
		{"bench", "visibility", "--store", "sqlite://x.db", "--page-sizes", "0"},
		{"bench", "visibility", "--store", "sqlite://x.db", "--page-sizes", "10001"},
		{"bench", "visibility", "--store", "sqlite://x.db", "--span", "1s"},
		{"bench", "saga", "--server", "ftp://127.0.0.1:8233"},
		{"bench", "dag", "--server", "http://"},
		{"bench", "messages", "--server", "http://127.0.0.1:1", "--store", "sqlite://x.db"},
		{"bench", "statemachine", "--plain-task-calls"},
	} {
		out, code := run(t, args...)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2 (output %q)", args, code, out)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("bad input left files behind: %v", entries)
	}
}

func TestVersion(t *testing.T) {
	out, code := run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "strand ") {
		t.Fatalf("version: code %d, output %q", code, out)
	}
}

// TestBenchVisibility loads a small data set and measures it; a second
// run on the same file loads nothing.
func TestBenchVisibility(t *testing.T) {
	url := "sqlite://" + filepath.Join(t.TempDir(), "vis.db")
	out, code := run(t, "bench", "visibility", "--store", url, "--rows", "500", "--repeat", "2", "--page-sizes", "20,50", "--quiet")
	if code != 0 || !strings.Contains(out, "loaded 500 records") || !strings.Contains(out, "attribute region=eu") || !strings.Contains(out, "next 20") {
		t.Fatalf("first run: code %d, output %s", code, out)
	}
	out, code = run(t, "bench", "visibility", "--store", url, "--rows", "500", "--repeat", "2", "--quiet")
	if code != 0 || !strings.Contains(out, "none loaded") || !strings.Contains(out, "list 1000") {
		t.Fatalf("second run: code %d, output %s", code, out)
	}
}
