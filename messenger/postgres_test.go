package messenger

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
)

// newPostgres gives a test a Postgres messenger on a fresh database, with a
// started Listener that is stopped when the test ends.
func newPostgres(t testing.TB, cfg PostgresConfig) (*Postgres, *pgxpool.Pool, *Listener) {
	t.Helper()
	pool := testPool(t)
	l := startListener(t, pool, nil)
	return NewPostgres(pool, l, cfg), pool, l
}

// startListener starts a Listener on pool; tune, when set, may change it
// before it starts.
func startListener(t testing.TB, pool *pgxpool.Pool, tune func(*Listener)) *Listener {
	t.Helper()
	l := NewListener(pool, testLogger(t))
	if tune != nil {
		tune(l)
	}
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return l
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func testLogger(t testing.TB) *slog.Logger { return slog.New(slog.NewTextHandler(logWriter{t}, nil)) }

// blockedSignal makes p report on the returned channel each time a receiver
// has announced its wait and sleeps. Set it before any receiver starts.
func blockedSignal(p *Postgres) <-chan int64 {
	c := make(chan int64, 16)
	p.onWaiting = func(id int64) { c <- id }
	return c
}

func awaitBlocked(t *testing.T, c <-chan int64) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatal("the receiver never blocked")
	}
}

