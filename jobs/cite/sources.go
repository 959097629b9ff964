package cite

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// sourcesRE is a line that opens the sources section: a heading of
	// any level, a bold line or a plain one, with an optional colon.
	sourcesRE = regexp.MustCompile(`(?i)^#{0,6}\s*(?:\*\*|__|\*|_)?\s*(?:sources|references|bibliography|works cited|citations|` +
		`sources cited|cited sources|reference list|notes and sources)\s*:?\s*(?:\*\*|__|\*|_)?\s*:?\s*$`)
	// entryRE is a numbered entry of a sources list: "[1] …", "1. …",
	// "1) …", "(1) …", "- [1] …", "* [1]: …", "[^1]: …", "**[1]** …".
	entryRE = regexp.MustCompile(`^\s*(?:[-*+]\s+)?(?:\*\*|__)?(?:\[\^?(\d{1,4})\]|(\d{1,4})[.)]|\((\d{1,4})\))(?:\*\*|__)?[.:]?(?:\s+(.*)|$)`)
	// definitionRE is a footnote or link reference definition, an entry
	// wherever it stands: "[^1]: …", "[1]: https://…".
	definitionRE = regexp.MustCompile(`^\s*\[\^?\d{1,4}\]:\s+\S`)
	mdLinkRE     = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)
	urlRE        = regexp.MustCompile(`<?\b(?:https?|ftp|file)://[^\s<>]+>?|\bfile:[^\s<>]+|\b(?:[a-z0-9-]+\.)+(?:com|org|net|dev|io|gov|edu|info|co|uk|de)(?:/[^\s<>]*)?`)
	emphMarkRE   = regexp.MustCompile(`\*\*|__`)
)

// separators part an entry's title from its reference, tried in order.
var separators = []string{" — ", " – ", " | ", " - ", ": ", "—", "–"}

// sourcesReader reads a report's sources, line by line.
type sourcesReader struct {
	entries []Entry
	raw     []string // each entry's text, for a continuation line
	// level is the heading level of the sources section: 0 outside it, 7
	// for a section a plain or bold line opened (it ends at any heading).
	level int
}

// line reads one line of the report and reports whether it belongs to
// the sources (its heading, an entry, or any line of the section).
func (r *sourcesReader) line(line string) bool {
	trimmed := strings.TrimSpace(line)
	if m := headingRE.FindStringSubmatch(trimmed); m != nil {
		switch {
		case sourcesRE.MatchString(trimmed):
			r.level = len(m[1])
			return true
		case r.level > 0 && len(m[1]) <= r.level:
			r.level = 0
		}
		return r.level > 0
	}
	if sourcesRE.MatchString(trimmed) {
		r.level = 7
		return true
	}
	if r.level == 0 && !definitionRE.MatchString(line) {
		return false
	}
	if m := entryRE.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1] + m[2] + m[3])
		r.raw = append(r.raw, m[4])
		r.entries = append(r.entries, entry(n, m[4]))
		return true
	}
	if k := len(r.entries) - 1; k >= 0 && trimmed != "" && (line != trimmed || urlRE.MatchString(trimmed)) {
		r.raw[k] += " " + trimmed
		r.entries[k] = entry(r.entries[k].N, r.raw[k])
	}
	return true
}

// entry reads an entry's text: a Markdown link "[title](url)", or a URL
// and the rest as title in either order, or a title and a reference
// parted by a separator, or only a title.
func entry(n int, rest string) Entry {
	rest = strings.TrimSpace(emphMarkRE.ReplaceAllString(rest, ""))
	e := Entry{N: n}
	if lm := mdLinkRE.FindStringSubmatch(rest); lm != nil {
		e.Ref = lm[2]
		e.Title = trimTitle(lm[1])
		if urlRE.MatchString(e.Title) || e.Title == "" {
			e.Title = trimTitle(strings.Replace(rest, lm[0], "", 1))
		}
		return e
	}
	if u := urlRE.FindString(rest); u != "" {
		e.Ref = strings.TrimRight(strings.Trim(u, "<>"), `.,;:)]"'`)
		e.Title = trimTitle(strings.Replace(rest, u, "", 1))
		return e
	}
	for _, sep := range separators {
		if i := strings.LastIndex(rest, sep); i > 0 {
			e.Title, e.Ref = trimTitle(rest[:i]), strings.TrimSpace(rest[i+len(sep):])
			return e
		}
	}
	e.Title, e.Ref = trimTitle(rest), strings.TrimSpace(rest)
	return e
}

// trimTitle trims separators, quotes and brackets from a title's ends.
func trimTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for {
		t := strings.TrimSpace(strings.Trim(s, `—–-:|,;"'“”‘’()[]<>*_`))
		t = strings.TrimSuffix(strings.TrimSuffix(t, " —"), " –")
		if t == s {
			return s
		}
		s = t
	}
}
