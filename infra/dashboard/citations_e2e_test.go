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

// citationsMarkup is the passage the browser test gives the first claim:
// page text that holds markup, which must show as text.
const citationsMarkup = `<img src=x onerror="window.__xss='citation'"> <b>not bold</b> the passage`

// TestDashboardShowsCitations runs an offline research whose report is
// checked (citations flag), makes its first claim's verdict unsupported
// with a passage that holds markup, and runs e2e/citations.mjs in
// Chromium: each marker of the report has its verdict, the passage shows
// on click as text, and the Sources list stays plain. The screenshot
// citations.png goes to $GB_SCREENSHOT_DIR (relative to the top of the
// repository), else to .data/screenshots.
func TestDashboardShowsCitations(t *testing.T) {
	node := browserTools(t)
	s := startStack(t, 0, false)
	ctx := context.Background()
	run, _, err := s.agent.StartResearch(ctx, jobs.StartParams{UserID: s.userID,
		Topic: "How does sync.WaitGroup wait for goroutines?", Citations: jobs.CitationsFlag})
	if err != nil {
		t.Fatal(err)
	}
	run = waitEnded(t, s.pool, run.ID, 60*time.Second)
	if run.Status != jobs.StatusSucceeded || run.Citations == nil || run.Citations.Supported < 2 {
		t.Fatalf("the research ended %s with citations %+v, want a checked report with two supported claims or more",
			run.Status, run.Citations)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE gb_citations SET verdict = 'unsupported', claim_verdict = 'unsupported', passage = $2
		WHERE run_id = $1 AND (claim_index, marker) = (SELECT claim_index, marker FROM gb_citations
			WHERE run_id = $1 AND marker > 0 ORDER BY round DESC, claim_index, marker LIMIT 1)`, run.ID, citationsMarkup)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("making the first claim unsupported: %v (%d rows)", err, tag.RowsAffected())
	}
	shots := screenshotDir(t, os.Getenv("GB_SCREENSHOT_DIR"))
	runScript(t, node, s, shots, "citations.mjs", nil, strconv.FormatInt(run.ID, 10))
	t.Logf("screenshot of the report's citations: %s", filepath.Join(shots, "citations.png"))
}
