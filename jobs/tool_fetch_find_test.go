package jobs

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFindPassages: find matches regardless of case, lists headings
// first, falls back to lines holding every word, searches from an
// offset, and gives offsets from which a read of fetchPageSize
// characters reaches the match, even in a long line.
func TestFindPassages(t *testing.T) {
	long := strings.Repeat("é", fetchPageSize) + " the Vacuum Delay at the end"
	text := "# Manual\n\nIntro on vacuum delay.\n\n## Vacuum Delay\n\nThe delay of VACUUM is set here.\n\n" + long + "\n\n## Other\n\nvacuum then some delay"
	read := func(offset int) string { part, _ := pageSlice(text, offset, fetchPageSize); return part }

	found, all := findPassages(text, "vacuum  DELAY", 0)
	if !all || len(found) != 3 || !found[0].title || found[0].heading != "## Vacuum Delay" {
		t.Fatalf("found %+v (all %v): want the heading first, then two lines", found, all)
	}
	if found[1].heading != "# Manual" || found[2].heading != "## Vacuum Delay" {
		t.Errorf("sections %q, %q", found[1].heading, found[2].heading)
	}
	for _, p := range found {
		if !strings.Contains(strings.ToLower(read(p.offset)), "vacuum delay") {
			t.Errorf("a read from offset %d does not reach the passage %q", p.offset, p.snippet)
		}
	}
	if p := found[2]; p.offset <= strings.Index(text, long) || !strings.HasPrefix(p.snippet, "…") {
		t.Errorf("in a long line the offset %d must be near the match; snippet %q", p.offset, p.snippet)
	}

	from := utf8.RuneCountInString(text[:strings.Index(text, "## Other")])
	words, all := findPassages(text, "delay vacuum", from)
	if all || len(words) != 1 || words[0].heading != "## Other" || !strings.HasPrefix(read(words[0].offset), "vacuum then some delay") {
		t.Errorf("every word from %d: %+v (all %v)", from, words, all)
	}
	if none, _ := findPassages(text, "autovacuum", 0); len(none) != 0 {
		t.Errorf("found %+v for a phrase not in the text", none)
	}
	if out := renderFind("https://x.example/", "autovacuum", 0, nil, false, nil); !strings.Contains(out, "no passage") {
		t.Errorf("no passage: %q", out)
	}
}

// TestRenderFindPages: past findPassagesMax passages, the result says how
// many more there are and the call that lists them.
func TestRenderFindPages(t *testing.T) {
	var b strings.Builder
	for i := range 14 {
		fmt.Fprintf(&b, "line %d holds the word\n", i)
	}
	found, all := findPassages(b.String(), "WORD", 0)
	out := renderFind("https://x.example/a", "WORD", 0, found, all, nil)
	next := found[findPassagesMax].offset
	want := fmt.Sprintf(`[4 more passages, the first at offset %d: call fetch with {"url": "https://x.example/a", "find": "WORD", "offset": %d} to list those from there]`, next, next)
	if strings.Count(out, "\n- offset ") != findPassagesMax || !strings.Contains(out, want) {
		t.Errorf("result:\n%s\nwant the note %s", out, want)
	}
	rest, _ := findPassages(b.String(), "WORD", next)
	if len(rest) != 4 {
		t.Errorf("the call listed %d passages, want 4", len(rest))
	}
}
