package jobs

import (
	"encoding/json"
	"fmt"
	"github.com/gbresearch/gb/jobs/doctext"
	"strings"
	"unicode/utf8"
)

// Limits of fetch's find.
const (
	// findPassagesMax is how many passages one find returns.
	findPassagesMax = 10
	// findSnippetChars bounds the text shown of one passage.
	findSnippetChars = 300
)

// passage is one line of a page that holds what find looked for.
type passage struct {
	// offset is where a read reaches the passage: the start of its line,
	// or of the text just before the match in a long line.
	offset int
	// heading is the "## Heading" line of the section it is in.
	heading string
	snippet string
	// title reports a heading line.
	title bool
}

// findPassages finds the lines of text at or after character from that
// hold phrase, regardless of case, headings first and then in order; when
// no line holds the phrase itself, the lines that hold each of its
// words. all says which were found.
func findPassages(text, phrase string, from int) (found []passage, all bool) {
	phrase = strings.ToLower(strings.Join(strings.Fields(phrase), " "))
	found = matchLines(text, from, func(lower string) int { return strings.Index(lower, phrase) })
	if len(found) > 0 {
		return orderPassages(found), true
	}
	words := strings.Fields(phrase)
	found = matchLines(text, from, func(lower string) int {
		first := -1
		for _, w := range words {
			i := strings.Index(lower, w)
			if i < 0 {
				return -1
			}
			if first < 0 || i < first {
				first = i
			}
		}
		return first
	})
	return orderPassages(found), false
}

// matchLines returns the passages of the lines, ending after character
// from, in which match (given the line in lower case) finds a byte index.
func matchLines(text string, from int, match func(lower string) int) []passage {
	var out []passage
	heading, at := "", 0
	for _, line := range strings.SplitAfter(text, "\n") {
		n := utf8.RuneCountInString(line)
		body := strings.TrimRight(line, "\n")
		isHeading := headingLine(body)
		if isHeading {
			heading = body
		}
		if at+n > from {
			if i := match(strings.ToLower(body)); i >= 0 {
				out = append(out, linePassage(body, at, utf8.RuneCountInString(strings.ToLower(body)[:i]), heading, isHeading))
			}
		}
		at += n
	}
	return out
}

// linePassage is the passage of a line starting at character at whose
// match is at character col of it.
func linePassage(line string, at, col int, heading string, title bool) passage {
	p := passage{offset: at, heading: heading, title: title}
	if col > fetchPageSize/2 { // a read from the line's start would not reach it
		p.offset = at + col - findSnippetChars/2
	}
	start := max(col-findSnippetChars/3, 0)
	snippet, left := pageSlice(line, start, findSnippetChars)
	if start > 0 {
		snippet = "…" + snippet
	}
	if left > 0 {
		snippet += "…"
	}
	p.snippet = snippet
	return p
}

// orderPassages puts headings first, the rest in their order.
func orderPassages(ps []passage) []passage {
	out := make([]passage, 0, len(ps))
	for _, p := range ps {
		if p.title {
			out = append(out, p)
		}
	}
	for _, p := range ps {
		if !p.title {
			out = append(out, p)
		}
	}
	return out
}

// headingLine reports a Markdown heading: one to six "#" and a space.
func headingLine(line string) bool {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	return n >= 1 && n <= 6 && len(line) > n && line[n] == ' '
}

// renderFind writes the passages find found for the model: how many, how
// to read from one, and each with its offset and section.
func renderFind(url, phrase string, from int, found []passage, all bool, parts []doctext.Part) string {
	var b strings.Builder
	switch {
	case len(found) == 0:
		fmt.Fprintf(&b, "[find %q: no passage at or after character %d holds it or all its words]\n", phrase, from)
		return b.String()
	case all:
		fmt.Fprintf(&b, "[find %q: %d passages hold it", phrase, len(found))
	default:
		fmt.Fprintf(&b, "[find %q: no passage holds the phrase; %d hold each of its words", phrase, len(found))
	}
	if from > 0 {
		fmt.Fprintf(&b, " at or after character %d", from)
	}
	fmt.Fprintf(&b, ". To read one, call fetch with this url and its \"offset\"]\n")
	for _, p := range found[:min(len(found), findPassagesMax)] {
		fmt.Fprintf(&b, "\n- offset %d", p.offset)
		if part, ok := doctext.PartAt(parts, p.offset); ok {
			fmt.Fprintf(&b, " (%s)", part.Cite())
		}
		if p.heading != "" && !p.title {
			fmt.Fprintf(&b, ", in %q", oneLine(p.heading, 120))
		}
		fmt.Fprintf(&b, ": %s", p.snippet)
	}
	if rest := len(found) - findPassagesMax; rest > 0 {
		next := found[findPassagesMax].offset
		for _, p := range found[findPassagesMax:] {
			next = min(next, p.offset)
		}
		fmt.Fprintf(&b, "\n\n[%d more passages, the first at offset %d: call fetch with %s to list those from there]",
			rest, next, findCall(url, phrase, next))
	}
	return b.String()
}

// findCall is the arguments of a find from offset, as JSON.
func findCall(url, phrase string, offset int) string {
	u, _ := json.Marshal(url)
	f, _ := json.Marshal(phrase)
	return fmt.Sprintf(`{"url": %s, "find": %s, "offset": %d}`, u, f, offset)
}
