package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// usage is what a run's row holds of its usage, set directly with SQL.
type usage struct {
	prompt, cached, completion, reasoning int64
	cost                                  float64
}

// setUsage writes u on the run id, as a worker's steps would have added it up.
func (b *testBundle) setUsage(t *testing.T, id int64, u usage) {
	t.Helper()
	if _, err := b.agent.Pool().Exec(context.Background(), `UPDATE gb_agent_research_runs SET
		prompt_tokens = $2::bigint, cached_tokens = $3, completion_tokens = $4::bigint, reasoning_tokens = $5,
		tokens = $2::bigint + $4::bigint, cost_usd = $6 WHERE id = $1`,
		id, u.prompt, u.cached, u.completion, u.reasoning, u.cost); err != nil {
		t.Fatal(err)
	}
}

// addCall writes a settled ledger row of a model call of run id.
func (b *testBundle) addCall(t *testing.T, id int64, estimated bool) {
	t.Helper()
	if _, err := b.agent.Pool().Exec(context.Background(), `INSERT INTO gb_model_calls
		(job_id, attempt, step, run_id, root_id, status, estimated, outcome)
		SELECT 0, 1, 1, id, root_id, 'settled', $2, 'answered' FROM gb_agent_research_runs WHERE id = $1`,
		id, estimated); err != nil {
		t.Fatal(err)
	}
}

// wantFields fails the test unless obj (a JSON object) holds each field
// with the number given.
func wantFields(t *testing.T, what string, obj any, want map[string]float64) {
	t.Helper()
	m, ok := obj.(map[string]any)
	if !ok {
		t.Errorf("%s: %T is not a JSON object", what, obj)
		return
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s: %s = %v (present %v), want %v", what, k, got, ok, v)
		}
	}
}

// TestUsageShowsCachedAndReasoningTokens gives a root and its sub-agent
// usage with cached and reasoning tokens, and model calls settled at their
// estimate: the run, its sub-agent summary, the list, the tree and the
// totals of both all carry them.
func TestUsageShowsCachedAndReasoningTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"cached tokens"}`)
	if code != http.StatusAccepted {
		t.Fatalf("create: %d %v", code, run)
	}
	root := int64(run["id"].(float64))
	var kid int64
	if err := b.agent.Pool().QueryRow(ctx, `INSERT INTO gb_agent_research_runs
		(user_id, parent_id, root_id, depth, name, reason, topic, model, dataset, max_steps, agent_type)
		SELECT user_id, id, root_id, 1, 'kid', 'to read', topic, model, dataset, max_steps, 'researcher'
		FROM gb_agent_research_runs WHERE id = $1 RETURNING id`, root).Scan(&kid); err != nil {
		t.Fatal(err)
	}
	b.setUsage(t, root, usage{prompt: 1000, cached: 600, completion: 200, reasoning: 50, cost: 0.5})
	b.setUsage(t, kid, usage{prompt: 500, cached: 100, completion: 100, reasoning: 30, cost: 0.25})
	b.addCall(t, root, true)
	b.addCall(t, root, false)
	b.addCall(t, kid, true)

	rootRun := map[string]float64{"prompt_tokens": 1000, "cached_tokens": 600, "completion_tokens": 200,
		"reasoning_tokens": 50, "tokens": 1200}
	kidRun := map[string]float64{"cached_tokens": 100, "reasoning_tokens": 30, "tokens": 600}
	treeTotals := map[string]float64{"runs": 2, "tokens": 1800, "cached_tokens": 700, "reasoning_tokens": 80,
		"estimated_calls": 2, "cost_usd": 0.75}

	code, got := b.call(t, b.alice, "GET", fmt.Sprint("/v1/gb/research/", root), "")
	if code != http.StatusOK {
		t.Fatalf("get: %d %v", code, got)
	}
	wantFields(t, "the run", got, rootRun)
	wantFields(t, "the run's tree", got["tree"], treeTotals)
	if subs, _ := got["subagents"].([]any); len(subs) != 1 {
		t.Errorf("subagents: %v", got["subagents"])
	} else {
		wantFields(t, "the sub-agent summary", subs[0], kidRun)
	}

	_, got = b.call(t, b.alice, "GET", fmt.Sprint("/v1/gb/research/", kid), "")
	wantFields(t, "the sub-agent's subtree", got["tree"], map[string]float64{"runs": 1, "tokens": 600,
		"cached_tokens": 100, "reasoning_tokens": 30, "estimated_calls": 1})

	_, got = b.call(t, b.alice, "GET", fmt.Sprintf("/v1/gb/research/%d/tree", root), "")
	wantFields(t, "the tree's totals", got["totals"], treeTotals)
	if runs, _ := got["runs"].([]any); len(runs) != 2 {
		t.Errorf("tree runs: %v", got["runs"])
	} else {
		wantFields(t, "the tree's root", runs[0], rootRun)
		wantFields(t, "the tree's sub-agent", runs[1], kidRun)
	}

	_, got = b.call(t, b.alice, "GET", fmt.Sprint("/v1/gb/research?parent_id=", root), "")
	if runs, _ := got["runs"].([]any); len(runs) != 1 {
		t.Errorf("listed sub-agents: %v", got["runs"])
	} else {
		wantFields(t, "the listed sub-agent", runs[0], kidRun)
	}
}
