package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// The README's walkthroughs of an interactive research and of one that
// proposes its plan, in the CLI's block and in the REST API's, run as
// written against a stack with the offline policy: each block's lines on
// those researches are taken from README.md and run in one bash script
// (errexit, pipefail, curl failing on an error status), and the
// researches they start end as the README says.
func TestREADMEOwnerWalkthroughsRunOffline(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's commands need %s: %v", tool, err)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cli, api := ownerLines(t, string(readme))
	s := startCLIStack(t, 0)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(s.bin, filepath.Join(dir, "bin", "gb")); err != nil {
		t.Fatal(err)
	}

	out := runREADMELines(t, s, dir, cli, "echo ids $ask $plan $later")
	if !strings.Contains(out, "focus on") || !strings.Contains(out, "answered run") {
		t.Errorf("the CLI walkthrough showed no question or no answer:\n%s", out)
	}
	ids := readIDs(t, out, 3)
	ask, plan, later := ids[0], ids[1], ids[2]
	checkAnswered(t, s, ask, "the standard library only")
	checkPlanRan(t, s, plan, "")
	if run := waitCLIEnded(t, s, later); run.Status != jobs.StatusFailed || !strings.Contains(run.Error, "cancel") {
		t.Errorf("run cancelled by the README: %s (%s)", run.Status, run.Error)
	}

	out = runREADMELines(t, s, dir, api, "echo ids $ask $plan")
	ids = readIDs(t, out, 2)
	checkAnswered(t, s, ids[0], "the standard library only")
	checkPlanRan(t, s, ids[1], "routers")
}

// ownerLines are the commands of the README's CLI block and of its REST
// API block that start, wait on, answer, decide and cancel an interactive
// research or one with approve_plan, continuation lines joined, with the
// lines that set what they use ($API, $KEY).
func ownerLines(t *testing.T, readme string) (cli, api []string) {
	t.Helper()
	on := regexp.MustCompile(`\$\(?(ask|plan|later)\b|\b(ask|plan|later)=|--interactive|--approve-plan`)
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme, -1) {
		var lines []string
		for _, l := range strings.Split(strings.ReplaceAll(block[1], "\\\n", " "), "\n") {
			if strings.HasPrefix(l, "API=") || on.MatchString(l) && !strings.HasPrefix(strings.TrimSpace(l), "#") {
				lines = append(lines, l)
			}
		}
		switch {
		case strings.Contains(block[1], "bin/gb research answer $ask"):
			cli = lines
		case strings.Contains(block[1], "$API/v1/gb/research/$ask/answer"):
			api = lines
		}
	}
	if len(cli) < 8 || len(api) < 7 {
		t.Fatalf("the README's walkthroughs were not found: CLI %q, API %q", cli, api)
	}
	return cli, api
}

// runREADMELines runs lines in one bash script in dir against the stack,
// then last, and returns what it printed; a failing line fails the test.
func runREADMELines(t *testing.T, s *cliStack, dir string, lines []string, last string) string {
	t.Helper()
	script := "set -euo pipefail\ncurl() { command curl --fail-with-body \"$@\"; }\n"
	for _, l := range lines {
		script += strings.Replace(l, "API=http://127.0.0.1:8080", "API="+s.url, 1) + "\n"
	}
	script += last + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY="+s.key, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's lines failed (%v):\n%s\n--- output:\n%s", err, script, out)
	}
	return string(out)
}

// readIDs reads the n run ids of the script's last line ("ids A B ...").
func readIDs(t *testing.T, out string, n int) []int64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) != n+1 || f[0] != "ids" {
		t.Fatalf("no ids at the end of:\n%s", out)
	}
	ids := make([]int64, n)
	for i := range ids {
		id, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
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
