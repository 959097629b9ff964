package openai

import (
	"regexp"

	"github.com/gbresearch/gb/jobs/llm"
)

// prices are OpenAI's list prices, standard tier, in US dollars per million
// tokens. Batch, flex and priority tiers are not used by this client.
//
// Every figure was read on 2026-12-02 with the project's search tool; the
// stored pages show no date of their own unless one is quoted below. Pages
// marked [OpenAI] are OpenAI's model pages under
// https://developers.openai.com/api/docs/models/; pages marked [copy] are
// third-party tables that say they copy OpenAI's pricing page, used where
// OpenAI's own page was not in the store. A cached-input price that was not
// found is set to the input price: such a model's recorded cost is then an
// upper bound, never an understatement.
var prices = map[string]llm.Price{
	// [copy] https://github.com/CommitBrief/commitbrief/wiki/Provider-OpenAI
	// (edited 2026-05-27, "rates from openai.com/api/pricing"): 2.50, 1.25,
	// 10.00 for gpt-4o and 0.15, 0.075, 0.60 for gpt-4o-mini; input and
	// output agree with https://deploybase.ai/articles/openai-pricing
	// ("data from OpenAI pricing page, March 2026").
	"gpt-4o":      {Input: 2.50, CachedInput: 1.25, Output: 10.00},
	"gpt-4o-mini": {Input: 0.15, CachedInput: 0.075, Output: 0.60},

	// [copy] https://raw.githubusercontent.com/github/docs/main/data/tables/copilot/models-and-pricing.yml
	// (GitHub's table of OpenAI prices): GPT-4.1 2.00, 0.50, 8.00.
	"gpt-4.1": {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	// [copy] https://vercel.com/ai-gateway/models/gpt-4.1-mini/providers
	// (the OpenAI row: 0.40 in, 1.60 out, cache read 0.10); input and
	// output agree with https://tokenmath.io/openai-api-pricing-explained
	// ("OpenAI model pricing, checked Jun 21, 2026").
	"gpt-4.1-mini": {Input: 0.40, CachedInput: 0.10, Output: 1.60},
	// [OpenAI] https://developers.openai.com/ko-KR/api/docs/models/gpt-4.1-nano
	"gpt-4.1-nano": {Input: 0.10, CachedInput: 0.025, Output: 0.40},

	// [copy] https://llmcalc.app/models/o3-mini ("official pricing, last
	// verified 2026-05-06"; it notes the model left OpenAI's price list on
	// 2026-06-12) and https://modelpedia.dev/openai/o3-mini agree.
	"o3-mini": {Input: 1.10, CachedInput: 0.55, Output: 4.40},
	// [copy] https://www.helicone.ai/model/o4-mini (the openai provider row:
	// 1.10 in, 4.40 out, cache read 0.275).
	"o4-mini": {Input: 1.10, CachedInput: 0.275, Output: 4.40},
	// [copy] https://deploybase.ai/articles/openai-pricing ("data from
	// OpenAI pricing page, March 2026"): 2.00 in, 8.00 out. Cached input NOT
	// FOUND in a source that could be trusted: priced at the input rate.
	"o3": {Input: 2.00, CachedInput: 2.00, Output: 8.00},

	// [OpenAI] https://developers.openai.com/api/docs/models/gpt-5-codex
	// lists GPT-5 at 1.25 input in its comparison; 10.00 output from
	// https://openrouter.ai/openai/gpt-5/api. GPT-5's own cached-input price
	// NOT FOUND (the gpt-5-codex page gives 0.125 for that sibling model):
	// priced at the input rate.
	"gpt-5": {Input: 1.25, CachedInput: 1.25, Output: 10.00},
	// [OpenAI] https://developers.openai.com/ko-KR/api/docs/models/gpt-5-mini
	"gpt-5-mini": {Input: 0.25, CachedInput: 0.025, Output: 2.00},
	// [OpenAI] https://developers.openai.com/api/docs/models/gpt-5-nano.md
	"gpt-5-nano": {Input: 0.05, CachedInput: 0.005, Output: 0.40},
}

// snapshotSuffix matches the date of a pinned snapshot, as in
// gpt-4o-mini-2024-07-18.
var snapshotSuffix = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`)

// baseName is the model name without the date of a pinned snapshot.
func baseName(model string) string { return snapshotSuffix.ReplaceAllString(model, "") }

// PriceOf returns the list price of a model, by exact name or, for a dated
// snapshot, by the name without its date; ok is false for a model not in
// the table.
func PriceOf(model string) (p llm.Price, ok bool) {
	if p, ok := prices[model]; ok {
		return p, true
	}
	p, ok = prices[baseName(model)]
	return p, ok
}
