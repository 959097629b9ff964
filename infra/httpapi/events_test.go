package httpapi_test

import (
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

func (b *testBundle) events(t *testing.T, key, query string) (int, eventsPage) {
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

// TestEventsLongPollReturnsWhenAnEventLands waits on a tree over HTTP,
// cancels the research meanwhile, and checks that the waiting request
// answers with the cancellation well before its fallback timer, then that
// a wait with nothing new answers empty once its time is up.
func TestEventsLongPollReturnsWhenAnEventLands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"long poll"}`)
	if code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id := int64(run["id"].(float64))
	_, first := b.events(t, b.alice, fmt.Sprintf("%d/events", id))
	if len(first.Events) == 0 || first.NextAfter != first.Events[len(first.Events)-1].Seq {
		t.Fatalf("first page %+v: want the queued event and next_after its seq", first)
	}
	type answer struct {
		page eventsPage
		at   time.Time
	}
	got := make(chan answer, 1)
	go func() {
		_, p := b.events(t, b.alice, fmt.Sprintf("%d/events?after=%d&wait=20", id, first.NextAfter))
		got <- answer{p, time.Now()}
	}()
	time.Sleep(200 * time.Millisecond)
	if code, _ := b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%d/cancel", id), ""); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	cancelled := time.Now()
	a := <-got
	if n := len(a.page.Events); n == 0 || a.page.Events[n-1].Kind != "failed" || a.page.Events[n-1].Agent != "root" {
		t.Fatalf("long poll answered %+v; want the end of root (kind failed)", a.page)
	}
	if d := a.at.Sub(cancelled); d > time.Second {
		t.Errorf("long poll answered %v after the cancel returned; want it woken by the notification", d)
	}

	start := time.Now()
	code, empty := b.events(t, b.alice, fmt.Sprintf("%d/events?after=%d&wait=1", id, a.page.NextAfter))
	took := time.Since(start)
	if code != 200 || len(empty.Events) != 0 || empty.NextAfter != a.page.NextAfter || took < time.Second || took > 3*time.Second {
		t.Fatalf("empty wait: %d %+v after %v; want no events, the same next_after, after 1s", code, empty, took)
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

// TestEventsLongPollLatencyOverHTTP measures, over HTTP, how long after an
// event is recorded a long poll waiting on its tree has it: each trial
// starts a research, waits on its tree, and cancels it meanwhile. The time
// is taken from the event's own timestamp, set by its INSERT before the
// commit, so it bounds the time from the commit from above.
func TestEventsLongPollLatencyOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const trials = 20
	var lat []time.Duration
	for i := range trials {
		code, run := b.call(t, b.alice, "POST", "/v1/gb/research", fmt.Sprintf(`{"topic":"latency %d"}`, i))
		if code != 202 {
			t.Fatalf("create: %d %v", code, run)
		}
		id := int64(run["id"].(float64))
		_, first := b.events(t, b.alice, fmt.Sprintf("%d/events", id))
		got := make(chan time.Time, 1)
		var page eventsPage
		go func() {
			_, page = b.events(t, b.alice, fmt.Sprintf("%d/events?after=%d&wait=20", id, first.NextAfter))
			got <- time.Now()
		}()
		time.Sleep(50 * time.Millisecond)
		if code, _ := b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%d/cancel", id), ""); code != 200 {
			t.Fatalf("cancel: %d", code)
		}
		at := <-got
		if len(page.Events) == 0 {
			t.Fatalf("trial %d: the long poll answered no event", i)
		}
		lat = append(lat, at.Sub(page.Events[0].At))
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("long poll over HTTP, event recorded to answer received: p50 %v, p99 %v over %d trials", p50, p99, trials)
	if p50 > 50*time.Millisecond {
		t.Errorf("p50 %v, want ≤ 50ms", p50)
	}
}
