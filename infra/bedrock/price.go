package bedrock

import (
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
)

// caching says where a model takes cachePoint blocks.
type caching int

const (
	cacheNone     caching = iota // no prompt caching: no cachePoint is sent
	cacheMessages                // after the system prompt and in messages
	cacheAll                     // also after the tools
)

// spec is what the table knows of a Bedrock model: its context window, the
// most it writes in one answer (the largest maxTokens it accepts), where
// it caches and its on-demand price; burndown is how many tokens of the
// quota each output token takes (AWS's token burndown rate, 1 when 0),
// and regional marks a model whose geography profiles (us., eu., apac.
// ...) cost regionalPremium more than its global one.
type spec struct {
	window    int
	maxOutput int
	caching   caching
	price     llm.Price
	burndown  int
	regional  bool
}

// regionalPremium is what a geography inference profile of the Claude 4.5
// generation costs over its global profile (regional endpoints at 10% more
// than global ones: https://clauder-navi.com/en/bedrock-claude-cost/).
const regionalPremium = 1.10

// claudeBurndown is the token burndown rate of Claude 3.7 Sonnet and the
// Claude 4 family: each output token takes five tokens of the quota (AWS,
// "How tokens are counted in Amazon Bedrock",
// https://docs.aws.amazon.com/bedrock/latest/userguide/quotas-token-burndown.html,
// and https://community.aws/content/2xVZmCM5E7XXw0yqTEGgXYxRowk/bedrock-claude-4-burndown-rates).
const claudeBurndown = 5

// models are Bedrock foundation models by id, without a cross-Region
// inference profile's geography prefix (us., eu., apac., global. ...).
//
// Prices are on-demand list prices in US dollars per million tokens, read
// on 2026-12-02 with the project's search tool. AWS's own pricing page
// (https://aws.amazon.com/bedrock/pricing/) was not in the store; each
// figure cites the page it was read from, marked [copy] when that page
// says it copies AWS's. Cache reads and writes: Anthropic models on
// Bedrock bill a cache write at 1.25 times the input rate and a read at
// 0.1 times (https://clauder-navi.com/en/bedrock-claude-cost/, "Prompt
// Caching (cache write at 1.25x, cache read at 0.1x)"); Amazon Nova bills
// a read at a quarter of the input rate (75% off,
// https://www.swfte.com/de/blog/amazon-nova-pro-pricing, "Cached input
// tokens: $0.20 per 1M tokens (75% discount on cache hits, 5-minute
// TTL)", May 2026) and no cache-write price was found: Nova's writes are
// billed at its input rate (CacheWrite 0). Regional inference profiles of
// the Claude 4.5 generation cost 10% more than global ones (the same
// clauder-navi page): the table has the global price, and PriceOf adds
// the premium for a geography profile (regionalPremium).
//
// Windows and output limits: Claude 200,000 tokens; Nova Micro 128,000,
// Nova Lite and Pro 300,000 (https://pristren.com/blog/amazon-nova-micro-ultra-fast);
// Llama 3.1 128,000 (https://deploybase.ai/articles/amazon-bedrock-pricing).
// Output limits are AWS's model-card figures (8,192 for Claude 3.5 Haiku,
// 64,000 for Claude 3.7 Sonnet, Sonnet 4, Sonnet 4.5 and Haiku 4.5, 32,000
// for Opus 4 and 4.1, 5,000 for Nova, 2,048 for Llama on Bedrock): every
// completion cap sent is held within them (llm.Profile.MaxCompletion), for
// Bedrock refuses a maxTokens over the limit ("The maximum tokens you
// requested exceeds the model limit").
var models = map[string]spec{
	// [copy] https://deploybase.ai/articles/amazon-bedrock-pricing ("Source:
	// AWS Bedrock pricing page (March 21, 2026)"): Claude 3.5 Haiku 0.80 in,
	// 4.00 out; Claude 3.7 Sonnet 3.00 in, 15.00 out.
	"anthropic.claude-3-5-haiku-20241022-v1:0": {200_000, 8192, cacheAll,
		llm.Price{Input: 0.80, CachedInput: 0.08, CacheWrite: 1.00, Output: 4.00}, 0, false},
	"anthropic.claude-3-7-sonnet-20250219-v1:0": {200_000, 64_000, cacheAll,
		llm.Price{Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00}, claudeBurndown, false},
	// https://clauder-navi.com/en/bedrock-claude-cost/: "Haiku 4.5 at $1
	// input / $5 output", the global rate; Sonnet 4 and 4.5 at Claude
	// Sonnet's $3 / $15, Opus 4 and 4.1 at $15 / $75 (the same page).
	"anthropic.claude-haiku-4-5-20251001-v1:0": {200_000, 64_000, cacheAll,
		llm.Price{Input: 1.00, CachedInput: 0.10, CacheWrite: 1.25, Output: 5.00}, claudeBurndown, true},
	"anthropic.claude-sonnet-4-5-20250929-v1:0": {200_000, 64_000, cacheAll,
		llm.Price{Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00}, claudeBurndown, true},
	"anthropic.claude-sonnet-4-20250514-v1:0": {200_000, 64_000, cacheAll,
		llm.Price{Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00}, claudeBurndown, false},
	"anthropic.claude-opus-4-1-20250805-v1:0": {200_000, 32_000, cacheAll,
		llm.Price{Input: 15.00, CachedInput: 1.50, CacheWrite: 18.75, Output: 75.00}, claudeBurndown, false},
	"anthropic.claude-opus-4-20250514-v1:0": {200_000, 32_000, cacheAll,
		llm.Price{Input: 15.00, CachedInput: 1.50, CacheWrite: 18.75, Output: 75.00}, claudeBurndown, false},
	// https://pristren.com/blog/amazon-nova-micro-ultra-fast: Nova Micro
	// 0.035/0.140, Lite 0.060/0.240, Pro 0.800/3.200; Micro's agrees with
	// https://techdailyfeed.com/understanding-amazon-bedrock-pricing-from-on-demand-to-fine-tuning
	// ("$0.000035 per 1,000 input tokens and $0.00014 per 1,000 output
	// tokens", read from the Bedrock pricing page).
	"amazon.nova-micro-v1:0": {128_000, 5000, cacheMessages,
		llm.Price{Input: 0.035, CachedInput: 0.00875, Output: 0.14}, 0, false},
	"amazon.nova-lite-v1:0": {300_000, 5000, cacheMessages,
		llm.Price{Input: 0.06, CachedInput: 0.015, Output: 0.24}, 0, false},
	"amazon.nova-pro-v1:0": {300_000, 5000, cacheMessages,
		llm.Price{Input: 0.80, CachedInput: 0.20, Output: 3.20}, 0, false},
	// [copy] https://deploybase.ai/articles/amazon-bedrock-pricing (March
	// 2026): Llama 3.1 70B 0.55/2.20, 8B 0.08/0.32. No prompt caching.
	"meta.llama3-1-70b-instruct-v1:0": {128_000, 2048, cacheNone,
		llm.Price{Input: 0.55, CachedInput: 0.55, Output: 2.20}, 0, false},
	"meta.llama3-1-8b-instruct-v1:0": {128_000, 2048, cacheNone,
		llm.Price{Input: 0.08, CachedInput: 0.08, Output: 0.32}, 0, false},
}

