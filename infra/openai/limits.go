package openai

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gbresearch/gb/infra/httpwait"
	"github.com/gbresearch/gb/jobs/llm"
)

// parseLimits reads OpenAI's x-ratelimit-* headers (limits per minute, what
// is left, and how long until they are whole again, as in "1s", "6m0s" or
// "120ms"); nil when there are none or h is nil.
func parseLimits(h http.Header) *llm.RateLimits {
	var l llm.RateLimits
	seen := false
	num := func(name string, dst *int) {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				*dst, seen = n, true
			}
		}
	}
	dur := func(name string, dst *time.Duration) {
		if d, ok := parseWait(h.Get(name)); ok {
			*dst, seen = d, true
		}
	}
	num("X-Ratelimit-Limit-Requests", &l.LimitRequests)
	num("X-Ratelimit-Remaining-Requests", &l.RemainingRequests)
	dur("X-Ratelimit-Reset-Requests", &l.ResetRequests)
	num("X-Ratelimit-Limit-Tokens", &l.LimitTokens)
	num("X-Ratelimit-Remaining-Tokens", &l.RemainingTokens)
	dur("X-Ratelimit-Reset-Tokens", &l.ResetTokens)
	if !seen {
		return nil
	}
	return &l
}

// parseWait reads a duration as Go writes it ("6m0s", "1.5s", "120ms") or
// as a number of seconds; negative ones are refused.
func parseWait(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, d >= 0
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < 1e6 {
		return time.Duration(f * float64(time.Second)), true
	}
	return 0, false
}

// tryAgainIn matches the wait OpenAI writes in a rate-limit message:
// "Please try again in 1.5s", "in 120ms", "in 6m0s".
var tryAgainIn = regexp.MustCompile(`(?i)try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)`)

// retryAfter is how long a provider asked to wait before the next call:
// its retry-after-ms header, else retry-after (seconds or an HTTP date),
// else the wait its message gives, else the reset of its rate limits.
func retryAfter(h http.Header, message string, limits *llm.RateLimits, now time.Time) time.Duration {
	if h != nil {
		if d, ok := httpwait.RetryAfter(h, now); ok {
			return d
		}
	}
	if m := tryAgainIn.FindStringSubmatch(message); m != nil {
		if d, ok := parseWait(m[1]); ok {
			return d
		}
	}
	return resetOf(limits)
}

// resetOf is the wait until the exhausted rate limit is whole again: the
// one with nothing left, or, when that is not clear, the longer one.
func resetOf(l *llm.RateLimits) time.Duration {
	if l == nil {
		return 0
	}
	requestsOut := l.LimitRequests > 0 && l.RemainingRequests == 0
	tokensOut := l.LimitTokens > 0 && l.RemainingTokens == 0
	switch {
	case requestsOut && !tokensOut:
		return l.ResetRequests
	case tokensOut && !requestsOut:
		return l.ResetTokens
	}
	return max(l.ResetRequests, l.ResetTokens)
}
