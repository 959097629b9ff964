package cite

import (
	"fmt"
	"regexp"
	"strings"
)

// negations are the words that deny their clause; "nor" and "neither"
// continue a denial already made rather than deny it again.
var negations = wordSet(`not no never none nothing neither nor without cannot prevent prevents prevented
	preventing avoid avoids avoided unable lack lacks fail fails failed`)

// clauseRE cuts a text into clauses: a negation denies only within its own.
// Subordinate clauses stand apart, so that "a program that has not called
// Notify exits when it writes" denies only the calling.
var clauseRE = regexp.MustCompile(`[,;:.!?—–]|\b(?:but|whereas|while|so that|when|whenever|if|unless|because|since|although|though)\b`)

// fineClauseRE also cuts at "and" and "or": the parts of a coordination
// that give each term its own role.
var fineClauseRE = regexp.MustCompile(`[,;:.!?()—–]|\b(?:but|whereas|while|so that|and|or)\b`)

// tok is a word of a text, with its stem and its clause's index.
type tok struct {
	w, st  string
	clause int
}

// negationPhrases are rewritten before a text is cut into words: a
// contraction's denial made a word; "rather than" and "instead of" deny
// what follows them in a clause of its own, and so does "to prevent";
// "non-nil" is one word, not a denial; "whether or not" and "not only"
// deny nothing.
var negationPhrases = strings.NewReplacer("n't", " not", "cannot", "can not", "non-", "non", "whether or not", "whether",
	"or not", "", "rather than", "; not ", "instead of", "; not ", "to prevent", "; prevent", "to avoid", "; avoid", "not only", "")

// tokens are a text's lower-cased words in order, negations made words
// (see negationPhrases).
func tokens(s string) []tok { return tokensBy(s, clauseRE) }

// tokensBy is tokens with clauses cut by re.
func tokensBy(s string, re *regexp.Regexp) []tok {
	s = negationPhrases.Replace(strings.ToLower(straighten(s)))
	var out []tok
	for c, clause := range re.Split(s, -1) {
		for _, w := range wordRE.FindAllString(clause, -1) {
			out = append(out, tok{w: w, st: stem(w), clause: c})
		}
	}
	return out
}

// clause is one clause of a text: its content stems, how many times it
// is denied, and the stems its antonyms deny.
type clause struct {
	stems  map[string]bool
	denied int
	// scopes are, for each negation, the stems that follow it up to the
	// clause's end or an "and", "or" or "then".
	scopes []map[string]bool
	flips  map[string]bool
}

// parity is how many times a clause is denied where it meets another:
// its negations whose scope holds a word of the other, and its antonyms
// of words the other has.
func (c clause) parity(other clause) int {
	n := 0
	for _, sc := range c.scopes {
		if len(sc) == 0 {
			sc = c.stems // "does nothing": the whole clause is denied
		}
		if overlap(sc, other.stems) > 0 {
			n++
		}
	}
	for st := range c.flips {
		if other.stems[st] {
			n++
		}
	}
	return n % 2
}

// antonyms map a word to the word it denies: a clause that says
// "disabled" says "not enabled".
var antonyms = map[string]string{"disabled": "enabled", "disable": "enable", "disables": "enables",
	"unbuffered": "buffered", "asynchronous": "synchronous", "asynchronously": "synchronously", "lower": "higher",
	"unexported": "exported", "unsafe": "safe", "invalid": "valid", "optional": "required", "minimum": "maximum",
	"decrease": "increase", "decreases": "increases", "smaller": "larger", "background": "foreground",
	"disallow": "allow", "disallows": "allows", "disallowed": "allowed", "nonblocking": "blocking",
	"exclude": "include", "excludes": "includes", "excluded": "included", "false": "true", "failure": "success",
	"outgoing": "incoming", "immutable": "mutable", "inactive": "active", "unsupported": "supported",
	"nonnil": "nil", "nonzero": "zero", "nonempty": "empty", "nonnegative": "negative"}

