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

// TestDashboardForksAStepInBrowser runs the demo's tree on a real stack
// and runs e2e/fork.mjs in Chromium, which plays the fork route itself:
// the "Fork from here" form of a step of the root and of a sub-agent sends
// the root's fork route the agent, the step and the fields set, opens the
// research a 202 answers, and shows a 400's message as text. The
// screenshot fork.png goes to $GB_SCREENSHOT_DIR (relative to the top of
// the repository), else to .data/screenshots.
func TestDashboardForksAStepInBrowser(t *testing.T) {
	node := browserTools(t)
	s := startStack(t, 0, false)
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
	var kid int64
	for _, r := range tree {
		waitEnded(t, s.pool, r.ID, 30*time.Second)
		if kid == 0 && r.ID != root.ID && r.Steps > 0 {
			kid = r.ID
		}
	}
	if kid == 0 {
		t.Fatal("the demo's tree has no sub-agent with steps")
	}
	shots := screenshotDir(t, os.Getenv("GB_SCREENSHOT_DIR"))
	runScript(t, node, s, shots, "fork.mjs", nil, strconv.FormatInt(root.ID, 10), strconv.FormatInt(kid, 10))
	t.Logf("screenshot of a fork refused: %s", filepath.Join(shots, "fork.png"))
}
