package cite

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// abbreviations do not end a sentence (compared lower-cased, without
// their final dot).
var abbreviations = map[string]bool{"e.g": true, "i.e": true, "etc": true, "vs": true, "cf": true, "mr": true,
	"mrs": true, "dr": true, "fig": true, "no": true, "approx": true, "resp": true, "st": true, "pp": true}

// sentences cuts a one-line text into sentence spans. With markers, the
// markers right after a sentence's end belong to it.
func sentences(text string, markers bool) [][2]int {
	var out [][2]int
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := closersEnd(text, i+1)
		if markers {
			j = markersEnd(text, j)
		}
		if !endsHere(text, i, j) {
			continue
		}
		out = append(out, [2]int{start, j})
		start = j
		i = j - 1
	}
	if strings.TrimSpace(text[start:]) != "" {
		out = append(out, [2]int{start, len(text)})
	}
	return out
}

// closersEnd skips the quotes, brackets and emphasis that close a
// sentence after its final punctuation.
func closersEnd(text string, j int) int {
	for j < len(text) && strings.IndexByte(`"')*_`, text[j]) >= 0 {
		j++
	}
	for _, closer := range []string{"”", "’"} {
		if strings.HasPrefix(text[j:], closer) {
			j += len(closer)
		}
	}
	return j
}

// markersEnd skips the markers that follow position j.
func markersEnd(text string, j int) int {
	for {
		k := j
		for k < len(text) && text[k] == ' ' {
			k++
		}
		loc := markerRE.FindStringIndex(text[k:])
		if loc == nil || loc[0] != 0 {
			return j
		}
		j = k + loc[1]
	}
}

