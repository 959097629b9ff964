package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestResearchFork forks a research of the offline model at its root's
// first step through the built gb, follows the fork to its end, and
// compares the two with gb research diff: the fork says what it was
// forked from, its first step is the original's, replayed, and it paid
// for none of it.
func TestResearchFork(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 5*time.Millisecond)
	code, out, errOut := s.gb(t, s.key, "research", "start", "How does sync.WaitGroup work?", "--follow")
	if code != 0 {
		t.Fatalf("start: exit %d\n%s\n%s", code, out, errOut)
	}
	a := strings.SplitN(out, "\n", 2)[0]
	if code, _, errOut := s.gb(t, s.key, "research", "fork", a); code != exitUsage || !strings.Contains(errOut, "--step is required") {
		t.Errorf("fork without --step: exit %d, %s", code, errOut)
	}
	if code, _, errOut := s.gb(t, s.key, "research", "fork", a, "--step", "99"); code != exitError || !strings.Contains(errOut, "recorded") {
		t.Errorf("fork past the record: exit %d, %s", code, errOut)
	}
	code, out, errOut = s.gb(t, s.key, "research", "fork", a, "--step", "1", "--instruction", "Say what Wait does.", "--follow")
	if code != 0 || !strings.Contains(out, "forked from "+a+" at step 1") {
		t.Fatalf("fork: exit %d\n%s\n%s", code, out, errOut)
	}
	f := strings.SplitN(out, "\n", 2)[0]
	if _, err := strconv.ParseInt(f, 10, 64); err != nil || f == a {
		t.Fatalf("fork printed %q first", f)
	}

	code, out, errOut = s.gb(t, s.key, "research", "diff", a, f, "-o", "json")
	if code != 0 {
		t.Fatalf("diff: exit %d\n%s", code, errOut)
	}
	var d researchDiff
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d.B.Run.ForkedFrom == nil || strconv.FormatInt(*d.B.Run.ForkedFrom, 10) != a || d.B.Run.Status != "succeeded" {
		t.Fatalf("the fork: %+v", d.B.Run)
	}
	if len(d.A.Steps) < 2 || len(d.B.Steps) < 2 || !d.B.Steps[0].Replayed || d.B.Steps[1].Replayed || d.A.Steps[0].Replayed ||
		strings.Join(d.A.Steps[0].Tools, ",") != strings.Join(d.B.Steps[0].Tools, ",") {
		t.Errorf("root steps: %+v and %+v", d.A.Steps, d.B.Steps)
	}
	if d.B.Totals.Tokens >= d.A.Totals.Tokens && d.A.Run.Steps == d.B.Run.Steps {
		t.Errorf("the fork's tree counted %d tokens, the original's %d: its replayed step is not free", d.B.Totals.Tokens, d.A.Totals.Tokens)
	}
	code, out, _ = s.gb(t, s.key, "research", "diff", a, f)
	if code != 0 || !strings.Contains(out, "#"+a+" at step 1") || !strings.Contains(out, "(replayed)") {
		t.Errorf("diff (exit %d) does not say the fork's origin and replayed step:\n%s", code, out)
	}
}
