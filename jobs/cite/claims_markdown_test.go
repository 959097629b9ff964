package cite

import (
	"slices"
	"strings"
	"testing"
)

// claimsOf checks report and returns its claims' texts and markers.
func claimsOf(t *testing.T, report string) ([]string, [][]int) {
	t.Helper()
	res := Check(report, nil)
	var texts []string
	var markers [][]int
	for _, c := range res.Claims {
		texts = append(texts, c.Text)
		markers = append(markers, c.Markers)
		if got := strings.Join(strings.Fields(report[c.Start:c.End]), " "); got != strings.Join(strings.Fields(c.Text), " ") {
			t.Errorf("claim %q spans %q of the report", c.Text, report[c.Start:c.End])
		}
	}
	return texts, markers
}

// wantClaims compares claims with the texts and markers wanted.
func wantClaims(t *testing.T, report string, want []string, wantMarkers [][]int) {
	t.Helper()
	got, markers := claimsOf(t, report)
	if !slices.Equal(got, want) {
		t.Fatalf("claims = %q, want %q", got, want)
	}
	for i := range want {
		if !slices.Equal(markers[i], wantMarkers[i]) {
			t.Errorf("claim %q cites %v, want %v", got[i], markers[i], wantMarkers[i])
		}
	}
}

// TestClaimsNestedListItems: each item of a nested list is a claim of its
// own, its markers at its end (a sentence before them included), and an
// item's lazy continuation line belongs to it.
func TestClaimsNestedListItems(t *testing.T) {
	report := "Channels:\n" +
		"- Unbuffered channels block the sender until a receiver takes the value. They synchronise both [1]\n" +
		"  - Buffered channels block only when the buffer is full [2].\n" +
		"    1. A nil channel blocks forever in both directions [1][3]\n" +
		"  - Closing a channel wakes every receiver\n" +
		"waiting on it [2]\n" +
		"\n## Sources\n[1] https://go.dev/ref/spec\n[2] https://go.dev/doc/effective_go\n[3] https://go.dev/ref/mem\n"
	wantClaims(t, report, []string{
		"Unbuffered channels block the sender until a receiver takes the value. They synchronise both [1]",
		"Buffered channels block only when the buffer is full [2].",
		"A nil channel blocks forever in both directions [1][3]",
		"Closing a channel wakes every receiver waiting on it [2]",
	}, [][]int{{1}, {2}, {1, 3}, {2}})
}

// TestClaimsCodeSpans: brackets inside a code span ("`a[1]`", "`m[2:3]`")
// are code, not markers: a sentence holding only them is uncited, and a
// sentence citing [2] after one cites 2 alone; nor does a sentence end
// inside a code span ("`fmt.Println. Then`").
func TestClaimsCodeSpans(t *testing.T) {
	report := "Indexing `a[1]` of a slice with 1 element panics at run time.\n\n" +
		"The expression ``s[1]`` reads the second element of `s` [2]. A slice expression `m[2:3]` shares the array [1].\n\n" +
		"Calling `fmt.Println. Then` with no arguments prints one newline [1].\n\n" +
		"## Sources\n[1] https://go.dev/ref/spec\n[2] https://go.dev/tour\n"
	wantClaims(t, report, []string{
		"Indexing `a[1]` of a slice with 1 element panics at run time.",
		"The expression ``s[1]`` reads the second element of `s` [2].",
		"A slice expression `m[2:3]` shares the array [1].",
		"Calling `fmt.Println. Then` with no arguments prints one newline [1].",
	}, [][]int{nil, {2}, {1}, {1}})
	res := Check(report, nil)
	if res.Claims[0].Verdict != Uncited || res.Counts.Uncited != 1 {
		t.Errorf("the sentence with only `a[1]` is %s, want uncited", res.Claims[0].Verdict)
	}
	if got := stripMarkup("Reading `a[1]` is safe [1]."); got != "Reading `a[1]` is safe ." && got != "Reading `a[1]` is safe." {
		t.Errorf("stripMarkup kept %q; the code span's brackets are its text", got)
	}
}

// TestClaimsFencedCode: nothing inside a code block is a claim or a
// source: a fence of four backticks holding a line of three, a fence in a
// list item, a fence that is never closed, and an indented code block
// (after a paragraph: after a list item, the same indent would continue
// the item).
func TestClaimsFencedCode(t *testing.T) {
	report := "The runtime starts one goroutine per call of go [1].\n\n" +
		"````markdown\n```\nThe runtime never starts a goroutine [2].\n```\n[9] https://example.com/in-code\n````\n\n" +
		"- The scheduler parks a goroutine blocked on a channel [1].\n\n" +
		"  ```go\n  ch <- v // blocks forever [3]\n  ```\n\n" +
		"Then it runs the next goroutine in the queue [1].\n\n" +
		"    an indented code block is code [3].\n\n" +
		"## Sources\n[1] https://go.dev/ref/spec\n[2] https://go.dev/doc\n\n" +
		"~~~\nThe tail of the report is code [1].\n"
	wantClaims(t, report, []string{
		"The runtime starts one goroutine per call of go [1].",
		"The scheduler parks a goroutine blocked on a channel [1].",
		"Then it runs the next goroutine in the queue [1].",
	}, [][]int{{1}, {1}, {1}})
	res := Check(report, nil)
	if len(res.Sources) != 2 || res.Sources[1].Ref != "https://go.dev/doc" {
		t.Errorf("sources = %+v, want [1] and [2] only (none from a code block)", res.Sources)
	}
}

// TestClaimsHeadings: a heading holds no claim, an ATX one or a setext one
// (a line underlined by "---" or "===", which a line parser takes for a
// paragraph and a rule), while a "---" after a blank line is a rule.
func TestClaimsHeadings(t *testing.T) {
	report := "# Goroutines cost 2 KB of stack at first [1]\n\n" +
		"Goroutines are scheduled onto threads by the runtime [1]\n" +
		"===\n\n" +
		"A goroutine starts with a small stack that grows as needed [1].\n\n" +
		"Stacks shrink during garbage collection [2]\n" +
		"---\n\n" +
		"A blocked goroutine holds no thread [2].\n\n---\n\n" +
		"Sources\n-------\n[1] https://go.dev/doc/faq\n[2] https://go.dev/ref/mem\n"
	wantClaims(t, report, []string{
		"A goroutine starts with a small stack that grows as needed [1].",
		"A blocked goroutine holds no thread [2].",
	}, [][]int{{1}, {2}})
	if res := Check(report, nil); len(res.Sources) != 2 {
		t.Errorf("sources = %+v, want 2 under a setext heading", res.Sources)
	}
}
