package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

type eventsPage struct {
	Events []struct {
		Seq   int64     `json:"seq"`
		Agent string    `json:"agent"`
		Kind  string    `json:"kind"`
		At    time.Time `json:"at"`
	} `json:"events"`
	NextAfter int64 `json:"next_after"`
}

func (b *testBundle) events(t testing.TB, key, query string) (int, eventsPage) {
	t.Helper()
	resp, data := b.raw(t, "GET", "/v1/gb/research/"+query, http.Header{"Authorization": {"Bearer " + key}}, "")
	var p eventsPage
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("events answer %q: %v", data, err)
		}
	}
	return resp.StatusCode, p
}

// waitForLease waits until a long poll on the tree of root holds its lease,
// so that the tree's next event notifies it; the timeout only guards
// against a poll that never takes it.
func (b *testBundle) waitForLease(t testing.TB, root int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var held bool
		err := b.agent.Pool().QueryRow(context.Background(),
			`SELECT EXISTS (SELECT FROM gb_event_waiters WHERE root_id = $1 AND waiting_until > now())`, root).Scan(&held)
		if err != nil {
			t.Fatal(err)
		}
		if held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long poll on tree %d never took its lease", root)
		}
	}
}

// TestEventsLongPollReturnsWhenAnEventLands waits on a tree over HTTP,
// cancels the research meanwhile, and checks that the waiting request
// answers with the cancellation, woken by its notification rather than by
// its fallback timer; then that a wait with nothing new answers empty.
func TestEventsLongPollReturnsWhenAnEventLands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A poll whose lease is taken can still find the cancellation on the
	// read that follows, when the cancel commits first; then it is not
	// woken, and the trial is made again on a new research.
	const trials = 5
	var (
		id    int64
		page  eventsPage
		woken bool
	)
	for i := 0; i < trials && !woken; i++ {
		code, run := b.call(t, b.alice, "POST", "/v1/gb/research", fmt.Sprintf(`{"topic":"long poll %d"}`, i))
		if code != 202 {
			t.Fatalf("create: %d %v", code, run)
		}
		id = int64(run["id"].(float64))
		_, first := b.events(t, b.alice, fmt.Sprintf("%d/events", id))
		if len(first.Events) == 0 || first.NextAfter != first.Events[len(first.Events)-1].Seq {
			t.Fatalf("first page %+v: want the queued event and next_after its seq", first)
		}
		got := make(chan eventsPage, 1)
		go func() {
			_, p := b.events(t, b.alice, fmt.Sprintf("%d/events?after=%d&wait=20", id, first.NextAfter))
			got <- p
		}()
		b.waitForLease(t, id)
		before := b.wakes.taken()
		if code, _ := b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%d/cancel", id), ""); code != 200 {
			t.Fatalf("cancel: %d", code)
		}
		page = <-got
		if n := len(page.Events); n == 0 || page.Events[n-1].Kind != "failed" || page.Events[n-1].Agent != "root" {
			t.Fatalf("long poll answered %+v; want the end of root (kind failed)", page)
		}
		if page.NextAfter != page.Events[len(page.Events)-1].Seq {
			t.Fatalf("long poll answered next_after %d, want the seq of its last event", page.NextAfter)
		}
		if woken = b.wakes.taken() > before; !woken {
			t.Logf("trial %d: the poll took no wake-up; it may have read the cancellation before it waited", i)
		}
	}
	if !woken {
		t.Fatalf("in %d trials no waiting long poll was woken by the notification of the cancellation", trials)
	}

	code, empty := b.events(t, b.alice, fmt.Sprintf("%d/events?after=%d&wait=1", id, page.NextAfter))
	if code != 200 || len(empty.Events) != 0 || empty.NextAfter != page.NextAfter {
		t.Fatalf("empty wait: %d %+v; want no events and the same next_after %d", code, empty, page.NextAfter)
	}
}

// TestEventsWaitIsChecked checks the bounds of wait and that another
// user's tree cannot be waited on.
func TestEventsWaitIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"bounds"}`)
	if code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id := int64(run["id"].(float64))
	for _, q := range []string{"wait=26", "wait=-1", "wait=abc", "after=-1"} {
		if code, body := b.call(t, b.alice, "GET", fmt.Sprintf("/v1/gb/research/%d/events?%s", id, q), ""); code != 400 {
			t.Errorf("?%s: %d %v, want 400", q, code, body)
		}
	}
	if code, _ := b.events(t, b.bob, fmt.Sprintf("%d/events?wait=5", id)); code != 404 {
		t.Errorf("bob waiting on alice's tree: %d, want 404", code)
	}
}

// BenchmarkEventsLongPollOverHTTP measures, over HTTP, how long after an
// event is recorded a long poll waiting on its tree has it: each sample
// starts a research, waits on its tree, and cancels it meanwhile. The time
// is taken from the event's own timestamp, set by its INSERT before the
// commit, so it bounds the time from the commit from above. Each run takes
// a fixed number of samples, whatever b.N; use -benchtime 1x.
func BenchmarkEventsLongPollOverHTTP(b *testing.B) {
	const samples = 20
	tb := setup(b)
	var lat []time.Duration
	for range b.N {
		lat = lat[:0]
		for i := range samples {
			code, run := tb.call(b, tb.alice, "POST", "/v1/gb/research", fmt.Sprintf(`{"topic":"latency %d"}`, i))
			if code != 202 {
				b.Fatalf("create: %d %v", code, run)
			}
			id := int64(run["id"].(float64))
			_, first := tb.events(b, tb.alice, fmt.Sprintf("%d/events", id))
			type answer struct {
				page eventsPage
				at   time.Time
			}
			got := make(chan answer, 1)
			go func() {
				_, page := tb.events(b, tb.alice, fmt.Sprintf("%d/events?after=%d&wait=20", id, first.NextAfter))
				got <- answer{page, time.Now()}
			}()
			tb.waitForLease(b, id)
			if code, _ := tb.call(b, tb.alice, "POST", fmt.Sprintf("/v1/gb/research/%d/cancel", id), ""); code != 200 {
				b.Fatalf("cancel: %d", code)
			}
			a := <-got
			if len(a.page.Events) == 0 {
				b.Fatalf("sample %d: the long poll answered no event", i)
			}
			lat = append(lat, a.at.Sub(a.page.Events[0].At))
		}
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.Logf("long poll over HTTP, event recorded to answer received: p50 %v, p99 %v over %d samples", p50, p99, samples)
	b.ReportMetric(float64(p50.Microseconds()), "p50-us")
	b.ReportMetric(float64(p99.Microseconds()), "p99-us")
}
