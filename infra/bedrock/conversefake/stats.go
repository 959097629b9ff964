package conversefake

import (
	"slices"
	"sync"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// Stats counts what a Server received, refused, accepted and billed.
type Stats struct {
	// Requests is every request received, whatever became of it.
	Requests int
	// Billed is the calls answered and billed (Calls).
	Billed int
	// Refusals by cause.
	Unauthorized int // 403: a missing or bad signature, an unknown key
	BadRequests  int // 400 other than OverWindow
	NotFound     int // 404: an unknown model or path
	OverWindow   int // 400 "Input is too long for requested model."
	ThrottledRPM int // 429 ThrottlingException of the RPM quota
	ThrottledTPM int // 429 ThrottlingException of the TPM quota
	ServerErrors int // 5xx answered in place of an answer (Brain faults)
	// MaxInFlight is the most requests being handled at once.
	MaxInFlight int
	// Tokens and cost of the billed calls. PromptTokens counts every input
	// token: those read from the cache (CacheReadTokens), those written to
	// it (CacheWriteTokens) and the rest (Converse's inputTokens).
	PromptTokens     int
	CacheReadTokens  int
	CacheWriteTokens int
	CompletionTokens int
	CostUSD          float64
	// TPMUsed is the tokens the accepted calls took from the TPM quota
	// (prompt plus maxTokens), between FirstAccepted and LastAccepted.
	TPMUsed       int
	FirstAccepted time.Time
	LastAccepted  time.Time
}

// Call is one billed call.
type Call struct {
	Time             time.Time
	Model            string
	PromptTokens     int
	CacheReadTokens  int
	CacheWriteTokens int
	CompletionTokens int
	MaxTokens        int
	StopReason       string
	CostUSD          float64
	// CallID is the gb_call_id of the request's requestMetadata: the
	// caller's name for the call ("" when not sent).
	CallID string
}

// Usage is the call's tokens and cost as the llm package counts them.
func (c Call) Usage() llm.Usage {
	return llm.Usage{PromptTokens: c.PromptTokens, CachedPromptTokens: c.CacheReadTokens,
		CacheWriteTokens: c.CacheWriteTokens, CompletionTokens: c.CompletionTokens, CostUSD: c.CostUSD}
}

// recorder keeps the statistics and calls of a Server.
type recorder struct {
	mu       sync.Mutex
	stats    Stats
	inFlight int
	calls    []Call
}

func (r *recorder) enter() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Requests++
	r.inFlight++
	r.stats.MaxInFlight = max(r.stats.MaxInFlight, r.inFlight)
}

func (r *recorder) leave() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
}

// count adds one to a refusal counter of the stats.
func (r *recorder) count(field func(*Stats) *int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*field(&r.stats)++
}

func (r *recorder) accept(cost int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.TPMUsed += cost
	if r.stats.FirstAccepted.IsZero() || now.Before(r.stats.FirstAccepted) {
		r.stats.FirstAccepted = now
	}
	if now.After(r.stats.LastAccepted) {
		r.stats.LastAccepted = now
	}
}

func (r *recorder) bill(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	s := &r.stats
	s.Billed++
	s.PromptTokens += c.PromptTokens
	s.CacheReadTokens += c.CacheReadTokens
	s.CacheWriteTokens += c.CacheWriteTokens
	s.CompletionTokens += c.CompletionTokens
	s.CostUSD += c.CostUSD
}

// Stats is what the server has counted so far.
func (s *Server) Stats() Stats {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return s.rec.stats
}

// Calls is every billed call so far, in the order billed.
func (s *Server) Calls() []Call {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return slices.Clone(s.rec.calls)
}