// endsHere reports whether the punctuation at i, followed by closers up to
// j, ends a sentence.
func endsHere(text string, i, j int) bool {
	if text[i] == '.' {
		k := i
		for k > 0 && (isWordByte(text[k-1]) || text[k-1] == '.') {
			k--
		}
		word := strings.ToLower(text[k:i])
		if abbreviations[word] || utf8.RuneCountInString(word) == 1 && unicode.IsLetter(rune(word[0])) {
			return false
		}
	}
	if j >= len(text) {
		return true
	}
	if text[j] != ' ' && text[j] != '\t' {
		return false
	}
	rest := strings.TrimLeft(text[j:], " \t")
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return unicode.IsUpper(r) || unicode.IsDigit(r) || strings.ContainsRune("\"'`[(“‘*_", r)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

var (
	// lineArtefactRE is what wrapping and markup put at a line's start: an
	// indent, a comment's "//", a quote's ">", a list's bullet.
	lineArtefactRE = regexp.MustCompile(`^\s*(?://+\s?|>+\s?|[-*+•]\s+)*`)
	// declRE starts a line that declares something: a Go declaration, a
	// Markdown heading.
	declRE = regexp.MustCompile(`^(?:func|type|var|const|package)\s|^#{1,6}\s`)
)

// collapse collapses runs of white space into one space.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

var (
	straightener = strings.NewReplacer("“", `"`, "”", `"`, "‘", "'", "’", "'")
	flattener    = strings.NewReplacer("“", `"`, "”", `"`, "‘", "'", "’", "'", "`", "", "*", "")
)

// straighten turns curly quotes into straight ones.
func straighten(s string) string { return straightener.Replace(s) }

// flat is the form in which quoted phrases are compared: lower-cased,
// quotes straightened, backticks and emphasis dropped, spaces collapsed.
func flat(s string) string {
	return collapse(strings.ToLower(flattener.Replace(s)))
}

// text is a document's text, cut into blocks and sentences.
type text struct {
	sentences []sentence
	// blocks are the sentence ranges of the document's paragraphs.
	blocks [][2]int
	// heads give, for each sentence, the nearest definition sentence at
	// or before it (a declaration, heading or setting's name line), or -1.
	heads []int
	// subject is the document's title and opening sentences: a name
	// found there holds for the whole document.
	subject sentence
	// flat is the whole text in the form flat gives.
	flat string
	// df counts, for each stem, the sentences that hold it.
	df map[string]int
	// pkgs are the lower-cased names of the packages the document is
	// about, as its title and references name them.
	pkgs map[string]bool
}

// prepare cuts a document's text into blocks (paragraphs: lines up to a
// blank one, their wrapping and markup undone) and sentences; title is
// the document's title and refs its references.
func prepare(title string, refs []string, body string, window int) *text {
	t := &text{pkgs: packagesOf(title, refs, body), df: map[string]int{}, flat: flat(title + " " + body)}
	head := -1
	for _, b := range paragraphs(body) {
		first := len(t.sentences)
		for i, s := range b {
			for _, sp := range sentences(s, false) {
				if st := strings.TrimSpace(s[sp[0]:sp[1]]); st != "" {
					t.sentences = append(t.sentences, newSentence(st, len(t.blocks)))
					if i == 0 && len(b) > 1 {
						head = len(t.sentences) - 1
					}
					t.heads = append(t.heads, head)
				}
			}
		}
		if len(t.sentences) > first {
			t.blocks = append(t.blocks, [2]int{first, len(t.sentences)})
		}
	}
	for i := range t.sentences {
		for st := range t.sentences[i].stems {
			t.df[st]++
		}
	}
	opening := []string{title}
	for i := 0; i < window && i < len(t.sentences); i++ {
		opening = append(opening, t.sentences[i].text)
	}
	t.subject = newSentence(strings.Join(opening, " "), -1)
	return t
}

// paragraphs splits a body into paragraphs, each a list of segments: a
// declaration or a short first line stands alone, the other lines are
// joined with spaces.
func paragraphs(body string) [][]string {
	var out [][]string
	var lines []string
	flush := func() {
		if len(lines) == 0 {
			return
		}
		next := ""
		if len(lines) > 1 {
			next = lines[1]
		}
		if standsAlone(lines[0], next) {
			out = append(out, []string{lines[0], strings.Join(lines[1:], " ")})
		} else {
			out = append(out, []string{strings.Join(lines, " ")})
		}
		lines = nil
	}
	for _, raw := range strings.Split(body, "\n") {
		line := strings.TrimSpace(lineArtefactRE.ReplaceAllString(raw, ""))
		if line == "" {
			flush()
			continue
		}
		lines = append(lines, line)
	}
	flush()
	return out
}

// standsAlone reports whether a paragraph's first line is a sentence of
// its own: a declaration or heading, or a short line that does not end
// like a wrapped sentence's part and that the next line does not
// continue (it starts with a capital letter, or there is none).
func standsAlone(line, next string) bool {
	if declRE.MatchString(line) {
		return true
	}
	if len(strings.Fields(line)) > 6 || strings.ContainsAny(line[len(line)-1:], ".,;:!?") {
		return false
	}
	r, _ := utf8.DecodeRuneInString(next)
	return next == "" || !unicode.IsLower(r)
}

var (
	pkgLineRE = regexp.MustCompile(`(?m)^\s*package\s+([\w/.-]+)`)
	pkgRefRE  = regexp.MustCompile(`pkg\.go\.dev/([\w/.-]+)`)
	pkgTitlRE = regexp.MustCompile(`^\s*([\w/.-]+)\s+package\b`)
)

// packagesOf finds the packages a document is about: "package x" in its
// title or at its start, "x package" opening its title, a pkg.go.dev
// reference. Each is known by its path and its last element.
func packagesOf(title string, refs []string, body string) map[string]bool {
	out := map[string]bool{}
	add := func(p string) {
		p = strings.ToLower(strings.Trim(p, "/."))
		if p == "" {
			return
		}
		out[p] = true
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			out[p[i+1:]] = true
		}
	}
	head := body[:min(len(body), 400)]
	for _, s := range []string{title, head} {
		for _, m := range pkgLineRE.FindAllStringSubmatch(s, 2) {
			add(m[1])
		}
	}
	if m := pkgTitlRE.FindStringSubmatch(title); m != nil {
		add(m[1])
	}
	for _, r := range refs {
		if m := pkgRefRE.FindStringSubmatch(r); m != nil {
			add(strings.SplitN(m[1], "#", 2)[0])
		}
	}
	return out
}
