package cite

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPassage bounds the passage kept with a verdict, in characters.
const maxPassage = 800

// sentence is one sentence of a document, prepared for the test.
type sentence struct {
	text    string          // as written
	lower   string          // lower-cased, curly quotes straightened, spaces collapsed
	stems   map[string]bool // its content stems
	numbers map[string]bool // its numbers, and the numbers it spells out
}

// text is a document's text, cut into sentences.
type text struct {
	sentences []sentence
	// subject is the document's title and opening sentences: a name
	// found there holds for the whole document.
	subject sentence
}

// prepare cuts a document's text into sentences for the test; title is
// the document's title.
func prepare(title, body string, window int) *text {
	t := &text{}
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		for _, sp := range sentences(line, false) {
			s := strings.TrimSpace(line[sp[0]:sp[1]])
			if s != "" {
				t.sentences = append(t.sentences, newSentence(s))
			}
		}
	}
	opening := []string{title}
	for i := 0; i < window && i < len(t.sentences); i++ {
		opening = append(opening, t.sentences[i].text)
	}
	t.subject = newSentence(strings.Join(opening, " "))
	return t
}

func newSentence(s string) sentence {
	lower := collapse(strings.ToLower(straighten(s)))
	out := sentence{text: s, lower: lower, stems: map[string]bool{}, numbers: map[string]bool{}}
	for _, w := range wordRE.FindAllString(lower, -1) {
		if utf8.RuneCountInString(w) >= 2 && !stopWords[w] {
			out.stems[stem(w)] = true
		}
		if n, ok := numberWords[w]; ok {
			out.numbers[n] = true
		}
	}
	for _, n := range numberRE.FindAllString(s, -1) {
		n = normNumber(n)
		out.numbers[n] = true
		// "1.21.3" holds "1.21".
		for i := strings.LastIndexByte(n, '.'); i > 0 && strings.Count(n[:i], ".") >= 1; i = strings.LastIndexByte(n[:i], '.') {
			out.numbers[n[:i]] = true
		}
	}
	return out
}

// straighten turns curly quotes into straight ones.
func straighten(s string) string {
	return strings.NewReplacer("“", `"`, "”", `"`, "‘", "'", "’", "'").Replace(s)
}

// has reports whether the sentence holds a required item.
func (s *sentence) has(it item) bool {
	switch it.kind {
	case itemNumber:
		return s.numbers[it.text]
	case itemCode:
		return strings.Contains(collapse(s.text), it.text)
	case itemName:
		return hasWord(s.lower, it.text)
	default:
		return strings.Contains(s.lower, it.text)
	}
}

// hasWord reports whether w occurs in s with no letter, digit or '_' on
// either side.
func hasWord(s, w string) bool {
	for i := 0; ; {
		k := strings.Index(s[i:], w)
		if k < 0 {
			return false
		}
		k += i
		before, _ := utf8.DecodeLastRuneInString(s[:k])
		after, _ := utf8.DecodeRuneInString(s[k+len(w):])
		if !wordRune(before) && !wordRune(after) {
			return true
		}
		i = k + 1
	}
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

// match is the best passage of a text for a claim.
type match struct {
	passage string
	score   float64
	missing []item
}

// best finds the best passage of t for a claim's features (see the
// package doc), with windows of up to window sentences.
func best(t *text, f *claimFeatures, window int) match {
	req := f.required()
	n := len(t.sentences)
	if n == 0 {
		return match{missing: req}
	}
	// Which required items and stems each sentence holds.
	hasReq := make([][]bool, n)
	hasStem := make([][]bool, n)
	for i := range t.sentences {
		s := &t.sentences[i]
		hasReq[i] = make([]bool, len(req))
		for k, it := range req {
			hasReq[i][k] = s.has(it) || it.kind == itemName && t.subject.has(it)
		}
		hasStem[i] = make([]bool, len(f.stems))
		for k, st := range f.stems {
			hasStem[i][k] = s.stems[st]
		}
	}
	bestStart, bestEnd, bestMissing, bestScore := -1, -1, 0, -1.0
	for start := 0; start < n; start++ {
		end := min(start+window, n)
		missing := 0
		for k, it := range req {
			if !anyOf(hasReq[start:end], k) && !spans(t.sentences[start:end], it) {
				missing++
			}
		}
		found := 0
		for k := range f.stems {
			if anyOf(hasStem[start:end], k) {
				found++
			}
		}
		score := 1.0
		if len(f.stems) > 0 {
			score = float64(found) / float64(len(f.stems))
		}
		if bestStart < 0 || missing < bestMissing || missing == bestMissing && score > bestScore {
			bestStart, bestEnd, bestMissing, bestScore = start, end, missing, score
		}
	}
	m := match{score: math.Round(bestScore*1000) / 1000}
	parts := make([]string, 0, bestEnd-bestStart)
	for i := bestStart; i < bestEnd; i++ {
		parts = append(parts, t.sentences[i].text)
	}
	m.passage = clip(strings.Join(parts, " "), maxPassage)
	for k, it := range req {
		if !anyOf(hasReq[bestStart:bestEnd], k) && !spans(t.sentences[bestStart:bestEnd], it) {
			m.missing = append(m.missing, it)
		}
	}
	return m
}

// spans reports whether a quoted phrase or a code span that no single
// sentence holds runs across two neighbouring ones: a line break of
// wrapped text (package documentation is wrapped at about 80 columns) cuts
// a sentence in two, and a phrase with it.
func spans(run []sentence, it item) bool {
	if it.kind != itemQuote && it.kind != itemCode {
		return false
	}
	for i := 0; i+1 < len(run); i++ {
		if it.kind == itemQuote && strings.Contains(run[i].lower+" "+run[i+1].lower, it.text) ||
			it.kind == itemCode && strings.Contains(collapse(run[i].text+" "+run[i+1].text), it.text) {
			return true
		}
	}
	return false
}

func anyOf(rows [][]bool, k int) bool {
	for _, r := range rows {
		if r[k] {
			return true
		}
	}
	return false
}

// clip cuts s to at most n characters, with an ellipsis when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// missingReason says what a passage lacks.
func missingReason(missing []item) string {
	parts := make([]string, len(missing))
	for i, it := range missing {
		parts[i] = fmt.Sprintf("%s %q", it.kind, it.text)
	}
	return "not in the passage: " + strings.Join(parts, ", ")
}
