package conversefake

import (
	"time"

	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs/llm"
)

// Static test credentials a Server accepts when Config leaves them empty.
const (
	DefaultAccessKeyID     = "AKIDCONVERSEFAKE"
	DefaultSecretAccessKey = "conversefake-secret-access-key"
	DefaultRegion          = "us-east-1"
)

// Config is what a Server enforces and how it answers. The zero value is
// usable: DefaultModels, no quotas, openaifake.DefaultBrain.
type Config struct {
	// AccessKeyID and SecretAccessKey are the credentials requests must be
	// signed with, for Region and the service "bedrock".
	AccessKeyID, SecretAccessKey, Region string
	// Models are the models served, by model id; DefaultModels() when nil.
	Models map[string]ModelSpec
	// RPM and TPM are the requests and tokens a minute allowed (0: none),
	// shared by all models. A request takes its prompt and its maxTokens
	// from the TPM quota.
	RPM, TPM int
	// CacheTTL is how long a cached prefix lives after its last use; five
	// minutes when 0.
	CacheTTL time.Duration
	// Brain makes the answers; openaifake.DefaultBrain when nil.
	Brain openaifake.Brain
	// Prices are the models' prices, for Stats.CostUSD; DefaultPrices()
	// when nil.
	Prices map[string]llm.Price
	// Latency is how long an answer waits before it is written, after it
	// has been billed.
	Latency time.Duration
	// Now is the clock of the quotas, the cache and the statistics.
	Now func() time.Time
}

// ModelSpec is what a Server enforces for one model.
type ModelSpec struct {
	// ContextWindow is the most tokens a request may hold, prompt and
	// maxTokens together; 0 means no limit.
	ContextWindow int
	// MaxOutput is the largest maxTokens accepted, and the cap of a request
	// that sets none.
	MaxOutput int
	// MinCacheTokens is the least a cached prefix holds; 0 means the model
	// does not cache (a cachePoint is refused).
	MinCacheTokens int
	// NoToolCache refuses a cachePoint among the tools, as Amazon Nova
	// does (it caches the system prompt and the messages only).
	NoToolCache bool
	// ToolChoices are the members of toolChoice the model takes (auto,
	// any, tool); nil takes auto alone, as the models that take no other.
	ToolChoices []string
	// OutputBurndown is how many tokens of the TPM quota each token of
	// maxTokens takes (AWS's burndown rate, 5 for Claude 3.7 Sonnet and the
	// Claude 4 family); 0 means 1.
	OutputBurndown int
}

// Members of toolChoice (ModelSpec.ToolChoices).
const (
	ChoiceAuto = "auto"
	ChoiceAny  = "any"
	ChoiceTool = "tool"
)

// allChoices are the toolChoice members of Claude 3 and later, and of
// Amazon Nova (the API reference's ToolChoice).
var allChoices = []string{ChoiceAuto, ChoiceAny, ChoiceTool}

// DefaultModels are a few models with Bedrock's windows, output limits,
// caching, tool choices and burndown rates.
func DefaultModels() map[string]ModelSpec {
	return map[string]ModelSpec{
		"amazon.nova-lite-v1:0": {ContextWindow: 300_000, MaxOutput: 5000, MinCacheTokens: 1024, NoToolCache: true,
			ToolChoices: allChoices},
		"anthropic.claude-3-5-haiku-20241022-v1:0": {ContextWindow: 200_000, MaxOutput: 8192, MinCacheTokens: 2048,
			ToolChoices: allChoices},
		"us.anthropic.claude-haiku-4-5-20251001-v1:0": {ContextWindow: 200_000, MaxOutput: 64_000,
			MinCacheTokens: 4096, ToolChoices: allChoices, OutputBurndown: 5},
		"meta.llama3-1-8b-instruct-v1:0": {ContextWindow: 128_000, MaxOutput: 2048},
	}
}

// DefaultPrices are the DefaultModels' on-demand prices, in US dollars per
// million tokens (as infra/bedrock's table has them).
func DefaultPrices() map[string]llm.Price {
	return map[string]llm.Price{
		"amazon.nova-lite-v1:0":                    {Input: 0.06, CachedInput: 0.015, Output: 0.24},
		"anthropic.claude-3-5-haiku-20241022-v1:0": {Input: 0.80, CachedInput: 0.08, CacheWrite: 1.00, Output: 4.00},
		// A geography profile of Claude 4.5: the global rate and 10%.
		"us.anthropic.claude-haiku-4-5-20251001-v1:0": {Input: 1.10, CachedInput: 0.11, CacheWrite: 1.375, Output: 5.50},
		"meta.llama3-1-8b-instruct-v1:0":              {Input: 0.08, CachedInput: 0.08, Output: 0.32},
	}
}

func (cfg Config) withDefaults() Config {
	if cfg.AccessKeyID == "" {
		cfg.AccessKeyID = DefaultAccessKeyID
	}
	if cfg.SecretAccessKey == "" {
		cfg.SecretAccessKey = DefaultSecretAccessKey
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.Models == nil {
		cfg.Models = DefaultModels()
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = 5 * time.Minute
	}
	if cfg.Brain == nil {
		cfg.Brain = openaifake.DefaultBrain
	}
	if cfg.Prices == nil {
		cfg.Prices = DefaultPrices()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}
