package offline

import (
	"math"
	"regexp"
	"strings"
	"unicode"
)

type sentence struct {
	text  string
	src   source
	score float64
	// owner is the type whose documentation the sentence is in ("" when
	// none): WaitGroup for the sentences under "type WaitGroup" and
	// "func (WaitGroup) Add".
	owner string
	// para numbers the paragraph of its source the sentence is in.
	para int
}

// headingRE is a heading of a package's documentation as jobs/kb renders
// it: "type T", "func F" or "func (T) M" on a paragraph of its own.
var headingRE = regexp.MustCompile(`^(?:type (\w+)|func (\w+)|func \((\w+)\) (\w+))$`)

// docSentences splits a text into sentences, each with the type whose
// documentation it is in, and collects the methods of each type.
func docSentences(text string) (out []sentence, methods map[string][]string) {
	methods = map[string][]string{}
	owner := ""
	for i, para := range strings.Split(text, "\n\n") {
		if m := headingRE.FindStringSubmatch(strings.TrimSpace(para)); m != nil {
			owner = m[1] + m[3]
			if m[3] != "" {
				methods[m[3]] = append(methods[m[3]], m[4])
			}
			continue
		}
		for _, s := range sentences(para) {
			out = append(out, sentence{text: s, owner: owner, para: i})
		}
	}
	return out, methods
}

// quotable is a sentence fit for a report: whole, neither a fragment nor
// a paragraph, and one that stands alone: a sentence that starts by
// pointing back at the text before it ("Outside of those two special
// cases, …", "It returns …") says nothing true once quoted alone.
func quotable(s string) bool {
	return wellFormed(s) && !pointsBack(s)
}

// wellFormed is a sentence of the right size that starts as a sentence
// does (not "if once.Do(f) is called…", the tail of a sentence cut by a
// code block) and ends as one.
func wellFormed(s string) bool {
	if len(s) < 40 || len(s) > 400 || !strings.ContainsAny(s[len(s)-1:], ".!?") {
		return false
	}
	first := strings.SplitN(s, " ", 2)[0]
	return !unicode.IsLower(rune(s[0])) || strings.ContainsAny(first, ".(")
}

// quotableIn is quotable, or a sentence of the documentation of a type the
// question names that starts with "It": there "It" is that type ("It
// minimizes memory copying." of strings.Builder).
func quotableIn(f *focus, s sentence) bool {
	if quotable(s.text) {
		return true
	}
	return wellFormed(s.text) && s.owner != "" && f.idents[s.owner] &&
		(strings.HasPrefix(s.text, "It ") || strings.HasPrefix(s.text, "Its "))
}

// backWords start a sentence that points back at the one before it.
var backWords = map[string]bool{"this": true, "these": true, "those": true, "that": true, "it": true, "its": true,
	"they": true, "their": true, "them": true, "such": true, "otherwise": true, "outside": true, "both": true,
	"then": true, "thus": true, "hence": true, "however": true, "also": true, "instead": true, "likewise": true,
	"similarly": true, "alternatively": true, "here": true, "there": true, "above": true, "former": true, "latter": true}

// backPhrases start a sentence that points back at what came before.
var backPhrases = []string{"in that case", "in this case", "in such cases", "in both cases", "in either case",
	"as above", "as such", "as another special case", "the same", "the former", "the latter", "for the latter",
	"for the former", "in addition", "as with"}

// pointsBack says whether a sentence starts with a back-reference.
func pointsBack(s string) bool {
	low := strings.ToLower(s)
	for _, p := range backPhrases {
		if strings.HasPrefix(low, p+" ") || strings.HasPrefix(low, p+",") {
			return true
		}
	}
	first := strings.TrimRight(strings.SplitN(low, " ", 2)[0], ",;:")
	return backWords[first]
}

// bestSentences ranks the sentences of sources against what f asks,
// weighting rare terms more, sentences in the documentation of a type the
// question names, and sentences that name a method of that type the
// report has not mentioned yet; it keeps the best n, at most three per
// source when several sources have some.
func bestSentences(f *focus, sources []source, n int) []sentence {
	var all []sentence
	members := map[string]bool{}
	for _, src := range sources {
		sents, methods := docSentences(src.text)
		for ident := range f.idents {
			for _, m := range methods[ident] {
				members[m] = true
			}
		}
		rel := f.titleScore(src.title) / 10
		for _, s := range sents {
			if quotableIn(f, s) {
				s.src = src
				s.score = rel
				if s.owner != "" && f.idents[s.owner] {
					s.score += 2
				}
				all = append(all, s)
			}
		}
	}
	scoreTerms(f, all)
	if len(members) > 0 {
		demoteOffType(f, all)
	}
	return pick(all, members, n)
}

