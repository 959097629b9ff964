package bench

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/messenger"
)

// WakeFunc measures, over samples messages, how long a message takes from
// its send to a receiver blocked waiting for it on the inbox of run inbox,
// through the Postgres messenger, and how long a bare LISTEN/NOTIFY round
// trip takes on the same database.
type WakeFunc func(ctx context.Context, pool *pgxpool.Pool, inbox int64, samples int) (msgr, raw []time.Duration, err error)

// MeasureWake is the WakeFunc of Run by default: messenger.MeasureWake on
// a Postgres messenger with a listener of its own, which times both from
// the send's commit, sample by sample in turn.
func MeasureWake(ctx context.Context, pool *pgxpool.Pool, inbox int64, samples int) (msgr, raw []time.Duration, err error) {
	l := messenger.NewListener(pool, slog.New(slog.DiscardHandler))
	if err := l.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("error starting the message listener: %w", err)
	}
	defer func() { _ = l.Stop(context.WithoutCancel(ctx)) }()
	p := messenger.NewPostgres(pool, l, messenger.PostgresConfig{})
	defer func() { _ = p.Close(context.WithoutCancel(ctx), inbox) }()
	return messenger.MeasureWake(ctx, p, inbox, samples)
}
