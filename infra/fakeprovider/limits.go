package fakeprovider

import (
	"math"
	"time"
)

// Bucket is a continuously refilled token bucket holding one minute of a
// rate limit: it refills Limit units a minute, up to Limit.
type Bucket struct {
	limit float64
	level float64
	at    time.Time // when level was last brought up to date
}

// NewBucket is a full bucket of limit units a minute, as of now.
func NewBucket(limit int, now time.Time) *Bucket {
	return &Bucket{limit: float64(limit), level: float64(limit), at: now}
}

// epsilon absorbs the rounding of float arithmetic on levels.
const epsilon = 1e-6

// Refill brings the level up to date at now.
func (b *Bucket) Refill(now time.Time) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.level = math.Min(b.limit, b.level+b.limit*elapsed.Minutes())
		b.at = now
	}
}

// Limit is the units a minute the bucket allows.
func (b *Bucket) Limit() int { return int(b.limit) }

// Has reports whether the bucket holds n.
func (b *Bucket) Has(n int) bool { return b.level+epsilon >= float64(n) }

// Wait is how long until the bucket holds n.
func (b *Bucket) Wait(n int) time.Duration {
	if b.Has(n) {
		return 0
	}
	return time.Duration(math.Ceil((float64(n)-b.level)/b.limit*float64(time.Minute) - 1e-3))
}

// Used is how much of the limit is spent.
func (b *Bucket) Used() int { return int(math.Ceil(b.limit - b.level - epsilon)) }

// Remaining is what is left of the limit, whole.
func (b *Bucket) Remaining() int { return int(math.Floor(b.level + epsilon)) }

// Limits are the requests- and tokens-per-minute buckets that one fake
// shares among all its models; a nil bucket is a limit not set. They hold
// no lock: their owner serializes its calls.
type Limits struct {
	RPM, TPM *Bucket
}

// NewLimits are full buckets of rpm requests and tpm tokens a minute; a
// limit of 0 or less is none.
func NewLimits(rpm, tpm int, now time.Time) Limits {
	var l Limits
	if rpm > 0 {
		l.RPM = NewBucket(rpm, now)
	}
	if tpm > 0 {
		l.TPM = NewBucket(tpm, now)
	}
	return l
}

// Refill brings the buckets set up to date at now.
func (l Limits) Refill(now time.Time) {
	for _, b := range []*Bucket{l.RPM, l.TPM} {
		if b != nil {
			b.Refill(now)
		}
	}
}

// Take takes one request of cost tokens from the buckets set, whether or
// not they hold it: the caller has checked first.
func (l Limits) Take(cost int) {
	if l.RPM != nil {
		l.RPM.level--
	}
	if l.TPM != nil {
		l.TPM.level -= float64(cost)
	}
}
