package kb

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Passage is a part of a document that search ranks on its own: a
// section under one heading, or one piece of a long section, with where
// it is in the document's body.
type Passage struct {
	// Offset and Len are in characters (runes) of the document's body.
	Offset int `json:"offset"`
	Len    int `json:"len"`
	// Heading is the heading of the section the passage is in ("" for
	// the text before a document's first heading).
	Heading string `json:"heading"`
	// Symbols are the names the passage declares or documents, such as
	// "Server.Shutdown" or "ErrServerClosed"; search weighs them as it
	// weighs the heading, and read's find jumps to them.
	Symbols []string `json:"symbols,omitempty"`
	// First is set on a section's first passage, the one that starts at
	// its heading.
	First bool `json:"first,omitempty"`
}

// Limits of passages: a passage is cut at paragraph ends to at most
// MaxPassageLen characters (a longer paragraph at line ends, then
// anywhere), and a heading is kept to MaxHeadingLen characters and a
// passage's symbols to MaxPassageSymbols.
const (
	MaxPassageLen     = 1500
	MaxHeadingLen     = 300
	MaxPassageSymbols = 64
)

// section is a part of a body under one heading: it starts at byte start
// and runs to the next section's start. symbolsIn, when set, names the
// symbols a piece of its text declares (Go struct fields and interface
// methods).
type section struct {
	start     int
	heading   string
	symbols   []string
	symbolsIn func(text string) []string
}

// span is a passage in bytes of the body, before its offsets are counted
// in characters.
type span struct {
	start, end int
	section    *section
	first      bool
}

