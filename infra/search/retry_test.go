package search

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRetryHonoursRetryAfter: a 429 with Retry-After: 1 is retried after a
// second; one asking for an hour is not retried; 5xx is retried up to the
// limit and then the provider's text is returned.
func TestRetryHonoursRetryAfter(t *testing.T) {
	f := newFake(t, answer{status: 429, header: map[string]string{"Retry-After": "1"}, body: `{"detail": "slow down"}`},
		answer{body: `{"results": []}`})
	s, _ := NewTavily("tvly-k", f.opts())
	start := time.Now()
	if _, _, err := s.Search(context.Background(), "q", 1); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Errorf("took %s, want about the 1 s asked", d)
	}

	f = newFake(t, answer{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{"detail": "quota exhausted"}`})
	s, _ = NewTavily("tvly-k", f.opts())
	_, _, err := s.Search(context.Background(), "q", 1)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Status != 429 || !strings.Contains(err.Error(), "quota exhausted") ||
		!strings.Contains(err.Error(), "retry after 1h0m0s") {
		t.Errorf("err = %v", err)
	}
	if reqs, _ := f.requests(); len(reqs) != 1 {
		t.Errorf("%d requests: an hour's Retry-After is not waited for", len(reqs))
	}

	f = newFake(t, answer{status: http.StatusBadGateway, ctype: "text/html", body: "<html><body><h1>502 Bad Gateway</h1></body></html>"})
	s2, _ := NewSearXNG(f.srv.URL, f.opts())
	_, _, err = s2.Search(context.Background(), "q", 1)
	if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Errorf("err = %v", err)
	}
	if reqs, _ := f.requests(); len(reqs) != MaxRetriesDefault+1 {
		t.Errorf("%d requests, want %d", len(reqs), MaxRetriesDefault+1)
	}
}

// TestRetryStopsWithContext: a cancelled search stops at once.
func TestRetryStopsWithContext(t *testing.T) {
	f := newFake(t, answer{status: 503, header: map[string]string{"Retry-After": "10"}})
	s, _ := NewBrave("k", f.opts())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := s.Search(ctx, "q", 1)
	if err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("err = %v after %s", err, time.Since(start))
	}
}
