package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// finishedResearch starts a research through the CLI, follows it to its
// end, and returns its id.
func finishedResearch(t *testing.T, s *cliStack) string {
	t.Helper()
	code, out, errOut := s.gb(t, s.key, "research", "start", "How does sync.WaitGroup work?", "--follow")
	if code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("start --follow: exit %d\n%s\n%s", code, out, errOut)
	}
	return strings.SplitN(out, "\n", 2)[0]
}

// TestCLIPrintsTheSteps drives gb research steps against a real API: the
// list of a finished research's steps, one step whole with its messages,
// its JSON, and the flags the CLI refuses before any request.
func TestCLIPrintsTheSteps(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 0)
	id := finishedResearch(t, s)

	code, out, errOut := s.gb(t, s.key, "research", "steps", id)
	if code != 0 || !strings.HasPrefix(out, "AGENT") || !strings.Contains(out, "root") || !strings.Contains(out, "(answer)") ||
		!strings.Contains(out, "VERSION") || !strings.Contains(out, " @ ") {
		t.Fatalf("steps: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = s.gb(t, s.key, "research", "steps", id, "--order", "asc", "-o", "json")
	var page struct {
		Steps []struct {
			RunID     int64  `json:"run_id"`
			Agent     string `json:"agent"`
			Step      int    `json:"step"`
			Model     string `json:"model"`
			Version   string `json:"version"`
			Behaviour string `json:"behaviour"`
			Messages  []struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				ToolCalls []struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"tool_calls"`
			} `json:"messages"`
		} `json:"steps"`
		Cursor string `json:"next_cursor"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Steps) == 0 {
		t.Fatalf("steps -o json: exit %d\n%s\n%s", code, out, errOut)
	}
	first := page.Steps[0]
	if first.Agent != "root" || first.Step != 1 || first.Model == "" || first.Version == "" || len(first.Behaviour) != 12 ||
		len(first.Messages) < 2 ||
		first.Messages[0].Content != "How does sync.WaitGroup work?" || len(first.Messages[1].ToolCalls) == 0 {
		t.Fatalf("the first step in commit order: %+v", first)
	}
	call := first.Messages[1].ToolCalls[0]
	// The research shows the bundle its steps were made with.
	if code, out, errOut := s.gb(t, s.key, "research", "get", id); code != 0 ||
		!strings.Contains(out, "bundle "+first.Behaviour+" (from gb ") || !strings.Contains(out, "last step made by gb ") {
		t.Fatalf("research get: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = s.gb(t, s.key, "research", "steps", id, "--step", "1")
	if code != 0 || !strings.Contains(out, "step 1 of root") || !strings.Contains(out, "[user]") ||
		!strings.Contains(out, "How does sync.WaitGroup work?") || !strings.Contains(out, "→ "+call.Name+" "+call.Arguments) ||
		!strings.Contains(out, "[tool "+call.Name) || !strings.Contains(out, "version: "+first.Version+" @ "+first.Behaviour) {
		t.Fatalf("steps --step 1: exit %d\n%s\n%s", code, out, errOut)
	}

	for _, bad := range [][]string{{"--full"}, {"--order", "up"}, {"--limit", "101"}, {"--chars", "5"}, {"--run", "x"}} {
		if code, _, errOut := s.gb(t, s.key, append([]string{"research", "steps", id}, bad...)...); code != 2 {
			t.Errorf("steps %v: exit %d, want 2\n%s", bad, code, errOut)
		}
	}
	if code, _, _ := s.gb(t, s.key, "research", "steps", id, "--step", "99"); code == 0 {
		t.Error("steps --step 99 of a research without such a step exited 0")
	}
}

// TestMCPGetSteps drives the MCP tool get_steps with the SDK's client:
// it is annotated read-only and idempotent, and its pages are small by
// default: five steps, texts cut at 500 characters.
func TestMCPGetSteps(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 0)
	id := finishedResearch(t, s)
	ctx, session := s.mcpSession(t)
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tool *mcp.Tool
	for _, tl := range tools.Tools {
		if tl.Name == "get_steps" {
			tool = tl
		}
	}
	if tool == nil || tool.Title == "" || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || !tool.Annotations.IdempotentHint {
		t.Fatalf("get_steps: %+v", tool)
	}

	var all []any
	args := map[string]any{"id": json.Number(id)}
	for pages := 0; ; pages++ {
		got := callTool(t, ctx, session, "get_steps", args)
		steps, _ := got["steps"].([]any)
		if len(steps) > mcpStepLimitDefault {
			t.Fatalf("a page of %d steps, want at most %d", len(steps), mcpStepLimitDefault)
		}
		for _, st := range steps {
			for _, m := range st.(map[string]any)["messages"].([]any) {
				if c := m.(map[string]any)["content"].(string); utf8.RuneCountInString(c) > mcpStepCharsDefault {
					t.Fatalf("a message of %d characters, want at most %d", utf8.RuneCountInString(c), mcpStepCharsDefault)
				}
			}
		}
		all = append(all, steps...)
		if got["has_more"] != true || pages > 20 {
			break
		}
		args["cursor"] = got["next_cursor"]
	}
	tree := callTool(t, ctx, session, "get_tree", map[string]any{"id": json.Number(id)})
	totals := tree["totals"].(map[string]any)
	if float64(len(all)) != totals["steps"] {
		t.Errorf("get_steps paged through %d steps, the tree has %v", len(all), totals["steps"])
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "get_steps", Arguments: map[string]any{"id": json.Number(id), "full": true}})
	if err != nil || !res.IsError {
		t.Errorf("get_steps full without step: %v %+v, want a tool error", err, res)
	}
}
