package conversefake

import (
	"net/http"
	"sync"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
)

// quotas are the RPM and TPM buckets shared by all models.
type quotas struct {
	mu sync.Mutex
	fakeprovider.Limits
}

func newQuotas(rpm, tpm int, now time.Time) *quotas {
	return &quotas{Limits: fakeprovider.NewLimits(rpm, tpm, now)}
}

// admit takes one request of cost tokens, or refuses it with a
// ThrottlingException and takes nothing; rpm says which quota refused.
func (q *quotas) admit(cost int, now time.Time) (refused *awsError, rpm bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Refill(now)
	switch {
	case q.TPM != nil && cost > q.TPM.Limit():
		return invalid("Input is too long for requested model."), false
	case q.RPM != nil && !q.RPM.Has(1):
		return errorf(http.StatusTooManyRequests, TypeThrottling, "Too many requests, please wait before trying again."), true
	case q.TPM != nil && !q.TPM.Has(cost):
		return errorf(http.StatusTooManyRequests, TypeThrottling, "Too many tokens, please wait before trying again."), false
	}
	q.Take(cost)
	return nil, false
}
