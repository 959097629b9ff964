package cite

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Claim is one sentence or list item of a report: cited when it carries
// markers, uncited otherwise (only factual ones are kept).
type Claim struct {
	// Index is the claim's place among the report's claims, from 0.
	Index int `json:"index"`
	// Text is the claim as written, markers included.
	Text string `json:"text"`
	// Markers are the source numbers it cites, in order, each once.
	Markers []int `json:"markers"`
	// Start and End are the claim's byte offsets in the report; End is
	// just after its last marker or punctuation.
	Start int `json:"-"`
	End   int `json:"-"`
	// Verdict is the best verdict of its pairs, or Uncited.
	Verdict Verdict `json:"verdict"`
}

// Entry is one line of a report's sources section.
type Entry struct {
	N     int    `json:"n"`
	Title string `json:"title"`
	Ref   string `json:"ref"`
}

var (
	markerRE    = regexp.MustCompile(`\[\^?(\d{1,4}(?:\s*[,–-]\s*\^?\d{1,4})*)(?:,?\s*(?:pp?\.|pages?|slides?|sheets?)\s*(\d{1,5})(?:\s*[–-]\s*\d{1,5})?)?\]`)
	headingRE   = regexp.MustCompile(`^(#{1,6})\s+(.*)$`)
	listRE      = regexp.MustCompile(`^\s*(?:[-*+]|\d{1,3}[.)])\s+`)
	fenceRE     = regexp.MustCompile("^\\s*(```|~~~)")
	ruleRE      = regexp.MustCompile(`^\s*(?:\*\s*){3,}$|^\s*(?:-\s*){3,}$|^\s*(?:_\s*){3,}$`)
	tableSepRE  = regexp.MustCompile(`^\s*\|?[\s:|-]+\|[\s:|-]*$`)
	emphLabelRE = regexp.MustCompile(`^\s*(?:_[^_].*_|\*[^*].*\*)\s*$`)
)

// block is a paragraph, list item or table row: a byte range of the report.
type block struct {
	start, end int
	list       bool
}

// parse splits a report into its blocks and its sources.
func parse(report string) ([]block, []Entry) {
	var blocks []block
	var src sourcesReader
	cur := block{start: -1}
	flush := func() {
		if cur.start >= 0 {
			blocks = append(blocks, cur)
		}
		cur = block{start: -1}
	}
	inFence := false
	for off := 0; off < len(report); {
		end := strings.IndexByte(report[off:], '\n')
		if end < 0 {
			end = len(report)
		} else {
			end += off
		}
		line, start := report[off:end], off
		off = end + 1
		if fenceRE.MatchString(line) {
			flush()
			inFence = !inFence
			continue
		}
		if inFence || src.line(line) {
			flush()
			continue
		}
		trimmed := strings.TrimSpace(line)
		switch {
		case headingRE.MatchString(trimmed), trimmed == "" || ruleRE.MatchString(line) || tableSepRE.MatchString(line),
			cur.start < 0 && isLabel(trimmed) && breakFollows(report, off):
			flush()
		case listRE.MatchString(line) || strings.HasPrefix(trimmed, "|"):
			flush()
			cur = block{start: start, end: end, list: true}
		case cur.start < 0:
			cur = block{start: start, end: end}
		default:
			cur.end = end
		}
	}
	flush()
	return blocks, src.entries
}

// breakFollows reports whether the line at off ends a paragraph's run:
// there is none, or it is blank, a list item or a heading.
func breakFollows(report string, off int) bool {
	if off >= len(report) {
		return true
	}
	next, _, _ := strings.Cut(report[off:], "\n")
	return strings.TrimSpace(next) == "" || listRE.MatchString(next) || headingRE.MatchString(strings.TrimSpace(next))
}

// isLabel reports whether a line that stands alone (a paragraph's first
// line that a break follows) is a label rather than prose: wholly
// emphasised, or short and ending with ':'.
func isLabel(line string) bool {
	if emphLabelRE.MatchString(line) && !markerRE.MatchString(line) {
		return true
	}
	return strings.HasSuffix(line, ":") && utf8.RuneCountInString(line) <= 80 && !markerRE.MatchString(line)
}

// claims cuts the blocks into claims; blocks with no marker keep only
// their factual sentences, as uncited claims.
func claims(report string, blocks []block) []Claim {
	var out []Claim
	for _, b := range blocks {
		text := strings.ReplaceAll(report[b.start:b.end], "\n", " ")
		var spans [][2]int
		if b.list && trailingMarkersOnly(text[:trimFlag(text, 0, len(text))]) {
			spans = [][2]int{{0, len(text)}}
		} else {
			spans = sentences(text, true)
		}
		for _, sp := range spans {
			s, e := trimSpan(text, sp[0], sp[1])
			e = trimFlag(text, s, e)
			if s >= e {
				continue
			}
			if s == 0 {
				if loc := listRE.FindStringIndex(text); loc != nil && b.list {
					s = loc[1]
				}
			}
			if s >= e {
				continue
			}
			c := Claim{Text: text[s:e], Start: b.start + s, End: b.start + e, Markers: markersOf(text[s:e])}
			if len(c.Markers) == 0 {
				if !factual(c.Text) {
					continue
				}
				c.Verdict = Uncited
			}
			c.Index = len(out)
			out = append(out, c)
		}
	}
	return out
}

