package messenger

import (
	"context"
	"testing"
	"time"

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

// TestLostNotification kills the listener's backend while a receiver waits:
// the message sent meanwhile (its NOTIFY heard by nobody) still arrives
// within the fallback interval, and once the listener has reconnected a send
// wakes a receiver at once again.
func TestLostNotification(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	// Reconnect only after 2s, so the first message can only come through
	// the fallback re-check.
	l := startListener(t, pool, func(l *Listener) { l.backoffMin, l.backoffMax = 2*time.Second, 2*time.Second })
	const fallback = 300 * time.Millisecond
	p := NewPostgres(pool, l, PostgresConfig{FallbackInterval: fallback})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)

	res := receiveAsync(p, ctx, 1, 20*time.Second)
	awaitBlocked(t, blocked)
	old := l.BackendPID()
	var killed bool
	err := pool.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'listen%' AND pid = $1`, int64(old)).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("terminating the listener's backend %d: %v, %v", old, killed, err)
	}
	if !eventually(2*time.Second, func() bool { return l.BackendPID() == 0 }) {
		t.Fatal("the listener did not notice that its connection died")
	}
	sent := time.Now()
	mustSend(t, p, 1, "sent while nobody listened")
	r := <-res
	if r.err != nil || texts(r.msgs) != "sent while nobody listened" {
		t.Fatalf("got %v, %v", r.msgs, r.err)
	}
	if d := r.at.Sub(sent); d > fallback+500*time.Millisecond {
		t.Errorf("the message arrived %v after the send, want within the fallback %v", d, fallback)
	}
	if s := p.Stats(); s.Notifies != 1 {
		t.Errorf("stats %+v: the send should have notified (and been lost)", s)
	}

	if !eventually(10*time.Second, func() bool { pid := l.BackendPID(); return pid != 0 && pid != old }) {
		t.Fatal("the listener did not reconnect")
	}
	// A fallback far longer than the bound below: only NOTIFY can be quick.
	slow := NewPostgres(pool, l, PostgresConfig{FallbackInterval: 30 * time.Second})
	blocked = blockedSignal(slow)
	res = receiveAsync(slow, ctx, 1, 20*time.Second)
	awaitBlocked(t, blocked)
	sent = time.Now()
	mustSend(t, slow, 1, "after the reconnect")
	r = <-res
	if r.err != nil || texts(r.msgs) != "after the reconnect" {
		t.Fatalf("got %v, %v", r.msgs, r.err)
	}
	if d := r.at.Sub(sent); d > 250*time.Millisecond {
		t.Errorf("woken %v after the send; NOTIFY should be well under the fallback", d)
	}
}

// TestReconnectWakesWaiters: a receiver whose notification was lost is woken
// by the reconnection itself, before its (long) fallback.
func TestReconnectWakesWaiters(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	l := startListener(t, pool, func(l *Listener) { l.backoffMin, l.backoffMax = 300*time.Millisecond, 300*time.Millisecond })
	p := NewPostgres(pool, l, PostgresConfig{FallbackInterval: 30 * time.Second})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)
	res := receiveAsync(p, ctx, 1, 20*time.Second)
	awaitBlocked(t, blocked)
	old := l.BackendPID()
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, int64(old)); err != nil {
		t.Fatal(err)
	}
	if !eventually(2*time.Second, func() bool { return l.BackendPID() == 0 }) {
		t.Fatal("the listener did not notice that its connection died")
	}
	sent := time.Now()
	mustSend(t, p, 1, "lost notify")
	r := <-res
	if r.err != nil || texts(r.msgs) != "lost notify" {
		t.Fatalf("got %v, %v", r.msgs, r.err)
	}
	if d := r.at.Sub(sent); d > 2*time.Second {
		t.Errorf("the message arrived %v after the send; the reconnect should have woken the receiver", d)
	}
}
