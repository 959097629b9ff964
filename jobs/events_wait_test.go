package jobs_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/messenger"
)

// readerGuard bounds a reader's wait in these tests. It is shorter than
// the reader's own wait (jobs.MaxEventWait) and fallback, so a reader
// that is not woken ends with its context's error instead of reading the
// event when its wait or fallback timer runs out.
const readerGuard = 20 * time.Second

// TestWaitEventsWakesOnTheCommit commits an event while a reader waits on
// its tree, many times. Each event is committed only once the reader has
// taken its lease and read the events after it, and the reader's wait and
// fallback outlast its guard: only the notification the commit sends can
// wake it in time. The latency is measured by BenchmarkWaitEventsWake.
func TestWaitEventsWakesOnTheCommit(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	lat := wakeTrials(t, b.pool, b.agent, b.userID, 40)
	t.Logf("long poll, commit to reader: p50 %v, p99 %v, max %v over %d events",
		pct(lat, .5), pct(lat, .99), pct(lat, 1), len(lat))
}

// BenchmarkWaitEventsWake measures how long after an event's commit a
// reader waiting on its tree has it.
func BenchmarkWaitEventsWake(b *testing.B) {
	pool := dbtest.NewPool(b)
	benchDocs(b, pool)
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		b.Fatal(err)
	}
	user := benchUsers(b, pool, 1)[0]
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		lat = append(lat, wakeTrials(b, pool, a, user, 100)...)
	}
	b.StopTimer()
	fmt.Printf("long poll, commit to reader: p50 %s, p99 %s, max %s over %d events\n",
		ms(pct(lat, .5)), ms(pct(lat, .99)), ms(pct(lat, 1)), len(lat))
	b.ReportMetric(msf(pct(lat, .5)), "wake-p50-ms")
	b.ReportMetric(msf(pct(lat, .99)), "wake-p99-ms")
}

// wakeTrials starts a research and, n times, commits one event of its
// tree while a reader waits for it (see TestWaitEventsWakesOnTheCommit). It
// fails unless each reader returns that one event, and returns how long
// after each commit its reader had it.
func wakeTrials(tb testing.TB, pool *pgxpool.Pool, a *jobs.Service, userID int64, n int) []time.Duration {
	tb.Helper()
	ctx := context.Background()
	l := messenger.NewListener(pool, nil)
	if err := l.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Stop(context.Background()) })
	root, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: userID, Topic: "long poll"})
	if err != nil {
		tb.Fatal(err)
	}
	listenOnEvents(tb, pool, l, root.ID)
	after := lastEventSeq(tb, pool, root.ID)
	first := eventCount(tb, pool, root.ID) + 1
	lat := make([]time.Duration, 0, n)
	for i := range n {
		db := newLeasedReads(pool)
		type result struct {
			evs []jobs.Event
			err error
		}
		got := make(chan result, 1)
		go func() {
			rctx, cancel := context.WithTimeout(ctx, readerGuard)
			defer cancel()
			evs, err := jobs.WaitEvents(rctx, db, jobs.EventWait{RootID: root.ID, After: after, Limit: 10,
				Wait: jobs.MaxEventWait, Notifier: l, Fallback: time.Hour})
			got <- result{evs, err}
		}()
		select {
		case <-db.ready:
		case r := <-got:
			tb.Fatalf("trial %d: the reader returned %+v, %v before it waited", i, r.evs, r.err)
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if err := jobs.AddEventForTest(ctx, tx, root, jobs.EventStep, map[string]any{"trial": i}); err != nil {
			tb.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			tb.Fatal(err)
		}
		committed := time.Now()
		r := <-got
		lat = append(lat, time.Since(committed))
		if r.err != nil {
			tb.Fatalf("trial %d: the commit's notification did not wake the reader: %v", i, r.err)
		}
		if want := first + int64(i); len(r.evs) != 1 || r.evs[0].Kind != jobs.EventStep || r.evs[0].Agent != "root" || r.evs[0].N != want {
			tb.Fatalf("trial %d: got %+v, want the one step event of root, number %d of its tree", i, r.evs, want)
		}
		after = r.evs[0].Seq
	}
	return lat
}