// trailingMarkersOnly reports whether every marker of a list item stands
// at its end.
func trailingMarkersOnly(text string) bool {
	locs := markerRE.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		return false
	}
	tail := strings.TrimRightFunc(text, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(".;:!?", r) })
	for i := len(locs) - 1; i >= 0; i-- {
		if locs[i][1] < len(tail) && strings.TrimSpace(tail[locs[i][1]:]) != "" {
			return false
		}
		tail = strings.TrimRightFunc(tail[:locs[i][0]], unicode.IsSpace)
		tail = strings.TrimRightFunc(tail, func(r rune) bool { return strings.ContainsRune(".;:!?", r) || unicode.IsSpace(r) })
	}
	return true
}

// flagMarkRE is a mark Flag wrote at the end of a claim.
var flagMarkRE = regexp.MustCompile(` ⚠ (?:unsupported|contradicted|unread)$`)

// trimFlag returns the end of text[s:e] without a flag mark Flag wrote.
func trimFlag(text string, s, e int) int {
	if loc := flagMarkRE.FindStringIndex(text[s:e]); loc != nil {
		_, e = trimSpan(text, s, s+loc[0])
	}
	return e
}

// part is a piece of a claim checked against its own sources.
type part struct {
	text    string
	markers []int
}

// claimParts cuts a claim after each group of adjacent markers: the text
// before [1] is checked against source 1, the text from there to [2]
// against source 2, and text after the last group belongs to the last
// part. A claim with one group, or with a part too short to check alone
// (fewer than three content words), is one part.
func claimParts(text string) []part {
	var ends []int
	last := -1
	for _, loc := range markerLocs(text) {
		if last >= 0 && strings.Trim(text[last:loc[0]], " ,;.") == "" {
			ends[len(ends)-1] = loc[1]
		} else {
			ends = append(ends, loc[1])
		}
		last = loc[1]
	}
	whole := []part{{text: text, markers: markersOf(text)}}
	if len(ends) < 2 {
		return whole
	}
	ends[len(ends)-1] = len(text)
	out := make([]part, 0, len(ends))
	prev := 0
	for _, e := range ends {
		seg := text[prev:e]
		if len(features(stripMarkup(seg)).stems) < 3 {
			return whole
		}
		out = append(out, part{text: seg, markers: markersOf(seg)})
		prev = e
	}
	return out
}

// markerLocs are the spans of a text's markers, Markdown links left out.
func markerLocs(text string) [][]int {
	var out [][]int
	for _, m := range markerRE.FindAllStringSubmatchIndex(text, -1) {
		if m[1] < len(text) && text[m[1]] == '(' {
			continue
		}
		out = append(out, m)
	}
	return out
}

// markersOf returns the distinct source numbers a text cites, in order;
// a range "[1-3]" cites each number in it.
func markersOf(text string) []int {
	var out []int
	add := func(n int) {
		if n > 0 && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, m := range markerLocs(text) {
		for _, p := range strings.Split(text[m[2]:m[3]], ",") {
			lo, hi, isRange := strings.Cut(strings.ReplaceAll(p, "–", "-"), "-")
			a, err := strconv.Atoi(strings.Trim(lo, " ^"))
			if err != nil {
				continue
			}
			b, err := strconv.Atoi(strings.Trim(hi, " ^"))
			if !isRange || err != nil || b < a || b-a > 20 {
				b = a
			}
			for n := a; n <= b; n++ {
				add(n)
			}
		}
	}
	return out
}

// pagesOf maps the source numbers a text cites with a page ("[3, p. 7]",
// "[2, slide 4]") to that page.
func pagesOf(text string) map[int]int {
	out := map[int]int{}
	for _, m := range markerLocs(text) {
		if m[4] < 0 {
			continue
		}
		n, err1 := strconv.Atoi(strings.Trim(text[m[2]:m[3]], " ^"))
		page, err2 := strconv.Atoi(text[m[4]:m[5]])
		if err1 == nil && err2 == nil {
			out[n] = page
		}
	}
	return out
}

// trimSpan trims spaces from both ends of text[s:e].
func trimSpan(text string, s, e int) (int, int) {
	for s < e && text[s] == ' ' || s < e && text[s] == '\t' {
		s++
	}
	for e > s && (text[e-1] == ' ' || text[e-1] == '\t') {
		e--
	}
	return s, e
}

// factual reports whether an uncited sentence states something: a number,
// a name, or five content words or more.
func factual(text string) bool {
	f := features(stripMarkup(text))
	return len(f.items) > 0 || len(f.stems) >= 5
}
