package jobs

import (
	"math"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

// A call's estimate, which a dollar budget reserves, is never below what
// the call may be billed: with a provider that charges more to write its
// cache than to read a prompt, the whole prompt is priced as written.
func TestEstimateCostTakesTheDearestPromptRate(t *testing.T) {
	u := llm.Usage{PromptTokens: 10_000, CompletionTokens: 1_000}
	claude := llm.Price{Input: 0.80, CachedInput: 0.08, CacheWrite: 1.00, Output: 4.00}
	if got, want := estimateCost(claude, u), (10_000*1.00+1_000*4.00)/1e6; math.Abs(got-want) > 1e-12 {
		t.Errorf("Claude-like price: estimate $%.6f, want $%.6f (the prompt at the cache-write rate)", got, want)
	}
	worst := claude.Cost(llm.Usage{PromptTokens: 10_000, CacheWriteTokens: 10_000, CompletionTokens: 1_000})
	if estimateCost(claude, u) < worst {
		t.Errorf("the estimate is below the dearest bill $%.6f", worst)
	}
	openai := llm.Price{Input: 0.15, CachedInput: 0.075, Output: 0.60}
	if got, want := estimateCost(openai, u), (10_000*0.15+1_000*0.60)/1e6; math.Abs(got-want) > 1e-12 {
		t.Errorf("OpenAI-like price: estimate $%.6f, want $%.6f (the prompt at the input rate)", got, want)
	}
}
