package jobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/messenger"
)

// TestWaitEventsWakesSoonAfterTheCommit commits an event while a reader
// waits on its tree, many times, and checks that the reader has it within
// 50 ms of the commit at the median; the fallback timer is set far beyond
// that, so only the notification can wake it.
func TestWaitEventsWakesSoonAfterTheCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, setupOpts{noWork: true})
	l := messenger.NewListener(b.pool, nil)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Stop(context.Background()) })
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "long poll"})
	if err != nil {
		t.Fatal(err)
	}
	after := lastSeq(t, b, root.ID)
	const trials = 40
	var lat []time.Duration
	for i := range trials {
		got := make(chan []jobs.Event, 1)
		go func() {
			evs, err := jobs.WaitEvents(ctx, b.pool, jobs.EventWait{RootID: root.ID, After: after, Limit: 10,
				Wait: 5 * time.Second, Notifier: l, Fallback: time.Minute})
			if err != nil {
				t.Error(err)
			}
			got <- evs
		}()
		time.Sleep(30 * time.Millisecond) // the reader is waiting, its lease taken
		tx, err := b.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := jobs.AddEventForTest(ctx, tx, root, jobs.EventStep, map[string]any{"trial": i}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		committed := time.Now()
		evs := <-got
		lat = append(lat, time.Since(committed))
		if len(evs) != 1 || evs[0].Kind != jobs.EventStep || evs[0].Agent != "root" || evs[0].N != int64(i+2) {
			t.Fatalf("trial %d: got %+v, want the one step event of root, number %d of its tree", i, evs, i+2)
		}
		after = evs[0].Seq
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("long poll, commit to reader: p50 %v, p99 %v, max %v over %d events", p50, p99, lat[len(lat)-1], trials)
	if p50 > 50*time.Millisecond {
		t.Errorf("p50 %v from commit to reader, want ≤ 50ms", p50)
	}
}

// TestWaitEventsAnswersEmptyAfterTheWait checks that a wait with nothing
// to return ends empty after its time, and that an event committed while no
// one waits sends no notification (no lease is live).
func TestWaitEventsAnswersEmptyAfterTheWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, setupOpts{noWork: true})
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "empty poll"})
	if err != nil {
		t.Fatal(err)
	}
	after := lastSeq(t, b, root.ID)
	start := time.Now()
	evs, err := jobs.WaitEvents(ctx, b.pool, jobs.EventWait{RootID: root.ID, After: after, Limit: 10,
		Wait: 700 * time.Millisecond, Fallback: 100 * time.Millisecond})
	took := time.Since(start)
	if err != nil || len(evs) != 0 || took < 700*time.Millisecond || took > 2*time.Second {
		t.Fatalf("got %d events, err %v after %v; want none after 700ms", len(evs), err, took)
	}
	var live bool
	if err := b.pool.QueryRow(ctx, `SELECT waiting_until > now() FROM gb_event_waiters WHERE root_id = $1`,
		root.ID).Scan(&live); err != nil || live {
		t.Fatalf("lease live %v (%v) after the wait ended; want it expired", live, err)
	}
}

func lastSeq(t *testing.T, b *testBundle, rootID int64) int64 {
	t.Helper()
	evs, err := jobs.Events(context.Background(), b.pool, rootID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}
