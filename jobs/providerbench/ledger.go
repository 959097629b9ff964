package providerbench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/openai/openaifake"
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
	// Calls are the billed calls by the name gb sent the provider
	// ("gb-call-<id>", the X-Client-Request-Id header).
	Calls map[string]CallRow
	// Mismatches says, call by call, where the ledger and the provider's
	// bill differ: a call the provider billed that the ledger does not
	// count, one the ledger counts from its answer that the provider did not
	// bill, or tokens that differ. A call the ledger counts at its estimate
	// is matched by name only.
	Mismatches []string
	// EstimatedUnbilled counts the calls the ledger counts at their
	// estimate that the provider never billed (cut off before it
	// answered, or before they left).
	EstimatedUnbilled int
}

// compare fills Mismatches and EstimatedUnbilled from the provider's
// billed calls.
func (l *Ledger) compare(calls []openaifake.Call) {
	billed := map[string]bool{}
	for _, c := range calls {
		billed[c.ClientRequestID] = true
		row, ok := l.Calls[c.ClientRequestID]
		switch {
		case !ok:
			l.Mismatches = append(l.Mismatches, fmt.Sprintf("billed %q (%d+%d tokens) is not in the ledger",
				c.ClientRequestID, c.PromptTokens, c.CompletionTokens))
		case row.Estimated:
		case row.PromptTokens != c.PromptTokens || row.CachedTokens != c.CachedTokens ||
			row.CompletionTokens != c.CompletionTokens || row.ReasoningTokens != c.ReasoningTokens:
			l.Mismatches = append(l.Mismatches, fmt.Sprintf("%s: ledger %+v, billed %d/%d/%d/%d", c.ClientRequestID,
				row, c.PromptTokens, c.CachedTokens, c.CompletionTokens, c.ReasoningTokens))
		}
	}
	for id, row := range l.Calls {
		switch {
		case billed[id]:
		case row.Estimated:
			l.EstimatedUnbilled++
		default:
			l.Mismatches = append(l.Mismatches, fmt.Sprintf("the ledger counts %s, which the provider did not bill", id))
		}
	}
}

// CallRow is one billed call of the ledger.
type CallRow struct {
	PromptTokens, CachedTokens, CompletionTokens, ReasoningTokens int
	Estimated                                                     bool
}

// ReadLedger sums the ledger of the trees of roots and compares it with
// the provider's bill.
func ReadLedger(ctx context.Context, pool *pgxpool.Pool, roots []int64, billed []openaifake.Call) (Ledger, error) {
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
	rows, err := pool.Query(ctx, `SELECT 'gb-call-' || id, prompt_tokens, cached_tokens, completion_tokens,
		reasoning_tokens, estimated FROM gb_model_calls WHERE root_id = ANY($1) AND status = 'settled'`, roots)
	if err != nil {
		return l, fmt.Errorf("error reading the ledger's calls: %w", err)
	}
	defer rows.Close()
	l.Calls = map[string]CallRow{}
	for rows.Next() {
		var id string
		var c CallRow
		if err := rows.Scan(&id, &c.PromptTokens, &c.CachedTokens, &c.CompletionTokens, &c.ReasoningTokens,
			&c.Estimated); err != nil {
			return l, fmt.Errorf("error reading the ledger's calls: %w", err)
		}
		l.Calls[id] = c
	}
	if err := rows.Err(); err != nil {
		return l, fmt.Errorf("error reading the ledger's calls: %w", err)
	}
	l.compare(billed)
	return l, nil
}
