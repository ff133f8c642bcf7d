// Package testdb opens real stores for tests: an SQLite file in a temporary
// directory, a schema of its own in the PostgreSQL server named by
// STRAND_TEST_POSTGRES, or a keyspace of its own in the Cassandra node named
// by STRAND_TEST_CASSANDRA (scripts/test.sh starts both and sets them).
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/cassandra"
	"github.com/strandhq/strand/store/postgres"
	"github.com/strandhq/strand/store/sqlite"
)

// PostgresEnv names the variable holding the test server's URL. Setting it
// to "skip" skips PostgreSQL tests, saying so; leaving it unset uses
// DefaultPostgresURL.
const PostgresEnv = "STRAND_TEST_POSTGRES"

// DefaultPostgresURL is where scripts/postgres.sh starts the test server.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:54329/postgres?sslmode=disable"

// SQLite opens a migrated store on a new file; it is closed when the test ends.
func SQLite(t testing.TB) store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "strand.db")})
	if err != nil {
		t.Fatal(err)
	}
	return migrated(t, st)
}

// PostgresURL returns the test server's URL, skipping the test if the
// environment says so.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(PostgresEnv)
	switch u {
	case "skip":
		t.Skipf("PostgreSQL tests skipped: %s=skip", PostgresEnv)
	case "":
		u = DefaultPostgresURL
	}
	return u
}

// Postgres opens a migrated store in a new schema that is dropped when the
// test ends, so test runs never see each other's rows.
func Postgres(t testing.TB) store.Store {
	t.Helper()
	base := PostgresURL(t)
	schema := NewSchema(t, base)
	st, err := postgres.Open(context.Background(), postgres.Options{URL: WithSearchPath(t, base, schema)})
	if err != nil {
		t.Fatal(err)
	}
	return migrated(t, st)
}

// NewSchema creates a uniquely named schema and drops it when the test ends.
func NewSchema(t testing.TB, baseURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		t.Fatalf("PostgreSQL at %s is not reachable (run the tests with `make test`, which starts it, or set %s): %v", baseURL, PostgresEnv, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "strand_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, baseURL)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// WithSearchPath returns baseURL with its search_path set to schema.
func WithSearchPath(t testing.TB, baseURL, schema string) string {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// CassandraEnv names the variable holding the test node's contact points
// (host:port, comma-separated). Setting it to "skip" skips Cassandra tests,
// saying so; leaving it unset uses DefaultCassandraHosts.
const CassandraEnv = "STRAND_TEST_CASSANDRA"

// DefaultCassandraHosts is where scripts/cassandra.sh starts the test node.
const DefaultCassandraHosts = "127.0.0.1:19042"

// CassandraHosts returns the test node's contact points, skipping the test
// if the environment says so.
func CassandraHosts(t testing.TB) []string {
	t.Helper()
	h := os.Getenv(CassandraEnv)
	switch h {
	case "skip":
		t.Skipf("Cassandra tests skipped: %s=skip", CassandraEnv)
	case "":
		h = DefaultCassandraHosts
	}
	return strings.Split(h, ",")
}

// CassandraURL returns a store URL (cassandra://HOSTS/KEYSPACE) of an empty
// keyspace of the test's own (see Cassandra), for processes that open the
// store themselves.
func CassandraURL(t testing.TB) string {
	t.Helper()
	st := Cassandra(t).(*cassandra.Store)
	return "cassandra://" + strings.Join(CassandraHosts(t), ",") + "/" + st.Keyspace()
}

// Cassandra opens a migrated store in an empty keyspace that is the test's
// alone until it ends: one borrowed from a pool of keyspaces that tests
// reuse (creating and dropping one per test is slow; see keyspaces.go).
func Cassandra(t testing.TB) store.Store {
	t.Helper()
	return CassandraWith(t, cassandra.Options{})
}

// CassandraWith is Cassandra with options; their hosts and keyspace are
// the test node's and a borrowed one.
func CassandraWith(t testing.TB, opts cassandra.Options) store.Store {
	t.Helper()
	hosts := CassandraHosts(t)
	ks := borrowKeyspace(t, hosts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts.Hosts, opts.Keyspace = hosts, ks.name
	st, err := cassandra.Open(ctx, opts)
	if err != nil {
		ks.giveBack()
		t.Fatalf("Cassandra at %v is not reachable (run the tests with `make test`, which starts it, or set %s): %v", hosts, CassandraEnv, err)
	}
	t.Cleanup(func() {
		defer ks.giveBack()
		defer st.Close()
		if !t.Failed() {
			return
		}
		// Whatever a failed test left (rows, or a schema it changed) goes
		// with the keyspace; the next borrower builds it anew.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := st.DropKeyspace(ctx); err != nil {
			t.Error(err)
		}
	})
	// Migrate changes no schema in a keyspace already built.
	if _, _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate keyspace %s: %v", ks.name, err)
	}
	if err := emptyKeyspace(ctx, st); err != nil {
		t.Fatal(err)
	}
	return st
}

func migrated(t testing.TB, st store.Store) store.Store {
	t.Helper()
	if _, _, err := st.Migrate(context.Background()); err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Backends runs f on each real store, in parallel subtests: SQLite,
// PostgreSQL and Cassandra (each skipped as its environment says).
func Backends(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); f(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); f(t, Postgres(t)) })
	t.Run("cassandra", func(t *testing.T) { t.Parallel(); f(t, Cassandra(t)) })
}
