package cite

import (
	"regexp"
	"strings"
)

// negations are the words that deny their clause; "nor" and "neither"
// continue a denial already made rather than deny it again.
var negations = wordSet(`not no never none nothing neither nor without cannot prevent prevents prevented
	preventing avoid avoids avoided unable lack lacks fail fails failed`)

// lexicalNegations deny by their meaning, and only their object: "to
// prevent accidental misuse" denies the misuse, not what follows.
var lexicalNegations = wordSet(`prevent prevents prevented preventing avoid avoids avoided unable lack lacks fail fails failed`)

// lexicalScope is how many content words a lexical negation denies.
const lexicalScope = 2

// clauseRE cuts a text into clauses: a negation denies only within its own.
// Subordinate clauses stand apart, so that "a program that has not called
// Notify exits when it writes" denies only the calling.
var clauseRE = regexp.MustCompile(`[,;:.!?—–]|\b(?:but|whereas|while|so that|when|whenever|if|unless|because|since|although|though)\b`)

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
	// clause's end or an "and", "or" or "then" (two, for a lexical
	// negation such as "prevent").
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
	last, left := -1, 0 // left: how many more words the open scope takes; -1 without bound
	for _, t := range toks {
		if t.clause != last {
			out = append(out, clause{stems: map[string]bool{}, flips: map[string]bool{}})
			last, left = t.clause, 0
		}
		c := &out[len(out)-1]
		pos, anti := antonyms[t.w]
		switch {
		case negations[t.w]:
			if (t.w == "nor" || t.w == "neither") && c.denied > 0 {
				left = -1
				continue
			}
			c.denied++
			c.scopes = append(c.scopes, map[string]bool{})
			left = -1
			if lexicalNegations[t.w] {
				left = lexicalScope
			}
		case t.w == "and" || t.w == "or" || t.w == "then":
			left = 0
		case anti:
			c.stems[stem(pos)] = true
			c.flips[stem(pos)] = true
		case contentWord(t.w):
			c.stems[t.st] = true
			if left != 0 {
				c.scopes[len(c.scopes)-1][t.st] = true
				left--
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

// windowClauses are the clauses of a window's sentences (its head, a
// declaration, denies nothing).
func windowClauses(t *text, w window) []clause {
	var out []clause
	for i := w.start; i < w.end; i++ {
		out = append(out, clausesOf(tokens(t.sentences[i].text))...)
	}
	return out
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