// clausesOf groups tokens by clause; an antonym stands for the word it
// denies, and counts as a denial where the other clause has that word.
func clausesOf(toks []tok) []clause {
	var out []clause
	last, open := -1, false
	for _, t := range toks {
		if t.clause != last {
			out = append(out, clause{stems: map[string]bool{}, flips: map[string]bool{}})
			last, open = t.clause, false
		}
		c := &out[len(out)-1]
		pos, anti := antonyms[t.w]
		switch {
		case negations[t.w]:
			if (t.w == "nor" || t.w == "neither") && c.denied > 0 {
				open = true
				continue
			}
			c.denied++
			c.scopes = append(c.scopes, map[string]bool{})
			open = true
		case t.w == "and" || t.w == "or" || t.w == "then":
			open = false
		case anti:
			c.stems[stem(pos)] = true
			c.flips[stem(pos)] = true
		case contentWord(t.w):
			c.stems[t.st] = true
			if open {
				c.scopes[len(c.scopes)-1][t.st] = true
			}
		}
	}
	return out
}

// negationDiffers reports whether a clause of the claim is denied where
// the passage's clauses that match it best are not, or the other way
// round: a claim's clause of three content stems or more matches a
// passage's when they share three fifths of its stems or three quarters
// of the passage clause's (two at least); of several that match equally, one that agrees is enough.
func negationDiffers(claim []clause, passage []clause) bool {
	for _, c := range claim {
		if len(c.stems) < 3 {
			continue
		}
		need := max(2, (len(c.stems)*3+4)/5)
		best, agrees, differs := 0, false, false
		for _, p := range passage {
			n := 0
			for st := range c.stems {
				if p.stems[st] {
					n++
				}
			}
			if n < 2 || n < need && n*4 < len(p.stems)*3 || n < best {
				continue
			}
			if n > best {
				best, agrees, differs = n, false, false
			}
			if p.parity(c) == c.parity(p) {
				agrees = true
			} else {
				differs = true
			}
		}
		if differs && !agrees {
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

// windowClauses are the clauses of a window's sentences (its head, a
// declaration, denies nothing).
func windowClauses(t *text, w window) []clause {
	var out []clause
	for i := w.start; i < w.end; i++ {
		out = append(out, clausesOf(tokens(t.sentences[i].text))...)
	}
	return out
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

// deniesAsserted reports whether a window denies a word the claim
// asserts and says nowhere without denial: the first content word after
// a negation of the window ("not for the execution") that the claim
// states undenied, and that no undenied clause of the window holds.
func deniesAsserted(claim []tok, t *text, w window) bool {
	inClaim := map[string]bool{}
	for _, c := range clausesOf(claim) {
		if c.denied%2 == 0 {
			for st := range c.stems {
				inClaim[st] = true
			}
		}
	}
	deniedHere, plain := map[string]bool{}, map[string]bool{}
	for i := w.start; i < w.end; i++ {
		toks := tokens(t.sentences[i].text)
		for st := range firstDenied(toks) {
			deniedHere[st] = true
		}
		for _, c := range clausesOf(toks) {
			if c.denied == 0 {
				for st := range c.stems {
					plain[st] = true
				}
			}
		}
	}
	for st := range deniedHere {
		if inClaim[st] && !plain[st] {
			return true
		}
	}
	return false
}

// firstDenied are the first content stems after each negation of a text,
// within its clause ("does not attempt to close" denies "close").
func firstDenied(toks []tok) map[string]bool {
	out := map[string]bool{}
	for i, t := range toks {
		if !negations[t.w] {
			continue
		}
		for _, u := range toks[i+1:] {
			if u.clause != t.clause {
				break
			}
			if negations[u.w] || lightWords[u.w] || strings.HasSuffix(u.w, "ly") || !contentWord(u.w) {
				continue
			}
			out[u.st] = true
			break
		}
	}
	return out
}

// lightWords stand between a negation and what it denies ("does not
// attempt to close", "not even").
var lightWords = wordSet(`attempt attempts try tries need needs even ever necessarily actually really also yet
	simply just be been being get gets able allowed always used`)
