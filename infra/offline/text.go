package offline

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// source is a text the report may quote: a document, a message or a
// sub-agent's report.
type source struct {
	title, url, text string
	parts            int // parts read of a knowledge-base document
}

var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by can do does for from how in into is it its
		of on or that the this to was what when where which who why will with about between
		their there these they those does did has have had not but if then than so such also
		other more most some any each you your we our i me my us use used using work works
		say says tell explain describe go golang`) {
		stopwords[w] = true
	}
}

// terms lowercases s and keeps its words that carry meaning.
func terms(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/'
	}) {
		w = strings.Trim(w, "/")
		if len(w) > 1 && !stopwords[w] {
			out = append(out, stem(w))
		}
	}
	return out
}

// stem drops a plural or verb ending, enough to match "channels" with
// "channel", "provides" with "provide" and "carries" with "carry":
// "ing"; "ies" made "y"; "es" after s, x, z, ch or sh ("matches"); else a
// final "s" that does not end "ss". It is lighter than the citation
// check's Snowball stemmer on purpose: conflating "controller" with
// "control" or "configure" with "config" makes a dataset seem to cover
// questions it does not (quality_test's Kubernetes question).
func stem(w string) string {
	switch {
	case len(w) > 6 && strings.HasSuffix(w, "ing"):
		return strings.TrimSuffix(w, "ing")
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return strings.TrimSuffix(w, "ies") + "y"
	case len(w) > 5 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes") ||
		strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		return strings.TrimSuffix(w, "es")
	case len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return strings.TrimSuffix(w, "s")
	}
	return w
}

// keywords is a search query of the n first meaningful words of s.
func keywords(s string, n int) string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/'
	}) {
		if len(w) > 1 && !stopwords[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
		if len(out) == n {
			break
		}
	}
	return strings.Join(out, " ")
}

// firstQuestion is the task up to the end of its first question, the part
// worth searching for; the rest is usually what to bring back.
func firstQuestion(task string) string {
	if i := strings.Index(task, "?"); i > 0 {
		return task[:i+1]
	}
	return task
}

var (
	listItemRE = regexp.MustCompile(`(?m)^\s*(?:[-*•]|\d+[.)])\s+(.+)$`)
	questionWd = map[string]bool{"how": true, "what": true, "why": true, "when": true, "which": true,
		"who": true, "where": true, "whether": true, "does": true, "do": true, "is": true, "are": true, "can": true}
	// whWord starts a question of its own after a comma.
	whWord = map[string]bool{"how": true, "what": true, "why": true, "when": true, "which": true,
		"who": true, "where": true, "whether": true}
)

// splitQuestion splits a question into independent parts: list items,
// several questions, clauses joined by ";", by "and" before a question
// word, or by a comma before a wh-word (", how does …"). A single narrow
// question gives one part.
func splitQuestion(q string) []string {
	var parts []string
	if items := listItemRE.FindAllStringSubmatch(q, -1); len(items) >= 2 {
		for _, it := range items {
			parts = append(parts, it[1])
		}
		return keepParts(parts)
	}
	for _, sent := range strings.SplitAfter(q, "?") {
		for _, clause := range strings.Split(sent, ";") {
			for i, p := range splitOnAnd(clause) {
				if i > 0 && pointsBackPart(p) {
					// "and when should it be used?": the same part.
					parts[len(parts)-1] += " and " + p
					continue
				}
				parts = append(parts, p)
			}
		}
	}
	return keepParts(parts)
}

// pointsBackPart says whether a part of a question refers to an earlier
// one ("it", "they", "this") and names nothing of its own.
func pointsBackPart(p string) bool {
	if qualifiedRE.MatchString(p) || pathRE.MatchString(p) || camelRE.MatchString(p) {
		return false
	}
	for _, w := range rawWords(p) {
		switch w {
		case "it", "its", "they", "them", "their", "this", "that", "these", "those":
			return true
		}
	}
	return false
}

// splitOnAnd splits a clause before "and" followed by a question word,
// and after a comma followed by a wh-word: "How does A work, how does B
// work, and how does C work?" has three parts.
func splitOnAnd(s string) []string {
	words := strings.Fields(s)
	var parts []string
	start := 0
	cut := func(end, next int) {
		if part := strings.TrimRight(strings.Join(words[start:end], " "), ","); part != "" {
			parts = append(parts, part)
		}
		start = next
	}
	for i := 1; i+1 < len(words); i++ {
		switch {
		case strings.EqualFold(words[i], "and") && questionWd[strings.ToLower(words[i+1])]:
			cut(i, i+1)
		case i > start && strings.HasSuffix(words[i-1], ",") && whWord[strings.ToLower(words[i])]:
			cut(i, i)
		}
	}
	return append(parts, strings.Join(words[start:], " "))
}

// keepParts keeps the parts that are questions of their own: a sentence
// like "Bring back the figures." is an instruction, not a part.
func keepParts(parts []string) []string {
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		first := strings.ToLower(strings.SplitN(p+" ", " ", 2)[0])
		if len(terms(p)) >= 1 && (strings.HasSuffix(p, "?") || questionWd[first]) {
			if !strings.HasSuffix(p, "?") {
				p += "?"
			}
			out = append(out, capitalize(p))
		}
		if len(out) == 5 {
			break
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// partName names the sub-agent of a part from its first meaningful words.
func partName(p string, i int) string {
	ws := strings.Fields(keywords(p, 2))
	// Sub-agent names are ASCII letters, digits and dashes.
	name := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-') {
			return r
		}
		return '-'
	}, strings.Join(ws, "-"))
	if len(name) > 30 {
		name = name[:30]
	}
	if name = strings.Trim(name, "-"); name == "" {
		name = "part"
	}
	return fmt.Sprintf("%s-%d", name, i+1)
}

// capitalize upper-cases the first character of s.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// sentences splits text into sentences: it joins wrapped lines and ends a
// sentence at ".", "!" or "?" followed by a space and a capital letter or
// at a blank line, so "context.Context" or "e.g. this" stay whole.
func sentences(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		words := strings.Fields(para)
		start := 0
		for i, w := range words {
			end := strings.HasSuffix(w, ".") || strings.HasSuffix(w, "!") || strings.HasSuffix(w, "?")
			next := i+1 < len(words) && words[i+1] != "" && unicode.IsUpper(rune(words[i+1][0]))
			if (end && next && !strings.HasSuffix(w, "e.g.") && !strings.HasSuffix(w, "i.e.")) || i == len(words)-1 {
				out = append(out, strings.Join(words[start:i+1], " "))
				start = i + 1
			}
		}
	}
	return out
}

// overlap scores how much of what was found matches a text.
func overlap(text string, found []source) float64 {
	want := map[string]bool{}
	for _, t := range terms(text) {
		want[t] = true
	}
	score := 0.0
	for _, f := range found {
		for _, t := range terms(f.title + " " + f.text) {
			if want[t] {
				score++
			}
		}
	}
	return score
}
