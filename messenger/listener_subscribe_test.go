package messenger

import (
	"context"
	"testing"
	"time"
)

// TestSubscribeListensOnASecondChannel subscribes to a channel the
// listener does not listen on yet, while it runs: a NOTIFY carrying the
// subscribed id wakes the subscriber, one carrying another id does not,
// and the listener keeps its own channel, even after it reconnects.
func TestSubscribeListensOnASecondChannel(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	l := NewListener(pool, testLogger(t))
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Stop(ctx) }()
	wake, done := l.Subscribe("gb_test_events", 7)
	defer done()
	notify := func(channel, payload string) {
		t.Helper()
		if _, err := pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, payload); err != nil {
			t.Fatal(err)
		}
	}
	drain := func() {
		for {
			select {
			case <-wake:
			case <-time.After(100 * time.Millisecond):
				return
			}
		}
	}
	drain() // the wake-up of the LISTEN itself
	for round := range 2 {
		notify("gb_test_events", "8")
		notify(notifyChannel, "7")
		select {
		case <-wake:
			t.Fatalf("round %d: woken by another id or another channel", round)
		case <-time.After(300 * time.Millisecond):
		}
		notify("gb_test_events", "7")
		select {
		case <-wake:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: a NOTIFY on the subscribed channel did not wake the subscriber", round)
		}
		// Cut the listening connection: the new one must listen on both
		// channels again.
		pid := l.BackendPID()
		if _, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1)", int32(pid)); err != nil {
			t.Fatal(err)
		}
		if !eventually(10*time.Second, func() bool { p := l.BackendPID(); return p != 0 && p != pid }) {
			t.Fatal("the listener did not reconnect")
		}
		drain()
	}
	if n := listenSessions(t, pool); n != 1 {
		t.Errorf("%d LISTEN sessions, want the listener's one", n)
	}
}
