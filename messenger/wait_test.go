package messenger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
)

// waitAsync runs Wait in a goroutine.
func waitAsync(p *Postgres, id int64, wait time.Duration) <-chan error {
	res := make(chan error, 1)
	go func() {
		ok, err := p.Wait(context.Background(), id, wait)
		if err == nil && !ok {
			err = errors.New("the wait ended without a message")
		}
		res <- err
	}()
	return res
}

// await fails the test unless res delivers nil before a generous deadline.
func await(t *testing.T, res <-chan error, what string) {
	t.Helper()
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: not woken", what)
	}
}

// TestPostgresWaitHoldsNoConnectionOfAOneConnectionPool: while Wait
// sleeps, the only connection of the pool is free, so a send through that
// pool goes through and wakes it; the woken caller then reads the message.
func TestPostgresWaitHoldsNoConnectionOfAOneConnectionPool(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(dbtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	seedRuns(t, pool)
	l := startListener(t, pool, nil)
	p := NewPostgres(pool, l, PostgresConfig{FallbackInterval: time.Hour})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)

	res := waitAsync(p, 1, time.Minute)
	awaitBlocked(t, blocked)
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d pooled connections held by a blocked Wait", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := SendMessage(ctx, p, Message{To: 1, Text: "through the only connection"}); err != nil {
		t.Fatalf("send while Wait sleeps: %v", err)
	}
	await(t, res, "Wait")
	inTx(t, pool, func(tx pgx.Tx) {
		got, err := p.ReceiveTx(ctx, tx, 1)
		if err != nil || texts(got) != "through the only connection" {
			t.Fatalf("ReceiveTx after the wake: %v, %v", got, err)
		}
	})
}

// TestPostgresSenderSpendsTheLease: the first send to a waiting receiver
// notifies and spends the lease, so the messages that follow, while the
// woken receiver has not read yet, notify nobody.
func TestPostgresSenderSpendsTheLease(t *testing.T) {
	p, _, _ := newPostgres(t, PostgresConfig{FallbackInterval: time.Hour})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)
	res := waitAsync(p, 1, time.Minute)
	awaitBlocked(t, blocked)
	for range 5 {
		mustSend(t, p, 1, "burst")
	}
	await(t, res, "Wait")
	if s := p.Stats(); s.Sends != 5 || s.Notifies != 1 {
		t.Errorf("stats %+v, want 5 sends and one notify", s)
	}
	if got := receive(t, p, 1, 0); len(got) != 5 {
		t.Errorf("got %d messages, want 5", len(got))
	}
}

// TestPostgresReceiverThatLostTheRaceWaitsOn: two receivers wait on one
// inbox and one message wakes both; the one that finds it taken puts the
// lease back, so the next message notifies again and wakes it, with no
// fallback timer to help.
func TestPostgresReceiverThatLostTheRaceWaitsOn(t *testing.T) {
	p, _, _ := newPostgres(t, PostgresConfig{FallbackInterval: time.Hour})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)
	ctx := context.Background()
	a := receiveAsync(p, ctx, 1, time.Minute)
	b := receiveAsync(p, ctx, 1, time.Minute)
	awaitBlocked(t, blocked)
	awaitBlocked(t, blocked)
	mustSend(t, p, 1, "first")
	var first, second received
	select {
	case first = <-a:
		second = awaitReceived(t, b, p)
	case first = <-b:
		second = awaitReceived(t, a, p)
	case <-time.After(20 * time.Second):
		t.Fatal("no receiver woke")
	}
	if first.err != nil || texts(first.msgs) != "first" {
		t.Fatalf("first receiver: %v, %v", first.msgs, first.err)
	}
	if second.err != nil || texts(second.msgs) != "second" {
		t.Fatalf("second receiver: %v, %v", second.msgs, second.err)
	}
	if s := p.Stats(); s.Notifies != 2 {
		t.Errorf("stats %+v, want a notify for each message", s)
	}
}

// awaitReceived waits until the receiver behind res, which lost the race
// for "first", has put its lease back, then sends "second" and returns
// what the receiver got.
func awaitReceived(t *testing.T, res <-chan received, p *Postgres) received {
	t.Helper()
	for i := 0; leaseOf(t, p, 1) == nil; i++ {
		if i == 1000 {
			t.Fatal("the receiver that lost the race did not put its lease back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustSend(t, p, 1, "second")
	select {
	case r := <-res:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the receiver that lost the race was not woken by the next message")
		return received{}
	}
}

// leaseOf is the inbox's waiting_until while it is in the future.
func leaseOf(t *testing.T, p *Postgres, id int64) *time.Time {
	t.Helper()
	var lease *time.Time
	err := p.pool.QueryRow(context.Background(),
		`SELECT waiting_until FROM gb_inboxes WHERE run_id = $1 AND waiting_until > now()`, id).Scan(&lease)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

// TestPostgresWaitWakesOnClose: a close notified while Wait sleeps ends
// the wait like a message; the caller's read then finds no inbox.
func TestPostgresWaitWakesOnClose(t *testing.T) {
	p, pool, _ := newPostgres(t, PostgresConfig{FallbackInterval: time.Hour})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)
	res := waitAsync(p, 1, time.Minute)
	awaitBlocked(t, blocked)
	if err := p.Close(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	await(t, res, "Wait")
	tx := mustBegin(t, pool)
	if _, err := p.ReceiveTx(context.Background(), tx, 1); !errors.Is(err, ErrNoInbox) {
		t.Fatalf("ReceiveTx after the close: %v, want ErrNoInbox", err)
	}
}

// TestMeasureWake takes a few samples of each kind; every message it sent
// was read.
func TestMeasureWake(t *testing.T) {
	p, pool, _ := newPostgres(t, PostgresConfig{})
	ctx := context.Background()
	wake, raw, err := MeasureWake(ctx, p, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(wake) != 5 || len(raw) != 5 {
		t.Fatalf("got %d wake and %d raw samples, want 5 of each", len(wake), len(raw))
	}
	var read, unread int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE read_at IS NOT NULL),
		count(*) FILTER (WHERE read_at IS NULL) FROM gb_messages WHERE to_id = 1`).Scan(&read, &unread); err != nil {
		t.Fatal(err)
	}
	if read != 5 || unread != 0 {
		t.Errorf("%d read and %d unread messages, want 5 and 0", read, unread)
	}

	mustSend(t, p, 1, "left unread")
	if _, _, err := MeasureWake(ctx, p, 1, 1); err == nil {
		t.Error("MeasureWake on an inbox with an unread message did not fail")
	}
	stopped := NewPostgres(pool, NewListener(pool, testLogger(t)), PostgresConfig{})
	if _, _, err := MeasureWake(ctx, stopped, 2, 1); err == nil {
		t.Error("MeasureWake without a started Listener did not fail")
	}
}
