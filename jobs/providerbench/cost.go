package providerbench

import (
	"cmp"
	"context"
	"fmt"

	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// CostOptions size a tree with a budget and sub-agents racing for it.
type CostOptions struct {
	EnvOptions
	// Subagents is how many sub-agents the root spawns at once (default 4).
	Subagents int
	// SubSteps is how many pages each sub-agent would fetch, budget
	// allowing (default 10).
	SubSteps int
	// MaxCostUSD and MaxTokens are the tree's budget.
	MaxCostUSD float64
	MaxTokens  int64
}

// CostResult is what the tree spent.
type CostResult struct {
	RootStatus, RootError string
	RootReport            bool
	// Runs are the statuses and errors of the sub-agents.
	Runs []string
	// CostUSD and Tokens are the tree's, as the provider billed them.
	CostUSD float64
	Tokens  int
	// MaxCallEstimate is the largest estimate a call of the tree was
	// admitted with: the bound a budget may be passed by.
	MaxCallEstimateUSD float64
	MaxCallEstimate    int64
	// ClosingTokens is what the root's last call used.
	ClosingTokens int
	Provider      openaifake.Stats
	Ledger        Ledger
}

// CostTree runs one tree whose sub-agents race for its budget.
func CostTree(ctx context.Context, o CostOptions) (CostResult, error) {
	o.Subagents = cmp.Or(o.Subagents, 4)
	o.SubSteps = cmp.Or(o.SubSteps, 10)
	e, err := newEnv(ctx, o.EnvOptions, 2000, func(p *pages) openaifake.Brain {
		return spawningBrain(p, o.Subagents, o.SubSteps)
	})
	if err != nil {
		return CostResult{}, err
	}
	defer e.Close()
	run, err := e.Start(ctx, jobs.StartParams{Topic: "tree 1", MaxSteps: 4, MaxCostUSD: o.MaxCostUSD, MaxTokens: o.MaxTokens})
	if err != nil {
		return CostResult{}, err
	}
	if err := e.Wait(ctx, run.ID); err != nil {
		return CostResult{}, err
	}
	tree, err := jobs.Tree(ctx, e.Pool, run.ID)
	if err != nil {
		return CostResult{}, err
	}
	r := CostResult{Provider: e.Stats()}
	for _, t := range tree {
		if t.ID == run.ID {
			r.RootStatus, r.RootError, r.RootReport = t.Status, t.Error, t.Report != ""
			continue
		}
		r.Runs = append(r.Runs, fmt.Sprintf("%s %s %s", t.Name, t.Status, t.Error))
	}
	r.CostUSD, r.Tokens = r.Provider.CostUSD, r.Provider.PromptTokens+r.Provider.CompletionTokens
	if err := e.Pool.QueryRow(ctx, `SELECT coalesce(max(reserved_cost_usd), 0)::float8, coalesce(max(reserved_tokens), 0)
		FROM gb_model_calls WHERE root_id = $1`, run.ID).Scan(&r.MaxCallEstimateUSD, &r.MaxCallEstimate); err != nil {
		return r, fmt.Errorf("error reading the estimates: %w", err)
	}
	if err := e.Pool.QueryRow(ctx, `SELECT prompt_tokens + completion_tokens FROM gb_model_calls
		WHERE run_id = $1 AND status = 'settled' ORDER BY id DESC LIMIT 1`, run.ID).Scan(&r.ClosingTokens); err != nil {
		return r, fmt.Errorf("error reading the root's last call: %w", err)
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, []int64{run.ID}, e.Calls())
	return r, err
}
