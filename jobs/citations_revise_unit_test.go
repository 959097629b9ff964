package jobs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/prompts"
)

// The revision note names the worst claims first (contradicted, then
// unsupported, then unread), at most reviseMaxClaims of them within
// reviseMaxChars, says how many more there are, and shows the one form of
// a Sources entry when the report's could not be read.
func TestReviseNoteBounded(t *testing.T) {
	res := &cite.Result{SourcesUnparsed: true}
	add := func(v cite.Verdict, text string) {
		i := len(res.Claims)
		res.Claims = append(res.Claims, cite.Claim{Index: i, Text: text, Verdict: v})
		res.Pairs = append(res.Pairs, cite.Pair{Claim: i, Marker: 1, Ref: "https://e.org", Verdict: v,
			Reason: "why", Passage: strings.Repeat("p", 1000)})
	}
	for i := range 20 {
		add(cite.Unsupported, fmt.Sprintf("unsupported claim %d [1]", i))
	}
	add(cite.Supported, "fine [1]")
	add(cite.Contradicted, "the opposite [1]")
	add(cite.Unread, "never read [1]")
	note, err := reviseNote(prompts.Embedded(), res)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(note, "\n- \"")
	if !strings.HasPrefix(note, reviseNotePrefix) || !strings.Contains(note, prompts.SourcesExample) ||
		strings.Index(note, "the opposite") > strings.Index(note, "unsupported claim 0") || lines != reviseMaxClaims ||
		!strings.Contains(note, fmt.Sprintf("%d more claims", 22-reviseMaxClaims)) || strings.Contains(note, "fine [1]") {
		t.Errorf("note of %d claims:\n%s", lines, note)
	}
	if n := len(note); n > reviseMaxChars+2000 {
		t.Errorf("note of %d characters", n)
	}
	// Claims of 1,000 characters: the characters bound comes first.
	res = &cite.Result{}
	for i := range 20 {
		add(cite.Unsupported, strings.Repeat("x", 1000)+fmt.Sprint(i))
	}
	note, _ = reviseNote(prompts.Embedded(), res)
	if lines := strings.Count(note, "\n- \""); lines == 0 || lines >= reviseMaxClaims || strings.Contains(note, prompts.SourcesExample) {
		t.Errorf("note of %d long claims:\n%s", lines, note)
	}
}
