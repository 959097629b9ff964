package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// walkID is the run id the walk left in variable name of a block.
func walkID(t *testing.T, vars map[string]string, name string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(vars[name], 10, 64)
	if err != nil {
		t.Fatalf("the block set no run id in $%s (%q): %v", name, vars[name], err)
	}
	return id
}

// waitCLIEnded waits up to a minute for run id to end.
func waitCLIEnded(t *testing.T, s *cliStack, id int64) *jobs.Run {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		run, err := jobs.GetRun(context.Background(), s.pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Ended() {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d did not end: %s %s", id, run.Status, run.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkAnswered checks that research id succeeded with its owner's answer.
func checkAnswered(t *testing.T, s *cliStack, id int64, answer string) {
	t.Helper()
	run := waitCLIEnded(t, s, id)
	if run.Status != jobs.StatusSucceeded || !strings.Contains(run.Report, "answered: "+answer) {
		t.Errorf("interactive run %d: %s (%s), report:\n%s", id, run.Status, run.Error, run.Report)
	}
}

// checkCancelled checks that research id ended cancelled by its owner.
func checkCancelled(t *testing.T, s *cliStack, id int64) {
	t.Helper()
	if run := waitCLIEnded(t, s, id); run.Status != jobs.StatusFailed || !strings.Contains(run.Error, "cancel") {
		t.Errorf("run %d cancelled by the README: %s (%s)", id, run.Status, run.Error)
	}
}

// checkPlanRan checks that research id succeeded with the sub-agents of
// its approved plan (only the one named only, when not "").
func checkPlanRan(t *testing.T, s *cliStack, id int64, only string) {
	t.Helper()
	run := waitCLIEnded(t, s, id)
	if run.Status != jobs.StatusSucceeded || run.Plan == nil || run.Plan.State != jobs.PlanApproved {
		t.Fatalf("run %d with a plan: %s (%s), plan %+v", id, run.Status, run.Error, run.Plan)
	}
	tree, err := jobs.Tree(context.Background(), s.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != len(run.Plan.Subagents)+1 || len(tree) < 2 || only != "" && (len(tree) != 2 || tree[1].Name != only) {
		t.Fatalf("run %d ran %d runs for its plan of %d (%s)", id, len(tree), len(run.Plan.Subagents), only)
	}
	for _, kid := range tree[1:] {
		if kid.Status != jobs.StatusSucceeded || !strings.Contains(run.Report, "### "+kid.Name) {
			t.Errorf("sub-agent %s: %s; merged in the report: %t", kid.Name, kid.Status, strings.Contains(run.Report, "### "+kid.Name))
		}
	}
}
