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

// TestDashboardForksAStepInBrowser runs the demo's tree on a real stack
// and runs e2e/fork.mjs in Chromium: the "Fork from here" form of a root's
// step forks it through the API and opens the fork, which must then be a
// fork of the root at that step that goes on to its end; the API's 400 and
// a refusal with markup show as text. The screenshot fork.png goes to
// $GB_SCREENSHOT_DIR (relative to the top of the repository), else to
// .data/screenshots.
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
	var fork int64
	for _, line := range runScript(t, node, s, shots, "fork.mjs", nil, strconv.FormatInt(root.ID, 10), strconv.FormatInt(kid, 10)) {
		if v, ok := strings.CutPrefix(line, "forked run "); ok {
			fork, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if fork == 0 {
		t.Fatal("fork.mjs did not say which research it forked")
	}
	waitEnded(t, s.pool, fork, 60*time.Second)
	run, err := jobs.GetRun(ctx, s.pool, fork)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != jobs.StatusSucceeded || run.ForkedFrom == nil || *run.ForkedFrom != root.ID || run.ForkStep == nil ||
		*run.ForkStep != 1 || run.ForkInstruction != "Look at sync.Cond as well" {
		t.Errorf("the fork the form started: %s (%s), forked from %v at %v, instruction %q", run.Status, run.Error,
			run.ForkedFrom, run.ForkStep, run.ForkInstruction)
	}
	t.Logf("screenshot of a fork refused: %s", filepath.Join(shots, "fork.png"))
}
