package openaifake

import (
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// Config is what a Server enforces and how it answers. The zero value is
// usable: any model of DefaultModels, no rate limits, the DefaultBrain.
type Config struct {
	// APIKey is the key clients must send as "Authorization: Bearer
	// <APIKey>"; DefaultAPIKey when empty.
	APIKey string
	// Models are the models served, by name; DefaultModels() when nil.
	Models map[string]ModelSpec
	// RPM and TPM are the requests and tokens a minute allowed; 0 means no
	// limit. One set of buckets is shared by all models.
	RPM, TPM int
	// CacheTTL is how long a prompt prefix stays in the prompt cache after
	// its last use; 10 minutes when 0.
	CacheTTL time.Duration
	// Brain makes the answers; DefaultBrain when nil.
	Brain Brain
	// ReasoningTokens is what a reasoning model spends thinking at each
	// reasoning_effort ("minimal", "low", "medium", "high") when its
	// Answer does not say; DefaultReasoningTokens() for the efforts missing.
	ReasoningTokens map[string]int
	// Prices are the models' prices, by name, for Stats.CostUSD;
	// DefaultPrices() when nil. A model without a price costs 0.
	Prices map[string]llm.Price
	// Latency is how long an answer waits before it is written, after it
	// has been billed; LatencyFunc, when set, decides instead.
	Latency     time.Duration
	LatencyFunc func(req *Request, completionTokens int) time.Duration
	// HangFor is how long a Timeout fault holds a request before dropping
	// the connection; 0 holds it until the client leaves or Close.
	HangFor time.Duration
	// Now is the clock of the rate limits, the prompt cache and the
	// statistics; time.Now when nil. Latency and HangFor wait in real time.
	Now func() time.Time
	// Organization names the organization in rate-limit messages;
	// "org-fake" when empty.
	Organization string
}

// DefaultAPIKey is the key a Server expects when Config.APIKey is empty.
const DefaultAPIKey = "sk-openaifake"

// ModelSpec is what a Server enforces for one model.
type ModelSpec struct {
	// ContextWindow is the most tokens a request may hold, prompt and
	// completion cap together; 0 means no limit.
	ContextWindow int
	// Reasoning marks a model that thinks before it answers: it rejects
	// temperature other than 1 and max_tokens, accepts reasoning_effort,
	// and spends reasoning tokens.
	Reasoning bool
	// DefaultCompletion is the completion cap of a request that sets none;
	// 4096 when 0.
	DefaultCompletion int
	// MaxCompletion is the largest completion cap a request may ask for;
	// 0 means no limit.
	MaxCompletion int
}

const defaultCompletion = 4096

// DefaultModels is a few models with OpenAI's published context windows
// and output limits: gpt-4o-mini, gpt-4.1-mini, and the reasoning models
// o4-mini and gpt-5-mini.
func DefaultModels() map[string]ModelSpec {
	return map[string]ModelSpec{
		"gpt-4o-mini":  {ContextWindow: 128000, MaxCompletion: 16384},
		"gpt-4.1-mini": {ContextWindow: 1047576, MaxCompletion: 32768},
		"o4-mini":      {ContextWindow: 200000, Reasoning: true, MaxCompletion: 100000},
		"gpt-5-mini":   {ContextWindow: 400000, Reasoning: true, MaxCompletion: 128000},
	}
}

// DefaultPrices is OpenAI's list prices of the DefaultModels, in US dollars
// per million tokens.
func DefaultPrices() map[string]llm.Price {
	return map[string]llm.Price{
		"gpt-4o-mini":  {Input: 0.15, CachedInput: 0.075, Output: 0.60},
		"gpt-4.1-mini": {Input: 0.40, CachedInput: 0.10, Output: 1.60},
		"o4-mini":      {Input: 1.10, CachedInput: 0.275, Output: 4.40},
		"gpt-5-mini":   {Input: 0.25, CachedInput: 0.025, Output: 2.00},
	}
}

// DefaultReasoningTokens is what a reasoning model spends thinking at each
// reasoning_effort when neither Config nor the Answer says.
func DefaultReasoningTokens() map[string]int {
	return map[string]int{"minimal": 50, "low": 200, "medium": 500, "high": 1200}
}

// defaultEffort is the reasoning_effort of a request that sets none.
const defaultEffort = "medium"

// withDefaults fills what cfg leaves empty.
func (cfg Config) withDefaults() Config {
	if cfg.APIKey == "" {
		cfg.APIKey = DefaultAPIKey
	}
	if cfg.Models == nil {
		cfg.Models = DefaultModels()
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = 10 * time.Minute
	}
	if cfg.Brain == nil {
		cfg.Brain = DefaultBrain
	}
	efforts := DefaultReasoningTokens()
	for k, v := range cfg.ReasoningTokens {
		efforts[k] = v
	}
	cfg.ReasoningTokens = efforts
	if cfg.Prices == nil {
		cfg.Prices = DefaultPrices()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Organization == "" {
		cfg.Organization = "org-fake"
	}
	return cfg
}

// completionCap is the cap a request gets when it sets none.
func (m ModelSpec) completionCap() int {
	if m.DefaultCompletion > 0 {
		return m.DefaultCompletion
	}
	return defaultCompletion
}

// latency is how long the answer to req waits.
func (cfg Config) latency(req *Request, completionTokens int) time.Duration {
	if cfg.LatencyFunc != nil {
		return cfg.LatencyFunc(req, completionTokens)
	}
	return cfg.Latency
}
