//go:build linux || darwin

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gbresearch/gb/infra/inert"
	"github.com/gbresearch/gb/jobs/llm"
)

// hostile is text a page, a model, a message or an agent's name may carry
// to take a terminal over: it sets the window title (OSC 0, ended by BEL),
// clears the screen (CSI 2J), colours, sends a C1 CSI, reverses the text
// that follows (U+202E), deletes and returns the carriage.
const hostile = "owned\x1b]0;owned-title\x07\x1b[2J\x1b[31mred\x1b[0m \u009b1m \u202eevil\u202c \u2066iso\u2069 del\x7f cr\rback"

// hostileModel writes hostile text in its steps and its report: its
// first step says it and remembers a note of it, its last answer is a
// report of it.
type hostileModel struct{}

func (hostileModel) Name() string { return "hostile" }

func (hostileModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	msg := llm.Message{Role: llm.RoleAssistant}
	used := false
	for _, m := range req.Messages {
		used = used || m.Role == llm.RoleTool
	}
	if !used && len(req.Tools) > 0 && req.ToolChoice != llm.ToolChoiceNone {
		args, _ := json.Marshal(map[string]string{"title": "note " + hostile, "text": hostile})
		msg.Content = "thinking " + hostile
		msg.ToolCalls = []llm.ToolCall{llm.NewToolCall("r1", "remember", string(args))}
	} else {
		msg.Content = "Report " + hostile + "\n\nSecond paragraph " + hostile
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
}

// onTerminal runs the built gb with args on a pseudo-terminal (stdout and
// stderr both), as a user at a terminal would, and returns all it wrote
// there, with the terminal's CR LF line ends made LF again, and its exit
// code.
func (s *cliStack) onTerminal(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY="+s.key, "TERM=xterm-256color")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 60, Cols: 200})
	if err != nil {
		t.Fatalf("gb %v on a pty: %v", args, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(&buf, f) // ends with EIO once gb has exited and closed the terminal
		close(copied)
	}()
	var ee *exec.ExitError
	if err := cmd.Wait(); err != nil && !errors.As(err, &ee) {
		t.Fatalf("gb %v: %v\n%s", args, err, buf.String())
	}
	<-copied
	return strings.ReplaceAll(buf.String(), "\r\n", "\n"), cmd.ProcessState.ExitCode()
}

// noControl fails the test when out, what a command printed to a
// terminal, holds a control character that is not a newline or a tab, or
// lacks want, the mark that the hostile text was printed (inert).
func noControl(t *testing.T, what, out, want string) {
	t.Helper()
	if inert.Unsafe(out) {
		i := strings.IndexFunc(out, func(r rune) bool { return inert.Text(string(r)) != string(r) })
		t.Errorf("%s printed a control character to the terminal at byte %d: %q", what, i, out[max(0, i-40):min(len(out), i+40)])
	}
	if !strings.Contains(out, want) {
		t.Errorf("%s did not print %q (the hostile text, inert):\n%s", what, want, out)
	}
}

// TestHostileTextReachesNoTerminal: a research whose topic, steps, note
// and report carry terminal control sequences, with a sub-agent whose
// name, reason and error do, a message, a citation, a source and an event
// that do, is printed through every command that prints a research, on a
// pseudo-terminal: not one control character (ESC, BEL, CR, DEL, C1, a
// bidirectional control) reaches it, and the text shows, with visible
// stand-ins. The MCP server's tool results are inert too.
func TestHostileTextReachesNoTerminal(t *testing.T) {
	t.Parallel()
	s := startModelStack(t, hostileModel{})
	ctx := context.Background()

	followed, code := s.onTerminal(t, "research", "start", "Topic "+hostile, "--follow")
	var root int64
	if _, err := fmt.Sscanf(followed, "%d", &root); err != nil || root == 0 || code != 0 {
		t.Fatalf("start --follow printed no run id:\n%s", followed)
	}
	noControl(t, "research start --follow", followed, "Report owned␛]0;owned-title␇␛[2J")

	// What the tree holds besides: a sub-agent with a hostile name, its
	// message, a citation, a source and an event.
	var kid int64
	if err := s.pool.QueryRow(ctx, `INSERT INTO gb_agent_research_runs (user_id, parent_id, root_id, depth, name, reason,
			topic, model, dataset, max_steps, status, state, error, report)
		SELECT user_id, id, id, 1, $2, $3, $3, model, dataset, 5, 'failed', 'failed', $3, $3 FROM gb_agent_research_runs WHERE id = $1
		RETURNING id`, root, "kid"+hostile, "reason "+hostile).Scan(&kid); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO gb_messages (to_id, from_id, from_name, text, sent_at) VALUES ($1, $2, $3, $4, now())`,
			[]any{root, kid, "kid" + hostile, "message " + hostile}},
		{`INSERT INTO gb_citations (run_id, round, claim_index, claim, marker, ref, verdict, claim_verdict, passage, reason)
			SELECT $1, coalesce(max(round), 0), 999, $2, 1, $2, 'unsupported', 'unsupported', $2, $2 FROM gb_citations WHERE run_id = $1`,
			[]any{root, "claim " + hostile}},
		{`UPDATE gb_agent_research_runs SET citations = coalesce(citations, '{"claims": 1, "unsupported": 1}') WHERE id = $1`, []any{root}},
		{`INSERT INTO gb_sources (root_id, run_id, step, kind, url, title) VALUES ($1, $2, 1, 'fetch', $3, $4)`,
			[]any{root, kid, "https://example.com/" + hostile, "title " + hostile}},
		{`INSERT INTO gb_agent_research_events (root_id, run_id, parent_id, kind, data) VALUES ($1, $2, $1, 'failed', $3)`,
			[]any{root, kid, map[string]any{"error": "event " + hostile}}},
	} {
		if _, err := s.pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}

	id, kidID := fmt.Sprint(root), fmt.Sprint(kid)
	mark := "owned␛]0;owned-title␇" // the hostile text as it prints
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"research", "get", id}, "Report " + mark, 0},
		{[]string{"research", "get", id, "-o", "json"}, `owned\u001b]0;owned-title\u0007`, 0},
		{[]string{"research", "get", kidID}, "kid" + mark, 0},
		{[]string{"research", "list"}, "Topic " + mark, 0},
		{[]string{"research", "list", "-o", "json"}, `Topic owned\u001b]0;owned-title\u0007`, 0},
		{[]string{"research", "tree", id}, "kidowned␛]0;owned-title…", 0},
		{[]string{"research", "events", id}, "event " + mark, 0},
		{[]string{"research", "events", id, "-o", "json"}, `event owned\u001b]0;owned-title\u0007`, 0},
		{[]string{"research", "steps", id}, "remember", 0},
		{[]string{"research", "steps", id, "--run", id, "--step", "1", "--full"}, "thinking " + mark, 0},
		{[]string{"research", "messages", id}, "message " + mark, 0},
		{[]string{"research", "citations", id}, "claim " + mark, 0},
		{[]string{"research", "sources", id, "--tree"}, "title " + mark, 0},
		{[]string{"research", "notes", id}, "] note " + mark, 0},
		{[]string{"research", "notes", id, "-o", "json"}, `"notes_from": []`, 0},
		{[]string{"research", "cancel", kidID}, "already ended (failed: reason " + mark, exitError},
	} {
		what := "gb " + strings.Join(c.args, " ")
		out, code := s.onTerminal(t, c.args...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d:\n%s", what, code, c.code, out)
		}
		noControl(t, what, out, c.want)
	}

	// The MCP server's results, shown as text by its client.
	cs := connectMCP(t, ctx, s.url, s.key, nil)
	for name, args := range map[string]map[string]any{
		"get_research":  {"id": root},
		"get_tree":      {"id": root},
		"get_events":    {"id": root},
		"get_messages":  {"id": root},
		"get_steps":     {"id": root},
		"get_citations": {"id": root},
		"get_sources":   {"id": root, "tree": true},
		"list_research": {},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Errorf("MCP %s: %v", name, err)
			continue
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if res.IsError {
			t.Errorf("MCP %s: %s", name, text.String())
			continue
		}
		noControl(t, "MCP "+name, text.String(), "owned")
	}
}
