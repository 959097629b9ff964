package cite

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of passages.
const (
	// maxPassage bounds each passage kept with a verdict, in characters.
	maxPassage = 1000
	// maxPassages is how many passages a pair keeps for a judge.
	maxPassages = 3
	// maxBlockWindow bounds a window of whole paragraphs, in characters,
	// and maxBlocks its number of paragraphs.
	maxBlockWindow = 1200
	maxBlocks      = 3
)

// sentence is one sentence of a document, prepared for the test.
type sentence struct {
	text    string          // as written, spaces collapsed, backticks dropped
	lower   string          // flat(text)
	stems   map[string]bool // its content stems
	numbers map[string]bool // its numbers, in digits, and their lengths in time
	block   int             // its paragraph's index
}

func newSentence(s string, block int) sentence {
	s = collapse(strings.ReplaceAll(straighten(s), "`", ""))
	out := sentence{text: s, lower: flat(s), stems: map[string]bool{}, numbers: map[string]bool{}, block: block}
	words := wordRE.FindAllString(out.lower, -1)
	for _, w := range words {
		if contentWord(w) {
			out.stems[stem(w)] = true
		}
	}
	for _, n := range numbersIn(s, words, true) {
		out.numbers[n.digits] = true
		if n.duration != "" {
			out.numbers[n.duration] = true
		}
		// "1.21.3" holds "1.21".
		for d := n.digits; strings.Count(d, ".") >= 2; {
			d = d[:strings.LastIndexByte(d, '.')]
			out.numbers[d] = true
		}
	}
	return out
}

// has reports whether the sentence holds a required item by itself.
func (s *sentence) has(it item, pkgs, known map[string]bool) bool {
	switch it.kind {
	case itemNumber:
		return s.numbers[it.text] || it.alt != "" && s.numbers[it.alt]
	case itemCode:
		if it.ident {
			return identIn(s.text, s.lower, it.text, pkgs, known)
		}
		return strings.Contains(s.text, it.text)
	case itemName:
		return hasWord(s.lower, it.text)
	default:
		return strings.Contains(s.lower, it.text)
	}
}

