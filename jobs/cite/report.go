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
	emphLabelRE = regexp.MustCompile(`^\s*(?:_[^_].*_|\*[^*].*\*)\s*$`)
)

// block is a paragraph, list item or table row: a byte range of the report.
type block struct {
	start, end int
	list       bool
}

// parse splits a report into its blocks (markdownBlocks) and its sources:
// the sources reader reads every line outside code blocks, and a block
// ends where a line of the sources begins (a block that begins there is
// none).
func parse(report string) ([]block, []Entry) {
	parsed, code := markdownBlocks(report)
	var src sourcesReader
	var sources [][2]int // the lines of the sources
	for off := 0; off < len(report); {
		end := strings.IndexByte(report[off:], '\n')
		if end < 0 {
			end = len(report)
		} else {
			end += off
		}
		line, start := report[off:end], off
		off = end + 1
		if inCode(code, start, end) {
			continue
		}
		if src.line(line) {
			sources = append(sources, [2]int{start, end})
		}
	}
	var blocks []block
	for _, b := range parsed {
		for _, l := range sources {
			if l[1] < b.start || l[0] >= b.end {
				continue
			}
			if l[0] <= b.start {
				b.end = b.start // it begins in the sources
			} else {
				b.end = min(b.end, l[0])
			}
		}
		for b.end > b.start && strings.ContainsRune(" \t\r\n", rune(report[b.end-1])) {
			b.end--
		}
		if b.end > b.start {
			blocks = append(blocks, b)
		}
	}
	return blocks, src.entries
}

// inCode reports whether the line [s, e) lies within a code block.
func inCode(code [][2]int, s, e int) bool {
	for _, c := range code {
		if s >= c[0] && e <= c[1] {
			return true
		}
	}
	return false
}

// isLabel reports whether a line that stands alone (a paragraph's first
// line that a break follows) is a label rather than prose: wholly
// emphasised, or short and ending with ':'.
func isLabel(line string) bool {
	cites := len(markerMatches(line)) > 0
	if emphLabelRE.MatchString(line) && !cites {
		return true
	}
	return strings.HasSuffix(line, ":") && utf8.RuneCountInString(line) <= 80 && !cites
}

// claims cuts the blocks into claims; blocks with no marker keep only
// their factual sentences, as uncited claims.
func claims(report string, blocks []block) []Claim {
	var out []Claim
	for _, b := range blocks {
		text := strings.ReplaceAll(report[b.start:b.end], "\n", " ")
		// Sentences end, and markers stand, outside code spans only.
		masked := maskCode(text)
		var spans [][2]int
		if b.list && trailingMarkersOnly(text[:trimFlag(text, 0, len(text))]) {
			spans = [][2]int{{0, len(text)}}
		} else {
			spans = sentences(masked, true)
		}
		for _, sp := range spans {
			s, e := trimSpan(text, sp[0], sp[1])
			e = trimFlag(text, s, e)
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
	locs := markerMatches(text)
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

// markerMatches are the submatch spans of markerRE in a text, outside its
// code spans ("`a[1]`" cites nothing).
func markerMatches(text string) [][]int {
	return markerRE.FindAllStringSubmatchIndex(maskCode(text), -1)
}

// markerLocs are the spans of a text's markers, Markdown links and code
// spans left out.
func markerLocs(text string) [][]int {
	var out [][]int
	for _, m := range markerMatches(text) {
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
