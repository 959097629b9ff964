package openaifake

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// bucket is a continuously refilled token bucket holding one minute of a
// limit: it refills limit units a minute, up to limit.
type bucket struct {
	limit float64
	level float64
	at    time.Time // when level was last brought up to date
}

func newBucket(limit int, now time.Time) *bucket {
	return &bucket{limit: float64(limit), level: float64(limit), at: now}
}

// refill brings the level up to date at now.
func (b *bucket) refill(now time.Time) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.level = math.Min(b.limit, b.level+b.limit*elapsed.Minutes())
		b.at = now
	}
}

// epsilon absorbs the rounding of float arithmetic on levels.
const epsilon = 1e-6

// has reports whether the bucket holds n.
func (b *bucket) has(n float64) bool { return b.level+epsilon >= n }

// wait is how long until the bucket holds n.
func (b *bucket) wait(n float64) time.Duration {
	if b.has(n) {
		return 0
	}
	return time.Duration(math.Ceil((n-b.level)/b.limit*float64(time.Minute) - 1e-3))
}

// used is how much of the limit is spent.
func (b *bucket) used() int { return int(math.Ceil(b.limit - b.level - epsilon)) }

// remaining is what is left of the limit, whole.
func (b *bucket) remaining() int { return int(math.Floor(b.level + epsilon)) }

// limiter holds the RPM and TPM buckets shared by all models; a nil bucket
// is a limit not set.
type limiter struct {
	mu  sync.Mutex
	org string
	rpm *bucket
	tpm *bucket
}

func newLimiter(rpm, tpm int, org string, now time.Time) *limiter {
	l := &limiter{org: org}
	if rpm > 0 {
		l.rpm = newBucket(rpm, now)
	}
	if tpm > 0 {
		l.tpm = newBucket(tpm, now)
	}
	return l
}

// admit takes one request of cost tokens from the buckets, or refuses it
// (too large for the TPM limit, or not yet room for it) and takes nothing.
// It returns the rate-limit headers as they stand after the decision.
func (l *limiter) admit(model string, cost int, now time.Time) (http.Header, *apiError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refillAll(now)
	switch {
	case l.tpm != nil && float64(cost) > l.tpm.limit:
		return l.headers(), errTooLarge(model, l.org, int(l.tpm.limit), cost)
	case l.rpm != nil && !l.rpm.has(1):
		return l.headers(), errRateLimited(model, l.org, "requests", int(l.rpm.limit), l.rpm.used(), 1, l.rpm.wait(1))
	case l.tpm != nil && !l.tpm.has(float64(cost)):
		return l.headers(), errRateLimited(model, l.org, "tokens", int(l.tpm.limit), l.tpm.used(), cost,
			l.tpm.wait(float64(cost)))
	}
	if l.rpm != nil {
		l.rpm.level--
	}
	if l.tpm != nil {
		l.tpm.level -= float64(cost)
	}
	return l.headers(), nil
}

// snapshot is the rate-limit headers at now.
func (l *limiter) snapshot(now time.Time) http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refillAll(now)
	return l.headers()
}

func (l *limiter) refillAll(now time.Time) {
	for _, b := range []*bucket{l.rpm, l.tpm} {
		if b != nil {
			b.refill(now)
		}
	}
}

// headers are OpenAI's x-ratelimit-* headers of the limits set: the limit,
// what remains, and how long until the bucket is full again.
func (l *limiter) headers() http.Header {
	h := http.Header{}
	for _, p := range []struct {
		unit string
		b    *bucket
	}{{"requests", l.rpm}, {"tokens", l.tpm}} {
		if p.b == nil {
			continue
		}
		h.Set("x-ratelimit-limit-"+p.unit, strconv.Itoa(int(p.b.limit)))
		h.Set("x-ratelimit-remaining-"+p.unit, strconv.Itoa(p.b.remaining()))
		h.Set("x-ratelimit-reset-"+p.unit, formatDuration(p.b.wait(p.b.limit)))
	}
	return h
}

// retryHeaders are the retry-after (whole seconds, rounded up) and
// retry-after-ms headers of a wait.
func retryHeaders(h http.Header, wait time.Duration) {
	h.Set("retry-after", strconv.FormatInt(int64(ceilDuration(wait, time.Second)/time.Second), 10))
	h.Set("retry-after-ms", strconv.FormatInt(int64(ceilDuration(wait, time.Millisecond)/time.Millisecond), 10))
}
