package cite

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

var (
	linkRE  = regexp.MustCompile(`\[([^\]]*)\]\([^)\s]*\)`)
	codeRE  = regexp.MustCompile("`([^`]+)`")
	quoteRE = regexp.MustCompile(`"([^"]+)"|“([^”]+)”`)
	emphRE  = regexp.MustCompile(`(^|[\s(])_+|_+($|[\s).,;:!?])`)
	flagRE  = regexp.MustCompile(`⚠\s*[a-z_]+`)
	// ellipsisRE cuts a quotation where its writer left words out.
	ellipsisRE = regexp.MustCompile(`\s*(?:\.\.\.|…|\[\.\.\.\]|\[…\])\s*`)
	// receiverRE is a Go method written with its receiver: "(*T).M",
	// "(t *T) M", "(T).M".
	receiverRE = regexp.MustCompile(`\(\s*(?:\w+\s+)?\*?\s*(\w+)\s*\)\s*\.?\s*(\w+)`)
	// identRE is an identifier, maybe qualified: "a.B.C".
	identRE = regexp.MustCompile(`[\p{L}_][\p{L}\p{N}_]*(?:\.[\p{L}_][\p{L}\p{N}_]*)*`)
	// wordsOnlyRE is a code span of words and options only.
	wordsOnlyRE = regexp.MustCompile(`^[\p{L}\p{N}_\s-]+$`)
)

// stripMarkup removes a claim's markers and Markdown emphasis and links,
// keeping code spans' backticks for features.
func stripMarkup(text string) string {
	text = withoutMarkers(text)
	text = linkRE.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "*", "")
	text = emphRE.ReplaceAllString(text, "$1$2")
	text = flagRE.ReplaceAllString(text, "")
	return collapse(text)
}

// withoutMarkers is text with its markers (outside code spans) removed.
func withoutMarkers(text string) string {
	locs := markerMatches(text)
	if len(locs) == 0 {
		return text
	}
	var b strings.Builder
	prev := 0
	for _, m := range locs {
		b.WriteString(text[prev:m[0]])
		prev = m[1]
	}
	b.WriteString(text[prev:])
	return b.String()
}

// Kinds of required item.
const (
	itemNumber = "number"
	itemCode   = "code"
	itemName   = "name"
	itemQuote  = "quote"
)

// item is one required item of a claim: a number (with its length in
// time, alt, when it has a unit), an identifier or code fragment, a name
// or a quoted phrase.
type item struct {
	kind, text, alt string
	// ident is set for a code item that is an identifier, matched by its
	// parts (see identIn).
	ident bool
}

// claimFeatures are what the test looks for in a passage.
type claimFeatures struct {
	items []item
	stems []string // distinct content stems
	// plain is the claim without code spans' backticks, for polarity.
	plain string
}

// required lists the items a passage must hold.
func (f *claimFeatures) required() []item { return f.items }

// features finds a claim's numbers, code, names, quoted phrases and
// content stems.
func features(text string) claimFeatures {
	var f claimFeatures
	add := func(it item) {
		if it.text != "" && !slices.Contains(f.items, it) {
			f.items = append(f.items, it)
		}
	}
	for _, m := range codeRE.FindAllStringSubmatch(text, -1) {
		for _, it := range codeItems(m[1]) {
			add(it)
		}
	}
	for _, q := range quotations(text) {
		add(item{kind: itemQuote, text: q})
	}
	plain := strings.ReplaceAll(text, "`", " ")
	for _, n := range numbersOf(codeRE.ReplaceAllStringFunc(text, numericCode), false) {
		add(item{kind: itemNumber, text: n.digits, alt: n.duration})
	}
	for _, it := range nameItems(codeRE.ReplaceAllString(text, " ∙ ")) {
		add(it)
	}
	for _, w := range wordRE.FindAllString(strings.ToLower(plain), -1) {
		if st := stem(w); contentWord(w) && !slices.Contains(f.stems, st) {
			f.stems = append(f.stems, st)
		}
	}
	f.plain = collapse(plain)
	return f
}

// numericCode keeps a code span's numbers ("90 * time.Second") and drops
// its identifiers' digits.
func numericCode(span string) string {
	return " " + identRE.ReplaceAllStringFunc(strings.Trim(span, "`"), func(id string) string {
		if strings.HasPrefix(id, "time.") {
			return id[len("time."):]
		}
		return " "
	}) + " "
}

