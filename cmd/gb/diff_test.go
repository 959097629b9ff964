package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// TestResearchDiff compares two researches of the offline model on
// different questions through the built gb and checks each difference it
// reports against the API's own answers for each research; a research
// compared with itself has none, and another user's research is not found.
func TestResearchDiff(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 5*time.Millisecond)
	start := func(topic string) string {
		code, out, errOut := s.gb(t, s.key, "research", "start", topic, "--follow")
		if code != 0 {
			t.Fatalf("start: exit %d\n%s\n%s", code, out, errOut)
		}
		return strings.SplitN(out, "\n", 2)[0]
	}
	a, b := start("How does sync.WaitGroup work?"), start("What does context.WithCancel return?")

	code, out, errOut := s.gb(t, s.key, "research", "diff", a, b, "-o", "json")
	if code != 0 {
		t.Fatalf("diff -o json: exit %d\n%s", code, errOut)
	}
	var d struct {
		A, B  compared
		OnlyA []string `json:"sources_only_a"`
		OnlyB []string `json:"sources_only_b"`
		Both  int      `json:"sources_both"`
		Steps []int    `json:"root_steps_that_differ"`
		Diff  string   `json:"report_diff"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	read := func(id string) []string {
		_, out, _ := s.gb(t, s.key, "research", "sources", id, "--tree", "-o", "json")
		var p sourcesPage
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		var urls []string
		for _, x := range p.Sources {
			if x.Kind != jobs.SourceResult && !slices.Contains(urls, x.URL) {
				urls = append(urls, x.URL)
			}
		}
		slices.Sort(urls)
		return urls
	}
	ra, rb := read(a), read(b)
	if len(ra) == 0 || len(rb) == 0 {
		t.Fatalf("the researches read %d and %d sources; the comparison needs some", len(ra), len(rb))
	}
	var onlyA, onlyB []string
	both := 0
	for _, u := range ra {
		if slices.Contains(rb, u) {
			both++
		} else {
			onlyA = append(onlyA, u)
		}
	}
	for _, u := range rb {
		if !slices.Contains(ra, u) {
			onlyB = append(onlyB, u)
		}
	}
	if !slices.Equal(d.OnlyA, onlyA) || !slices.Equal(d.OnlyB, onlyB) || d.Both != both {
		t.Errorf("sources: only a %v, only b %v, both %d; the API says %v, %v, %d", d.OnlyA, d.OnlyB, d.Both, onlyA, onlyB, both)
	}
	tree := func(id string) treeResponse {
		_, out, _ := s.gb(t, s.key, "research", "tree", id, "-o", "json")
		var tr treeResponse
		if err := json.Unmarshal([]byte(out), &tr); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	if ta := tree(a); d.A.Totals.Tokens != ta.Totals.Tokens || d.A.Totals.Steps != ta.Totals.Steps || d.A.Totals.Steps == 0 {
		t.Errorf("a's totals %+v, the tree's %+v", d.A.Totals, ta.Totals)
	}
	if len(d.A.Steps) != d.A.Run.Steps || len(d.B.Steps) != d.B.Run.Steps {
		t.Errorf("root steps %d and %d listed; the roots made %d and %d", len(d.A.Steps), len(d.B.Steps), d.A.Run.Steps, d.B.Run.Steps)
	}
	for i := range max(len(d.A.Steps), len(d.B.Steps)) {
		same := i < len(d.A.Steps) && i < len(d.B.Steps) && slices.Equal(d.A.Steps[i].Tools, d.B.Steps[i].Tools)
		if same == slices.Contains(d.Steps, i+1) {
			t.Errorf("step %d: tools %v and %v, listed as differing: %v", i+1, d.A.Steps, d.B.Steps, d.Steps)
		}
	}
	if d.A.Run.Report == d.B.Run.Report || !strings.Contains(d.Diff, "--- research "+a) || !strings.Contains(d.Diff, "+++ research "+b) {
		t.Errorf("the reports' diff:\n%s", d.Diff)
	}

	code, out, _ = s.gb(t, s.key, "research", "diff", a, b)
	t.Log("\n" + out)
	for _, want := range []string{"#" + a, "#" + b, "tools the tree called", "the root's steps", "sources read by both", "the reports (unified diff)", "≠"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("diff (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	code, out, _ = s.gb(t, s.key, "research", "diff", a, a)
	if code != 0 || strings.Contains(out, "≠") || strings.Contains(out, "only by") || !strings.Contains(out, "the reports are the same") {
		t.Errorf("a research against itself (exit %d):\n%s", code, out)
	}

	other, err := jobs.CreateKey(context.Background(), s.pool, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := s.gb(t, other, "research", "diff", a, b); code != exitError || !strings.Contains(errOut, "404") {
		t.Errorf("another user's diff: exit %d, %s", code, errOut)
	}
	if code, _, errOut := s.gb(t, s.key, "research", "diff", a); code != exitUsage || !strings.Contains(errOut, "two research ids") {
		t.Errorf("one id: exit %d, %s", code, errOut)
	}
}
