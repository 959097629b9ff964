// Package compact fits a model request into its model's context window. It
// compacts the request, never the stored conversation: old results of tools
// that can be called again (a fetched page, a document read, a search) are
// replaced by a stub that says what was there and which call gets it back,
// and the agent's own long messages and notes (remember's text, and a long
// remember result) are cut to their start, with a line that says how much
// is not shown and, for a note, which document holds it whole. User
// messages and short or unrepeatable tool results are always sent as they
// are.
//
// # What the model has not seen
//
// The results of the latest assistant message have not been seen by the
// model yet: they are never stubbed (two pages fetched in one step both
// arrive whole). When they do not fit beside everything else they are cut
// to their head, with the call that reads on; they are stubbed only when
// not even their heads fit, as the step could not be made otherwise.
//
// # The evidence a stub keeps
//
// A stub keeps, after its one-line call, a block that says it is data: the
// headings of the result (its lines that start with '#', at most 12 of 80
// characters) and its key passages, the sentences that share the most
// words with the research's task (the conversation's first user message),
// at most three and Config.EvidenceChars characters, quoted verbatim in the
// result's order. So an agent that never takes a note still sees, beside
// each source's URL or id, the sentences it would cite, and gb's citation
// check finds them in the text the tree read.
//
// The evidence lives in the stubs rather than in a pack given to the
// report step because a stub is where its source is named, so passage and
// source travel together; because it serves every step, not only the
// report (what to read next, what to quote); and because it is fixed when
// the stub is made, from the result and the task alone, so it adds nothing
// that changes from one request to the next. It is bounded twice: each
// stub keeps at most EvidenceChars characters, and the passages of all the
// stubs at most EvidenceShare of the working budget; past that the oldest
// stubs lose theirs in a batch, down to half the share. They lose them to
// make room for the newest results only when those would not fit even cut
// to their head, which is what they are first.
//
// # A stable prefix
//
// Compaction is a pure function of the request and the Config, and it
// keeps the prompt's prefix stable so that a provider's prompt cache keeps
// working: replacements are made in batches, decided by replaying the
// history as it grew (see plan), and the cuts at each point of the replay
// depend only on the messages before it, so they only move forward: the
// request of the next step carries the same stubs as this one, and more
// when a new batch was cleared; a stubbed result never comes back whole,
// and a retried step builds the same request. The provider's token ratio
// (Scale) is rounded up to an eighth so that its drift does not move the
// batches. What is cut only because a request does not fit at all (trim),
// and what a request at a higher level stubs after the provider refused
// a smaller one, is not part of the plan and may differ in the next step.
//
// It may import jobs/llm only.
package compact

import (
	"math"
	"slices"

	"github.com/gbresearch/gb/jobs/llm"
)

// Defaults of Config.
const (
	DefaultMargin       = 0.10
	DefaultHighWater    = 0.85
	DefaultLowWater     = 0.50
	DefaultKeepNewest   = 2
	DefaultMinStubChars = 600
	// DefaultMaxOwnChars is the length past which the agent's own
	// messages and notes are cut to their first fifth of it once the
	// batch cut passes them.
	DefaultMaxOwnChars = 2000
	// DefaultEvidenceChars is the characters of passages a stub keeps.
	DefaultEvidenceChars = 480
	// DefaultEvidenceShare is the share of the working budget the stubs'
	// passages may take before the oldest lose them.
	DefaultEvidenceShare = 0.20
)

// levelShrink is how much each level of Fit shrinks the working budget.
const levelShrink = 0.75

// Config says how much of a model's window a request may use and how
// compaction proceeds. A zero field takes its default.
type Config struct {
	// Window is the model's context window in tokens; 0 means no limit
	// (Fit then returns the request unchanged).
	Window int
	// Margin is the share of the window kept free for the error of the
	// token estimate (DefaultMargin).
	Margin float64
	// HighWater is the share of the working budget past which a batch of
	// results is stubbed (DefaultHighWater).
	HighWater float64
	// LowWater is the share of the working budget a batch brings the
	// prompt down to (DefaultLowWater).
	LowWater float64
	// KeepNewest is how many of the newest replaceable results are kept
	// whole; fewer only when nothing else fits (DefaultKeepNewest).
	KeepNewest int
	// MinStubChars is the length, in characters, under which a tool result
	// is never replaced (DefaultMinStubChars).
	MinStubChars int
	// MaxOwnChars is the length, in characters, past which the agent's
	// own message, a note it took (remember's text) or a remember result
	// is cut to its first MaxOwnChars/5 characters once the batch cut
	// passes it (DefaultMaxOwnChars).
	MaxOwnChars int
	// EvidenceChars is how many characters of its result's passages a
	// stub keeps, chosen for the task (DefaultEvidenceChars); a negative
	// value keeps none.
	EvidenceChars int
	// EvidenceShare is the share of the working budget the passages kept
	// by stubs may take: past it, the oldest stubs lose theirs in a batch
	// that brings them down to half of it (DefaultEvidenceShare).
	EvidenceShare float64
	// MaxBudget caps the working budget however large the window, in
	// prompt tokens: a long research then resends a smaller conversation
	// at every step, at the price of stubbing pages sooner. 0 means no cap.
	MaxBudget int
	// Scale is how many tokens the provider counts for each token of
	// llm.EstimatePromptTokens, as the provider's answers showed (values
	// under 1 count as 1): the budget is counted in the estimate's tokens.
	Scale float64
}

