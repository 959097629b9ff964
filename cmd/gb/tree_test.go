package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// treeOf is a tree of a root and its sub-agents as the API answers it.
func treeOf(root *jobs.Run, kids ...*jobs.Run) treeResponse {
	t := treeResponse{Runs: append([]*jobs.Run{root}, kids...)}
	t.Totals.Runs = 1 + len(kids)
	for _, r := range t.Runs {
		t.Totals.Steps += r.Steps
		if !r.Ended() {
			t.Totals.Working++
		}
	}
	return t
}

func agentRun(id int64, parent int64, name, status string, steps int) *jobs.Run {
	r := &jobs.Run{ID: id, Name: name, Status: status, State: "thinking", Steps: steps, MaxSteps: 10}
	if parent != 0 {
		r.ParentID = &parent
	}
	return r
}

// TestTreeFollowPipedPrintsOnlyChanges checks that a tree followed into a
// pipe prints its first drawing whole, then only the lines that changed,
// and nothing for a drawing that did not change.
func TestTreeFollowPipedPrintsOnlyChanges(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	v := newTreeView(&out)
	v.show(treeLines(treeOf(agentRun(1, 0, "", jobs.StatusWorking, 1))))
	first := out.String()
	if !strings.HasPrefix(first, "#1 root") || !strings.Contains(first, "total: 1 agent (1 working) · 1 step · 0 tokens") {
		t.Fatalf("first drawing:\n%s", first)
	}
	v.show(treeLines(treeOf(agentRun(1, 0, "", jobs.StatusWorking, 1))))
	if out.String() != first {
		t.Fatalf("the same tree again printed:\n%s", strings.TrimPrefix(out.String(), first))
	}
	v.show(treeLines(treeOf(agentRun(1, 0, "", jobs.StatusWorking, 1), agentRun(2, 1, "reader", jobs.StatusWorking, 0))))
	v.show(treeLines(treeOf(agentRun(1, 0, "", jobs.StatusWorking, 1), agentRun(2, 1, "reader", jobs.StatusSucceeded, 2))))
	changes := strings.Split(strings.TrimSuffix(strings.TrimPrefix(out.String(), first), "\n"), "\n")
	want := []string{"#2 reader ", "total: 2 agents (2 working) · 1 step", "#2 reader ", "total: 2 agents (1 working) · 3 steps"}
	if len(changes) != len(want) {
		t.Fatalf("changes printed:\n%s\nwant %d lines", strings.Join(changes, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(changes[i], w) {
			t.Errorf("change %d is %q, want it to start with %q", i, changes[i], w)
		}
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("a pipe got terminal escapes: %q", out.String())
	}
}

// TestTreeFollowOnATerminalRedrawsInPlace checks that on a terminal each
// new drawing first moves up over the rows of the last one (wrapped lines
// counted) and clears them.
func TestTreeFollowOnATerminalRedrawsInPlace(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	v := &treeView{out: &out, tty: true, width: 40}
	one := treeLines(treeOf(agentRun(1, 0, "", jobs.StatusWorking, 1)))
	v.show(one)
	rows := 0
	for _, l := range one {
		rows += (len([]rune(l.branch+l.text)) + 39) / 40
	}
	before := out.Len()
	v.show(treeLines(treeOf(agentRun(1, 0, "", jobs.StatusSucceeded, 2))))
	redraw := out.String()[before:]
	if want := "\x1b[" + strconv.Itoa(rows) + "A\x1b[J#1 root"; !strings.HasPrefix(redraw, want) {
		t.Fatalf("redraw starts %q, want %q", redraw[:min(len(redraw), 20)], want)
	}
	if !strings.Contains(redraw, "succeeded") || strings.Count(redraw, "total:") != 1 {
		t.Errorf("redraw is not the whole new tree:\n%s", redraw)
	}
}

// TestCountPlurals checks the counted nouns of the CLI.
func TestCountPlurals(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 agents", 1: "1 agent", 2: "2 agents"} {
		if got := count(n, "agent"); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestFlagsTheAPIRefusesExitTwoBeforeAnyRequest checks that a flag value
// the API would refuse is a usage error (exit 2) and that gb sends no
// request for it.
func TestFlagsTheAPIRefusesExitTwoBeforeAnyRequest(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "{}", http.StatusTeapot)
	}))
	defer srv.Close()
	t.Setenv("GB_API_URL", srv.URL)
	t.Setenv("GB_API_KEY", "gb_test")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"research", "list", "--status", "nope"}, `--status "nope" is not a status; use one of active, queued`},
		{[]string{"research", "list", "--limit", "0"}, "--limit must be between 1 and 100"},
		{[]string{"research", "list", "--parent", "x"}, "--parent"},
		{[]string{"research", "start", "topic", "--max-steps", "41"}, "--max-steps must be between 1 and 40 (got 41)"},
		{[]string{"research", "start", "topic", "--max-steps", "0"}, "--max-steps must be between 1 and 40 (got 0)"},
		{[]string{"research", "start", "topic", "--max-cost-usd", "5000"}, "--max-cost-usd must be between 0"},
		{[]string{"research", "start", "topic", "--max-tokens", "-1"}, "--max-tokens must be 0"},
		{[]string{"research", "start", "topic", "--answer-timeout", "1s", "--interactive"}, "--answer-timeout must be 5 to"},
		{[]string{"research", "start", "topic", "--answer-timeout", "60s"}, "--answer-timeout applies only"},
		{[]string{"research", "start", "  "}, "TOPIC is required"},
	} {
		var out, errOut bytes.Buffer
		err := runWith(context.Background(), c.args, &out, &errOut)
		if code := exitCode(err, false); code != exitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: exit %d, error %v; want exit 2 and %q", c.args, code, err, c.want)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("gb sent %d requests for command lines it should have refused", n)
	}
}

// TestTreeFollowIntoAPipe follows a research with sub-agents with the gb
// binary writing into a pipe: it prints the tree once, then changed lines
// only (no terminal escapes, never the same line twice in a row), and ends
// with every agent ended.
func TestTreeFollowIntoAPipe(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 30*time.Millisecond)
	code, out, errOut := s.gb(t, s.key, "research", "start", "What does sync.Once guarantee? How does context carry deadlines?")
	if code != 0 {
		t.Fatalf("start: exit %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	code, out, errOut = s.gb(t, s.key, "research", "tree", id, "--follow")
	if code != 0 {
		t.Fatalf("tree --follow: exit %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	totals := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "total: ") {
			totals++
		}
		if i > 0 && l == lines[i-1] {
			t.Errorf("line %d repeats the line before it: %q", i, l)
		}
	}
	roots := strings.Count(out, "#"+id+" root")
	t.Logf("%d lines, %d totals, %d root lines:\n%s", len(lines), totals, roots, out)
	switch {
	case strings.Contains(out, "\x1b"):
		t.Errorf("terminal escapes in a pipe: %q", out)
	case !strings.HasPrefix(out, "#"+id+" root"):
		t.Errorf("the output does not start with the tree")
	case !strings.Contains(lines[len(lines)-1], "(0 working)") || !strings.Contains(out, "3 agents"):
		t.Errorf("the last line is %q, want the totals of 3 agents, none working", lines[len(lines)-1])
	case roots >= totals:
		t.Errorf("the root's line came %d times for %d drawings: whole trees printed again", roots, totals)
	}
}
