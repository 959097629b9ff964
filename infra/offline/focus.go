package offline

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// focus is what a task asks about: its terms, the names it gives
// (package paths such as net/http, qualified identifiers such as
// sync.WaitGroup) and the identifiers it names (WaitGroup).
type focus struct {
	// question is the part of the task that asks: its questions, without
	// the instructions on what to bring back.
	question string
	terms    []string
	want     map[string]bool
	// names are lowercased package paths and the parts of qualified
	// identifiers: "net/http", "sync", "waitgroup".
	names map[string]bool
	// idents are the identifiers the question names, as written:
	// "WaitGroup" in "sync.WaitGroup".
	idents map[string]bool
	// packages are the import paths the first question names, in order:
	// "sync" of "sync.WaitGroup", "net/http", "context" of "the context
	// package".
	packages []string
}

var (
	qualifiedRE = regexp.MustCompile(`\b([a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)*)\.([A-Z][A-Za-z0-9]*)\b`)
	pathRE      = regexp.MustCompile(`\b[a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)+\b`)
	camelRE     = regexp.MustCompile(`\b[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*\b`)
	packageRE   = regexp.MustCompile(`(?i)\b(?:the\s+)?([a-z][a-z0-9/]*)\s+package\b`)
	// packageMentionRE finds a package the question names: the package
	// of a qualified identifier, a path, or "the X package".
	packageMentionRE = regexp.MustCompile(`\b([a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)*)\.[A-Z]|\b([a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)+)\b|(?i:\bthe\s+([a-z][a-z0-9/]*)\s+package\b)`)
)

// queryStopwords are words every document of a code knowledge base has:
// searching for them finds everything.
var queryStopwords = map[string]bool{"package": true, "type": true, "function": true, "method": true,
	"go": true, "golang": true, "library": true}

// newFocus reads what task asks about.
func newFocus(task string) *focus {
	q := questionText(task)
	f := &focus{question: q, want: map[string]bool{}, names: map[string]bool{}, idents: map[string]bool{}}
	for _, t := range terms(q) {
		if !f.want[t] {
			f.want[t] = true
			f.terms = append(f.terms, t)
		}
		if i := strings.LastIndex(t, "/"); i >= 0 && !f.want[t[i+1:]] {
			// "atomic" of sync/atomic: what its documentation calls it.
			f.want[t[i+1:]] = true
			f.terms = append(f.terms, t[i+1:])
		}
	}
	for _, m := range qualifiedRE.FindAllStringSubmatch(q, -1) {
		f.names[m[1]] = true
		f.names[strings.ToLower(m[2])] = true
		f.idents[m[2]] = true
	}
	for _, m := range pathRE.FindAllString(q, -1) {
		f.names[m] = true
	}
	for _, m := range packageRE.FindAllStringSubmatch(q, -1) {
		if !stopwords[strings.ToLower(m[1])] {
			f.names[strings.ToLower(m[1])] = true
		}
	}
	first := firstQuestion(q)
	for _, m := range packageMentionRE.FindAllStringSubmatch(first, -1) {
		p := strings.ToLower(m[1] + m[2] + m[3])
		if p != "" && !stopwords[p] && !slices.Contains(f.packages, p) {
			f.packages = append(f.packages, p)
		}
	}
	for _, m := range camelRE.FindAllString(q, -1) {
		f.idents[m] = true
		f.names[strings.ToLower(m)] = true
	}
	return f
}

// questionText is the questions of a task, without the sentences that
// only say what to bring back; the whole task when it asks no question.
func questionText(task string) string {
	var qs []string
	for _, s := range strings.SplitAfter(task, "?") {
		if s = strings.TrimSpace(s); strings.HasSuffix(s, "?") {
			qs = append(qs, s)
		}
	}
	if len(qs) == 0 {
		return task
	}
	return strings.Join(qs, " ")
}

// query is the search of the first question: the names it gives (a
// package path with its last element) when it gives any, else its
// meaningful words; at most n in all, any of them matching.
func (f *focus) query(n int) string {
	seen := map[string]bool{}
	var out []string
	add := func(w string) {
		w = strings.Trim(w, "/")
		if len(w) < 2 || seen[w] || stopwords[w] || queryStopwords[w] || len(out) >= n {
			return
		}
		seen[w] = true
		out = append(out, w)
	}
	first := firstQuestion(f.question)
	for _, w := range rawWords(first) {
		if f.names[w] {
			add(w)
			if i := strings.LastIndex(w, "/"); i >= 0 {
				add(w[i+1:]) // "gzip" of compress/gzip: the word its documentation uses
			}
		}
	}
	if len(out) > 0 {
		// The things it names find their documentation; its other words
		// ("guarantee", "passed") only find every other document.
		return strings.Join(out, " or ")
	}
	for _, w := range rawWords(first) {
		add(w)
	}
	return strings.Join(out, " or ")
}

// packageQuery searches for the documentation of the packages the first
// question names, each as the phrase "package <path>" that heads it: the
// words of a question ("maps", "keys") rank other documents first. "" when
// it names none.
func (f *focus) packageQuery() string {
	var out []string
	for _, p := range f.packages {
		out = append(out, `"package `+p+`"`)
	}
	return strings.Join(out, " or ")
}

// rawWords lowercases s and splits it into words, keeping paths whole.
func rawWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/'
	})
}

// titleScore is how well a document's title says it is about what the
// task asks: for a Go package, how its import path matches the names and
// words of the question; for another document, how many of the
// question's terms its title has.
func (f *focus) titleScore(title string) float64 {
	path, ok := strings.CutPrefix(title, "package ")
	if !ok {
		score := 0.0
		for _, t := range terms(title) {
			if f.want[t] {
				score++
			}
		}
		return score
	}
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	switch {
	case f.names[path]:
		return 10
	case f.names[last] || f.want[stem(last)]:
		return 6 - float64(len(elems)-1)
	}
	for _, w := range rawWords(f.question) {
		if len(last) >= 4 && len(w) > len(last) && strings.HasPrefix(w, last) {
			return 3 - float64(len(elems)-1) // sync for "synchronize"
		}
	}
	return 0
}
