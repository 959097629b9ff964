package providerbench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Ledger is what gb's ledger of model calls (gb_model_calls) says of the
// trees of some roots.
type Ledger struct {
	// Billed counts the calls settled as paid; Estimated those of them
	// settled at their estimate (cut off, or lost with their worker).
	Billed, Estimated int
	// Released counts the calls the provider did not bill (refused).
	Released int
	// Open counts calls neither settled nor released.
	Open int
	// Tokens and dollars of the billed calls.
	PromptTokens, CachedTokens, CompletionTokens, ReasoningTokens int64
	CostUSD                                                       float64
	// RunCostUSD and RunTokens are the sums over the trees' runs, which
	// add the tools' usage to the calls'.
	RunCostUSD float64
	RunTokens  int64
}

// readLedger sums the ledger of the trees of roots.
func readLedger(ctx context.Context, pool *pgxpool.Pool, roots []int64) (Ledger, error) {
	var l Ledger
	err := pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE status = 'settled'), count(*) FILTER (WHERE status = 'settled' AND estimated),
			count(*) FILTER (WHERE status = 'released'), count(*) FILTER (WHERE status IN ('queued', 'reserved')),
			coalesce(sum(prompt_tokens) FILTER (WHERE status = 'settled'), 0)::bigint,
			coalesce(sum(cached_tokens) FILTER (WHERE status = 'settled'), 0)::bigint,
			coalesce(sum(completion_tokens) FILTER (WHERE status = 'settled'), 0)::bigint,
			coalesce(sum(reasoning_tokens) FILTER (WHERE status = 'settled'), 0)::bigint,
			coalesce(sum(cost_usd) FILTER (WHERE status = 'settled'), 0)::float8,
			(SELECT coalesce(sum(cost_usd), 0)::float8 FROM gb_agent_research_runs WHERE root_id = ANY($1)),
			(SELECT coalesce(sum(tokens), 0)::bigint FROM gb_agent_research_runs WHERE root_id = ANY($1))
		FROM gb_model_calls WHERE root_id = ANY($1)`, roots).
		Scan(&l.Billed, &l.Estimated, &l.Released, &l.Open, &l.PromptTokens, &l.CachedTokens, &l.CompletionTokens,
			&l.ReasoningTokens, &l.CostUSD, &l.RunCostUSD, &l.RunTokens)
	if err != nil {
		return l, fmt.Errorf("error reading the ledger: %w", err)
	}
	return l, nil
}
