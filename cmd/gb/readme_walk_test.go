package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
)

// TestREADMEWalk runs every fenced shell block of README.md (```sh, ```bash,
// ```shell, and ```console, whose commands are the lines after a "$ "
// prompt) as written, in README order, in one bash process
// at the checkout's top (where go build -o bin/gb leaves bin/gb, as it does
// for a reader) with errexit, nounset and pipefail, curl failing on an
// error status: a variable an earlier block set is there for the later
// ones, and a server an earlier block started with & serves them. The
// machine is a fresh one with the offline model: no model key, no search
// provider, DATABASE_URL a new database of this test (infra/pg.sh start
// prints it, as it does whenever DATABASE_URL is set), and each loopback
// port the blocks name (127.0.0.1:8080, :9000) moved to a free one, with
// GB_API_URL where 8080 went (the CLI's default address).
//
// What the walk does not run says so in the README, plainly:
//   - a block whose paragraph right before it has a sentence beginning
//     "Needs" (Needs root and the network: …) is skipped whole;
//   - a line whose trailing comment begins "needs" (# needs a public
//     https URL of yours) is skipped;
//   - a line running the test suite (infra/test.sh, go test) is not run:
//     this walk is one of its tests.
//
// A skipped line that is one bin/gb command with no variable still runs
// with --help added: its subcommand and flags must exist.
//
// Every other line must be runnable offline: bin/gb (or go run ./cmd/gb),
// go build/env, curl, jq, infra/pg.sh and a few shell tools; the test fails
// on a line that runs anything else (sam, aws, apt-get…) or a bare gb
// (not on PATH after the README builds bin/gb), unless it is marked. A
// server (gb dev, gb worker, gb webhooks listen without --count) must be
// started with &: it serves the rest of the walk and is stopped when it
// ends. A --follow ends with its research, so it runs in the foreground.
// The walk is bounded as a whole (walkTimeout).
//
// Then the researches of the owner walkthroughs end as the README says: the
// interactive ones answered, the plans approved and run (only the
// sub-agent named in the REST API's edited plan), the one left waiting
// cancelled; and gb webhooks listen printed a verified event.
func TestREADMEWalk(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's commands need %s: %v", tool, err)
		}
	}
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(top, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseREADME(string(readme))
	var problems []string
	for _, b := range blocks {
		for _, l := range b.lines {
			if b.needs == "" && l.problem != "" {
				problems = append(problems, fmt.Sprintf("README.md:%d: %s, and neither it (# needs …) nor the text before its block (Needs …) says what it needs:\n\t%s", l.line, l.problem, l.text))
			}
		}
	}
	if len(problems) > 0 {
		t.Fatalf("lines the walk cannot run:\n%s", strings.Join(problems, "\n"))
	}

	url := dbtest.NewURL(t)
	pool, err := db.Open(context.Background(), db.PoolConfig{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ports := walkPorts(t, blocks)
	script, lineOf := walkScript(blocks, ports)
	res := runWalk(t, top, script, []string{"DATABASE_URL=" + url, "GB_API_URL=http://127.0.0.1:" + ports["8080"], "NO_COLOR=1"})
	for _, b := range blocks {
		switch {
		case b.needs != "":
			t.Logf("README.md:%d: block skipped: %s", b.line, b.needs)
		case res.took[b.line] == 0 && res.err != nil:
			continue // not reached, or where it failed
		default:
			t.Logf("README.md:%d: block ran in %s", b.line, res.took[b.line].Round(100*time.Millisecond))
		}
		for _, l := range b.lines {
			switch {
			case l.skip != "" && b.needs == "" && helpCheck(l) != "":
				t.Logf("README.md:%d: line skipped (%s), its command and flags checked with --help", l.line, l.skip)
			case l.skip != "" && b.needs == "":
				t.Logf("README.md:%d: line skipped (%s)", l.line, l.skip)
			case res.lineTook[l.line] > 5*time.Second:
				t.Logf("README.md:%d: line ran in %s", l.line, res.lineTook[l.line].Round(100*time.Millisecond))
			}
		}
	}
	if res.err != nil {
		at := "before its first block"
		switch {
		case res.failLine > 0 && res.failLine <= len(lineOf) && lineOf[res.failLine-1] > 0:
			at = fmt.Sprintf("at README.md:%d:\n\t%s", lineOf[res.failLine-1], readmeLineText(blocks, lineOf[res.failLine-1]))
		case res.lastLine > 0:
			at = fmt.Sprintf("while README.md:%d ran:\n\t%s", res.lastLine, readmeLineText(blocks, res.lastLine))
		}
		t.Fatalf("the README's blocks failed (%v) %s\n--- the last of their output:\n%s", res.err, at, lastLines(res.out, 150))
	}

	s := &cliStack{pool: pool}
	walkthroughs := 0
	for _, b := range blocks {
		vars := res.vars[b.line]
		switch {
		case strings.Contains(b.text, "bin/gb research answer $ask"):
			checkAnswered(t, s, walkID(t, vars, "ask"), "the standard library only")
			checkPlanRan(t, s, walkID(t, vars, "plan"), "")
			checkCancelled(t, s, walkID(t, vars, "later"))
			walkthroughs++
		case strings.Contains(b.text, "$API/v1/gb/research/$ask/answer"):
			checkAnswered(t, s, walkID(t, vars, "ask"), "the standard library only")
			checkPlanRan(t, s, walkID(t, vars, "plan"), "routers")
			walkthroughs++
		}
	}
	if walkthroughs != 2 {
		t.Errorf("found %d of the owner walkthroughs (the CLI's and the REST API's), want 2", walkthroughs)
	}
	if !listenedLine.Match(res.out) {
		t.Errorf("gb webhooks listen printed no line like the README's:\n%s", lastLines(res.out, 150))
	}
}

// listenedLine is the line gb webhooks listen prints for a verified event,
// as the Webhooks block shows it.
var listenedLine = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d research\.succeeded research \d+ succeeded · msg_\w+ · \d+ agents?, \d+ steps, \d+ tokens · \$\d+\.\d+ · /v1/gb/research/\d+$`)
