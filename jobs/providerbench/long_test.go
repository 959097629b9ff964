package providerbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// A 40-step research that reads a new 20,000-character page at every step
// ends with a report citing its pages, never sends a request over the
// window, and sends at most six times the tokens it read; beside it, the
// same research with compaction off, measured in the same run.
func TestLongResearchFitsItsWindow(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool := dbtest.NewPool(t)
	base, err := providerbench.LongResearch(ctx, providerbench.LongOptions{EnvOptions: providerbench.EnvOptions{Pool: pool},
		Steps: 40, NoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []int{128_000, 16_000} {
		r, err := providerbench.LongResearch(ctx, providerbench.LongOptions{EnvOptions: providerbench.EnvOptions{Pool: pool},
			Steps: 40, Window: window})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("window %d: %s, %d pages cited, prompt %d tokens (%.1f× the %d read; baseline %d, %.1f×), cached %d, "+
			"largest prompt %d, cost $%.4f (baseline $%.4f)", window, r.Status, r.Cited, r.Provider.PromptTokens,
			float64(r.Provider.PromptTokens)/float64(r.PageTokens), r.PageTokens, base.Provider.PromptTokens,
			float64(base.Provider.PromptTokens)/float64(base.PageTokens), r.Provider.CachedTokens, r.MaxPrompt,
			r.Provider.CostUSD, base.Provider.CostUSD)
		if r.Status != "succeeded" || r.Steps != 40 || r.Cited < 39 {
			t.Errorf("window %d: %s after %d steps (%s), %d pages cited; want succeeded after 40 citing 39",
				window, r.Status, r.Steps, r.Error, r.Cited)
		}
		if r.Provider.OverWindow != 0 || r.MaxPrompt > window {
			t.Errorf("window %d: %d requests over the window, largest prompt %d", window, r.Provider.OverWindow, r.MaxPrompt)
		}
		if window == 128_000 && r.Provider.PromptTokens > 6*r.PageTokens {
			t.Errorf("window %d: %d prompt tokens for %d read, more than 6×", window, r.Provider.PromptTokens, r.PageTokens)
		}
		if r.Provider.CostUSD >= base.Provider.CostUSD {
			t.Errorf("window %d: cost $%.4f, not below the baseline's $%.4f", window, r.Provider.CostUSD, base.Provider.CostUSD)
		}
		checkLedger(t, r.Provider, r.Ledger)
	}
	checkLedger(t, base.Provider, base.Ledger)
}

// A reasoning model works through the same steps: no parameter it rejects
// is sent, its reasoning tokens are counted and priced as output.
func TestReasoningModelResearch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := providerbench.LongResearch(ctx, providerbench.LongOptions{
		EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t), Model: "o4-mini"}, Steps: 5, Window: 200_000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after %d steps; %d requests (%d refused as bad); reasoning %d of %d completion tokens; $%.6f",
		r.Status, r.Steps, r.Provider.Requests, r.Provider.BadRequests, r.Provider.ReasoningTokens,
		r.Provider.CompletionTokens, r.Provider.CostUSD)
	if r.Status != "succeeded" || r.Provider.BadRequests != 0 {
		t.Errorf("%s %q with %d bad requests", r.Status, r.Error, r.Provider.BadRequests)
	}
	if r.Provider.ReasoningTokens == 0 || r.Ledger.ReasoningTokens != int64(r.Provider.ReasoningTokens) {
		t.Errorf("reasoning tokens: provider %d, ledger %d", r.Provider.ReasoningTokens, r.Ledger.ReasoningTokens)
	}
	checkLedger(t, r.Provider, r.Ledger)
}
