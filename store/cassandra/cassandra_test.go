package cassandra_test

import (
	"testing"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/cassandra"
	"github.com/strandhq/strand/store/storetest"
)

func TestConformance(t *testing.T) {
	// A small prefix scan limit: the prefix tests take both ways of
	// listing a prefix.
	storetest.Run(t, func(t *testing.T) store.Store { return testdb.CassandraWith(t, cassandra.Options{PrefixScanLimit: 5}) })
}

// BenchmarkWritePath compares the store's commit with plain writes (raw/…)
// and with lightweight transactions (lwt/…, the floor under a conditional
// commit) on the same node, in one run.
func BenchmarkWritePath(b *testing.B) {
	storetest.BenchRaw(b, "lwt", func(b *testing.B) storetest.RawCommitter {
		return testdb.RawCassandra(testdb.Cassandra(b).(*cassandra.Store), true)
	})
	storetest.Bench(b, func(b *testing.B) (store.Store, storetest.RawCommitter) {
		st := testdb.Cassandra(b).(*cassandra.Store)
		return st, testdb.RawCassandra(st, false)
	})
}