// quotations are a text's quoted phrases of two words or more, cut at
// ellipses, in the form flat gives.
func quotations(text string) []string {
	var out []string
	for _, m := range quoteRE.FindAllStringSubmatch(text, -1) {
		for _, part := range ellipsisRE.Split(m[1]+m[2], -1) {
			q := strings.Trim(flat(part), ` .,;:!?'"`)
			if len(strings.Fields(q)) >= 2 {
				out = append(out, q)
			}
		}
	}
	return out
}

// codeItems are what a code span requires: each identifier in it that is
// qualified or exported (receivers as Go writes them folded to "T.M");
// when it has none, the words of a command, or else the span itself.
func codeItems(span string) []item {
	span = receiverRE.ReplaceAllString(span, "$1.$2")
	var out []item
	for _, id := range identRE.FindAllString(span, -1) {
		if strings.Contains(id, ".") || hasUpper(id) || strings.Contains(id, "_") {
			out = append(out, item{kind: itemCode, text: id, ident: true})
		}
	}
	if len(out) > 0 {
		return out
	}
	if words := strings.Fields(span); len(words) > 1 && wordsOnlyRE.MatchString(span) {
		// A command ("shopt -s globstar"): its words are names.
		for _, w := range words {
			if utf8.RuneCountInString(w) >= 3 && !stopWords[strings.ToLower(w)] {
				out = append(out, item{kind: itemName, text: strings.ToLower(w)})
			}
		}
		return out
	}
	return append(out, item{kind: itemCode, text: collapse(span)})
}

func hasUpper(s string) bool {
	return strings.IndexFunc(s, unicode.IsUpper) >= 0
}

// nameItems are the names of a text without its code spans: identifiers
// written without backticks, acronyms, words with digits, and capitalised words that do not
// open a sentence or clause and are not ordinary words.
func nameItems(text string) []item {
	var out []item
	start := true
	for _, tok := range strings.Fields(text) {
		w := trimToken(tok)
		opens := start || strings.ContainsAny(tok[:1], "(\"'“‘[")
		start = strings.ContainsAny(tok[len(tok)-1:], ".!?:;") || tok == "—" || tok == "–" || tok == "-" || tok == "∙"
		switch {
		case w == "" || abbreviations[strings.ToLower(w)]:
		case codeLike(w):
			out = append(out, item{kind: itemCode, text: strings.Trim(w, "."), ident: true})
		case acronym(w) || letterDigit(w):
			out = append(out, item{kind: itemName, text: strings.ToLower(w)})
		case !opens && capitalised(w):
			out = append(out, item{kind: itemName, text: strings.ToLower(w)})
		}
	}
	return out
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
// neither a stop word nor an ordinary word.
func capitalised(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	lw := strings.ToLower(w)
	return unicode.IsUpper(r) && !stopWords[lw] && !ordinaryWords[lw] && utf8.RuneCountInString(w) > 1
}

// codeLike reports whether a word looks like code: an inner capital after
// a lower-case letter, or '_' or '.' between letters.
func codeLike(w string) bool {
	var prev rune
	for i, r := range w {
		switch {
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(prev):
			return true
		case (r == '_' || r == '.') && i > 0 && i < len(w)-1 && unicode.IsLetter(prev):
			next, _ := utf8.DecodeRuneInString(w[i+1:])
			if unicode.IsLetter(next) {
				return true
			}
		}
		prev = r
	}
	return false
}

// letterDigit reports whether a word has a digit next to a letter
// ("riscv64", "HTTP2", "x509"): a name, whose digits are no number.
func letterDigit(w string) bool {
	var prev rune
	for i, r := range w {
		if i > 0 && (unicode.IsDigit(r) && unicode.IsLetter(prev) || unicode.IsLetter(r) && unicode.IsDigit(prev)) {
			return true
		}
		prev = r
	}
	return false
}

// acronym reports whether a word is wholly in capitals, of two letters or
// more (digits and '/' allowed: "HTTP/2", "TLS").
func acronym(w string) bool {
	letters := 0
	for _, r := range w {
		switch {
		case unicode.IsUpper(r):
			letters++
		case unicode.IsLower(r):
			return false
		}
	}
	return letters >= 2 && !stopWords[strings.ToLower(w)]
}
