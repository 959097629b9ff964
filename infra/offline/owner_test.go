package offline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

// turn asks the policy for its next turn on msgs with tools, and appends
// the turn and, for each of its calls, the result results gives it.
func turn(t *testing.T, msgs []llm.Message, tools []string, results map[string]string) ([]llm.Message, []llm.ToolCall) {
	t.Helper()
	specs := make([]llm.ToolSpec, len(tools))
	for i, n := range tools {
		specs[i] = llm.ToolSpec{Name: n}
	}
	resp, err := (&Model{}).Complete(context.Background(), llm.Request{Messages: msgs, Tools: specs})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, resp.Message)
	for _, c := range resp.Message.ToolCalls {
		msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: results[c.Name]})
	}
	return msgs, resp.Message.ToolCalls
}

func names(calls []llm.ToolCall) string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

// An interactive research asks once, alone, at its first turn; the
// answer leads its first search; without ask_owner it asks nothing.
func TestPolicyAsksItsOwnerOnceAndSearchesForTheAnswer(t *testing.T) {
	t.Parallel()
	task := []llm.Message{{Role: llm.RoleUser, Content: "How do goroutines wait for one another?"}}
	tools := []string{"search", "read", "ask_owner"}
	msgs, calls := turn(t, task, tools, map[string]string{"ask_owner": "sync.WaitGroup"})
	if names(calls) != "ask_owner" || !strings.Contains(string(calls[0].Arguments), "focus on") {
		t.Fatalf("first turn: %s %s", names(calls), calls[0].Arguments)
	}
	_, calls = turn(t, msgs, tools, nil)
	if names(calls) != "search" || !strings.Contains(string(calls[0].Arguments), "sync") {
		t.Fatalf("after the answer: %s %s", names(calls), calls[0].Arguments)
	}
	if _, calls = turn(t, task, tools[:2], nil); names(calls) != "search" || strings.Contains(string(calls[0].Arguments), "sync") {
		t.Errorf("not interactive: %s %s", names(calls), calls[0].Arguments)
	}
	msgs, _ = turn(t, task, tools, map[string]string{"ask_owner": "No answer came: go on with your best judgement."})
	if s := readState(llm.Request{Messages: msgs}); s.answer != "" || !s.opening() {
		t.Errorf("no answer: read %q, opening %t", s.answer, s.opening())
	}
}

// A research with propose_plan proposes before it spawns, then spawns the
// names its owner approved (an edited list too), or none when rejected.
func TestPolicyProposesAPlanAndFollowsTheDecision(t *testing.T) {
	t.Parallel()
	task := []llm.Message{{Role: llm.RoleUser, Content: "How does sync.WaitGroup work?"}}
	tools := []string{"search", "read", "spawn_subagent", "wait_subagents", "propose_plan"}
	for _, tc := range []struct{ decision, want string }{
		{"Your owner approved this plan (as they may have edited it). Spawn exactly these sub-agents with spawn_subagent, " +
			"by name; each runs the task below:\n- routers (researcher, 10 steps): compare routers\n", "spawn_subagent,search"},
		{"Your owner rejected your plan. You may propose a different plan with propose_plan (2 proposals left), " +
			"or go on without sub-agents.", "search"},
		{"No decision came on your plan: go on without sub-agents, doing the work yourself.", "search"},
		{"Error: subagents must list 1 to 1 sub-agents (got 2)", "search"},
	} {
		msgs, calls := turn(t, task, tools, map[string]string{"propose_plan": tc.decision})
		if names(calls) != "propose_plan" {
			t.Fatalf("first turn: %s", names(calls))
		}
		var plan struct {
			Subagents []struct{ Name, Reason, Task string }
		}
		if err := json.Unmarshal(calls[0].Arguments, &plan); err != nil || len(plan.Subagents) != 2 {
			t.Fatalf("plan %s (%v)", calls[0].Arguments, err)
		}
		_, calls = turn(t, msgs, tools, nil)
		if names(calls) != tc.want || tc.want != "search" && !strings.Contains(string(calls[0].Arguments), `"routers"`) {
			t.Errorf("after %.30q: %s %s", tc.decision, names(calls), calls[0].Arguments)
		}
	}
}