// demoteOffType halves the score of the sentences that neither document
// nor name a type the question asks about, when what was read documents
// one: on sync.WaitGroup, the package's overview weighs less than
// WaitGroup's own documentation.
func demoteOffType(f *focus, all []sentence) {
	for i := range all {
		if f.idents[all[i].owner] {
			continue
		}
		named := false
		for _, w := range identWords(all[i].text) {
			named = named || f.idents[w]
		}
		if !named {
			all[i].score /= 2
		}
	}
}

// scoreTerms adds to each sentence's score the question's terms it has,
// rare terms weighing more.
func scoreTerms(f *focus, all []sentence) {
	df := map[string]int{}
	has := make([]map[string]bool, len(all))
	for i := range all {
		has[i] = map[string]bool{}
		for _, t := range terms(all[i].text) {
			if f.want[t] && !has[i][t] {
				has[i][t] = true
				df[t]++
			}
		}
	}
	focused := make([]bool, len(all))
	matched := map[paraKey]bool{}
	for i := range all {
		if focused[i] = onFocus(has[i], all[i].src.title); focused[i] {
			matched[paraKey{all[i].src.url, all[i].para}] = true
		}
	}
	for i := range all {
		switch {
		case all[i].score >= 2 || focused[i]: // in the documentation of an asked type, or on the question
		case matched[paraKey{all[i].src.url, all[i].para}]:
			all[i].score = 0.5 // it goes on about what a sentence of its paragraph matched
			continue
		default:
			// Nothing of the question, or only the name of its own
			// package (the omithttp2 build tag for "how does net/http
			// serve requests?").
			all[i].score = 0
			continue
		}
		for t := range has[i] {
			all[i].score += 1 + math.Log(float64(len(all))/float64(df[t]))
		}
	}
}

// paraKey names a paragraph of a source.
type paraKey struct {
	url  string
	para int
}

// onFocus says whether the question terms a sentence has (has) include one
// besides the name of the package its source documents: every sentence of
// net/http's documentation says "http".
func onFocus(has map[string]bool, title string) bool {
	own := map[string]bool{}
	if path, ok := strings.CutPrefix(title, "package "); ok {
		for _, t := range terms(strings.ReplaceAll(path, "/", " ") + " " + path) {
			own[t] = true
		}
	}
	for t := range has {
		if !own[t] {
			return true
		}
	}
	return false
}

// pick chooses n sentences greedily: the best score, plus a bonus for
// each method of an asked type that no chosen sentence names yet; ties go
// to the earlier sentence.
func pick(all []sentence, members map[string]bool, n int) []sentence {
	perSource := 3
	srcs := map[string]bool{}
	for _, s := range all {
		if s.score > 0 {
			srcs[s.src.url] = true
		}
	}
	if len(srcs) == 1 {
		perSource = n
	}
	covered := map[string]bool{}
	per := map[string]int{}
	used := make([]bool, len(all))
	dup := map[string]bool{}
	var out []sentence
	for len(out) < n {
		best, bestScore := -1, 0.0
		for i, s := range all {
			if used[i] || s.score <= 0 || per[s.src.url] >= perSource || dup[strings.ToLower(s.text)] {
				continue
			}
			if sc := s.score + 1.5*float64(len(newMembers(s.text, members, covered))); sc > bestScore {
				best, bestScore = i, sc
			}
		}
		if best < 0 {
			break
		}
		s := all[best]
		used[best] = true
		dup[strings.ToLower(s.text)] = true
		per[s.src.url]++
		for _, m := range newMembers(s.text, members, covered) {
			covered[m] = true
		}
		s.score = bestScore
		out = append(out, s)
	}
	return out
}

// newMembers are the methods of members that text names as words and
// that are not covered yet.
func newMembers(text string, members, covered map[string]bool) []string {
	if len(members) == 0 {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range identWords(text) {
		if members[w] && !covered[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// identWords splits text into the words a Go identifier could be.
func identWords(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	})
}
