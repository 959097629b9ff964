package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/messenger"
)

// WakeFunc measures, over samples messages, how long a message takes from
// its send to a receiver blocked waiting for it on the inbox of run inbox,
// through the Postgres messenger, and how long a bare LISTEN/NOTIFY round
// trip takes on the same database.
type WakeFunc func(ctx context.Context, pool *pgxpool.Pool, inbox int64, samples int) (msgr, raw []time.Duration, err error)

// MeasureWake is the WakeFunc of Run by default. It starts a listener of
// its own, and before each send waits until the receiver has announced its
// wait in the inbox's row, so that every sample is a wake-up.
func MeasureWake(ctx context.Context, pool *pgxpool.Pool, inbox int64, samples int) (msgr, raw []time.Duration, err error) {
	l := messenger.NewListener(pool, slog.New(slog.DiscardHandler))
	if err := l.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("error starting the message listener: %w", err)
	}
	defer func() { _ = l.Stop(context.WithoutCancel(ctx)) }()
	p := messenger.NewPostgres(pool, l, messenger.PostgresConfig{})
	if err := p.Open(ctx, inbox); err != nil {
		return nil, nil, fmt.Errorf("error opening an inbox: %w", err)
	}
	defer func() { _ = p.Close(context.WithoutCancel(ctx), inbox) }()
	for range samples {
		d, err := wakeOnce(ctx, pool, p, inbox)
		if err != nil {
			return nil, nil, err
		}
		msgr = append(msgr, d)
	}
	raw, err = rawNotify(ctx, pool, samples)
	return msgr, raw, err
}

type received struct {
	at  time.Time
	n   int
	err error
}

// wakeOnce sends one message to a receiver blocked on inbox.
func wakeOnce(ctx context.Context, pool *pgxpool.Pool, p *messenger.Postgres, inbox int64) (time.Duration, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan received, 1)
	go func() {
		msgs, err := p.Receive(rctx, inbox, 10*time.Second)
		got <- received{at: time.Now(), n: len(msgs), err: err}
	}()
	if err := awaitLease(ctx, pool, inbox); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := messenger.SendMessage(ctx, p, messenger.Message{To: inbox, FromName: "gb bench", Text: "ping"}); err != nil {
		return 0, fmt.Errorf("error sending a message: %w", err)
	}
	r := <-got
	if r.err != nil || r.n != 1 {
		return 0, fmt.Errorf("the receiver got %d messages: %v", r.n, r.err)
	}
	return r.at.Sub(start), nil
}

// awaitLease waits until a receiver has announced that it waits on inbox.
func awaitLease(ctx context.Context, pool *pgxpool.Pool, inbox int64) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var waiting bool
		if err := pool.QueryRow(ctx, "SELECT coalesce(waiting_until > now(), false) FROM gb_inboxes WHERE run_id = $1", inbox).
			Scan(&waiting); err != nil {
			return fmt.Errorf("error reading the inbox: %w", err)
		}
		if waiting {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the receiver never waited on its inbox")
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// rawNotify measures NOTIFY on one plain connection until a second one,
// blocked in LISTEN, gets it.
func rawNotify(ctx context.Context, pool *pgxpool.Pool, n int) ([]time.Duration, error) {
	cc := pool.Config().ConnConfig
	listener, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return nil, fmt.Errorf("error connecting: %w", err)
	}
	defer listener.Close(context.WithoutCancel(ctx))
	notifier, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return nil, fmt.Errorf("error connecting: %w", err)
	}
	defer notifier.Close(context.WithoutCancel(ctx))
	channel := fmt.Sprintf("gb_bench_raw_%d", time.Now().UnixNano())
	if _, err := listener.Exec(ctx, "LISTEN "+channel); err != nil {
		return nil, fmt.Errorf("error listening: %w", err)
	}
	got := make(chan time.Time)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := listener.WaitForNotification(lctx); err != nil {
				return
			}
			select {
			case got <- time.Now():
			case <-lctx.Done():
				return
			}
		}
	}()
	defer func() { cancel(); <-done }()
	out := make([]time.Duration, 0, n)
	for range n {
		time.Sleep(time.Millisecond) // let the listener block again
		start := time.Now()
		if _, err := notifier.Exec(ctx, "SELECT pg_notify($1, '1')", channel); err != nil {
			return nil, fmt.Errorf("error notifying: %w", err)
		}
		select {
		case at := <-got:
			out = append(out, at.Sub(start))
		case <-time.After(5 * time.Second):
			return nil, errors.New("a notification never arrived")
		}
	}
	return out, nil
}
