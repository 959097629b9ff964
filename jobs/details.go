package jobs

import (
	"context"
	"fmt"
	"time"
)

// Totals add up the usage of a tree of runs.
type Totals struct {
	Runs    int     `json:"runs"`
	Steps   int     `json:"steps"`
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	Working int     `json:"working"`
}

// Sum adds up the usage of runs.
func Sum(runs []*Run) Totals {
	var t Totals
	for _, r := range runs {
		t.Runs++
		t.Steps += r.Steps
		t.Tokens += r.Tokens
		t.CostUSD += r.CostUSD
		if !r.Ended() {
			t.Working++
		}
	}
	return t
}

// SubagentSummary is one sub-agent as its parent's details show it.
type SubagentSummary struct {
	ID      int64   `json:"id"`
	Name    string  `json:"name"`
	Reason  string  `json:"reason"`
	Status  string  `json:"status"`
	State   string  `json:"state"`
	Steps   int     `json:"steps"`
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

// RunDetails is a run as GET /v1/gb/research/{id} shows it: the run, its
// state history, its sub-agents and the totals of its subtree.
type RunDetails struct {
	*Run
	States    []StateChange     `json:"states"`
	Subagents []SubagentSummary `json:"subagents"`
	Tree      Totals            `json:"tree"`
	Elapsed   string            `json:"elapsed"`
}

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
	d := &RunDetails{Run: run, States: states, Subagents: []SubagentSummary{}, Tree: Sum(sub)}
	if d.States == nil {
		d.States = []StateChange{}
	}
	for _, k := range kids {
		d.Subagents = append(d.Subagents, SubagentSummary{ID: k.ID, Name: k.Name, Reason: k.Reason,
			Status: k.Status, State: k.State, Steps: k.Steps, Tokens: k.Tokens, CostUSD: k.CostUSD})
	}
	end := time.Now()
	if run.EndedAt != nil {
		end = *run.EndedAt
	}
	d.Elapsed = fmt.Sprint(end.Sub(run.CreatedAt).Round(time.Millisecond))
	return d, nil
}
