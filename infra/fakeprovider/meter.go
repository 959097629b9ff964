package fakeprovider

import (
	"slices"
	"sync"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// Counts is what a Meter counts the same way for every fake.
type Counts struct {
	// Requests is every request received, whatever became of it.
	Requests int
	// MaxInFlight is the most requests being handled at once.
	MaxInFlight int
	// Billed is the calls billed, and Usage their tokens and cost summed.
	Billed int
	Usage  llm.Usage
	// TPMUsed is the tokens the admitted calls took from the TPM limit,
	// between FirstAccepted and LastAccepted.
	TPMUsed       int
	FirstAccepted time.Time
	LastAccepted  time.Time
}

// Billable is a billed call: its tokens and cost.
type Billable interface {
	Usage() llm.Usage
}

// Meter counts what a fake received, admitted and billed, and keeps its
// billed calls C and the fake's own tally X (refusals by cause, say), all
// under one lock. The zero value is ready; it is safe for concurrent use.
type Meter[X any, C Billable] struct {
	mu       sync.Mutex
	counts   Counts
	own      X
	inFlight int
	calls    []C
}

// Enter counts a request arriving; Leave counts it done.
func (m *Meter[X, C]) Enter() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts.Requests++
	m.inFlight++
	m.counts.MaxInFlight = max(m.counts.MaxInFlight, m.inFlight)
}

// Leave counts a request done.
func (m *Meter[X, C]) Leave() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
}

// Accept counts a call let through the rate limits at now, that took cost
// tokens from the TPM limit.
func (m *Meter[X, C]) Accept(cost int, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &m.counts
	c.TPMUsed += cost
	if c.FirstAccepted.IsZero() || now.Before(c.FirstAccepted) {
		c.FirstAccepted = now
	}
	if now.After(c.LastAccepted) {
		c.LastAccepted = now
	}
}

// Bill records a billed call and adds its usage to the sum.
func (m *Meter[X, C]) Bill(call C) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, call)
	m.counts.Billed++
	m.counts.Usage = m.counts.Usage.Add(call.Usage())
}

// Note changes the fake's own tally under the lock.
func (m *Meter[X, C]) Note(change func(*X)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	change(&m.own)
}

// Read is the counts and the fake's tally so far, read at one time.
func (m *Meter[X, C]) Read() (Counts, X) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts, m.own
}

// Calls is every billed call so far, in the order billed.
func (m *Meter[X, C]) Calls() []C {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}
