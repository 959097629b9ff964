package jobs_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

func TestLongReportIsCappedInTheWaitAndReadWholeThroughReadReport(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ü", 9990) + "THE END!!!" // 10,000 characters
	var mu sync.Mutex
	var seen []string
	page := regexp.MustCompile(`(?s)\[characters \d+ to \d+ of 10000; [^\]]*\]\n` +
		`<<<UNTRUSTED WEB CONTENT: report of sub-agent long [^\n]*>>>\n(.*)\n<<<END UNTRUSTED WEB CONTENT>>>$`)
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if topic(req) == "write long" {
			return llm.Message{Content: long}, nil
		}
		r := stepResults(req)
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("spawn_subagent",
				`{"name":"long","reason":"writes at length","task":"write long"}`)}}, nil
		case 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		case 2:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read_report", `{"name":"long","offset":4000}`)}}, nil
		case 3:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read_report", `{"name":"long","offset":8000}`)}}, nil
		}
		return llm.Message{Content: "done"}, nil
	}}
	b := setup(t, setupOpts{model: model})
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, root.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 5 {
		t.Fatalf("%d turns", len(seen))
	}
	wait := seen[2]
	want := `[6000 more characters of this report left out: call read_report with {"name": "long", "offset": 4000} to read on]`
	if strings.Count(wait, "ü") != 4000 || !strings.Contains(wait, want) {
		t.Fatalf("wait result holds %d characters of the report; note present: %v", strings.Count(wait, "ü"), strings.Contains(wait, want))
	}
	whole := strings.Repeat("ü", 4000)
	for _, r := range seen[3:] {
		m := page.FindStringSubmatch(r)
		if m == nil {
			t.Fatalf("read_report answered:\n%.300s", r)
		}
		whole += m[1]
	}
	if whole != long {
		t.Fatalf("read through read_report: %d characters, want the whole 10000", len([]rune(whole)))
	}
	if !strings.Contains(seen[4], "nothing left") {
		t.Errorf("last page: %.200s", seen[4])
	}
}

// TestABlankReportIsNoSuccess: succeeded always carries a report. A root
// whose sub-agents all failed and that then answers with blank text fails,
// with an error that names its sub-agents and what became of them.
func TestABlankReportIsNoSuccess(t *testing.T) {
	t.Parallel()
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		switch topic(req) {
		case "part a", "part b":
			return llm.Message{}, fmt.Errorf("the provider refused: %w", llm.ErrPermanent)
		}
		if turns(req) < 2 {
			return rootTurn(req, spawnCall("a", "part a"), spawnCall("b", "part b"))
		}
		return llm.Message{Content: " \n\t"}, nil
	}}
	b := setup(t, setupOpts{model: model})
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, root.ID, 30*time.Second)
	want := "the agent ended without writing a report; 2 of its 2 sub-agents did not succeed: a failed: "
	if done.Status != jobs.StatusFailed || done.Report != "" || !strings.HasPrefix(done.Error, want) ||
		!strings.Contains(done.Error, "; b failed: ") || !strings.Contains(done.Error, "the provider refused") {
		t.Fatalf("%s, report %q, error %q; want failed with %q…", done.Status, done.Report, done.Error, want)
	}
}
