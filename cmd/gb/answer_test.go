package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// askModel is a model whose roots ask their owner one question when they
// may (ask_owner), then report what ask_owner answered.
type askModel struct{}

func (askModel) Name() string { return "ask" }

func (askModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	msg := llm.Message{Role: llm.RoleAssistant}
	var result string
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool && m.Name == "ask_owner" {
			result = m.Content
		}
	}
	switch {
	case result != "":
		msg.Content = "answered with: " + result
	case len(req.Tools) > 0 && req.ToolChoice != llm.ToolChoiceNone:
		msg.ToolCalls = []llm.ToolCall{llm.NewToolCall("ask1", "ask_owner", `{"question":"Which Go version do you use?"}`)}
	default:
		msg.Content = "nothing to ask"
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
}

// startAskStack is an API with a working agent on askModel, a user key and
// a built gb.
func startAskStack(t *testing.T) *cliStack {
	t.Helper()
	return startModelStack(t, askModel{})
}

// startModelStack is an API with a working agent on model, a user key and
// a built gb.
func startModelStack(t *testing.T, model llm.Model) *cliStack {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), MaxConns: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "s", Title: "t", Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	return serveCLIStack(t, pool, jobs.Deps{Model: model}, httpapi.Deps{}, "asked")
}

// TestCLIAnswersAQuestionWhileFollowing starts an interactive research with
// --follow, which prints its question in full with how to answer it; gb
// research get shows the question, gb research answer resumes the research
// once, and the follow ends with the report the answer made.
func TestCLIAnswersAQuestionWhileFollowing(t *testing.T) {
	t.Parallel()
	s := startAskStack(t)
	if code, _, errOut := s.gb(t, s.key, "research", "start", "x", "--interactive", "--answer-timeout", "1.5s"); code != exitUsage ||
		!strings.Contains(errOut, "whole number of seconds") {
		t.Errorf("--answer-timeout 1.5s: exit %d %s, want a usage error", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	follow := exec.CommandContext(ctx, s.bin, "research", "start", "Which version?", "--interactive", "--answer-timeout", "1h", "--follow")
	follow.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY="+s.key)
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	follow.Stderr = os.Stderr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var id, printed string
	for lines.Scan() {
		line := lines.Text()
		printed += line + "\n"
		if id == "" {
			id = strings.TrimSpace(line)
		}
		if strings.HasPrefix(line, "answer it before ") {
			break
		}
	}
	if want := "[run " + id + " asks] Which Go version do you use?"; !strings.Contains(printed, want) ||
		!strings.Contains(printed, `gb research answer `+id+` "…"`) {
		t.Fatalf("the follow printed:\n%s\nwant %q and how to answer it", printed, want)
	}
	code, out, errOut := s.gb(t, s.key, "research", "get", id)
	if code != 0 || !strings.Contains(out, "input_required") || !strings.Contains(out, "Which Go version do you use?") ||
		!strings.Contains(out, "each question waits 1h0m0s") {
		t.Fatalf("get of the asking research: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = s.gb(t, s.key, "research", "get", id, "-o", "json")
	var d map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d["question"] != "Which Go version do you use?" || d["answer_deadline"] == nil {
		t.Fatalf("get -o json: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = s.gb(t, s.key, "research", "answer", id, "Go 1.26")
	if code != 0 || !strings.Contains(out, "answered run "+id) {
		t.Fatalf("answer: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = s.gb(t, s.key, "research", "answer", id, "Go 1.25")
	if code != exitError || !strings.Contains(errOut, "not waiting for an answer") || !strings.Contains(errOut, "answered already") {
		t.Errorf("a second answer: exit %d %s, want 1 saying the question was answered", code, errOut)
	}
	for lines.Scan() {
		printed += lines.Text() + "\n"
	}
	if err := follow.Wait(); err != nil || !strings.Contains(printed, "answered with: Go 1.26") ||
		!strings.Contains(printed, "by=owner") {
		t.Fatalf("the follow ended with %v:\n%s", err, printed)
	}
}

// TestMCPAnswersAQuestion starts an interactive research through gb mcp,
// reads its question with get_research and answers it with answer_research,
// once.
func TestMCPAnswersAQuestion(t *testing.T) {
	t.Parallel()
	s := startAskStack(t)
	ctx, session := s.mcpSession(t)
	started := callTool(t, ctx, session, "start_research", map[string]any{"topic": "Which version?", "interactive": true,
		"answer_timeout_seconds": 3600})
	id, _ := started["id"].(float64)
	if id <= 0 || started["interactive"] != true {
		t.Fatalf("start_research answered %v", started)
	}
	var got map[string]any
	for got["question"] == nil {
		if ctx.Err() != nil {
			t.Fatalf("the research never asked: %v", got)
		}
		got = callTool(t, ctx, session, "get_research", map[string]any{"id": id})
		time.Sleep(20 * time.Millisecond)
	}
	if got["question"] != "Which Go version do you use?" || got["state"] != "input_required" {
		t.Fatalf("get_research of the asking research: %v", got)
	}
	answered := callTool(t, ctx, session, "answer_research", map[string]any{"id": id, "text": "Go 1.26"})
	if answered["status"] != "working" {
		t.Errorf("answer_research answered %v", answered)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "answer_research",
		Arguments: map[string]any{"id": id, "text": "again"}})
	if err != nil || !res.IsError || !strings.Contains(toolText(res), "not waiting for an answer") {
		t.Errorf("a second answer_research: %v %+v, want a tool error saying it waits for none", err, res)
	}
	var report string
	for !strings.HasPrefix(report, "answered with") {
		if ctx.Err() != nil {
			t.Fatalf("the research did not end: %v", got)
		}
		got = callTool(t, ctx, session, "get_research", map[string]any{"id": id})
		report, _ = got["report"].(string)
		time.Sleep(20 * time.Millisecond)
	}
	if report != "answered with: Go 1.26" {
		t.Errorf("report %q", report)
	}
}
