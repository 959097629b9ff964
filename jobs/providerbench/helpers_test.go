package providerbench_test

import (
	"math"
	"testing"

	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// checkLedger fails the test unless gb's ledger counts what the provider
// billed: every answered call once, with its tokens and its cost.
func checkLedger(t *testing.T, p openaifake.Stats, l providerbench.Ledger) {
	t.Helper()
	for _, m := range l.Mismatches {
		t.Errorf("ledger: %s", m)
	}
	if l.Open != 0 {
		t.Errorf("ledger: %d calls never settled", l.Open)
	}
	if l.Billed != p.Billed || l.Estimated != 0 {
		t.Errorf("ledger: %d calls billed (%d at an estimate); the provider billed %d", l.Billed, l.Estimated, p.Billed)
	}
	if l.PromptTokens != int64(p.PromptTokens) || l.CachedTokens != int64(p.CachedTokens) ||
		l.CompletionTokens != int64(p.CompletionTokens) || l.ReasoningTokens != int64(p.ReasoningTokens) {
		t.Errorf("ledger tokens %d/%d cached/%d/%d reasoning; the provider billed %d/%d/%d/%d", l.PromptTokens,
			l.CachedTokens, l.CompletionTokens, l.ReasoningTokens, p.PromptTokens, p.CachedTokens, p.CompletionTokens,
			p.ReasoningTokens)
	}
	if math.Abs(l.CostUSD-p.CostUSD) > 1e-8*float64(max(p.Billed, 1)) {
		t.Errorf("ledger cost $%.10f; the provider billed $%.10f", l.CostUSD, p.CostUSD)
	}
}