var (
	headingRE = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(\S.*?)[ \t#]*$`)
	fenceRE   = regexp.MustCompile("(?m)^[ \t]*(```|~~~)")
	blankRE   = regexp.MustCompile(`\n[ \t]*\n\s*`)
)

// Split cuts a text into passages: into sections at its Markdown
// headings (outside fenced code), then each section into pieces at
// paragraph ends, so that no passage is longer than MaxPassageLen.
func Split(body string) []Passage {
	return passagesOf(body, markdownSections(body))
}

// markdownSections finds the sections of a Markdown (or plain) text: one
// before its first heading, and one for each ATX heading ("## Title").
func markdownSections(body string) []section {
	fenced := fencedRanges(body)
	secs := []section{{start: 0}}
	for _, m := range headingRE.FindAllStringSubmatchIndex(body, -1) {
		if inRanges(fenced, m[0]) {
			continue
		}
		if m[0] == 0 {
			secs = secs[:0]
		}
		secs = append(secs, section{start: m[0], heading: body[m[2]:m[3]]})
	}
	return secs
}

// fencedRanges are the byte ranges of a text's fenced code blocks.
func fencedRanges(body string) [][2]int {
	var out [][2]int
	ms := fenceRE.FindAllStringIndex(body, -1)
	for i := 0; i+1 < len(ms); i += 2 {
		out = append(out, [2]int{ms[i][0], ms[i+1][1]})
	}
	if len(ms)%2 == 1 {
		out = append(out, [2]int{ms[len(ms)-1][0], len(body)})
	}
	return out
}

func inRanges(rs [][2]int, at int) bool {
	for _, r := range rs {
		if at >= r[0] && at < r[1] {
			return true
		}
	}
	return false
}

// passagesOf cuts each section of body into passages and counts their
// offsets in characters. Sections are in the order of their starts.
func passagesOf(body string, secs []section) []Passage {
	var spans []span
	for i := range secs {
		end := len(body)
		if i+1 < len(secs) {
			end = secs[i+1].start
		}
		if strings.TrimSpace(body[secs[i].start:end]) == "" {
			continue
		}
		for j, piece := range pieces(body, secs[i].start, end) {
			spans = append(spans, span{start: piece[0], end: piece[1], section: &secs[i], first: j == 0})
		}
	}
	return countRunes(body, spans)
}

// pieces cuts body[start:end] at paragraph ends into pieces of at most
// MaxPassageLen characters; a longer paragraph is cut at line ends, and a
// longer line anywhere (at a character's boundary).
func pieces(body string, start, end int) [][2]int {
	var out [][2]int
	from := start
	last := start // end of the last paragraph that fits
	for _, cut := range paragraphEnds(body, start, end) {
		if utf8.RuneCountInString(body[from:cut]) <= MaxPassageLen {
			last = cut
			continue
		}
		if last > from {
			out = append(out, [2]int{from, last})
			from = last
		}
		if utf8.RuneCountInString(body[from:cut]) > MaxPassageLen {
			long := splitLong(body, from, cut)
			out = append(out, long[:len(long)-1]...)
			from = long[len(long)-1][0]
		}
		last = cut
	}
	if from < end {
		out = append(out, [2]int{from, end})
	}
	return out
}

// paragraphEnds are the byte offsets in (start, end] where a paragraph
// of body[start:end] ends (after the blank lines that follow it), and
// end itself.
func paragraphEnds(body string, start, end int) []int {
	var cuts []int
	for _, m := range blankRE.FindAllStringIndex(body[start:end], -1) {
		cuts = append(cuts, start+m[1])
	}
	if len(cuts) == 0 || cuts[len(cuts)-1] != end {
		cuts = append(cuts, end)
	}
	return cuts
}

// splitLong cuts one long paragraph at line ends, else anywhere, into
// pieces of at most MaxPassageLen characters.
func splitLong(body string, start, end int) [][2]int {
	var out [][2]int
	for start < end {
		stop, n := start, 0
		for stop < end && n < MaxPassageLen {
			_, size := utf8.DecodeRuneInString(body[stop:])
			stop += size
			n++
		}
		if stop < end {
			if nl := strings.LastIndexByte(body[start:stop], '\n'); nl > 0 {
				stop = start + nl + 1
			}
		}
		out = append(out, [2]int{start, stop})
		start = stop
	}
	return out
}

// countRunes turns byte spans, in order, into passages with offsets in
// characters, counting the body once.
func countRunes(body string, spans []span) []Passage {
	out := make([]Passage, 0, len(spans))
	at, runes := 0, 0
	for _, s := range spans {
		runes += utf8.RuneCountInString(body[at:s.start])
		n := utf8.RuneCountInString(body[s.start:s.end])
		p := Passage{Offset: runes, Len: n, Heading: clip(s.section.heading, MaxHeadingLen), First: s.first}
		p.Symbols = append(p.Symbols, s.section.symbols...)
		if s.section.symbolsIn != nil {
			p.Symbols = append(p.Symbols, s.section.symbolsIn(body[s.start:s.end])...)
		}
		if len(p.Symbols) > MaxPassageSymbols {
			p.Symbols = p.Symbols[:MaxPassageSymbols]
		}
		out = append(out, p)
		at, runes = s.end, runes+n
	}
	return out
}

// clip cuts s to at most n characters.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// symbolWords are the words of symbols' names, for the index: the parts
// of each dotted name, and the words of a mixed-case part
// ("ReadHeaderTimeout" is read header timeout, "ErrServerClosed" err
// server closed, "HTTPServer" HTTP server), so natural words find them.
func symbolWords(symbols []string) string {
	var out []string
	seen := map[string]bool{}
	for _, s := range symbols {
		for part := range strings.SplitSeq(s, ".") {
			for _, w := range camelWords(part) {
				if k := strings.ToLower(w); !seen[k] {
					seen[k] = true
					out = append(out, w)
				}
			}
		}
	}
	return strings.Join(out, " ")
}

// camelWords splits a mixed-case name at each new word: a capital after
// a small letter or a digit, and the last capital of a run of capitals
// before a small letter.
func camelWords(name string) []string {
	rs := []rune(name)
	var out []string
	start := 0
	for i := 1; i < len(rs); i++ {
		lowerBefore := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
		acronymEnd := unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if unicode.IsUpper(rs[i]) && (lowerBefore || acronymEnd) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}
