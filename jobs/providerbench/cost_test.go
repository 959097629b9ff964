package providerbench_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// Four sub-agents racing for a dollar budget: the tree ends within its
// budget plus one call's estimate, and the root writes its report from the
// share kept for it.
func TestDollarBudgetHoldsAndKeepsTheRootsShare(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const budget = 0.01
	r, err := providerbench.CostTree(ctx, providerbench.CostOptions{
		EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t), Workers: 2}, MaxCostUSD: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("root %s %q (report %v); spent $%.6f of $%.2f, largest call estimate $%.6f; %d calls; sub-agents %v",
		r.RootStatus, r.RootError, r.RootReport, r.CostUSD, budget, r.MaxCallEstimateUSD, r.Provider.Billed, r.Runs)
	if r.RootStatus != "succeeded" || !r.RootReport {
		t.Errorf("root %s %q, want a report", r.RootStatus, r.RootError)
	}
	if r.CostUSD > budget+r.MaxCallEstimateUSD {
		t.Errorf("spent $%.6f, over the budget $%.2f plus one call's estimate $%.6f", r.CostUSD, budget, r.MaxCallEstimateUSD)
	}
	checkLedger(t, r.Provider, r.Ledger)
}

// The squeeze: a token budget whose quarter kept for the report is barely
// more than the root's closing call needs (1,412 of 1,632 tokens, 86.5%),
// while four sub-agents overspend the rest. The root still writes its
// report.
func TestTokenBudgetSqueezeStillGivesTheReport(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool := dbtest.NewPool(t)
	free, err := providerbench.CostTree(ctx, providerbench.CostOptions{EnvOptions: providerbench.EnvOptions{Pool: pool},
		SubSteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	budget := int64(math.Ceil(4 * float64(free.ClosingTokens) / 0.865))
	r, err := providerbench.CostTree(ctx, providerbench.CostOptions{EnvOptions: providerbench.EnvOptions{Pool: pool, Workers: 2},
		MaxTokens: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("closing call %d tokens without a budget; budget %d; root %s %q; closing call %d; spent %d, largest estimate %d; sub-agents %v",
		free.ClosingTokens, budget, r.RootStatus, r.RootError, r.ClosingTokens, r.Tokens, r.MaxCallEstimate, r.Runs)
	if r.RootStatus != "succeeded" || !r.RootReport {
		t.Errorf("root %s %q, want a report", r.RootStatus, r.RootError)
	}
	if int64(r.Tokens) > budget+r.MaxCallEstimate {
		t.Errorf("spent %d tokens, over the budget %d plus one call's estimate %d", r.Tokens, budget, r.MaxCallEstimate)
	}
	checkLedger(t, r.Provider, r.Ledger)
}
