package dashboard_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// stepsDemoTopic is the topic of `gb demo` (cmd/gb/demo.go): three parts,
// so the offline policy spawns three sub-agents.
const stepsDemoTopic = "How do goroutines and channels synchronize work, and how does the context package carry " +
	"cancellation and deadlines, and how does net/http serve HTTP requests?"

// stepsMarkup heads the first tool result of the demo root's first step in
// the browser test: markup a page could put in a result, shown as text.
const stepsMarkup = `<img src=x onerror="window.__xss='step'"> <b>bold?</b> `

// TestDashboardShowsStepsAndTimeline runs the demo's tree on a real stack,
// makes the first tool result of its root's first step hold markup and be
// longer than the API's cut, and runs e2e/steps.mjs in Chromium: the root's
// page lists its steps, a step opens to its tool calls' arguments and its
// results as text, the cut result reads whole, and the timeline draws a
// lane per agent and a bar per step. The screenshots steps.png and
// timeline.png go to $GB_SCREENSHOT_DIR (relative to the
// top of the repository; docs/screenshots keeps them with the docs), else
// to .data/screenshots; the test logs where.
func TestDashboardShowsStepsAndTimeline(t *testing.T) {
	node := browserTools(t)
	s := startStack(t, 150*time.Millisecond, false)
	ctx := context.Background()
	root, _, err := s.agent.StartResearch(ctx, jobs.StartParams{UserID: s.userID, Topic: stepsDemoTopic})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, s.pool, root.ID, 60*time.Second)
	tree, err := jobs.Tree(ctx, s.pool, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tree {
		waitEnded(t, s.pool, r.ID, 30*time.Second)
	}
	if len(tree) < 2 {
		t.Fatalf("the demo's tree has %d runs, want a root and sub-agents", len(tree))
	}
	long := stepsMarkup + strings.Repeat("a long result ", 300)
	tag, err := s.pool.Exec(ctx, `UPDATE gb_agent_research_steps SET messages = jsonb_set(messages,
			ARRAY[(SELECT (i - 1)::text FROM jsonb_array_elements(messages) WITH ORDINALITY AS m(v, i)
				WHERE v->>'role' = 'tool' ORDER BY i LIMIT 1), 'content'], to_jsonb($2::text))
		WHERE run_id = $1 AND step = 1`, root.ID, long)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("giving the root's first tool result markup: %v (%d rows)", err, tag.RowsAffected())
	}

	shots := screenshotDir(t, os.Getenv("GB_SCREENSHOT_DIR"))
	runScript(t, node, s, shots, "steps.mjs", nil, strconv.FormatInt(root.ID, 10))
	t.Logf("screenshots of the steps and the timeline: %s, %s", filepath.Join(shots, "steps.png"), filepath.Join(shots, "timeline.png"))
}