// geographies are the prefixes of cross-Region inference profiles' ids.
var geographies = []string{"us.", "eu.", "apac.", "global.", "jp.", "au.", "ca.", "us-gov."}

// FoundationModel is the foundation model id a model id names: an ARN's
// resource id, without a cross-Region inference profile's geography
// prefix ("us.amazon.nova-lite-v1:0" is "amazon.nova-lite-v1:0").
func FoundationModel(id string) string {
	if strings.HasPrefix(id, "arn:") {
		if i := strings.LastIndex(id, "/"); i >= 0 {
			id = id[i+1:]
		}
	}
	for _, g := range geographies {
		if rest, ok := strings.CutPrefix(id, g); ok {
			return rest
		}
	}
	return id
}

// PriceOf is the on-demand price of a Bedrock model id (a foundation
// model, an inference profile or an ARN of either); ok is false for a
// model not in the table. A model of the Claude 4.5 generation costs
// regionalPremium more through anything but its global profile.
func PriceOf(id string) (llm.Price, bool) {
	s, ok := specOf(id)
	return s.price, ok
}

// specOf is the table's entry for a model id, ok false when unknown; a
// geography profile of a regional model is priced at the regional rate.
func specOf(id string) (spec, bool) {
	s, ok := models[FoundationModel(id)]
	if ok && s.regional && !isGlobal(id) {
		s.price = scalePrice(s.price, regionalPremium)
	}
	return s, ok
}

// isGlobal reports whether a model id names a global inference profile.
func isGlobal(id string) bool {
	if strings.HasPrefix(id, "arn:") {
		if i := strings.LastIndex(id, "/"); i >= 0 {
			id = id[i+1:]
		}
	}
	return strings.HasPrefix(id, "global.")
}

// scalePrice is p with every rate multiplied by f.
func scalePrice(p llm.Price, f float64) llm.Price {
	return llm.Price{Input: p.Input * f, CachedInput: p.CachedInput * f, Output: p.Output * f, CacheWrite: p.CacheWrite * f}
}
