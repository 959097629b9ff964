package cite

import (
	"regexp"
	"strings"
)

// fineClauseRE also cuts at "and" and "or": the parts of a coordination
// that give each term its own role.
var fineClauseRE = regexp.MustCompile(`[,;:.!?()—–]|\b(?:but|whereas|while|so that|and|or)\b`)

func stemSet(toks []tok) map[string]bool {
	out := map[string]bool{}
	for _, t := range toks {
		if contentWord(t.w) {
			out[t.st] = true
		}
	}
	return out
}

// termSeq is the sequence of a text's content stems and of the claim's
// code terms (which may be single letters: "package p imports q").
func termSeq(toks []tok, terms map[string]bool) []string {
	var out []string
	for _, t := range toks {
		switch {
		case terms[t.w]:
			out = append(out, t.w)
		case contentWord(t.w):
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
func rolesSwapped(claim, sent []tok, f *claimFeatures) bool {
	terms := map[string]bool{}
	for _, it := range f.items {
		if it.kind == itemCode {
			terms[strings.ToLower(it.text)] = true
		}
	}
	cs, ss := termSeq(claim, terms), termSeq(sent, terms)
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
	for _, st := range cs {
		if inSent[st] || terms[st] {
			seq = append(seq, st)
		}
	}
	if subsequence(seq, ss) {
		return false
	}
	for i := range seq {
		for j := i + 2; j < len(seq); j++ {
			if seq[i] == seq[j] {
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

// termsSwapped reports whether two terms of a claim (its identifiers and
// names) stand each where the other stands in the passage's sentence: the
// words of one's part of the claim are the words of the other's part of
// the sentence, and not of its own; or, with "respectively", whether
// they come in the other order.
func termsSwapped(f *claimFeatures, sent string) bool {
	var terms []string
	for _, it := range f.items {
		if it.kind == itemCode && it.ident || it.kind == itemName {
			terms = append(terms, strings.ToLower(lastPart(it.text)))
		}
	}
	ct, st := tokensBy(f.plain, fineClauseRE), tokensBy(sent, fineClauseRE)
	isTerm := map[string]bool{}
	for _, term := range terms {
		isTerm[stem(term)] = true
	}
	respectively := strings.Contains(strings.ToLower(f.plain+" "+sent), "respectively")
	for i, a := range terms {
		for _, b := range terms[i+1:] {
			ca, cb, sa, sb := at(ct, a), at(ct, b), at(st, a), at(st, b)
			if ca < 0 || cb < 0 || sa < 0 || sb < 0 || a == b {
				continue
			}
			if respectively && (ca < cb) != (sa < sb) {
				return true
			}
			if crossed(termPart(ct, ca, isTerm), termPart(ct, cb, isTerm), termPart(st, sa, isTerm), termPart(st, sb, isTerm)) {
				return true
			}
		}
	}
	return false
}

// at is the index of a term's first token, or -1.
func at(toks []tok, term string) int {
	for i, t := range toks {
		if t.w == term {
			return i
		}
	}
	return -1
}

// termPart is the content stems of the clause of toks[i], terms left out.
func termPart(toks []tok, i int, isTerm map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, t := range toks {
		if t.clause == toks[i].clause && contentWord(t.w) && !isTerm[t.st] {
			out[t.st] = true
		}
	}
	return out
}

// crossed reports whether the claim's parts of two terms (ca, cb) match
// the sentence's parts of the other term (sb, sa) and not their own.
func crossed(ca, cb, sa, sb map[string]bool) bool {
	own := overlap(minus(ca, cb), minus(sa, sb)) + overlap(minus(cb, ca), minus(sb, sa))
	cross := overlap(minus(ca, cb), minus(sb, sa)) + overlap(minus(cb, ca), minus(sa, sb))
	return own == 0 && cross >= 2 && overlap(minus(ca, cb), minus(sb, sa)) > 0 && overlap(minus(cb, ca), minus(sa, sb)) > 0
}

func minus(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if !b[k] {
			out[k] = true
		}
	}
	return out
}

func overlap(a, b map[string]bool) int {
	n := 0
	for k := range a {
		if b[k] {
			n++
		}
	}
	return n
}
