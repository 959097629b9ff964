package openaifake

import (
	"math"
	"net/http"
	"testing"
	"time"
)

// wantHeaders checks the named headers of r.
func wantHeaders(t *testing.T, r reply, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestRPM(t *testing.T) {
	srv, clk := start(t, Config{RPM: 60})
	body := chat("gpt-4o-mini", "hello", nil)
	first := post(t, srv, testKey, body)
	decodeCompletion(t, first)
	wantHeaders(t, first, map[string]string{"x-ratelimit-limit-requests": "60",
		"x-ratelimit-remaining-requests": "59", "x-ratelimit-reset-requests": "1s"})
	if first.header.Get("x-ratelimit-limit-tokens") != "" {
		t.Errorf("no TPM limit is set, yet x-ratelimit-limit-tokens = %q", first.header.Get("x-ratelimit-limit-tokens"))
	}
	for i := 1; i < 60; i++ {
		decodeCompletion(t, post(t, srv, testKey, body))
	}
	r := post(t, srv, testKey, body)
	wantError(t, r, http.StatusTooManyRequests, "requests", "", "rate_limit_exceeded",
		"Rate limit reached for gpt-4o-mini in organization org-fake on requests per min (RPM): Limit 60, Used 60, "+
			"Requested 1. Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.")
	wantHeaders(t, r, map[string]string{"retry-after": "1", "retry-after-ms": "1000",
		"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m0s"})

	clk.Advance(500 * time.Millisecond)
	r = post(t, srv, testKey, body)
	wantError(t, r, http.StatusTooManyRequests, "requests", "", "rate_limit_exceeded",
		"Rate limit reached for gpt-4o-mini in organization org-fake on requests per min (RPM): Limit 60, Used 60, "+
			"Requested 1. Please try again in 500ms. Visit https://platform.openai.com/account/rate-limits to learn more.")
	wantHeaders(t, r, map[string]string{"retry-after": "1", "retry-after-ms": "500"})

	clk.Advance(500 * time.Millisecond)
	decodeCompletion(t, post(t, srv, testKey, body))
	if got := srv.Stats(); got.Refused429RPM != 2 || got.Billed != 61 || got.Requests != 63 {
		t.Errorf("Stats = %+v, want 2 refused for RPM, 61 billed of 63", got)
	}
}

func TestTPM(t *testing.T) {
	srv, clk := start(t, Config{TPM: 1000})
	// 8 prompt tokens and a cap of 100: each request costs 108.
	body := chat("gpt-4o-mini", "hello", map[string]any{"max_completion_tokens": 100})
	for i := 0; i < 9; i++ {
		decodeCompletion(t, post(t, srv, testKey, body))
	}
	r := post(t, srv, testKey, body)
	wantError(t, r, http.StatusTooManyRequests, "tokens", "", "rate_limit_exceeded",
		"Rate limit reached for gpt-4o-mini in organization org-fake on tokens per min (TPM): Limit 1000, Used 972, "+
			"Requested 108. Please try again in 4.8s. Visit https://platform.openai.com/account/rate-limits to learn more.")
	wantHeaders(t, r, map[string]string{"retry-after": "5", "retry-after-ms": "4800",
		"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "28", "x-ratelimit-reset-tokens": "58.32s"})

	clk.Advance(4800 * time.Millisecond)
	ok := post(t, srv, testKey, body)
	decodeCompletion(t, ok)
	wantHeaders(t, ok, map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1m0s"})
	got := srv.Stats()
	if got.Refused429TPM != 1 || got.Billed != 10 || got.TPMUsed != 1080 {
		t.Errorf("Stats = %+v, want 1 refused for TPM, 10 billed, 1080 tokens taken", got)
	}
	if !got.LastAccepted.Equal(got.FirstAccepted.Add(4800*time.Millisecond)) || math.Abs(got.TokensPerMinute()-13500) > 1e-6 {
		t.Errorf("accepted from %v to %v: %v tokens a minute", got.FirstAccepted, got.LastAccepted, got.TokensPerMinute())
	}
}

func TestRequestTooLarge(t *testing.T) {
	srv, _ := start(t, Config{TPM: 1000, RPM: 10})
	r := post(t, srv, testKey, chat("gpt-4o-mini", "hello", map[string]any{"max_completion_tokens": 2000}))
	wantError(t, r, http.StatusTooManyRequests, "tokens", "", "rate_limit_exceeded",
		"Request too large for gpt-4o-mini in organization org-fake on tokens per min (TPM): Limit 1000, Requested 2008. "+
			"The input or output tokens must be reduced in order to run successfully. "+
			"Visit https://platform.openai.com/account/rate-limits to learn more.")
	if r.header.Get("retry-after") != "" {
		t.Errorf("retry-after = %q on a request no wait can let through", r.header.Get("retry-after"))
	}
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-requests": "10", "x-ratelimit-remaining-tokens": "1000"})
	if got := srv.Stats(); got.TooLarge != 1 || got.Refused429TPM != 0 || got.Billed != 0 || got.TPMUsed != 0 {
		t.Errorf("Stats = %+v, want one TooLarge and nothing taken", got)
	}
}

// Requests refused before the limits (400, 404) take nothing from them.
func TestRefusalsTakeNothing(t *testing.T) {
	srv, _ := start(t, Config{RPM: 2, TPM: 10000})
	post(t, srv, testKey, chat("no-such-model", "hello", nil))
	post(t, srv, testKey, chat("gpt-4o-mini", "hello", map[string]any{"temperature": 5}))
	r := post(t, srv, testKey, chat("gpt-4o-mini", "hello", map[string]any{"max_completion_tokens": 10}))
	decodeCompletion(t, r)
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-requests": "1", "x-ratelimit-remaining-tokens": "9982"})
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Second: "1s", 6 * time.Minute: "6m0s", 120 * time.Millisecond: "120ms",
		9816 * time.Millisecond: "9.816s", time.Microsecond: "1ms",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