func TestPostgresMessagesStayAfterRead(t *testing.T) {
	p, pool, _ := newPostgres(t, PostgresConfig{})
	ctx := context.Background()
	mustOpen(t, p, 1)
	mustSend(t, p, 1, "read me")
	if got := texts(receive(t, p, 1, 0)); got != "read me" {
		t.Fatalf("got %q", got)
	}
	mustSend(t, p, 1, "never read")
	if err := p.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var read, unread int
	err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE read_at IS NOT NULL),
		count(*) FILTER (WHERE read_at IS NULL) FROM gb_messages WHERE to_id = 1`).Scan(&read, &unread)
	if err != nil {
		t.Fatal(err)
	}
	if read != 1 || unread != 1 {
		t.Errorf("transcript has %d read and %d unread rows, want 1 and 1", read, unread)
	}
}

func TestPostgresNotifiesOnlyWaitingReceivers(t *testing.T) {
	p, _, _ := newPostgres(t, PostgresConfig{FallbackInterval: 5 * time.Second})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)
	for range 10 {
		mustSend(t, p, 1, "nobody waits")
	}
	if s := p.Stats(); s.Sends != 10 || s.Notifies != 0 {
		t.Fatalf("stats %+v after sends with no receiver, want 10 sends and no notify", s)
	}
	receive(t, p, 1, 0)

	res := receiveAsync(p, context.Background(), 1, 10*time.Second)
	awaitBlocked(t, blocked)
	mustSend(t, p, 1, "someone waits")
	if r := <-res; r.err != nil || texts(r.msgs) != "someone waits" {
		t.Fatalf("got %v, %v", r.msgs, r.err)
	}
	if s := p.Stats(); s.Notifies != 1 {
		t.Fatalf("stats %+v, want one notify for the waiting receiver", s)
	}
	// The receiver is done waiting, so its lease is gone: no more notifies.
	for range 5 {
		mustSend(t, p, 1, "after the wait")
	}
	if s := p.Stats(); s.Sends != 16 || s.Notifies != 1 {
		t.Errorf("stats %+v, want 16 sends and still one notify", s)
	}
}

func TestPostgresWaitHoldsNoPooledConnection(t *testing.T) {
	p, pool, _ := newPostgres(t, PostgresConfig{FallbackInterval: 5 * time.Second})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)
	res := receiveAsync(p, context.Background(), 1, 10*time.Second)
	awaitBlocked(t, blocked)
	time.Sleep(50 * time.Millisecond)
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d pooled connections held by a blocked receiver", n)
	}
	mustSend(t, p, 1, "done")
	if r := <-res; r.err != nil || len(r.msgs) != 1 {
		t.Fatalf("got %v, %v", r.msgs, r.err)
	}
}

// TestPostgresCloseWakesWaiter: closing an inbox wakes its waiter, by
// Close, and by QueueClose in the caller's batch and transaction once it
// commits.
func TestPostgresCloseWakesWaiter(t *testing.T) {
	closers := map[string]func(*Postgres, *pgxpool.Pool) error{
		"Close": func(p *Postgres, _ *pgxpool.Pool) error { return p.Close(context.Background(), 1) },
		"QueueClose": func(p *Postgres, pool *pgxpool.Pool) error {
			return pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
				b := &pgx.Batch{}
				b.Queue("SELECT 1")
				p.QueueClose(b, 1)
				return tx.SendBatch(context.Background(), b).Close()
			})
		},
	}
	for name, closeInbox := range closers {
		t.Run(name, func(t *testing.T) {
			p, pool, _ := newPostgres(t, PostgresConfig{FallbackInterval: longWait})
			blocked := blockedSignal(p)
			mustOpen(t, p, 1)
			res := receiveGuarded(t, p, context.Background(), 1, longWait)
			awaitBlocked(t, blocked)
			if err := closeInbox(p, pool); err != nil {
				t.Fatal(err)
			}
			if r := <-res; !errors.Is(r.err, ErrNoInbox) {
				t.Fatalf("got %v, %v; want ErrNoInbox, the close waking the waiter", r.msgs, r.err)
			}
		})
	}
}

func TestPostgresTxVariants(t *testing.T) {
	p, pool, _ := newPostgres(t, PostgresConfig{FallbackInterval: longWait})
	ctx := context.Background()

	// Rolled back: nothing happened.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.OpenTx(ctx, tx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendTx(ctx, tx, &SendParams{To: 1, Text: "rolled back"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := SendMessage(ctx, p, Message{To: 1, Text: "x"}); !errors.Is(err, ErrNoInbox) {
		t.Fatalf("Send after a rolled back OpenTx: %v, want ErrNoInbox", err)
	}

	// Committed: the message becomes visible at commit.
	inTx(t, pool, func(tx pgx.Tx) {
		if err := p.OpenTx(ctx, tx, 1); err != nil {
			t.Fatal(err)
		}
	})
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.SendTx(ctx, tx, &SendParams{To: 1, From: 2, FromName: "beta", Text: "committed"})
	if err != nil || m.ID == 0 || m.SentAt.IsZero() {
		t.Fatalf("SendTx: %+v, %v", m, err)
	}
	if got := receive(t, p, 1, 0); len(got) != 0 {
		t.Fatalf("an uncommitted message was received: %v", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// A ReceiveTx that rolls back leaves the message unread.
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.ReceiveTx(ctx, tx, 1)
	if err != nil || texts(got) != "committed" || got[0].ID != m.ID {
		t.Fatalf("ReceiveTx: %v, %v", got, err)
	}
	_ = tx.Rollback(ctx)

	// Wait outside the transaction, then ReceiveTx inside one.
	ok, err := p.Wait(ctx, 1, time.Second)
	if err != nil || !ok {
		t.Fatalf("Wait with an unread message: %v, %v", ok, err)
	}
	inTx(t, pool, func(tx pgx.Tx) {
		got, err := p.ReceiveTx(ctx, tx, 1)
		if err != nil || texts(got) != "committed" {
			t.Fatalf("ReceiveTx: %v, %v", got, err)
		}
	})

	blocked := blockedSignal(p)
	type waitResult struct {
		ok  bool
		err error
	}
	res := make(chan waitResult, 1)
	go func() {
		// Only the send's notification can end this wait within the guard.
		wctx, cancel := context.WithTimeout(ctx, receiverGuard)
		defer cancel()
		ok, err := p.Wait(wctx, 1, longWait)
		res <- waitResult{ok, err}
	}()
	awaitBlocked(t, blocked)
	mustSend(t, p, 1, "woke the wait")
	if r := <-res; r.err != nil || !r.ok {
		t.Fatalf("Wait: %v, %v; want true, woken by the send", r.ok, r.err)
	}
	inTx(t, pool, func(tx pgx.Tx) {
		got, err := p.ReceiveTx(ctx, tx, 1)
		if err != nil || texts(got) != "woke the wait" {
			t.Fatalf("ReceiveTx: %v, %v", got, err)
		}
	})
	if ok, err := p.Wait(ctx, 1, 200*time.Millisecond); ok || err != nil {
		t.Errorf("Wait on an empty inbox: %v, %v; want false, nil", ok, err)
	}

	inTx(t, pool, func(tx pgx.Tx) {
		if err := p.CloseTx(ctx, tx, 1); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := p.Wait(ctx, 1, 0); !errors.Is(err, ErrNoInbox) {
		t.Errorf("Wait after CloseTx: %v, want ErrNoInbox", err)
	}
	if _, err := p.SendTx(ctx, mustBegin(t, pool), &SendParams{To: 1, Text: "x"}); !errors.Is(err, ErrNoInbox) {
		t.Errorf("SendTx after CloseTx: %v, want ErrNoInbox", err)
	}
}

// inTx runs f in a transaction and commits it.
func inTx(t *testing.T, pool *pgxpool.Pool, f func(pgx.Tx)) {
	t.Helper()
	tx := mustBegin(t, pool)
	f(tx)
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// mustBegin starts a transaction, rolled back when the test ends unless it
// was committed.
func mustBegin(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// TestPostgresContractExecMode runs the contract with the exec query mode
// that RDS Proxy and PgBouncer need (no prepared statements).
func TestPostgresContractExecMode(t *testing.T) {
	runContract(t, func(t *testing.T) Messenger {
		cfg, err := pgxpool.ParseConfig(dbtest.NewURL(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		seedRuns(t, pool)
		l := startListener(t, pool, nil)
		return NewPostgres(pool, l, PostgresConfig{FallbackInterval: 5 * time.Second})
	})
}

// seedRuns makes the runs the tests address by id (1 to 10000): inboxes
// and messages belong to runs, which they reference.
func seedRuns(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		WITH u AS (INSERT INTO gb_users (name) VALUES ('messenger-test') RETURNING id)
		INSERT INTO gb_agent_research_runs (id, root_id, user_id, topic, model, dataset, max_steps)
		SELECT g, g, u.id, 'test', 'test', 'test', 1 FROM u, generate_series(1, 10000) g`)
	if err != nil {
		t.Fatalf("seeding runs: %v", err)
	}
}

// testPool is a fresh migrated database with the runs of seedRuns.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool := dbtest.NewPool(t)
	seedRuns(t, pool)
	return pool
}
