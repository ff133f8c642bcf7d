package testdb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/strandhq/strand/store"
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
