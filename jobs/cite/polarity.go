package cite

import (
	"regexp"
	"strings"
)

// negations are the words that deny what follows them in their clause.
var negations = wordSet(`not no never none nothing neither nor non without`)


// lightWords stand between a negation and what it denies ("does not
// attempt to close", "not even").
var lightWords = wordSet(`attempt attempts try tries need needs even ever necessarily actually really also yet
	simply just be been being get gets able allowed always`)

// clauseRE cuts a text into clauses: a negation denies only within its own.
var clauseRE = regexp.MustCompile(`[,;:.!?()—–]|\bbut\b|\bwhereas\b|\bwhile\b`)

// tok is a word of a text, with its stem and its clause's index.
type tok struct {
	w, st  string
	clause int
}

// tokens are a text's lower-cased words in order, contractions
// expanded ("doesn't" → "does not", "cannot" → "can not").
func tokens(s string) []tok {
	s = strings.ToLower(straighten(s))
	s = strings.NewReplacer("n't", " not", "cannot", "can not", "non-", "non ").Replace(s)
	var out []tok
	for c, clause := range clauseRE.Split(s, -1) {
		for _, w := range wordRE.FindAllString(clause, -1) {
			out = append(out, tok{w: w, st: stem(w), clause: c})
		}
	}
	return out
}

// denied are the stems a text's negations deny: for each negation, the
// first content word after it in its clause ("not only" denies nothing).
func denied(toks []tok) map[string]bool {
	out := map[string]bool{}
	for i, t := range toks {
		if !negations[t.w] || i+1 < len(toks) && toks[i+1].w == "only" {
			continue
		}
		for _, u := range toks[i+1:] {
			if u.clause != t.clause {
				break
			}
			if negations[u.w] || lightWords[u.w] || stopWords[u.w] || strings.HasSuffix(u.w, "ly") || !contentWord(u.w) {
				continue
			}
			out[u.st] = true
			break
		}
	}
	return out
}

// negationDiffers reports whether a claim and the closest sentence of a
// passage differ in what they deny: the sentence denies a word the claim
// asserts, or the claim denies a word the sentence asserts and no
// sentence of the passage denies (passage holds the passage's denials).
func negationDiffers(claim, sent []tok, passage map[string]bool) bool {
	inClaim, inSent := stemSet(claim), stemSet(sent)
	dc, ds := denied(claim), denied(sent)
	for st := range ds {
		if inClaim[st] && !dc[st] {
			return true
		}
	}
	for st := range dc {
		if inSent[st] && !ds[st] && !passage[st] {
			return true
		}
	}
	return false
}

func stemSet(toks []tok) map[string]bool {
	out := map[string]bool{}
	for _, t := range toks {
		if contentWord(t.w) {
			out[t.st] = true
		}
	}
	return out
}

// contentSeq is the sequence of a text's content stems.
func contentSeq(toks []tok) []string {
	var out []string
	for _, t := range toks {
		if contentWord(t.w) {
			out = append(out, t.st)
		}
	}
	return out
}

// rolesSwapped reports whether a claim restates a sentence with two of
// its words exchanged ("the kth send ... the k+Cth receive" for "the kth
// receive ... the k+Cth send"): the two share most of their words, the
// claim's words are not in the sentence's order, and they are once two
// of them, not neighbours, change places.
func rolesSwapped(claim, sent []tok) bool {
	cs, ss := contentSeq(claim), contentSeq(sent)
	inClaim, inSent := stemSet(claim), stemSet(sent)
	shared := 0
	for st := range inClaim {
		if inSent[st] {
			shared++
		}
	}
	if len(inClaim) < 4 || float64(shared) < 0.75*float64(len(inClaim)) || float64(shared) < 0.75*float64(len(inSent)) {
		return false
	}
	var seq []string
	count := map[string]int{}
	for _, st := range cs {
		if inSent[st] {
			seq = append(seq, st)
			count[st]++
		}
	}
	if subsequence(seq, ss) {
		return false
	}
	for i := range seq {
		for j := i + 2; j < len(seq); j++ {
			if seq[i] == seq[j] || count[seq[i]] > 1 || count[seq[j]] > 1 {
				continue
			}
			seq[i], seq[j] = seq[j], seq[i]
			ok := subsequence(seq, ss)
			seq[i], seq[j] = seq[j], seq[i]
			if ok {
				return true
			}
		}
	}
	return false
}

// subsequence reports whether a occurs in b in order.
func subsequence(a, b []string) bool {
	k := 0
	for _, w := range b {
		if k < len(a) && a[k] == w {
			k++
		}
	}
	return k == len(a)
}

// closest is the sentence of a window (its head included) that shares
// the most content stems with a claim.
func closest(t *text, w window, stems []string) *sentence {
	var best *sentence
	bestN := -1
	try := func(i int) {
		n := 0
		for _, st := range stems {
			if t.sentences[i].stems[st] {
				n++
			}
		}
		if n > bestN {
			best, bestN = &t.sentences[i], n
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

// polarity says how a claim's sense differs from a window's: "" when it
// does not, else why.
func polarity(t *text, w window, f *claimFeatures) string {
	s := closest(t, w, f.stems)
	if s == nil {
		return ""
	}
	claim, sent := tokens(f.plain), tokens(s.text)
	switch {
	case negationDiffers(claim, sent, windowDenials(t, w)):
		return "the passage's negation differs from the claim's"
	case rolesSwapped(claim, sent):
		return "the claim swaps two of the passage's terms"
	}
	return ""
}

// windowDenials are the stems any sentence of a window denies.
func windowDenials(t *text, w window) map[string]bool {
	out := map[string]bool{}
	add := func(i int) {
		for st := range denied(tokens(t.sentences[i].text)) {
			out[st] = true
		}
	}
	for i := w.start; i < w.end; i++ {
		add(i)
	}
	if w.head >= 0 {
		add(w.head)
	}
	return out
}