// identIn reports whether a text holds an identifier: written whole; or,
// when qualified by the package the document is about (or by a lower-case
// name that is no known package: a variable), its rest; or, for "T.M",
// M as a word and T as a word in any case (as in "func (s *T) M" or
// "M ... the t").
func identIn(text, lower, id string, pkgs, known map[string]bool) bool {
	if hasWord(text, id) {
		return true
	}
	parts := strings.Split(id, ".")
	if len(parts) < 2 {
		return false
	}
	first := parts[0]
	if lf := strings.ToLower(first); pkgs[lf] || lf == first && !known[lf] {
		return identIn(text, lower, strings.Join(parts[1:], "."), pkgs, known)
	}
	return hasWord(text, parts[len(parts)-1]) && hasWord(lower, strings.ToLower(parts[len(parts)-2]))
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

// window is a passage: sentences [start, end) and the definition that
// heads them (head < start), or -1.
type window struct {
	start, end, head int
	missing          []item
	score            float64
	size             int
}

// windows lists a text's passages: every run of up to w sentences, every
// run of up to maxBlocks paragraphs that fits maxBlockWindow;
// each with the definition that heads its first sentence.
func windows(t *text, w int) []window {
	n := len(t.sentences)
	var out []window
	add := func(s, e int) {
		h := t.heads[s]
		if h >= s {
			h = -1
		}
		out = append(out, window{start: s, end: e, head: h})
	}
	for s := 0; s < n; s++ {
		add(s, min(s+w, n))
	}
	for b := range t.blocks {
		for k := b; k < len(t.blocks) && k <= b+maxBlocks-1; k++ {
			s, e := t.blocks[b][0], t.blocks[k][1]
			if e-s > w && t.chars(s, e) <= maxBlockWindow {
				add(s, e)
			}
		}
	}
	return out
}

// chars is the length of sentences [s, e).
func (t *text) chars(s, e int) int {
	n := 0
	for i := s; i < e; i++ {
		n += len(t.sentences[i].text) + 1
	}
	return n
}

// joined is a window's text and its flat form, its head first: a phrase
// that wrapping or a sentence end cut in two is found whole there.
func (t *text) joined(w window) (string, string) {
	var b, l strings.Builder
	if w.head >= 0 {
		b.WriteString(t.sentences[w.head].text + " ")
		l.WriteString(t.sentences[w.head].lower + " ")
	}
	for i := w.start; i < w.end; i++ {
		b.WriteString(t.sentences[i].text + " ")
		l.WriteString(t.sentences[i].lower + " ")
	}
	return b.String(), l.String()
}

// passage is a window's text: its head, then its sentences.
func (t *text) passage(w window) string {
	parts := make([]string, 0, w.end-w.start+1)
	if w.head >= 0 {
		parts = append(parts, t.sentences[w.head].text, "…")
	}
	for i := w.start; i < w.end; i++ {
		parts = append(parts, t.sentences[i].text)
	}
	return clip(strings.Join(parts, " "), maxPassage)
}

// ranked scores every window of t for a claim's features and returns
// them best first: fewest missing items, then highest score, then
// shortest, then earliest.
func ranked(t *text, f *claimFeatures, w int, known map[string]bool) []window {
	req := f.required()
	n := len(t.sentences)
	anywhere := make([]bool, len(req))
	for k, it := range req {
		anywhere[k] = t.holdsAnywhere(it)
	}
	hasReq := make([][]bool, n)
	hasStem := make([][]bool, n)
	partial := make([][]bool, n)
	for i := range t.sentences {
		s := &t.sentences[i]
		hasReq[i] = make([]bool, len(req))
		partial[i] = make([]bool, len(req))
		for k, it := range req {
			hasReq[i][k] = s.has(it, t.pkgs, known) || anywhere[k]
			partial[i][k] = !hasReq[i][k] && strings.Contains(s.lower, probe(it))
		}
		hasStem[i] = make([]bool, len(f.stems))
		for k, st := range f.stems {
			hasStem[i][k] = s.stems[st]
		}
	}
	weights := t.weights(f.stems)
	ws := windows(t, w)
	for i := range ws {
		scoreWindow(t, &ws[i], req, weights, [3][][]bool{hasReq, hasStem, partial}, known)
	}
	slices.SortFunc(ws, func(a, b window) int {
		return cmp.Or(cmp.Compare(len(a.missing), len(b.missing)), cmp.Compare(b.score, a.score),
			cmp.Compare(a.size, b.size), cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	return ws
}

// probe is a part of a quotation or code item that a sentence holds when
// the item runs across it and the next: its first word, or an
// identifier's last part.
func probe(it item) string {
	switch {
	case it.kind == itemQuote:
		return strings.SplitN(it.text, " ", 2)[0]
	case it.kind == itemCode && it.ident:
		return strings.ToLower(lastPart(it.text))
	case it.kind == itemCode:
		return strings.ToLower(strings.SplitN(it.text, " ", 2)[0])
	}
	return "\x00"
}

// holdsAnywhere reports whether an item holds for every passage of a
// text: a name the document has anywhere, a code span that names the
// package the document is about or that its subject holds.
func (t *text) holdsAnywhere(it item) bool {
	switch {
	case it.kind == itemName:
		return hasWord(t.flat, it.text)
	case it.kind == itemCode && !it.ident:
		return t.pkgs[strings.ToLower(it.text)] || strings.Contains(t.subject.text, it.text)
	}
	return false
}

// weights are the weights of a claim's stems in a text: a stem that few
// of its sentences hold weighs more than one most hold (1 + ln(n/(1+df))),
// and a stem no sentence holds (a word of the claim's own) weighs as the
// claim's other stems do on average.
func (t *text) weights(stems []string) []float64 {
	n := float64(len(t.sentences))
	out := make([]float64, len(stems))
	sum, known := 0.0, 0
	for k, st := range stems {
		if df := t.df[st]; df > 0 {
			out[k] = max(0.5, 1+math.Log(n/float64(1+df)))
			sum += out[k]
			known++
		}
	}
	mean := 1.0
	if known > 0 {
		mean = sum / float64(known)
	}
	for k, st := range stems {
		if t.df[st] == 0 {
			out[k] = mean
		}
	}
	return out
}

// scoreWindow finds what a window misses and the weighted share of stems
// it holds.
// has holds, by sentence and item: the item is there, the stem is there,
// and the item may start there and run on.
func scoreWindow(t *text, w *window, req []item, weights []float64, has [3][][]bool, known map[string]bool) {
	hasReq, hasStem, partial := has[0], has[1], has[2]
	rows := func(k int, m [][]bool) bool {
		if w.head >= 0 && m[w.head][k] {
			return true
		}
		for i := w.start; i < w.end; i++ {
			if m[i][k] {
				return true
			}
		}
		return false
	}
	var text, lower string
	for k, it := range req {
		if rows(k, hasReq) {
			continue
		}
		if (it.kind == itemQuote || it.kind == itemCode) && rows(k, partial) {
			if text == "" {
				text, lower = t.joined(*w)
			}
			if it.kind == itemQuote && strings.Contains(lower, it.text) ||
				it.kind == itemCode && !it.ident && strings.Contains(text, it.text) ||
				it.kind == itemCode && it.ident && identIn(text, lower, it.text, t.pkgs, known) {
				continue
			}
		}
		w.missing = append(w.missing, it)
	}
	found, all := 0.0, 0.0
	for k, wt := range weights {
		all += wt
		if rows(k, hasStem) {
			found += wt
		}
	}
	w.score = 1
	if all > 0 {
		w.score = math.Round(found/all*1000) / 1000
	}
	w.size = t.chars(w.start, w.end)
}

// top picks up to maxPassages windows from a ranked list, none
// overlapping another.
func top(ws []window) []window {
	var out []window
	for _, w := range ws {
		overlaps := false
		for _, o := range out {
			if w.start < o.end && o.start < w.end {
				overlaps = true
				break
			}
		}
		if !overlaps {
			out = append(out, w)
		}
		if len(out) == maxPassages {
			break
		}
	}
	return out
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

// joinedLower is a window's flat text.
func (t *text) joinedLower(w window) string {
	_, l := t.joined(w)
	return l
}
