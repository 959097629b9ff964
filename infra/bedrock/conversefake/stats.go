package conversefake

import (
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
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

// recorder keeps the statistics and calls of a Server; its tally is the
// Stats' refusals by cause.
type recorder struct {
	fakeprovider.Meter[Stats, Call]
}

// count adds one to a refusal counter of the stats.
func (r *recorder) count(field func(*Stats) *int) {
	r.Note(func(st *Stats) { *field(st)++ })
}

// Stats is what the server has counted so far.
func (s *Server) Stats() Stats {
	c, st := s.rec.Read()
	st.Requests, st.Billed, st.MaxInFlight = c.Requests, c.Billed, c.MaxInFlight
	st.PromptTokens, st.CacheReadTokens, st.CacheWriteTokens = c.Usage.PromptTokens, c.Usage.CachedPromptTokens,
		c.Usage.CacheWriteTokens
	st.CompletionTokens, st.CostUSD = c.Usage.CompletionTokens, c.Usage.CostUSD
	st.TPMUsed, st.FirstAccepted, st.LastAccepted = c.TPMUsed, c.FirstAccepted, c.LastAccepted
	return st
}

// Calls is every billed call so far, in the order billed.
func (s *Server) Calls() []Call { return s.rec.Calls() }
