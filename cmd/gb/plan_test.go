package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gbresearch/gb/jobs/llm"
)

// planModel is a model whose roots propose alpha and beta when they must
// (propose_plan), then report what propose_plan answered.
type planModel struct{}

func (planModel) Name() string { return "plan" }

func (planModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	msg := llm.Message{Role: llm.RoleAssistant}
	var result string
	offered := false
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool && m.Name == "propose_plan" {
			result = m.Content
		}
	}
	for _, tool := range req.Tools {
		offered = offered || tool.Name == "propose_plan"
	}
	switch {
	case result != "":
		msg.Content = "decided: " + result
	case offered && req.ToolChoice != llm.ToolChoiceNone:
		msg.ToolCalls = []llm.ToolCall{llm.NewToolCall("plan1", "propose_plan", `{"subagents":[`+
			`{"name":"alpha","reason":"covers routers","task":"compare routers"},`+
			`{"name":"beta","reason":"covers middleware","task":"compare middleware"}]}`)}
	default:
		msg.Content = "no plan"
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
}

// TestCLIDecidesAPlan starts a research with --approve-plan; gb research
// get shows its plan and how to decide it, gb research plan approves an
// edited list once, and the research reads the edited list.
func TestCLIDecidesAPlan(t *testing.T) {
	t.Parallel()
	s := startModelStack(t, planModel{})
	code, out, errOut := s.gb(t, s.key, "research", "start", "Which router?", "--approve-plan")
	if code != 0 {
		t.Fatalf("start: exit %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out, "plan: proposed") {
		if time.Now().After(deadline) {
			t.Fatalf("the research never proposed its plan:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
		_, out, _ = s.gb(t, s.key, "research", "get", id)
	}
	if !strings.Contains(out, "- alpha (researcher, 10 steps): compare routers") ||
		!strings.Contains(out, "gb research plan "+id+" approve|reject") {
		t.Fatalf("get of the proposing research:\n%s", out)
	}
	if code, _, errOut := s.gb(t, s.key, "research", "plan", id, "maybe"); code != exitUsage || !strings.Contains(errOut, "approve or reject") {
		t.Errorf("plan maybe: exit %d %s, want a usage error", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "edited.json")
	if err := os.WriteFile(file, []byte(`[{"name":"gamma","reason":"one is enough","task":"compare both","max_steps":4}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = s.gb(t, s.key, "research", "plan", id, "approve", "--file", file, "--note", "one will do")
	if code != 0 || !strings.Contains(out, "approved the plan of run "+id) {
		t.Fatalf("plan approve: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = s.gb(t, s.key, "research", "plan", id, "reject")
	if code != exitError || !strings.Contains(errOut, "not waiting for a decision") || !strings.Contains(errOut, "approved already") {
		t.Errorf("a second decision: exit %d %s, want 1 saying the plan was approved", code, errOut)
	}
	var d map[string]any
	for d["report"] == nil || d["report"] == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the research did not end: %v", d)
		}
		time.Sleep(20 * time.Millisecond)
		_, out, _ = s.gb(t, s.key, "research", "get", id, "-o", "json")
		d = nil
		_ = json.Unmarshal([]byte(out), &d)
	}
	report, _ := d["report"].(string)
	if !strings.Contains(report, "- gamma (researcher, 4 steps): compare both") || strings.Contains(report, "alpha") ||
		!strings.Contains(report, "note: one will do") {
		t.Errorf("report %q, want the edited plan", report)
	}
}

// TestMCPDecidesAPlan starts a research with approve_plan through gb mcp,
// reads its plan with get_research and rejects it with decide_plan, once.
func TestMCPDecidesAPlan(t *testing.T) {
	t.Parallel()
	s := startModelStack(t, planModel{})
	ctx, session := s.mcpSession(t)
	started := callTool(t, ctx, session, "start_research", map[string]any{"topic": "Which router?", "approve_plan": true})
	id, _ := started["id"].(float64)
	if id <= 0 || started["approve_plan"] != true {
		t.Fatalf("start_research answered %v", started)
	}
	var got map[string]any
	for plan, _ := got["plan"].(map[string]any); plan["state"] != "proposed"; plan, _ = got["plan"].(map[string]any) {
		if ctx.Err() != nil {
			t.Fatalf("the research never proposed: %v", got)
		}
		got = callTool(t, ctx, session, "get_research", map[string]any{"id": id})
		time.Sleep(20 * time.Millisecond)
	}
	decided := callTool(t, ctx, session, "decide_plan", map[string]any{"id": id, "decision": "reject", "note": "too many"})
	if plan, _ := decided["plan"].(map[string]any); decided["status"] != "working" || plan["state"] != "rejected" {
		t.Errorf("decide_plan answered %v", decided)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "decide_plan",
		Arguments: map[string]any{"id": id, "decision": "approve"}})
	if err != nil || !res.IsError || !strings.Contains(toolText(res), "not waiting for a decision") {
		t.Errorf("a second decide_plan: %v %+v, want a tool error saying it waits for none", err, res)
	}
	var report string
	for !strings.HasPrefix(report, "decided") {
		if ctx.Err() != nil {
			t.Fatalf("the research did not end: %v", got)
		}
		got = callTool(t, ctx, session, "get_research", map[string]any{"id": id})
		report, _ = got["report"].(string)
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(report, "rejected your plan") || !strings.Contains(report, "too many") {
		t.Errorf("report %q", report)
	}
}
