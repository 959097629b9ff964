package openai

import (
	"net/http"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// Each form of the wait a provider asks for, in order of precedence.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	requestsOut := &llm.RateLimits{LimitRequests: 500, RemainingRequests: 0, ResetRequests: 6 * time.Minute,
		LimitTokens: 30000, RemainingTokens: 100, ResetTokens: time.Second}
	tokensOut := &llm.RateLimits{LimitRequests: 500, RemainingRequests: 7, ResetRequests: 6 * time.Minute,
		LimitTokens: 30000, RemainingTokens: 0, ResetTokens: time.Second}
	unclear := &llm.RateLimits{ResetRequests: 200 * time.Millisecond, ResetTokens: 3 * time.Second}
	cases := []struct {
		name    string
		header  map[string]string
		message string
		limits  *llm.RateLimits
		want    time.Duration
	}{
		{"nothing", nil, "Rate limit reached. Please try again shortly.", nil, 0},
		{"retry-after-ms first", map[string]string{"Retry-After-Ms": "150", "Retry-After": "9"}, "try again in 2s", requestsOut, 150 * time.Millisecond},
		{"retry-after seconds", map[string]string{"Retry-After": "2"}, "try again in 5s", nil, 2 * time.Second},
		{"retry-after HTTP date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, "", nil, 7 * time.Second},
		{"retry-after date past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, "", nil, 0},
		{"bad retry-after: the message", map[string]string{"Retry-After": "soon"}, "Please try again in 1.5s.", nil, 1500 * time.Millisecond},
		{"message in ms", nil, "Please try again in 120ms. Visit https://platform.openai.com", requestsOut, 120 * time.Millisecond},
		{"message in minutes", nil, "Please try again in 6m0s.", nil, 6 * time.Minute},
		{"message with hours", nil, "Please Try Again In 1h2m3.5s.", nil, time.Hour + 2*time.Minute + 3500*time.Millisecond},
		{"requests exhausted", nil, "", requestsOut, 6 * time.Minute},
		{"tokens exhausted", nil, "", tokensOut, time.Second},
		{"neither clear: the longer", nil, "", unclear, 3 * time.Second},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := retryAfter(h, tc.message, tc.limits, now); got != tc.want {
			t.Errorf("%s: retryAfter = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseLimits(t *testing.T) {
	if l := parseLimits(http.Header{"Content-Type": {"application/json"}}); l != nil {
		t.Errorf("no x-ratelimit headers: %+v, want nil", l)
	}
	if l := parseLimits(nil); l != nil {
		t.Errorf("nil header: %+v, want nil", l)
	}
	h := http.Header{}
	for k, v := range map[string]string{
		"x-ratelimit-limit-requests": "5000", "x-ratelimit-remaining-requests": "4999", "x-ratelimit-reset-requests": "12ms",
		"x-ratelimit-limit-tokens": "160000", "x-ratelimit-remaining-tokens": "159976", "x-ratelimit-reset-tokens": "6m0s",
	} {
		h.Set(k, v)
	}
	want := llm.RateLimits{LimitRequests: 5000, RemainingRequests: 4999, ResetRequests: 12 * time.Millisecond,
		LimitTokens: 160000, RemainingTokens: 159976, ResetTokens: 6 * time.Minute}
	if l := parseLimits(h); l == nil || *l != want {
		t.Errorf("parseLimits = %+v, want %+v", l, want)
	}
	// Seconds as a bare number, and garbage ignored.
	h = http.Header{}
	h.Set("x-ratelimit-reset-tokens", "2.5")
	h.Set("x-ratelimit-limit-tokens", "lots")
	if l := parseLimits(h); l == nil || *l != (llm.RateLimits{ResetTokens: 2500 * time.Millisecond}) {
		t.Errorf("parseLimits = %+v, want only a 2.5s token reset", l)
	}
}
