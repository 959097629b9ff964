package search

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/httpwait"
	"github.com/gbresearch/gb/infra/httpwait/httpwaittest"
)

// TestRetryHonoursRetryAfter: a 429 with Retry-After: 1 is retried after
// the second it asks for, and so is one asking for RetryAfterMax; one
// asking for longer is not retried; 5xx is retried up to the limit and then
// the provider's text is returned.
func TestRetryHonoursRetryAfter(t *testing.T) {
	for _, asked := range []struct {
		header string
		want   time.Duration
	}{{"1", time.Second}, {"20", RetryAfterMax}} {
		f := newFake(t, answer{status: 429, header: map[string]string{"Retry-After": asked.header}, body: `{"detail": "slow down"}`},
			answer{body: `{"results": []}`})
		s, _ := NewTavily("tvly-k", f.opts())
		w := &httpwaittest.Waits{}
		s.r.sleep = w.Sleep
		if _, _, err := s.Search(context.Background(), "q", 1); err != nil {
			t.Fatal(err)
		}
		if got, _ := w.All(); len(got) != 1 || got[0] != asked.want {
			t.Errorf("Retry-After: %s: waited %v, want [%v]", asked.header, got, asked.want)
		}
		if reqs, _ := f.requests(); len(reqs) != 2 {
			t.Errorf("Retry-After: %s: %d requests, want 2", asked.header, len(reqs))
		}
	}

	for _, asked := range []struct{ header, says string }{{"21", "21s"}, {"3600", "1h0m0s"}} {
		header := asked.header
		f := newFake(t, answer{status: 429, header: map[string]string{"Retry-After": header}, body: `{"detail": "quota exhausted"}`})
		s, _ := NewTavily("tvly-k", f.opts())
		w := &httpwaittest.Waits{}
		s.r.sleep = w.Sleep
		_, _, err := s.Search(context.Background(), "q", 1)
		var pe *ProviderError
		if !errors.As(err, &pe) || pe.Status != 429 || !strings.Contains(err.Error(), "quota exhausted") ||
			!strings.Contains(err.Error(), "retry after "+asked.says) {
			t.Errorf("Retry-After: %s: err = %v", header, err)
		}
		if got, _ := w.All(); len(got) != 0 {
			t.Errorf("Retry-After: %s: waited %v; a wait over RetryAfterMax is not taken", header, got)
		}
		if reqs, _ := f.requests(); len(reqs) != 1 {
			t.Errorf("Retry-After: %s: %d requests; a wait over RetryAfterMax is not retried", header, len(reqs))
		}
	}

	f := newFake(t, answer{status: http.StatusBadGateway, ctype: "text/html", body: "<html><body><h1>502 Bad Gateway</h1></body></html>"})
	s2, _ := NewSearXNG(f.srv.URL, f.opts())
	w := &httpwaittest.Waits{}
	s2.r.sleep = w.Sleep
	_, _, err := s2.Search(context.Background(), "q", 1)
	if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Errorf("err = %v", err)
	}
	if reqs, _ := f.requests(); len(reqs) != MaxRetriesDefault+1 {
		t.Errorf("%d requests, want %d", len(reqs), MaxRetriesDefault+1)
	}
	// fake.opts backs off from 1ms up to 5ms, jittered into [d/2, d].
	got, _ := w.All()
	if len(got) != MaxRetriesDefault {
		t.Errorf("waited %v, want %d backoffs", got, MaxRetriesDefault)
	}
	for _, d := range got {
		if d < time.Millisecond/2 || d > 5*time.Millisecond {
			t.Errorf("backoff %v outside [0.5ms, 5ms]", d)
		}
	}
}

// TestRetryStopsWithContext: a search whose deadline comes before the wait
// the provider asks for gives up without waiting, and a search cancelled
// while it waits stops.
func TestRetryStopsWithContext(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		f := newFake(t, answer{status: 503, header: map[string]string{"Retry-After": "20"}})
		s, _ := NewBrave("k", f.opts())
		w := &httpwaittest.Waits{Then: httpwait.Sleep}
		s.r.sleep = w.Sleep
		// The deadline is long enough for the first attempt and shorter
		// than the 20 s asked: the retry is given up before the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, _, err := s.Search(ctx, "q", 1)
		if err == nil || !strings.Contains(err.Error(), "no time left to retry after 1 attempts") {
			t.Errorf("err = %v, want no time left to retry", err)
		}
		if ctx.Err() != nil {
			t.Errorf("the search ended with its context (%v): it waited instead of giving up", ctx.Err())
		}
		if asked, took := w.All(); len(asked) != 1 || asked[0] != 20*time.Second || took[0] {
			t.Errorf("waits asked %v, taken %v; want the 20 s asked, not taken", asked, took)
		}
		if reqs, _ := f.requests(); len(reqs) != 1 {
			t.Errorf("%d requests, want 1", len(reqs))
		}
	})
	t.Run("cancel", func(t *testing.T) {
		f := newFake(t, answer{status: 503, header: map[string]string{"Retry-After": "20"}})
		s, _ := NewBrave("k", f.opts())
		waiting := make(chan struct{})
		var once sync.Once
		w := &httpwaittest.Waits{Then: func(ctx context.Context, d time.Duration) bool {
			once.Do(func() { close(waiting) })
			return httpwait.Sleep(ctx, d)
		}}
		s.r.sleep = w.Sleep
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, _, err := s.Search(ctx, "q", 1)
			done <- err
		}()
		select {
		case <-waiting:
		case err := <-done:
			t.Fatalf("the search ended (%v) without waiting to retry", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the search never waited to retry")
		}
		cancel()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the search never returned after its context was cancelled")
		}
		if err == nil || !strings.Contains(err.Error(), "no time left to retry after 1 attempts") {
			t.Errorf("err = %v, want no time left to retry", err)
		}
		if asked, took := w.All(); len(asked) != 1 || took[0] {
			t.Errorf("waits asked %v, taken %v; want one, cut short", asked, took)
		}
		if reqs, _ := f.requests(); len(reqs) != 1 {
			t.Errorf("%d requests, want 1", len(reqs))
		}
	})
}
