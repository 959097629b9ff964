package cite

import (
	"github.com/kljensen/snowball/english"

	"regexp"
	"strings"
	"unicode/utf8"
)

var wordRE = regexp.MustCompile(`[\p{L}\p{N}]+`)

// contentWord reports whether a lower-cased word counts for the score: two
// characters or more, not a stop word, not a number in digits or words.
func contentWord(w string) bool {
	if utf8.RuneCountInString(w) < 2 || stopWords[w] || numberWords[w] != "" || multipliers[w] > 0 {
		return false
	}
	return strings.TrimLeft(w, "0123456789") != ""
}

// stem reduces a lower-cased word to its Snowball (Porter2) English stem,
// a possessive's 's first dropped.
func stem(w string) string {
	w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
	return english.Stem(w, false)
}

// wordSet builds a set from a list of words separated by spaces.
func wordSet(list string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}

// stopWords are not content words.
var stopWords = wordSet(`a about above after again against all also am an and any are as at be because
	been before being below between both but by can could did do does doing down during each either etc few for
	from further had has have having he her here hers herself him himself his how however i if in into is it its
	itself just may me might more most must my myself of off on once only or other others our ours out over own
	per same shall she should so some such than that the their theirs them themselves then there these they this
	those through thus to too under until up upon us very via was we were what when where whether which while who
	whom whose why will with within would yet you your yours e.g i.e eg ie`)

// ordinaryWords are English words a writer capitalises for emphasis or
// at the start of a clause; capitalised, they still name nothing.
var ordinaryWords = wordSet(`note notes importantly crucially specifically similarly likewise instead otherwise
	additionally moreover furthermore finally first second third next then meanwhile overall together unlike like
	since because although though unless until while whereas once when where why what which who how whether
	yes no not never always only even just still yet thus hence therefore so consequently accordingly indeed
	in short summary conclusion example examples see also caveat caveats warning tip key takeaway answer result
	results finding findings background context default defaults behavior behaviour usage setup step steps
	option options setting settings parameter parameters value values timeout timeouts error errors method
	methods function functions type types field fields package packages documentation docs doc source sources
	graceful shutdown cancellation signal signals server client request response handler connection connections
	calling canceling cancelling closing using passing returning starting stopping waiting reading writing
	both either neither each every all any some many most few several none nothing everything something`)
