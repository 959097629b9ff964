package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// These tests decide the plan a root parked on propose_plan proposed,
// through POST /v1/gb/research/{id}/plan. No worker runs: the root is
// parked as the step that proposes parks it, and its resume is read from
// the database.

// startProposing starts a research of the key's user with approve_plan
// and parks its root on a plan of alpha and beta, as its propose_plan step
// would; it returns the run id.
func (b *testBundle) startProposing(t *testing.T, key string) string {
	t.Helper()
	code, run := b.call(t, key, "POST", "/v1/gb/research", `{"topic":"plan?","approve_plan":true}`)
	if code != http.StatusAccepted || run["approve_plan"] != true || run["plan"] != nil {
		t.Fatalf("create: %d %v", code, run)
	}
	id := fmt.Sprint(run["id"])
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{
		`DELETE FROM river_job WHERE (args->>'run_id')::bigint = $1`,
		`UPDATE gb_agent_research_runs SET status = 'waiting', state = 'input_required', steps = 1, wait_call_id = 'c1',
			wait_kind = 'owner', wait_until = now() + interval '1 hour', plan_state = 'proposed', plan_call_id = 'c1',
			plan = '[{"name":"alpha","reason":"r","task":"t","max_steps":10},{"name":"beta","reason":"r","task":"t","max_steps":10}]'
			WHERE id = $1`,
	} {
		if _, err := b.agent.Pool().Exec(ctx, q, n); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func TestPlanDecisionResumesOnceUnderConcurrentDecisions(t *testing.T) {
	t.Parallel()
	const decisions = 24
	b := setup(t)
	id := b.startProposing(t, b.alice)
	code, got := b.call(t, b.alice, "GET", "/v1/gb/research/"+id, "")
	plan, _ := got["plan"].(map[string]any)
	if code != http.StatusOK || got["state"] != "input_required" || plan["state"] != "proposed" || plan["deadline"] == nil ||
		len(plan["subagents"].([]any)) != 2 || got["question"] != nil {
		t.Fatalf("the parked run: %d %v", code, got)
	}
	codes, bodies := b.callAtOnce(t, b.alice, "POST", "/v1/gb/research/"+id+"/plan", decisions, func(i int) string {
		return fmt.Sprintf(`{"decision":"approve","subagents":[{"name":"e%d","reason":"r","task":"t"}],"note":"n"}`, i)
	})
	won := -1
	for i, c := range codes {
		switch {
		case c == http.StatusOK && won < 0:
			won = i
		case c == http.StatusConflict:
			if e := errorOf(bodies[i]); e["code"] != "not_proposing" || !strings.Contains(fmt.Sprint(e["message"]), "approved already") {
				t.Errorf("a losing decision: %v", bodies[i])
			}
		default:
			t.Errorf("decision %d: %d %v", i, c, bodies[i])
		}
	}
	if won < 0 || b.stepJobs(t, id) != 1 {
		t.Fatalf("winner %d, %d step jobs; want one winner and 1 job", won, b.stepJobs(t, id))
	}
	plan, _ = bodies[won]["plan"].(map[string]any)
	subs, _ := plan["subagents"].([]any)
	if bodies[won]["status"] != "working" || plan["state"] != "approved" || plan["note"] != "n" || plan["deadline"] != nil ||
		len(subs) != 1 || subs[0].(map[string]any)["name"] != fmt.Sprintf("e%d", won) {
		t.Errorf("the winning decision's run: %v", bodies[won])
	}
}

func TestPlanDecisionOfAnotherUserOrOnNoPlanIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.startProposing(t, b.alice)
	if code, _ := b.call(t, b.bob, "POST", "/v1/gb/research/"+id+"/plan", `{"decision":"approve"}`); code != http.StatusNotFound {
		t.Errorf("bob decides alice's plan: %d, want 404", code)
	}
	for _, c := range []struct{ body, field string }{
		{`{"decision":"maybe"}`, "decision"},
		{`{}`, "decision"},
		{`{"decision":"reject","subagents":[{"name":"a","reason":"r","task":"t"}]}`, "subagents"},
		{`{"decision":"approve","subagents":[{"name":"a b","reason":"r","task":"t"}]}`, "subagents"},
		{`{"decision":"approve","subagents":[{"name":"a","reason":"r","task":"t","extra":1}]}`, ""},
		{`{"decision":"approve","why":"x"}`, "why"},
	} {
		code, body := b.call(t, b.alice, "POST", "/v1/gb/research/"+id+"/plan", c.body)
		if e := errorOf(body); code != http.StatusBadRequest || (c.field != "" && e["field"] != c.field) {
			t.Errorf("%.60s: %d %v, want 400 naming %q", c.body, code, body, c.field)
		}
	}
	if n := b.stepJobs(t, id); n != 0 {
		t.Fatalf("refused decisions resumed the run: %d step jobs", n)
	}
	code, body := b.call(t, b.alice, "POST", "/v1/gb/research/"+id+"/plan", `{"decision":"reject","note":"too broad"}`)
	if plan, _ := body["plan"].(map[string]any); code != http.StatusOK || plan["state"] != "rejected" || plan["note"] != "too broad" {
		t.Fatalf("a rejection: %d %v", code, body)
	}
	_, plain := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"plain"}`)
	code, body = b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%v/plan", plain["id"]), `{"decision":"approve"}`)
	if e := errorOf(body); code != http.StatusConflict || !strings.Contains(fmt.Sprint(e["message"]), "approve_plan") {
		t.Errorf("a decision on a research that proposes nothing: %d %v, want 409", code, body)
	}
}
