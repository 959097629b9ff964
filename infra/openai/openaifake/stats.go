package openaifake

import (
	"slices"
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
	Unauthorized  int // 401
	BadRequests   int // 400 other than OverWindow, and unknown URLs
	NotFound      int // 404 model_not_found
	OverWindow    int // 400 context_length_exceeded
	Refused429RPM int
	Refused429TPM int
	TooLarge      int // 429 "Request too large"
	// Accepted calls that were not answered: ServerErrors (500 and 503),
	// Timeouts (held without an answer) and Garbage (a body not JSON).
	ServerErrors int
	Timeouts     int
	Garbage      int
	// Outage counts the requests an outage failed (StartOutage), whatever
	// its mode.
	Outage int
	// MaxInFlight is the most requests being handled at once.
	MaxInFlight int
	// Tokens and cost of the billed calls.
	PromptTokens     int
	CachedTokens     int
	CompletionTokens int
	ReasoningTokens  int
	CostUSD          float64
	// TPMUsed is the tokens the accepted calls took from the TPM limit
	// (prompt plus completion cap), between FirstAccepted and LastAccepted.
	TPMUsed       int
	FirstAccepted time.Time
	LastAccepted  time.Time
}

// TokensPerMinute is TPMUsed spread over the time from the first accepted
// call to the last; 0 before two calls at different times. Divided by the
// TPM limit, it is the throughput as a fraction of the limit.
func (s Stats) TokensPerMinute() float64 {
	span := s.LastAccepted.Sub(s.FirstAccepted)
	if span <= 0 {
		return 0
	}
	return float64(s.TPMUsed) / span.Minutes()
}

// Call is one billed call.
type Call struct {
	Time             time.Time
	Model            string
	PromptTokens     int
	CachedTokens     int
	CompletionTokens int
	ReasoningTokens  int
	// MaxCompletionTokens is the completion cap in effect.
	MaxCompletionTokens int
	// TPMCost is what the call took from the TPM limit.
	TPMCost      int
	FinishReason string
	Fault        Fault
	CostUSD      float64
	// ClientRequestID is the caller's name for the call, from its
	// X-Client-Request-Id header.
	ClientRequestID string
}

// ClientRequestIDHeader is the header in which a caller names its call, as
// OpenAI's API lets it for tracing.
const ClientRequestIDHeader = "X-Client-Request-Id"

// Usage is the call's tokens and cost as the llm package counts them.
func (c Call) Usage() llm.Usage {
	return llm.Usage{PromptTokens: c.PromptTokens, CachedPromptTokens: c.CachedTokens,
		CompletionTokens: c.CompletionTokens, ReasoningTokens: c.ReasoningTokens, CostUSD: c.CostUSD}
}

// Event is how one request ended.
type Event struct {
	Time time.Time
	// Status is the HTTP status sent; 0 when none was (Timeout).
	Status int
	// Kind is one of the Kind* values.
	Kind  string
	Model string
	Fault Fault
}

// tally is what a Server counts beyond the fakeprovider.Counts: the
// refusals and failures by cause (in Stats' fields) and every request's end.
type tally struct {
	Stats
	log []Event
}

// recorder keeps the statistics, calls and events of a Server.
type recorder struct {
	fakeprovider.Meter[tally, Call]
}

// event records how a request ended and counts it.
func (r *recorder) event(e Event) {
	r.Note(func(t *tally) {
		t.log = append(t.log, e)
		if n := t.counter(e.Kind); n != nil {
			*n++
		}
	})
}

// counter is the count of the Stats that an event of kind adds to; nil
// for none.
func (s *Stats) counter(kind string) *int {
	switch kind {
	case KindUnauthorized:
		return &s.Unauthorized
	case KindInvalidURL, KindBadRequest:
		return &s.BadRequests
	case KindModelNotFound:
		return &s.NotFound
	case KindOverWindow:
		return &s.OverWindow
	case KindRPM:
		return &s.Refused429RPM
	case KindTPM:
		return &s.Refused429TPM
	case KindTooLarge:
		return &s.TooLarge
	case KindServerError, KindOverloaded:
		return &s.ServerErrors
	case KindTimeout:
		return &s.Timeouts
	case KindGarbage:
		return &s.Garbage
	case KindOutageUnavailable, KindOutageOverloaded, KindOutageDropped, KindOutageHang:
		return &s.Outage
	}
	return nil
}

// Stats is what the server has counted so far.
func (s *Server) Stats() Stats {
	c, t := s.rec.Read()
	st := t.Stats
	st.Requests, st.Billed, st.MaxInFlight = c.Requests, c.Billed, c.MaxInFlight
	st.PromptTokens, st.CachedTokens = c.Usage.PromptTokens, c.Usage.CachedPromptTokens
	st.CompletionTokens, st.ReasoningTokens, st.CostUSD = c.Usage.CompletionTokens, c.Usage.ReasoningTokens, c.Usage.CostUSD
	st.TPMUsed, st.FirstAccepted, st.LastAccepted = c.TPMUsed, c.FirstAccepted, c.LastAccepted
	return st
}

// Calls is every billed call so far, in the order billed.
func (s *Server) Calls() []Call { return s.rec.Calls() }

// Log is how every request so far ended, in order.
func (s *Server) Log() []Event {
	var log []Event
	s.rec.Note(func(t *tally) { log = slices.Clone(t.log) })
	return log
}
