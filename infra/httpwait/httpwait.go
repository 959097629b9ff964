// Package httpwait holds what the service's HTTP clients (the model and the
// search providers) share when they retry: how long a server asked them to
// wait, and a wait that gives up when the caller's deadline would not allow
// it.
//
// It may import nothing of the project.
package httpwait

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads how long the server asked to wait: Retry-After-Ms
// (milliseconds, as OpenAI sends it) or Retry-After (seconds or an HTTP
// date). ok is false when it asked nothing readable.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e6 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Sleep waits for d or until ctx is done, whichever comes first, and
// reports whether the full wait elapsed. It does not wait at all for a
// retry that ctx's deadline would not allow.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
