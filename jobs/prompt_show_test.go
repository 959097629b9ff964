package jobs_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// This file shows what the prompts make a model that follows them do, on
// the godoc dataset: a scripted model reads its system prompt and does
// what it says. Under the prompts that say "Decide before you start
// searching" and "research your own part while they work", the root
// spawns a sub-agent for each part of the question at once, then reads
// both parts itself while they work, then waits and writes its report.
// Under the prompts that say "Look first", the root searches once, sees
// that one document answers each part, reads them and writes its report
// alone. The same file runs against either tree (it uses only what both
// have), so that the figures compare (see TestShowPromptsResearch).

// The parts of the show's question, each answered by one document.
var showParts = []struct{ name, query, source string }{
	{"shutdown", "Server Shutdown gracefully idle connections", "http"},
	{"deadline", "context WithTimeout deadline", "context"},
}

const showTopic = "How does a Go HTTP server shut down gracefully, and how does a context bound how long that may take?"

// showHitRE reads the ids and sources of a search result.
var showHitRE = regexp.MustCompile(`(?m)^\[id (\d+)\] (.*) \((\S+)\)$`)

// showHit is the id of the first hit of a search result whose source is
// source, or of its first hit.
func showHit(result, source string) string {
	hits := showHitRE.FindAllStringSubmatch(result, -1)
	for _, h := range hits {
		if strings.HasSuffix(h[3], "/"+source) {
			return h[1]
		}
	}
	if len(hits) > 0 {
		return hits[0][1]
	}
	return "1"
}

// toolResults are the results of a conversation's tool calls, in order.
func toolResults(req llm.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

// showReport is a report citing what was read.
func showReport(req llm.Request) llm.Message {
	var b strings.Builder
	b.WriteString("# Report\n\nThe server stops accepting connections and waits for active ones [1].\n\n## Sources\n")
	for _, r := range toolResults(req) {
		if m := showHitRE.FindStringSubmatch(strings.SplitN(r, "\n", 2)[0]); m != nil {
			fmt.Fprintf(&b, "[1] %s — %s\n", m[2], m[3])
			break
		}
	}
	return llm.Message{Content: b.String()}
}

// showModel does what its prompt says, as above; old says it read the
// old prompts.
func showModel(old *atomic.Bool) *scriptModel {
	return &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		res, n := toolResults(req), turns(req)
		if strings.Contains(req.System, "Decide before you start searching") {
			old.Store(true)
		}
		switch {
		case strings.Contains(req.System, "You are the sub-agent"):
			// A sub-agent: search its task, read the best hit, report.
			switch n {
			case 0:
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", fmt.Sprintf(`{"query":%q}`, showQuery(topic(req))))}}, nil
			case 1:
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read", `{"id":`+showHit(res[0], showSource(topic(req)))+`}`)}}, nil
			}
			return showReport(req), nil
		case strings.Contains(req.System, "Decide before you start searching"):
			return showOldRoot(n, res, req), nil
		}
		return showNewRoot(n, res, req), nil
	}}
}

// showOldRoot follows the old prompts: spawn first, research its own
// parts while the sub-agents work, wait, report.
func showOldRoot(n int, res []string, req llm.Request) llm.Message {
	switch {
	case n == 0:
		var calls []llm.ToolCall
		for _, p := range showParts {
			calls = append(calls, toolCall("spawn_subagent", fmt.Sprintf(`{"name":%q,"reason":"covers %s","task":%q}`,
				p.name, p.source, p.query)))
		}
		return llm.Message{ToolCalls: calls}
	case n <= 4:
		p := showParts[(n-1)/2]
		if n%2 == 1 {
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", fmt.Sprintf(`{"query":%q}`, p.query))}}
		}
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read", `{"id":`+showHit(res[len(res)-1], p.source)+`}`)}}
	case n == 5:
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}
	}
	return showReport(req)
}

// showNewRoot follows the new prompts: a search to look (it shows one
// document per package), then the document of each part, then the
// report, alone.
func showNewRoot(n int, res []string, req llm.Request) llm.Message {
	a, b := showParts[0], showParts[1]
	switch n {
	case 0:
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", fmt.Sprintf(`{"query":%q}`, a.query))}}
	case 1:
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read", `{"id":`+showHit(res[0], a.source)+`}`),
			toolCall("search", fmt.Sprintf(`{"query":%q}`, b.query))}}
	case 2:
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read", `{"id":`+showHit(res[2], b.source)+`}`)}}
	}
	return showReport(req)
}

// showQuery and showSource are the query and the package of a part's task.
func showQuery(task string) string { return task }

func showSource(task string) string {
	for _, p := range showParts {
		if p.query == task {
			return p.source
		}
	}
	return ""
}

// showFigures are what a research cost.
type showFigures struct {
	agents, steps, calls int
	read, readTwice      int64
}

// TestShowPromptsResearch runs the show's research and prints its
// figures: agents, steps, model calls, characters read, and characters
// read twice (the same part of the same document read again, by the same
// agent or another). Under the current prompts it requires one agent and
// nothing read twice.
//
//	go test -count=1 -v -run TestShowPromptsResearch ./jobs/
func TestShowPromptsResearch(t *testing.T) {
	var old atomic.Bool
	b := setup(t, setupOpts{model: showModel(&old)})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: showTopic, MaxSteps: 10,
		Citations: jobs.CitationsOff})
	if err != nil {
		t.Fatal(err)
	}
	run = waitEnded(t, b.pool, run.ID, 60*time.Second)
	if run.Status != jobs.StatusSucceeded {
		t.Fatalf("%s: %s", run.Status, run.Error)
	}
	var f showFigures
	if err := b.pool.QueryRow(ctx, `SELECT count(*), sum(steps) FROM gb_agent_research_runs WHERE root_id = $1`,
		run.ID).Scan(&f.agents, &f.steps); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM gb_model_calls WHERE root_id = $1`, run.ID).Scan(&f.calls); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(ctx, `WITH r AS (
			SELECT s.requested_url, md5(coalesce(s.body, '')) AS h, length(coalesce(s.body, '')) AS n
			FROM gb_sources s JOIN gb_agent_research_runs x ON x.id = s.run_id
			WHERE x.root_id = $1 AND s.kind <> 'result')
		SELECT coalesce(sum(n), 0), coalesce(sum(n), 0) - coalesce((SELECT sum(n) FROM (SELECT DISTINCT requested_url, h, n FROM r) d), 0)
		FROM r`, run.ID).Scan(&f.read, &f.readTwice); err != nil {
		t.Fatal(err)
	}
	t.Logf("agents %d, steps %d, model calls %d, characters read %d, read twice %d",
		f.agents, f.steps, f.calls, f.read, f.readTwice)
	if f.read == 0 {
		t.Errorf("nothing was read")
	}
	if !old.Load() && (f.agents != 1 || f.readTwice != 0) {
		t.Errorf("under the current prompts: %d agents, %d characters read twice; want 1 and 0", f.agents, f.readTwice)
	}
}
