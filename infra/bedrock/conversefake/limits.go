package conversefake

import (
	"math"
	"net/http"
	"sync"
	"time"
)

// bucket is a continuously refilled token bucket holding a minute of a
// quota.
type bucket struct {
	limit, level float64
	at           time.Time
}

func (b *bucket) refill(now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.level, b.at = math.Min(b.limit, b.level+b.limit*d.Minutes()), now
	}
}

// quotas are the RPM and TPM buckets shared by all models; nil is none.
type quotas struct {
	mu       sync.Mutex
	rpm, tpm *bucket
}

func newQuotas(rpm, tpm int, now time.Time) *quotas {
	q := &quotas{}
	if rpm > 0 {
		q.rpm = &bucket{limit: float64(rpm), level: float64(rpm), at: now}
	}
	if tpm > 0 {
		q.tpm = &bucket{limit: float64(tpm), level: float64(tpm), at: now}
	}
	return q
}

// admit takes one request of cost tokens, or refuses it with a
// ThrottlingException and takes nothing; rpm says which quota refused.
func (q *quotas) admit(cost int, now time.Time) (refused *awsError, rpm bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, b := range []*bucket{q.rpm, q.tpm} {
		if b != nil {
			b.refill(now)
		}
	}
	const eps = 1e-6
	switch {
	case q.tpm != nil && float64(cost) > q.tpm.limit:
		return invalid("Input is too long for requested model."), false
	case q.rpm != nil && q.rpm.level+eps < 1:
		return errorf(http.StatusTooManyRequests, TypeThrottling, "Too many requests, please wait before trying again."), true
	case q.tpm != nil && q.tpm.level+eps < float64(cost):
		return errorf(http.StatusTooManyRequests, TypeThrottling, "Too many tokens, please wait before trying again."), false
	}
	if q.rpm != nil {
		q.rpm.level--
	}
	if q.tpm != nil {
		q.tpm.level -= float64(cost)
	}
	return nil, false
}
