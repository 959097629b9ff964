package messenger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkLatency measures, on one database, how long a receiver that is
// blocked waiting for a message takes to wake: through the Postgres
// messenger (Wait) beside a bare LISTEN/NOTIFY round trip, both timed from
// the send's COMMIT and interleaved by MeasureWake; then, timed from the
// start of the send, the in-memory messenger and a receiver polling the
// table every 100ms. It also counts how many notifying commits the
// Postgres messenger makes per message. Each run takes a fixed number of
// samples, whatever b.N; use -benchtime 1x.
func BenchmarkLatency(b *testing.B) {
	const samples, pollSamples = 200, 100
	ctx := context.Background()
	pool := testPool(b)
	l := startListener(b, pool, nil)
	p := NewPostgres(pool, l, PostgresConfig{})

	var pg, raw, mem, poll []time.Duration
	var waitedNotifies, idleNotifies int64
	for range b.N {
		s0 := p.Stats()
		var err error
		if pg, raw, err = MeasureWake(ctx, p, 1, samples); err != nil {
			b.Fatal(err)
		}
		s1 := p.Stats()
		benchIdleSends(b, p, samples)
		s2 := p.Stats()
		mem = benchChan(b, samples)
		poll = benchPoller(b, p, pollSamples)
		waitedNotifies = s1.Notifies - s0.Notifies
		idleNotifies = s2.Notifies - s1.Notifies
	}

	rawP50, rawP99 := pct(raw, 50), pct(raw, 99)
	var t strings.Builder
	fmt.Fprintf(&t, "\n%-44s %8s %12s %12s %10s %10s\n", "blocked receiver wakes, timed from", "samples", "p50", "p99", "p50/raw", "p99/raw")
	for _, r := range []struct {
		name string
		d    []time.Duration
	}{
		{"COMMIT: postgres messenger (Wait)", pg},
		{"COMMIT: raw LISTEN/NOTIFY round trip", raw},
		{"send: in-memory messenger (channels)", mem},
		{"send: poll the table every 100ms", poll},
	} {
		p50, p99 := pct(r.d, 50), pct(r.d, 99)
		fmt.Fprintf(&t, "%-44s %8d %12v %12v %10.2f %10.2f\n", r.name, len(r.d),
			p50.Round(time.Microsecond), p99.Round(time.Microsecond),
			float64(p50)/float64(rawP50), float64(p99)/float64(rawP99))
	}
	fmt.Fprintf(&t, "poller p50 / postgres messenger p50: %.1fx\n", float64(pct(poll, 50))/float64(pct(pg, 50)))
	fmt.Fprintf(&t, "notifying commits: %d for %d messages to a waiting receiver (%.2f per message), %d for %d messages nobody waited for\n",
		waitedNotifies, samples, float64(waitedNotifies)/samples, idleNotifies, samples)
	b.Log(t.String())

	b.ReportMetric(float64(pct(pg, 50).Microseconds()), "pg-p50-us")
	b.ReportMetric(float64(pct(pg, 99).Microseconds()), "pg-p99-us")
	b.ReportMetric(float64(rawP50.Microseconds()), "raw-p50-us")
	b.ReportMetric(float64(rawP99.Microseconds()), "raw-p99-us")
	b.ReportMetric(float64(pct(pg, 50))/float64(rawP50), "pg/raw-p50")
	b.ReportMetric(float64(pct(poll, 50))/float64(pct(pg, 50)), "poll/pg-p50")
	b.ReportMetric(float64(waitedNotifies)/samples, "notifies/waited-msg")
	b.ReportMetric(float64(idleNotifies)/samples, "notifies/idle-msg")
}

// benchIdleSends sends n messages to an inbox nobody waits on.
func benchIdleSends(b *testing.B, p *Postgres, n int) {
	ctx := context.Background()
	if err := p.Open(ctx, 3); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := SendMessage(ctx, p, Message{To: 3, Text: "idle"}); err != nil {
			b.Fatal(err)
		}
		if i%50 == 49 {
			if _, err := p.Receive(ctx, 3, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchChan measures the in-memory messenger with a blocked receiver.
func benchChan(b *testing.B, n int) []time.Duration {
	ctx := context.Background()
	m := NewChanMessenger()
	_ = m.Open(ctx, 1)
	out := make([]time.Duration, 0, n)
	for range n {
		res := receiveAsync(m, ctx, 1, 10*time.Second)
		time.Sleep(time.Millisecond) // let the receiver block
		start := time.Now()
		if err := SendMessage(ctx, m, Message{To: 1, Text: "ping"}); err != nil {
			b.Fatal(err)
		}
		r := <-res
		if r.err != nil || len(r.msgs) != 1 {
			b.Fatalf("got %v, %v", r.msgs, r.err)
		}
		out = append(out, r.at.Sub(start))
	}
	return out
}

// benchPoller measures a receiver that reads the table every 100ms instead
// of waiting for a notification; sends come at random phases of its period.
func benchPoller(b *testing.B, p *Postgres, n int) []time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Open(ctx, 2); err != nil {
		b.Fatal(err)
	}
	got := make(chan time.Time, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			msgs, err := p.Receive(ctx, 2, 0)
			if err == nil && len(msgs) > 0 {
				got <- time.Now()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { cancel(); <-done }()
	out := make([]time.Duration, 0, n)
	for range n {
		time.Sleep(time.Duration(rand.Int64N(int64(100 * time.Millisecond))))
		start := time.Now()
		if err := SendMessage(ctx, p, Message{To: 2, Text: "ping"}); err != nil {
			b.Fatal(err)
		}
		out = append(out, (<-got).Sub(start))
	}
	return out
}

// pct is the q-th percentile of d.
func pct(d []time.Duration, q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*q/100)]
}
