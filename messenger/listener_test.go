package messenger

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// listenSessions counts the sessions of this database whose last statement
// was a LISTEN.
func listenSessions(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'listen%'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// eventually polls cond every 20ms for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestListenerStopLeavesNoListen(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	l := NewListener(pool, testLogger(t))
	for round := range 2 { // one worker invocation after another
		if err := l.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Start(ctx); err != nil { // idempotent
			t.Fatal(err)
		}
		if n := listenSessions(t, pool); n != 1 || l.BackendPID() == 0 {
			t.Fatalf("round %d: %d LISTEN sessions (pid %d) while started, want 1", round, n, l.BackendPID())
		}
		if err := l.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Stop(ctx); err != nil { // idempotent
			t.Fatal(err)
		}
		if l.BackendPID() != 0 {
			t.Errorf("round %d: BackendPID %d after Stop", round, l.BackendPID())
		}
		if !eventually(2*time.Second, func() bool { return listenSessions(t, pool) == 0 }) {
			t.Fatalf("round %d: a LISTEN session remains after Stop", round)
		}
	}
}

// gatedPool is a pool with the settings of pool for a Listener to connect
// with; while the returned flag is set it refuses new connections, so that
// a listener whose connection died stays away until the test lets it back.
func gatedPool(t *testing.T, pool *pgxpool.Pool) (*pgxpool.Pool, *atomic.Bool) {
	t.Helper()
	cfg := pool.Config()
	refuse := new(atomic.Bool)
	before := cfg.BeforeConnect
	cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		if refuse.Load() {
			return errors.New("the test refuses new connections")
		}
		if before != nil {
			return before(ctx, cc)
		}
		return nil
	}
	gated, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gated.Close)
	return gated, refuse
}

// killListener terminates the backend of l's connection and returns once l
// has noticed.
func killListener(t *testing.T, pool *pgxpool.Pool, l *Listener) uint32 {
	t.Helper()
	old := l.BackendPID()
	var killed bool
	err := pool.QueryRow(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'listen%' AND pid = $1`, int64(old)).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("terminating the listener's backend %d: %v, %v", old, killed, err)
	}
	if !eventually(10*time.Second, func() bool { return l.BackendPID() == 0 }) {
		t.Fatal("the listener did not notice that its connection died")
	}
	return old
}

// TestLostNotification kills the listener's backend while a receiver waits
// and keeps the listener from reconnecting: the message sent meanwhile (its
// NOTIFY heard by nobody) still arrives, through the fallback re-check, the
// only way left. Once the listener has reconnected, a send wakes a receiver
// whose fallback and wait outlast the test's guard: only NOTIFY can.
func TestLostNotification(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	gated, refuse := gatedPool(t, pool)
	l := startListener(t, gated, func(l *Listener) { l.backoffMin, l.backoffMax = 50*time.Millisecond, 200*time.Millisecond })
	p := NewPostgres(pool, l, PostgresConfig{FallbackInterval: 300 * time.Millisecond})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)

	res := receiveGuarded(t, p, ctx, 1, longWait)
	awaitBlocked(t, blocked)
	refuse.Store(true)
	old := killListener(t, pool, l)
	mustSend(t, p, 1, "sent while nobody listened")
	requireWoken(t, <-res, "sent while nobody listened", "the fallback re-check")
	if pid := l.BackendPID(); pid != 0 {
		t.Fatalf("the listener reconnected (pid %d) while the test refused connections", pid)
	}
	if s := p.Stats(); s.Notifies != 1 {
		t.Errorf("stats %+v: the send should have notified (and been lost)", s)
	}

	refuse.Store(false)
	if !eventually(10*time.Second, func() bool { pid := l.BackendPID(); return pid != 0 && pid != old }) {
		t.Fatal("the listener did not reconnect")
	}
	slow := NewPostgres(pool, l, PostgresConfig{FallbackInterval: longWait})
	blocked = blockedSignal(slow)
	res = receiveGuarded(t, slow, ctx, 1, longWait)
	awaitBlocked(t, blocked)
	mustSend(t, slow, 1, "after the reconnect")
	requireWoken(t, <-res, "after the reconnect", "the send's NOTIFY")
}

// TestReconnectWakesWaiters: a receiver whose notification was lost while
// the listener was away is woken by the reconnection itself; its fallback
// and wait outlast the test's guard.
func TestReconnectWakesWaiters(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	gated, refuse := gatedPool(t, pool)
	l := startListener(t, gated, func(l *Listener) { l.backoffMin, l.backoffMax = 50*time.Millisecond, 200*time.Millisecond })
	p := NewPostgres(pool, l, PostgresConfig{FallbackInterval: longWait})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)
	res := receiveGuarded(t, p, ctx, 1, longWait)
	awaitBlocked(t, blocked)
	refuse.Store(true)
	killListener(t, pool, l)
	mustSend(t, p, 1, "lost notify") // its NOTIFY is heard by nobody
	refuse.Store(false)
	requireWoken(t, <-res, "lost notify", "the listener's reconnection")
}
