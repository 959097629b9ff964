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
	markerRE    = regexp.MustCompile(`\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\]`)
	headingRE   = regexp.MustCompile(`^(#{1,6})\s+(.*)$`)
	listRE      = regexp.MustCompile(`^\s*(?:[-*+]|\d{1,3}[.)])\s+`)
	fenceRE     = regexp.MustCompile("^\\s*(```|~~~)")
	ruleRE      = regexp.MustCompile(`^\s*(?:\*\s*){3,}$|^\s*(?:-\s*){3,}$|^\s*(?:_\s*){3,}$`)
	tableSepRE  = regexp.MustCompile(`^\s*\|?[\s:|-]+\|[\s:|-]*$`)
	sourcesRE   = regexp.MustCompile(`(?i)^\W*(sources|references)\W*$`)
	entryRE     = regexp.MustCompile(`^\s*(?:[-*+]\s*)?\[(\d{1,4})\]:?\s*(.*)$`)
	mdLinkRE    = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)
	emphLabelRE = regexp.MustCompile(`^\s*(?:_[^_].*_|\*[^*].*\*)\s*$`)
)

// block is a paragraph, list item or table row: a byte range of the report.
type block struct {
	start, end int
	list       bool
}

// parse splits a report into its blocks and its sources section.
func parse(report string) ([]block, []Entry) {
	var blocks []block
	var entries []Entry
	cur := block{start: -1}
	flush := func() {
		if cur.start >= 0 {
			blocks = append(blocks, cur)
		}
		cur = block{start: -1}
	}
	inFence, sourcesLevel := false, 0 // 0: not in the sources section
	for off := 0; off < len(report); {
		end := strings.IndexByte(report[off:], '\n')
		if end < 0 {
			end = len(report)
		} else {
			end += off
		}
		line, start := report[off:end], off
		off = end + 1
		trimmed := strings.TrimSpace(line)
		if fenceRE.MatchString(line) {
			flush()
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := headingRE.FindStringSubmatch(trimmed); m != nil {
			flush()
			level := len(m[1])
			switch {
			case sourcesRE.MatchString(m[2]):
				sourcesLevel = level
			case sourcesLevel > 0 && level <= sourcesLevel:
				sourcesLevel = 0
			}
			continue
		}
		if sourcesRE.MatchString(trimmed) {
			flush()
			sourcesLevel = 7 // a line that names the section ends at any heading
			continue
		}
		if sourcesLevel > 0 {
			if e, ok := parseEntry(line); ok {
				entries = append(entries, e)
			}
			continue
		}
		if trimmed == "" || ruleRE.MatchString(line) || tableSepRE.MatchString(line) || isLabel(trimmed) {
			flush()
			continue
		}
		if listRE.MatchString(line) || strings.HasPrefix(trimmed, "|") {
			flush()
			cur = block{start: start, end: end, list: true}
			continue
		}
		if cur.start < 0 {
			cur = block{start: start, end: end}
			continue
		}
		cur.end = end
	}
	flush()
	return blocks, entries
}

// isLabel reports whether a line is a label rather than prose: wholly
// emphasised, or short and ending with ':'.
func isLabel(line string) bool {
	if emphLabelRE.MatchString(line) && !markerRE.MatchString(line) {
		return true
	}
	return strings.HasSuffix(line, ":") && utf8.RuneCountInString(line) <= 80 && !markerRE.MatchString(line)
}

// parseEntry reads one line of the sources section.
func parseEntry(line string) (Entry, bool) {
	m := entryRE.FindStringSubmatch(line)
	if m == nil {
		return Entry{}, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return Entry{}, false
	}
	rest := strings.TrimSpace(m[2])
	e := Entry{N: n}
	if lm := mdLinkRE.FindStringSubmatch(rest); lm != nil {
		e.Title, e.Ref = strings.TrimSpace(lm[1]), lm[2]
		return e, true
	}
	for _, sep := range []string{" — ", " – ", " - "} {
		if i := strings.LastIndex(rest, sep); i >= 0 {
			e.Title, e.Ref = strings.TrimSpace(rest[:i]), strings.TrimSpace(rest[i+len(sep):])
			e.Ref = strings.Trim(e.Ref, "<>")
			return e, true
		}
	}
	fields := strings.Fields(rest)
	for i := len(fields) - 1; i >= 0; i-- {
		if strings.Contains(fields[i], "://") {
			e.Ref = strings.Trim(fields[i], "<>().,;")
			e.Title = strings.TrimSpace(strings.Join(fields[:i], " "))
			return e, true
		}
	}
	e.Ref = rest
	return e, true
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

// flagMarks are what Flag writes after a claim.
var flagMarks = []string{" ⚠ " + string(Unsupported), " ⚠ " + string(Unread)}

// trimFlag returns the end of text[s:e] without a flag mark Flag wrote.
func trimFlag(text string, s, e int) int {
	for _, m := range flagMarks {
		if strings.HasSuffix(text[s:e], m) {
			e -= len(m)
			s, e = trimSpan(text, s, e)
			return e
		}
	}
	return e
}

// markersOf returns the distinct source numbers a text cites, in order.
func markersOf(text string) []int {
	var out []int
	for _, m := range markerRE.FindAllStringSubmatchIndex(text, -1) {
		if m[1] < len(text) && text[m[1]] == '(' {
			continue // a Markdown link, not a marker
		}
		for _, p := range strings.Split(text[m[2]:m[3]], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err == nil && n > 0 && !slices.Contains(out, n) {
				out = append(out, n)
			}
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
	return len(f.numbers) > 0 || len(f.names) > 0 || len(f.stems) >= 5
}
