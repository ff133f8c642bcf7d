package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/strandhq/strand/store/cassandra"
)

// Cassandra applies schema changes one at a time, node-wide, and each is
// slow (a keyspace and its tables take about a second to create and another
// to drop on a quiet node, far more on a busy one, and they queue behind
// each other's). So tests do not create a keyspace each: they borrow one
// from a pool of migrated keyspaces that outlives test processes, named
// strand_pool_DIGEST_N (DIGEST names the schema files, so a keyspace built
// by older ones is never reused), and empty its tables when they take it
// (TRUNCATE only the tables holding rows, which is cheap: no schema change).
//
// A keyspace is one test's at a time, across every test process on the
// machine: whoever holds the exclusive flock on its lock file in
// os.TempDir() has it; the lock goes with the process, so a killed test
// frees its keyspace. A test that fails drops the keyspace it borrowed,
// whatever state it left, and the next borrower builds it afresh.

// borrowedKeyspace is a pool keyspace held by one test.
type borrowedKeyspace struct {
	name string
	lock *os.File
}

// borrowKeyspace takes the first pool keyspace no one holds for the node at
// hosts. Its tables may still hold a previous borrower's rows until
// emptyKeyspace.
func borrowKeyspace(t testing.TB, hosts []string) *borrowedKeyspace {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "strand-test-cassandra")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	node := sha256.Sum256([]byte(strings.Join(hosts, ",")))
	digest := cassandra.SchemaDigest()
	for n := 0; ; n++ {
		name := fmt.Sprintf("strand_pool_%s_%d", digest, n)
		path := filepath.Join(dir, hex.EncodeToString(node[:4])+"-"+name+".lock")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &borrowedKeyspace{name: name, lock: f}
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("lock %s: %v", path, err)
		}
	}
}

// giveBack releases the keyspace for the next test.
func (k *borrowedKeyspace) giveBack() {
	syscall.Flock(int(k.lock.Fd()), syscall.LOCK_UN)
	k.lock.Close()
}

// emptyKeyspace truncates every table of st's keyspace that holds a row,
// except the record of the schema's version.
func emptyKeyspace(ctx context.Context, st *cassandra.Store) error {
	s := st.Session()
	iter := s.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, st.Keyspace()).WithContext(ctx).Iter()
	var tables []string
	var name string
	for iter.Scan(&name) {
		if name != "schema_version" {
			tables = append(tables, name)
		}
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("list the tables of %s: %w", st.Keyspace(), err)
	}
	for _, table := range tables {
		full := st.Keyspace() + "." + table
		rows := s.Query(`SELECT * FROM ` + full + ` LIMIT 1`).WithContext(ctx).Iter()
		held := rows.NumRows() > 0
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read %s: %w", full, err)
		}
		if !held {
			continue
		}
		if err := s.Query(`TRUNCATE ` + full).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("truncate %s: %w", full, err)
		}
	}
	return nil
}
