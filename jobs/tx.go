package jobs

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// beginBatch runs fn in a transaction that opens with the statements
// queue puts on a batch: BEGIN goes to Postgres with them, in one round
// trip (pgx's Batch.BeginTx), rather than in a round trip of its own as
// pgx.BeginFunc sends it. Their callbacks have run when fn is called. Like
// pgx.BeginFunc, it commits when fn returns nil and rolls back when the
// batch or fn fails, or fn panics.
func beginBatch(ctx context.Context, pool *pgxpool.Pool, queue func(*pgx.Batch), fn func(pgx.Tx) error) error {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	queue(b)
	br := pool.SendBatch(ctx, b)
	tx := br.Tx()
	// After a commit, or a begin that failed: pgx.ErrTxClosed.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := br.Close(); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
