package cite

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// abbreviations do not end a sentence (compared lower-cased, without
// their final dot).
var abbreviations = map[string]bool{"e.g": true, "i.e": true, "etc": true, "vs": true, "cf": true, "mr": true,
	"mrs": true, "dr": true, "fig": true, "no": true, "approx": true, "resp": true, "st": true}

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
		j := i + 1
		for j < len(text) && strings.IndexByte(`"')*_`, text[j]) >= 0 {
			j++
		}
		for _, closer := range []string{"”", "’"} {
			if strings.HasPrefix(text[j:], closer) {
				j += len(closer)
			}
		}
		if markers {
			for {
				k := j
				for k < len(text) && text[k] == ' ' {
					k++
				}
				loc := markerRE.FindStringIndex(text[k:])
				if loc == nil || loc[0] != 0 {
					break
				}
				j = k + loc[1]
			}
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
	linkRE   = regexp.MustCompile(`\[([^\]]*)\]\([^)\s]*\)`)
	codeRE   = regexp.MustCompile("`([^`]+)`")
	quoteRE  = regexp.MustCompile(`"([^"]+)"|“([^”]+)”`)
	numberRE = regexp.MustCompile(`\d+(?:[.,]\d+)*`)
	wordRE   = regexp.MustCompile(`[\p{L}\p{N}]+`)
	spaceRE  = regexp.MustCompile(`\s+`)
	emphRE   = regexp.MustCompile(`(^|[\s(])_+|_+($|[\s).,;:!?])`)
)

// stripMarkup removes a claim's markers and Markdown emphasis and links,
// keeping code spans' backticks for features.
func stripMarkup(text string) string {
	text = markerRE.ReplaceAllString(text, "")
	text = linkRE.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "*", "")
	text = emphRE.ReplaceAllString(text, "$1$2")
	text = strings.ReplaceAll(text, "⚠ unsupported", "")
	text = strings.ReplaceAll(text, "⚠ unread", "")
	return strings.TrimSpace(spaceRE.ReplaceAllString(text, " "))
}

// claimFeatures are what the test looks for in a passage.
type claimFeatures struct {
	numbers []string // normalised numbers
	code    []string // code spans, spaces collapsed
	names   []string // lower-cased names
	quotes  []string // lower-cased quoted phrases, spaces collapsed
	stems   []string // distinct content stems
}

// required lists the items a passage must hold, with their kind, for
// reasons.
func (f *claimFeatures) required() []item {
	var out []item
	for _, n := range f.numbers {
		out = append(out, item{kind: itemNumber, text: n})
	}
	for _, c := range f.code {
		out = append(out, item{kind: itemCode, text: c})
	}
	for _, n := range f.names {
		out = append(out, item{kind: itemName, text: n})
	}
	for _, q := range f.quotes {
		out = append(out, item{kind: itemQuote, text: q})
	}
	return out
}

// Kinds of required item.
const (
	itemNumber = "number"
	itemCode   = "code"
	itemName   = "name"
	itemQuote  = "quote"
)

// item is one required item of a claim.
type item struct {
	kind, text string
}

// features finds a claim's numbers, code spans, names, quoted phrases and
// content stems.
func features(text string) claimFeatures {
	var f claimFeatures
	add := func(list *[]string, s string) {
		if s != "" && !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	for _, m := range codeRE.FindAllStringSubmatch(text, -1) {
		add(&f.code, collapse(m[1]))
	}
	for _, m := range quoteRE.FindAllStringSubmatch(text, -1) {
		q := collapse(strings.ToLower(m[1] + m[2]))
		if len(strings.Fields(q)) >= 2 {
			add(&f.quotes, q)
		}
	}
	plain := strings.ReplaceAll(text, "`", " ")
	for _, n := range numberRE.FindAllString(plain, -1) {
		add(&f.numbers, normNumber(n))
	}
	for _, w := range wordRE.FindAllString(strings.ToLower(plain), -1) {
		if n, ok := numberWords[w]; ok && w != "one" {
			add(&f.numbers, n)
		}
	}
	for i, tok := range strings.Fields(plain) {
		w := trimToken(tok)
		if w == "" {
			continue
		}
		if identifierLike(w) || i > 0 && capitalised(w) {
			add(&f.names, strings.ToLower(w))
		}
	}
	for _, w := range wordRE.FindAllString(strings.ToLower(plain), -1) {
		if utf8.RuneCountInString(w) < 2 || stopWords[w] {
			continue
		}
		add(&f.stems, stem(w))
	}
	return f
}

// trimToken trims punctuation and a possessive from a whitespace token.
func trimToken(tok string) string {
	tok = strings.TrimFunc(tok, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
	for _, s := range []string{"'s", "’s"} {
		tok = strings.TrimSuffix(tok, s)
	}
	return tok
}

// capitalised reports whether a word starts with a capital letter and is
// not a stop word.
func capitalised(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r) && !stopWords[strings.ToLower(w)] && utf8.RuneCountInString(w) > 1
}

// identifierLike reports whether a word looks like code or an acronym: an
// inner capital after a lower-case letter, '_', '.' or '/' between
// characters, a digit next to a letter, or two capitals or more and no
// lower-case letter.
func identifierLike(w string) bool {
	var prev rune
	upper, lower, letters := 0, 0, 0
	for i, r := range w {
		switch {
		case unicode.IsUpper(r):
			upper++
			letters++
			if i > 0 && unicode.IsLower(prev) {
				return true
			}
		case unicode.IsLower(r):
			lower++
			letters++
			if unicode.IsDigit(prev) {
				return true
			}
		case unicode.IsDigit(r):
			if unicode.IsLetter(prev) {
				return true
			}
		case r == '_' || r == '.' || r == '/':
			if i > 0 && i < len(w)-1 {
				return true
			}
		}
		prev = r
	}
	return lower == 0 && upper >= 2 && letters == upper && !stopWords[strings.ToLower(w)]
}

// normNumber drops thousands separators.
func normNumber(n string) string {
	return strings.ReplaceAll(n, ",", "")
}

// collapse collapses runs of white space into one space.
func collapse(s string) string {
	return strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
}

// stem reduces a lower-cased word to its light stem (see the package doc).
func stem(w string) string {
	w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
	cut := func(suffix, with string) bool {
		if !strings.HasSuffix(w, suffix) || utf8.RuneCountInString(w)-utf8.RuneCountInString(suffix) < 3 {
			return false
		}
		w = strings.TrimSuffix(w, suffix) + with
		return true
	}
	switch {
	case cut("ies", "y"), cut("ied", "y"), cut("ing", ""), cut("ed", ""):
	case hasAnySuffix(w, "ses", "xes", "zes", "ches", "shes") && cut("es", ""):
	case !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && cut("s", ""):
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiou", rune(w[n-1])) && w[n-1] < utf8.RuneSelf {
		w = w[:n-1]
	}
	return w
}

func hasAnySuffix(w string, suffixes ...string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(w, s) {
			return true
		}
	}
	return false
}

// numberWords are the numbers a passage may spell out.
var numberWords = map[string]string{"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
	"six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}

// stopWords are not content words.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all also am an and any are as at be because
		been before being below between both but by can could did do does doing down during each either etc few for
		from further had has have having he her here hers herself him himself his how however i if in into is it its
		itself just may me might more most must my myself of off on once only or other others our ours out over own
		per same shall she should so some such than that the their theirs them themselves then there these they this
		those through thus to too under until up upon us very via was we were what when where whether which while who
		whom whose why will with within would yet you your yours e.g i.e eg ie`) {
		m[w] = true
	}
	return m
}()
