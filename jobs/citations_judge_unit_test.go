package jobs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/cite"
)

// The judge's calls are bounded: at most judgeMaxClaims claims and
// judgeMaxChars characters each, at most judgeMaxCalls a report, each
// claim in one call, numbered from 1 in its call.
func TestJudgeChunks(t *testing.T) {
	items := func(chars ...int) []judgeItem {
		out := make([]judgeItem, len(chars))
		for i, c := range chars {
			out[i] = judgeItem{claim: fmt.Sprint(i), chars: c}
		}
		return out
	}
	repeat := func(n, chars int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = chars
		}
		return out
	}
	for _, tc := range []struct {
		chars []int
		want  string
	}{
		{repeat(3, 100), "[3]"},
		{repeat(100, 100), "[40 40 20]"},
		{repeat(500, 100), "[40 40 40 40]"},
		{repeat(5, 10000), "[2 2 1]"},
		{[]int{30000, 10}, "[1 1]"}, // larger than a call: a call of its own
	} {
		var sizes []int
		for _, c := range judgeChunks(items(tc.chars...)) {
			sizes = append(sizes, len(c))
			for i, it := range c {
				if it.id != i+1 {
					t.Errorf("claim %d of a call has id %d", i, it.id)
				}
			}
		}
		if got := fmt.Sprint(sizes); got != tc.want {
			t.Errorf("%d claims: calls of %s, want %s", len(tc.chars), got, tc.want)
		}
	}
}

// A judge's answer is one JSON object, fenced or with words around it; an
// answer with an unknown verdict, an id not asked or given twice, or no
// JSON, is rejected whole.
func TestParseJudgeAnswer(t *testing.T) {
	good := "Here:\n```json\n{\"verdicts\": [{\"id\": 2, \"verdict\": \"Contradicted\", \"reason\": \"says 40\"}, " +
		"{\"id\": 1, \"verdict\": \"partly\"}]}\n```"
	got, err := parseJudgeAnswer(good, 3)
	if err != nil || len(got) != 2 || got[2].verdict != cite.Contradicted || got[2].reason != "says 40" ||
		got[1].verdict != cite.Weak {
		t.Errorf("parse = %+v, %v", got, err)
	}
	for answer, why := range map[string]string{
		"supported":        "no JSON object",
		`{"verdicts": []}`: "no verdicts",
		`{"verdicts": [{"id": 1, "verdict": "yes"}]}`:                                       `"yes" is not supported, partly`,
		`{"verdicts": [{"id": 4, "verdict": "partly"}]}`:                                    "not a claim asked about (1 to 3)",
		`{"verdicts": [{"verdict": "partly"}]}`:                                             "id is missing",
		`{"verdicts": [{"id": 1, "verdict": "partly"}, {"id": 1, "verdict": "supported"}]}`: "claim 1 is judged twice",
		`{"verdicts": [{"id": 1, "verdict": "partly"}`:                                      "not the JSON asked for",
	} {
		if _, err := parseJudgeAnswer(answer, 3); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want an error saying %q", answer, err, why)
		}
	}
}

// Each judged claim brings at most judgeMaxSources sources of at most
// judgeMaxPassages passages, each cut to judgePassageChars; an uncited
// claim, an inference, a claim of absence, one of a report whose sources
// could not be read and one with no passage read are not judged.
func TestJudgeItems(t *testing.T) {
	long := strings.Repeat("a", 2*judgePassageChars)
	res := &cite.Result{Claims: []cite.Claim{
		{Index: 0, Text: "many [1][2][3][4][5]", Verdict: cite.Weak},
		{Index: 1, Text: "uncited", Verdict: cite.Uncited},
		{Index: 2, Text: "mine [1]", Verdict: cite.Inference},
		{Index: 3, Text: "none [1]", Verdict: cite.Absence},
		{Index: 4, Text: "lost [1]", Verdict: cite.NoSources},
		{Index: 5, Text: "unread [9]", Verdict: cite.Unread},
	}}
	for m := 1; m <= 5; m++ {
		res.Pairs = append(res.Pairs, cite.Pair{Claim: 0, Marker: m, Passage: "p", Passages: []string{long, "b", "c", "d"}})
	}
	res.Pairs = append(res.Pairs, cite.Pair{Claim: 5, Marker: 9, Verdict: cite.Unread})
	for i := 2; i <= 4; i++ {
		res.Pairs = append(res.Pairs, cite.Pair{Claim: i, Marker: 1, Passage: "p"})
	}
	got := judgeItems(res)
	if len(got) != 1 || got[0].claim != "many [1][2][3][4][5]" || len(got[0].sources) != judgeMaxSources {
		t.Fatalf("items %+v", got)
	}
	for _, s := range got[0].sources {
		if len(s.passages) != judgeMaxPassages || len([]rune(s.passages[0])) != judgePassageChars {
			t.Errorf("source [%d]: %d passages, the first of %d characters", s.marker, len(s.passages), len([]rune(s.passages[0])))
		}
	}
}
