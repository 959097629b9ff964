package openaifake

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
)

// limiter holds the RPM and TPM buckets shared by all models.
type limiter struct {
	mu  sync.Mutex
	org string
	fakeprovider.Limits
}

func newLimiter(rpm, tpm int, org string, now time.Time) *limiter {
	return &limiter{org: org, Limits: fakeprovider.NewLimits(rpm, tpm, now)}
}

// admit takes one request of cost tokens from the buckets, or refuses it
// (too large for the TPM limit, or not yet room for it) and takes nothing.
// It returns the rate-limit headers as they stand after the decision.
func (l *limiter) admit(model string, cost int, now time.Time) (http.Header, *apiError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Refill(now)
	switch {
	case l.TPM != nil && cost > l.TPM.Limit():
		return l.headers(), errTooLarge(model, l.org, l.TPM.Limit(), cost)
	case l.RPM != nil && !l.RPM.Has(1):
		return l.headers(), errRateLimited(model, l.org, "requests", l.RPM.Limit(), l.RPM.Used(), 1, l.RPM.Wait(1))
	case l.TPM != nil && !l.TPM.Has(cost):
		return l.headers(), errRateLimited(model, l.org, "tokens", l.TPM.Limit(), l.TPM.Used(), cost, l.TPM.Wait(cost))
	}
	l.Take(cost)
	return l.headers(), nil
}

// snapshot is the rate-limit headers at now.
func (l *limiter) snapshot(now time.Time) http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Refill(now)
	return l.headers()
}

// headers are OpenAI's x-ratelimit-* headers of the limits set: the limit,
// what remains, and how long until the bucket is full again.
func (l *limiter) headers() http.Header {
	h := http.Header{}
	for _, p := range []struct {
		unit string
		b    *fakeprovider.Bucket
	}{{"requests", l.RPM}, {"tokens", l.TPM}} {
		if p.b == nil {
			continue
		}
		h.Set("x-ratelimit-limit-"+p.unit, strconv.Itoa(p.b.Limit()))
		h.Set("x-ratelimit-remaining-"+p.unit, strconv.Itoa(p.b.Remaining()))
		h.Set("x-ratelimit-reset-"+p.unit, formatDuration(p.b.Wait(p.b.Limit())))
	}
	return h
}

// retryHeaders are the retry-after (whole seconds, rounded up) and
// retry-after-ms headers of a wait.
func retryHeaders(h http.Header, wait time.Duration) {
	h.Set("retry-after", strconv.FormatInt(int64(ceilDuration(wait, time.Second)/time.Second), 10))
	h.Set("retry-after-ms", strconv.FormatInt(int64(ceilDuration(wait, time.Millisecond)/time.Millisecond), 10))
}
