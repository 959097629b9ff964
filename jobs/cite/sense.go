package cite

import (
	"fmt"
	"strings"
)

// closest is the index of the sentence of a window (its head included)
// that shares the most content stems with a claim, or -1.
func closest(t *text, w window, stems []string) int {
	best, bestN := -1, -1
	try := func(i int) {
		n := 0
		for _, st := range stems {
			if t.sentences[i].stems[st] {
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	for i := w.start; i < w.end; i++ {
		try(i)
	}
	if w.head >= 0 {
		try(w.head)
	}
	return best
}

// sense says how a claim's sense differs from a window's, and the
// verdict that difference gives a passage otherwise good enough to
// support it: Contradicted for a negation that differs or terms swapped,
// Weak for a claim whose subject the passage's closest sentence does not
// speak of, or that says "always", "only", "every" … where the passage
// does not. It gives "" when the senses agree.
func sense(t *text, w window, f *claimFeatures) (Verdict, string) {
	ci := closest(t, w, f.stems)
	if ci < 0 {
		return "", ""
	}
	s := &t.sentences[ci]
	claim := tokens(f.plain)
	switch {
	case negationDiffers(clausesOf(claim), windowClauses(t, w)):
		return Contradicted, "the passage's negation differs from the claim's"
	case deniesAsserted(claim, t, w):
		return Contradicted, "the passage denies what the claim asserts"
	case rolesSwapped(claim, tokens(s.text), f) || termsSwapped(f, s.text):
		return Contradicted, "the claim swaps two of the passage's terms"
	}
	if subj, ok := subject(f); ok && !speaksOf(t, ci, subj) {
		return Weak, fmt.Sprintf("the passage's closest sentence does not speak of %s", subj.text)
	}
	if a := absoluteMissing(f.plain, t.joinedLower(w)); a != "" {
		return Weak, fmt.Sprintf("the claim says %q where the passage does not", a)
	}
	return "", ""
}

// subject is a claim's first exported identifier, if any: what the claim
// speaks of.
func subject(f *claimFeatures) (item, bool) {
	for _, it := range f.items {
		if it.kind == itemCode && it.ident && hasUpper(lastPart(it.text)) {
			return it, true
		}
	}
	return item{}, false
}

func lastPart(id string) string { return id[strings.LastIndexByte(id, '.')+1:] }

// speaksOf reports whether a sentence, or the definition that heads it,
// names the subject.
func speaksOf(t *text, i int, subj item) bool {
	for _, k := range []int{i, t.heads[i]} {
		if k >= 0 && (t.sentences[k].has(subj, t.pkgs, nil) || hasWord(t.sentences[k].text, lastPart(subj.text))) {
			return true
		}
	}
	return false
}

// absolutes are the words that make a claim absolute, in classes of
// words that say the same.
var absolutes = [][]string{{"always", "every time", "whenever", "invariably"}, {"only", "solely", "exclusively", "just", "sole"},
	{"every", "all", "each"}, {"guaranteed", "guarantees", "guarantee", "guarantees"},
	{"entirely", "completely", "fully", "wholly"}, {"exactly", "precisely"}}

// absoluteMissing is an absolute word of the claim whose class has no
// word in the passage, or "".
func absoluteMissing(claim, passage string) string {
	lc := strings.ToLower(claim)
	for _, class := range absolutes {
		if !hasWord(lc, class[0]) && (class[0] != "every" || !hasWord(lc, "every")) {
			continue
		}
		found := false
		for _, w := range class {
			if hasWord(passage, w) {
				found = true
				break
			}
		}
		if !found {
			return class[0]
		}
	}
	return ""
}
