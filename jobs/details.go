package jobs

import (
	"context"
	"fmt"
	"time"
)

// Totals add up the usage of a tree of runs.
type Totals struct {
	Runs   int   `json:"runs"`
	Steps  int   `json:"steps"`
	Tokens int64 `json:"tokens"`
	// CachedTokens and ReasoningTokens add up the runs' CachedTokens and
	// ReasoningTokens: parts of Tokens, not more of them.
	CachedTokens    int64   `json:"cached_tokens"`
	ReasoningTokens int64   `json:"reasoning_tokens"`
	CostUSD         float64 `json:"cost_usd"`
	Working         int     `json:"working"`
	// EstimatedCalls counts the model calls of the runs settled at their
	// estimate (their worker died with the call in flight), whose usage
	// in the totals is the estimate, not the provider's count.
	EstimatedCalls int `json:"estimated_calls"`
}

// Sum adds up the usage of runs; EstimatedCalls, which the runs do not
// carry, is left 0 (TreeTotals counts it).
func Sum(runs []*Run) Totals {
	var t Totals
	for _, r := range runs {
		t.Runs++
		t.Steps += r.Steps
		t.Tokens += r.Tokens
		t.CachedTokens += r.CachedTokens
		t.ReasoningTokens += r.ReasoningTokens
		t.CostUSD += r.CostUSD
		if !r.Ended() {
			t.Working++
		}
	}
	return t
}

// TreeTotals is Sum of runs with the count of their model calls settled at
// an estimate, read from the ledger.
func TreeTotals(ctx context.Context, db DB, runs []*Run) (Totals, error) {
	t := Sum(runs)
	ids := make([]int64, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	if err := db.QueryRow(ctx, `SELECT count(*)::int FROM gb_model_calls
		WHERE run_id = ANY($1) AND estimated`, ids).Scan(&t.EstimatedCalls); err != nil {
		return t, fmt.Errorf("error counting estimated model calls: %w", err)
	}
	return t, nil
}

// SubagentSummary is one sub-agent as its parent's details show it.
type SubagentSummary struct {
	ID              int64   `json:"id"`
	Name            string  `json:"name"`
	Reason          string  `json:"reason"`
	Status          string  `json:"status"`
	State           string  `json:"state"`
	Steps           int     `json:"steps"`
	Tokens          int64   `json:"tokens"`
	CachedTokens    int64   `json:"cached_tokens"`
	ReasoningTokens int64   `json:"reasoning_tokens"`
	CostUSD         float64 `json:"cost_usd"`
}

// RunDetails is a run as GET /v1/gb/research/{id} shows it: the run, its
// state history, its sub-agents and the totals of its subtree.
type RunDetails struct {
	*Run
	States    []StateChange     `json:"states"`
	Subagents []SubagentSummary `json:"subagents"`
	Tree      Totals            `json:"tree"`
	Elapsed   string            `json:"elapsed"`
	Version   RunVersion        `json:"version"`
}

// RunVersion is the version a run's steps are made with: its bundle
// (Run.Pinned, shortened, and the gb version that stored it first) and
// the gb version whose code made its last step.
type RunVersion struct {
	Pinned        string `json:"pinned"`
	BundleVersion string `json:"bundle_version"`
	LastStep      string `json:"last_step"`
}

// runVersionSQL reads a run's RunVersion.
const runVersionSQL = `SELECT coalesce(b.version, ''),
	coalesce((SELECT version FROM gb_agent_research_steps WHERE run_id = r.id ORDER BY step DESC LIMIT 1), '')
	FROM gb_agent_research_runs r LEFT JOIN gb_behaviour_bundles b ON b.hash = r.pinned WHERE r.id = $1`

// Details loads a run the user owns with its states, sub-agents and totals.
func Details(ctx context.Context, db DB, userID, id int64) (*RunDetails, error) {
	run, err := GetForUser(ctx, db, userID, id)
	if err != nil {
		return nil, err
	}
	states, err := States(ctx, db, id)
	if err != nil {
		return nil, err
	}
	kids, err := children(ctx, db, id)
	if err != nil {
		return nil, err
	}
	sub, err := Subtree(ctx, db, id)
	if err != nil {
		return nil, err
	}
	tree, err := TreeTotals(ctx, db, sub)
	if err != nil {
		return nil, err
	}
	d := &RunDetails{Run: run, States: states, Subagents: []SubagentSummary{}, Tree: tree,
		Version: RunVersion{Pinned: ShortHash(run.Pinned)}}
	if err := db.QueryRow(ctx, runVersionSQL, id).Scan(&d.Version.BundleVersion, &d.Version.LastStep); err != nil {
		return nil, fmt.Errorf("error reading the version of run %d: %w", id, err)
	}
	if d.States == nil {
		d.States = []StateChange{}
	}
	for _, k := range kids {
		d.Subagents = append(d.Subagents, SubagentSummary{ID: k.ID, Name: k.Name, Reason: k.Reason,
			Status: k.Status, State: k.State, Steps: k.Steps, Tokens: k.Tokens,
			CachedTokens: k.CachedTokens, ReasoningTokens: k.ReasoningTokens, CostUSD: k.CostUSD})
	}
	end := time.Now()
	if run.EndedAt != nil {
		end = *run.EndedAt
	}
	d.Elapsed = fmt.Sprint(end.Sub(run.CreatedAt).Round(time.Millisecond))
	return d, nil
}