// withDefaults fills the zero fields of c, and keeps LowWater at most
// HighWater.
func (c Config) withDefaults() Config {
	orDefault := func(v, d float64) float64 {
		if v <= 0 {
			return d
		}
		return v
	}
	c.Margin = orDefault(c.Margin, DefaultMargin)
	c.HighWater = orDefault(c.HighWater, DefaultHighWater)
	c.LowWater = min(orDefault(c.LowWater, DefaultLowWater), c.HighWater)
	if c.KeepNewest <= 0 {
		c.KeepNewest = DefaultKeepNewest
	}
	if c.MinStubChars <= 0 {
		c.MinStubChars = DefaultMinStubChars
	}
	if c.MaxOwnChars <= 0 {
		c.MaxOwnChars = DefaultMaxOwnChars
	}
	if c.EvidenceChars == 0 {
		c.EvidenceChars = DefaultEvidenceChars
	}
	c.EvidenceShare = orDefault(c.EvidenceShare, DefaultEvidenceShare)
	return c
}

// scaleStep is the step Scale is rounded up to: the provider's count
// drifts a little from one request to the next, and a budget that moved
// with it would move the batches, and bring back results a request before
// had stubbed.
const scaleStep = 0.125

// scale is Scale, at least 1, rounded up to a multiple of scaleStep.
func (c Config) scale() float64 {
	return math.Ceil(max(c.Scale, 1)/scaleStep) * scaleStep
}

// Budget is the working budget of a request at a level, in prompt tokens:
// Window·(1−Margin) less the completion cap, at most MaxBudget, divided by
// Scale rounded up to an eighth and shrunk by 0.75 for each level.
// It is math.MaxInt when the window is unknown (0).
func (c Config) Budget(maxCompletionTokens, level int) int {
	if c.Window <= 0 {
		return math.MaxInt
	}
	c = c.withDefaults()
	w := float64(c.Window)*(1-c.Margin) - float64(maxCompletionTokens)
	if c.MaxBudget > 0 {
		w = min(w, float64(c.MaxBudget))
	}
	w /= c.scale()
	return int(math.Floor(w * math.Pow(levelShrink, float64(max(level, 0)))))
}

// Result is a request made to fit, and what it took.
type Result struct {
	// Request is the request to send. Its Messages are a new slice; the
	// input request is never modified.
	Request llm.Request
	// Stubbed is the number of tool results replaced by a stub.
	Stubbed int
	// Trimmed is the number of tool results cut to their head, which
	// happens only when the newest results alone do not fit.
	Trimmed int
	// Bounded is the number of the agent's own messages, notes and
	// remember results cut to their start.
	Bounded int
	// Kept is the number of stubs that keep passages of their result;
	// the others (Stubbed less Kept) say only where it was.
	Kept int
	// Prompt is the estimated prompt tokens of Request
	// (llm.EstimatePromptTokens).
	Prompt int
	// Fits reports whether Prompt is within the working budget of the
	// level (Config.Budget), which leaves room for the completion cap.
	// When it is false nothing replaceable is left to take out: the
	// system prompt, the tools and the messages that are always kept are
	// too large on their own.
	Fits bool
}

// Fit builds the request to send for req, which holds the whole stored
// conversation. level is 0 for an ordinary call and counts the times the
// provider answered that the context length was exceeded, its estimate
// being too low: each level shrinks the budget by a quarter, and from
// level 1 on only the newest replaceable result is kept whole.
//
// With no window, or a prompt under the high-water mark, the messages are
// sent unchanged. Otherwise old results are stubbed in batches (plan); if
// the prompt is still over the budget, the newest result kept is cut to its
// head, with a line that says how to read on.
func Fit(req llm.Request, cfg Config, level int) Result {
	out := req
	out.Messages = slices.Clone(req.Messages)
	if cfg.Window <= 0 {
		return Result{Request: out, Prompt: llm.EstimatePromptTokens(out), Fits: true}
	}
	cfg = cfg.withDefaults()
	level = max(level, 0)
	budget := cfg.Budget(req.MaxCompletionTokens, level)
	m := measure(req)
	if m.total <= int(cfg.HighWater*float64(budget)) {
		return Result{Request: out, Prompt: m.total, Fits: m.total <= budget}
	}
	keep := cfg.KeepNewest
	if level > 0 {
		keep = 1
	}
	lim := limits{
		high:   int(cfg.HighWater * float64(budget)),
		low:    int(cfg.LowWater * float64(budget)),
		budget: budget,
		keep:   keep,
		evHigh: int(cfg.EvidenceShare * float64(budget)),
	}
	lim.evLow = lim.evHigh / 2
	cands := candidates(req.Messages, m.tokens, cfg)
	at := lim.plan(req.Messages, m, cands)
	res := Result{Request: out, Prompt: m.total}
	for i, c := range cands[:at.stubbed] {
		out.Messages[c.index] = c.repl
		res.Prompt -= c.saving
		if i < at.bare {
			out.Messages[c.index] = c.bare
			res.Prompt -= c.evidence
		}
		switch {
		case !c.result:
			res.Bounded++
		case i >= at.bare && c.evidence > 0:
			res.Kept++
			res.Stubbed++
		default:
			res.Stubbed++
		}
	}
	if res.Prompt > budget {
		trim(&res, req.Messages, m.tokens, cands, at, budget)
	}
	res.Fits = res.Prompt <= budget
	return res
}
