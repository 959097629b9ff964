package offline

import (
	"fmt"
	"math"
	"strings"
)

// weakCoverage is the share of what a question asks below which the best
// evidence is weak: the report then says the documents do not cover it.
const weakCoverage = 0.5

// coverage measures how much of what f asks the chosen sentences say. Each
// term of the question weighs as scoreTerms weighs it, by its rarity among
// the quotable sentences of everything read, 1 + ln(N/df); a term that no
// sentence read has weighs as the rarest, 1 + ln(N). share is the weight
// of the terms the chosen sentences have over the weight of all terms;
// missing are the words of the question whose terms nothing read has,
// neither its sentences nor its titles. A
// chosen sentence says the title of the document it cites and the name of
// the type whose documentation it is in, as well as its own words.
func coverage(f *focus, pool []source, chosen []sentence) (share float64, missing []string) {
	df := map[string]int{}
	titled := map[string]bool{} // the terms of the titles of what was read
	n := 0
	for _, src := range pool {
		for _, t := range terms(src.title + " " + strings.ReplaceAll(src.title, "/", " ")) {
			titled[t] = true
		}
		sents, _ := docSentences(src.text)
		for _, s := range sents {
			if !quotable(s.text) {
				continue
			}
			n++
			seen := map[string]bool{}
			for _, t := range terms(s.text) {
				if f.want[t] && !seen[t] {
					seen[t] = true
					df[t]++
				}
			}
		}
	}
	said := map[string]bool{}
	for _, s := range chosen {
		// A finding says its sentence, the document it cites and the
		// type it documents.
		for _, t := range terms(s.text + " " + s.src.title + " " + strings.ReplaceAll(s.src.title, "/", " ") + " " + s.owner) {
			said[t] = true
		}
	}
	total, got := 0.0, 0.0
	for _, t := range f.terms {
		w := 1 + math.Log(float64(max(n, 1))/float64(max(df[t], 1)))
		total += w
		if said[t] {
			got += w
		}
	}
	if total == 0 || saysNames(f, said) {
		return 1, nil
	}
	for _, w := range rawWords(f.question) {
		if t := strings.Trim(w, "/"); len(t) > 1 && !stopwords[t] && df[stem(t)] == 0 && !titled[stem(t)] && f.want[stem(t)] && !contains(missing, t) {
			missing = append(missing, t)
		}
	}
	return got / total, missing
}

// saysNames says whether the question names things (packages, qualified
// identifiers, identifiers) and the chosen sentences say every one of
// them: then the documents are about what it asks, whatever its other
// words.
func saysNames(f *focus, said map[string]bool) bool {
	if len(f.names) == 0 {
		return false
	}
	for n := range f.names {
		if stopwords[n] {
			continue // "is" of errors.Is: no term says it
		}
		if !said[n] && !said[stem(n)] {
			return false
		}
	}
	return true
}

// notCovered is the finding of a report whose best evidence is weak.
func notCovered(share float64, missing []string) string {
	why := fmt.Sprintf("the best passages found say %.0f%% of what it asks", 100*share)
	if len(missing) > 0 {
		why = "nothing read mentions " + joinOr(missing) + ", and " + why
	}
	return "The documents of this dataset do not cover this question: " + why + ". " +
		"No finding is given rather than passages that do not answer it."
}

// joinOr joins words as "a, b or c".
func joinOr(ws []string) string {
	if len(ws) > 6 {
		ws = ws[:6]
	}
	if len(ws) == 1 {
		return ws[0]
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " or " + ws[len(ws)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
