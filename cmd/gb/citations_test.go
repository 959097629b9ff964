package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// gb research citations prints the check of a finished research's report
// as a table and as JSON, a bad --citations is a usage error before any
// request, and the MCP tool get_citations answers the same, read-only.
func TestResearchCitations(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 0)
	if code, _, errOut := s.gb(t, s.key, "research", "start", "How does sync.Once work?", "--citations", "always"); code != exitUsage ||
		!strings.Contains(errOut, "--citations must be off, flag or revise") {
		t.Fatalf("start --citations always: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut := s.gb(t, s.key, "research", "start", "How does sync.Once work?", "--citations", "flag")
	if code != 0 {
		t.Fatalf("start: exit %d\n%s", code, errOut)
	}
	id := strings.TrimSpace(out)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, got, _ := s.gb(t, s.key, "research", "get", id, "-o", "json")
		var run jobs.Run
		if err := json.Unmarshal([]byte(got), &run); err == nil && run.Ended() {
			if run.Status != jobs.StatusSucceeded || run.Citations == nil {
				t.Fatalf("research ended %s with citations %v:\n%s", run.Status, run.Citations, got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("research %s did not end: %s", id, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	code, out, errOut = s.gb(t, s.key, "research", "citations", id)
	if code != 0 || !strings.HasPrefix(out, "citations: ") || !strings.Contains(out, "supported") ||
		!strings.Contains(out, "PASSAGE / REASON") {
		t.Fatalf("citations: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = s.gb(t, s.key, "research", "citations", id, "-o", "json")
	var rc jobs.RunCitations
	if code != 0 || json.Unmarshal([]byte(out), &rc) != nil || rc.Counts == nil || len(rc.Citations) == 0 || rc.Mode != "flag" {
		t.Fatalf("citations -o json: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := s.gb(t, s.key, "research", "get", id); code != 0 {
		t.Fatalf("get: exit %d %s", code, errOut)
	} else if _, out, _ := s.gb(t, s.key, "research", "get", id); !strings.Contains(out, "citations") {
		t.Errorf("get does not show the citations row:\n%s", out)
	}

	ctx, session := s.mcpSession(t)
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range tools.Tools {
		if tool.Name == "get_citations" {
			found = true
			if tool.Title == "" || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || !tool.Annotations.IdempotentHint {
				t.Errorf("get_citations: title %q annotations %+v, want a title, read-only and idempotent", tool.Title, tool.Annotations)
			}
		}
	}
	if !found {
		t.Fatal("gb mcp has no get_citations tool")
	}
	var n float64
	if err := json.Unmarshal([]byte(id), &n); err != nil {
		t.Fatal(err)
	}
	got := callTool(t, ctx, session, "get_citations", map[string]any{"id": n})
	if list, _ := got["citations"].([]any); got["counts"] == nil || len(list) != len(rc.Citations) {
		t.Errorf("get_citations answered %v", got)
	}
}
