package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/cassandra"
	"github.com/strandhq/strand/store/storetest"
)

// Raw returns a storetest.RawCommitter on an SQL store's own connection
// pool, so the raw commit rate runs with the store's durability settings.
func Raw(st store.Store) storetest.RawCommitter {
	return rawSQL{db: st.(interface{ DB() *sql.DB }).DB()}
}

type rawSQL struct{ db *sql.DB }

func (r rawSQL) Prepare(ctx context.Context) error {
	_, err := r.db.ExecContext(ctx, `CREATE TABLE raw_commit (n BIGINT NOT NULL)`)
	return err
}

func (r rawSQL) Commit(ctx context.Context, rows int) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// One statement per row, as a store batch issues one per row kind.
	for i := range rows {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO raw_commit (n) VALUES (%d)`, i)); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// RawCassandra returns a storetest.RawCommitter on a Cassandra store's own
// session and keyspace: a write at the store's consistency, and a logged
// batch inside one partition for several rows (the shape of a store
// commit, without its conditions). With lwt set every write is a
// lightweight transaction (INSERT … IF NOT EXISTS), the floor under a
// conditional commit.
func RawCassandra(st *cassandra.Store, lwt bool) storetest.RawCommitter {
	return &rawCQL{st: st, lwt: lwt}
}

type rawCQL struct {
	st  *cassandra.Store
	lwt bool
	n   atomic.Int64
}

func (r *rawCQL) Prepare(ctx context.Context) error {
	return r.st.Session().Query(`CREATE TABLE IF NOT EXISTS ` + r.st.Keyspace() + `.raw_commit (p int, n bigint, PRIMARY KEY (p, n))`).
		WithContext(ctx).Exec()
}

func (r *rawCQL) Commit(ctx context.Context, rows int) error {
	ins := `INSERT INTO ` + r.st.Keyspace() + `.raw_commit (p, n) VALUES (?, ?)`
	if r.lwt {
		ins += ` IF NOT EXISTS`
	}
	base := r.n.Add(int64(rows))
	p := int(base % 64)
	if rows == 1 {
		q := r.st.Session().Query(ins, p, base).WithContext(ctx)
		if r.lwt {
			_, err := q.MapScanCAS(map[string]any{})
			return err
		}
		return q.Exec()
	}
	b := r.st.Session().Batch(gocql.LoggedBatch).WithContext(ctx)
	for i := range rows {
		b.Query(ins, p, base-int64(i))
	}
	if r.lwt {
		_, iter, err := b.MapExecCAS(map[string]any{})
		if iter != nil {
			iter.Close()
		}
		return err
	}
	return b.Exec()
}
