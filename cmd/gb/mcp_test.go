package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServerStartsAndReadsAResearch starts `gb mcp` as a subprocess,
// lists its tools with the SDK's client, starts a research through it and
// reads it back, and checks that a bad call is a clear tool error.
func TestMCPServerStartsAndReadsAResearch(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 0)
	ctx, session := s.mcpSession(t)

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s has no input schema or description", tool.Name)
		}
	}
	for _, want := range []string{"start_research", "get_research", "list_research", "get_tree", "get_messages",
		"get_sources", "get_events", "cancel_research"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}

	started := callTool(t, ctx, session, "start_research", map[string]any{"topic": "What does sync.Once guarantee?"})
	id, _ := started["id"].(float64)
	if id <= 0 || started["status"] == nil {
		t.Fatalf("start_research answered %v", started)
	}
	got := callTool(t, ctx, session, "get_research", map[string]any{"id": id})
	if got["id"] != id || got["topic"] != "What does sync.Once guarantee?" {
		t.Fatalf("get_research answered %v, want run %v", got, id)
	}
	list := callTool(t, ctx, session, "list_research", map[string]any{"limit": 5})
	if runs, _ := list["runs"].([]any); len(runs) != 1 {
		t.Errorf("list_research answered %v, want the one run", list)
	}

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "get_research", Arguments: map[string]any{"id": 999999}})
	if err != nil || !res.IsError || !strings.Contains(toolText(res), "no research") {
		t.Errorf("get_research of a missing run: %v %+v, want a tool error saying there is no such research", err, res)
	}
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "start_research", Arguments: map[string]any{"max_steps": 3}})
	if err == nil && !res.IsError {
		t.Errorf("start_research without a topic succeeded: %+v", res)
	}
}

// mcpSession connects the SDK's client to `gb mcp`, started with the
// stack's API and key, and returns the session with a context that ends
// 60 s on; both end with the test.
func (s *cliStack) mcpSession(t *testing.T) (context.Context, *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.Command(s.bin, "mcp")
	cmd.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY="+s.key)
	session, err := mcp.NewClient(&mcp.Implementation{Name: "gb-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to gb mcp: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return ctx, session
}

// callTool calls tool name with a and returns its structured answer; a
// failed call or a tool error fails the test.
func callTool(t *testing.T, ctx context.Context, s *mcp.ClientSession, name string, a map[string]any) map[string]any {
	t.Helper()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: a})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", name, toolText(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