// listenOnEvents returns once l listens on jobs.EventsChannel: a
// subscriber is woken only after the listening connection has run its
// LISTEN (or by a notification it heard).
func listenOnEvents(tb testing.TB, pool *pgxpool.Pool, l *messenger.Listener, rootID int64) {
	tb.Helper()
	wake, done := l.Subscribe(jobs.EventsChannel, rootID)
	defer done()
	waitFor(tb, 30*time.Second, "the listener to listen on "+jobs.EventsChannel, func() bool {
		if _, err := pool.Exec(context.Background(), "SELECT pg_notify($1, $2)",
			jobs.EventsChannel, strconv.FormatInt(rootID, 10)); err != nil {
			tb.Fatal(err)
		}
		select {
		case <-wake:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
}

// leasedReads is a reader's database. It closes ready once the reader has
// taken its lease and finished the read that follows: an event committed
// after that can reach the reader only through a wake-up or a timer.
type leasedReads struct {
	jobs.DB
	leased atomic.Bool
	once   sync.Once
	ready  chan struct{}
}

func newLeasedReads(db jobs.DB) *leasedReads {
	return &leasedReads{DB: db, ready: make(chan struct{})}
}

// Exec is the lease, the only statement of a reader that is not a read.
func (d *leasedReads) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.DB.Exec(ctx, sql, args...)
	if err == nil {
		d.leased.Store(true)
	}
	return tag, err
}

func (d *leasedReads) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := d.DB.Query(ctx, sql, args...)
	if err != nil || !d.leased.Load() {
		return rows, err
	}
	return &closeHook{Rows: rows, closed: func() { d.once.Do(func() { close(d.ready) }) }}, nil
}

// closeHook calls closed once its rows are closed, that is read.
type closeHook struct {
	pgx.Rows
	closed func()
}

func (r *closeHook) Close() {
	r.Rows.Close()
	r.closed()
}

// TestWaitEventsAnswersEmptyAfterTheWait checks that a wait with nothing
// to return ends empty and without an error, that its lease then expires,
// and that an event committed once no lease is live sends no notification.
func TestWaitEventsAnswersEmptyAfterTheWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, setupOpts{noWork: true})
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "empty poll"})
	if err != nil {
		t.Fatal(err)
	}
	after := lastEventSeq(t, b.pool, root.ID)
	wctx, cancel := context.WithTimeout(ctx, readerGuard)
	defer cancel()
	evs, err := jobs.WaitEvents(wctx, b.pool, jobs.EventWait{RootID: root.ID, After: after, Limit: 10,
		Wait: 300 * time.Millisecond, Fallback: 100 * time.Millisecond})
	if err != nil || len(evs) != 0 {
		t.Fatalf("got %+v, err %v; want no events and no error once the wait ends", evs, err)
	}
	leaseExpired := func() bool {
		var expired bool
		if err := b.pool.QueryRow(ctx, `SELECT waiting_until <= now() FROM gb_event_waiters WHERE root_id = $1`,
			root.ID).Scan(&expired); err != nil {
			t.Fatalf("the wait's lease: %v", err)
		}
		return expired
	}
	waitFor(t, 30*time.Second, "the wait's lease to expire", leaseExpired)

	// Notifications reach a listener in the order their transactions
	// commit: one sent after the event's commit comes after any the
	// event's statement queued.
	conn, err := pgx.ConnectConfig(ctx, b.pool.Config().ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{jobs.EventsChannel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs.AddEventForTest(ctx, tx, root, jobs.EventStep, map[string]any{"after": "the lease"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	const marker = "after the event"
	if _, err := b.pool.Exec(ctx, "SELECT pg_notify($1, $2)", jobs.EventsChannel, marker); err != nil {
		t.Fatal(err)
	}
	nctx, ncancel := context.WithTimeout(ctx, 30*time.Second)
	defer ncancel()
	for {
		n, err := conn.WaitForNotification(nctx)
		if err != nil {
			t.Fatalf("the notification sent after the event never came: %v", err)
		}
		if n.Payload == marker {
			break
		}
		if n.Payload == strconv.FormatInt(root.ID, 10) {
			t.Fatal("an event committed after the lease expired sent a notification")
		}
	}
}

// lastEventSeq is the seq of the last event of a tree, 0 when it has none.
func lastEventSeq(tb testing.TB, db jobs.DB, rootID int64) int64 {
	tb.Helper()
	evs, err := jobs.Events(context.Background(), db, rootID, 0, 1000)
	if err != nil {
		tb.Fatal(err)
	}
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// eventCount is how many events a tree has.
func eventCount(tb testing.TB, db jobs.DB, rootID int64) int64 {
	tb.Helper()
	evs, err := jobs.Events(context.Background(), db, rootID, 0, 1000)
	if err != nil {
		tb.Fatal(err)
	}
	return int64(len(evs))
}
