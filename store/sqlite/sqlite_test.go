package sqlite_test

import (
	"testing"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/internal/sqlstore"
	"github.com/strandhq/strand/store/storetest"
)

func TestConformance(t *testing.T) {
	// A small prefix scan limit: the prefix tests take both ways of
	// listing a prefix.
	storetest.Run(t, func(t *testing.T) store.Store { return testdb.SQLite(t).(*sqlstore.Store).WithPrefixScanLimit(5) })
}

func BenchmarkWritePath(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) (store.Store, storetest.RawCommitter) {
		st := testdb.SQLite(b)
		return st, testdb.Raw(st)
	})
}
