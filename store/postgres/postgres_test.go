package postgres_test

import (
	"testing"

	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return testdb.Postgres(t) })
}

func BenchmarkWritePath(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) (store.Store, storetest.RawCommitter) {
		st := testdb.Postgres(b)
		return st, testdb.Raw(st)
	})
}
