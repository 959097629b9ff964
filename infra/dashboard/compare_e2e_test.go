package dashboard_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// TestDashboardComparesRunsInBrowser runs two offline researches on
// different topics, their reports checked and their costs set apart, and a
// third, and runs e2e/compare.mjs in
// Chromium: the two are picked in the runs list and opened side by side
// with its Compare button, each column is its run, and the totals, tools,
// sources, diverging step and reports are the API's with their
// differences marked. The screenshot compare.png goes to
// $GB_SCREENSHOT_DIR (relative to the top of the repository), else to
// .data/screenshots.
func TestDashboardComparesRunsInBrowser(t *testing.T) {
	node := browserTools(t)
	s := startStack(t, 0, false)
	ctx := context.Background()
	// A third run, for the list to have one more to pick.
	if _, _, err := s.agent.StartResearch(ctx, jobs.StartParams{UserID: s.userID, MaxSteps: 2, Topic: "What does a deadline do?"}); err != nil {
		t.Fatal(err)
	}
	// The offline model costs nothing: the two are given costs, for the
	// comparison to have a cost delta to show.
	var ids []string
	for i, topic := range []string{"How does sync.WaitGroup wait for goroutines?", "How does net/http serve HTTP requests?"} {
		run, _, err := s.agent.StartResearch(ctx, jobs.StartParams{UserID: s.userID, Topic: topic, Citations: jobs.CitationsFlag})
		if err != nil {
			t.Fatal(err)
		}
		if run = waitEnded(t, s.pool, run.ID, 60*time.Second); run.Status != jobs.StatusSucceeded {
			t.Fatalf("research %d ended %s", run.ID, run.Status)
		}
		if _, err := s.pool.Exec(ctx, "UPDATE gb_agent_research_runs SET cost_usd = $2 WHERE id = $1", run.ID, 0.0125+0.02*float64(i)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strconv.FormatInt(run.ID, 10))
	}
	shots := screenshotDir(t, os.Getenv("GB_SCREENSHOT_DIR"))
	runScript(t, node, s, shots, "compare.mjs", nil, ids...)
	t.Logf("screenshot of the comparison: %s", filepath.Join(shots, "compare.png"))
}
