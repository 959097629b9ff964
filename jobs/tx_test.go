package jobs

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/infra/dbtest"
)

// TestBeginBatch: a transaction whose BEGIN goes with its first batch
// commits what fn wrote when fn succeeds, and leaves nothing of the batch
// or of fn when the batch fails, fn fails or fn panics; each time the
// connection goes back to the pool outside a transaction.
func TestBeginBatch(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE gb_test_begin_batch (n int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(n int) func(*pgx.Batch) {
		return func(b *pgx.Batch) { b.Queue(`INSERT INTO gb_test_begin_batch VALUES ($1)`, n) }
	}
	then := func(n int, err error) func(pgx.Tx) error {
		return func(tx pgx.Tx) error {
			if _, e := tx.Exec(ctx, `INSERT INTO gb_test_begin_batch VALUES ($1)`, n); e != nil {
				return e
			}
			return err
		}
	}
	failed := errors.New("fn failed")
	if err := beginBatch(ctx, pool, insert(1), then(2, nil)); err != nil {
		t.Fatalf("a transaction that succeeds: %v", err)
	}
	if err := beginBatch(ctx, pool, insert(3), then(4, failed)); !errors.Is(err, failed) {
		t.Errorf("fn's error: %v, want %v", err, failed)
	}
	// The batch fails on its second statement (1 is taken): fn never runs.
	ran := false
	err := beginBatch(ctx, pool, func(b *pgx.Batch) { insert(5)(b); insert(1)(b) },
		func(pgx.Tx) error { ran = true; return nil })
	if err == nil || ran {
		t.Errorf("a batch that fails: %v, fn ran %v; want an error and fn not run", err, ran)
	}
	func() {
		defer func() { _ = recover() }()
		_ = beginBatch(ctx, pool, insert(6), func(pgx.Tx) error { panic("fn panics") })
	}()
	var got []int
	rows, err := pool.Query(ctx, `SELECT n FROM gb_test_begin_batch ORDER BY n`)
	if err == nil {
		got, err = pgx.CollectRows(rows, pgx.RowTo[int])
	}
	if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("rows committed: %v, %v; want [1 2]", got, err)
	}
	if s := pool.Stat(); s.AcquiredConns() != 0 {
		t.Errorf("%d connections still acquired", s.AcquiredConns())
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if st := conn.Conn().PgConn().TxStatus(); st != 'I' {
		t.Errorf("a pooled connection's transaction status %q, want I (idle)", st)
	}
}
