package cite

import (
	"regexp"
	"strconv"
	"strings"
)

// numberWords are the numbers a text may spell out, and their digits.
var numberWords = map[string]string{"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
	"six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
	"thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18",
	"nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60",
	"seventy": "70", "eighty": "80", "ninety": "90", "dozen": "12", "half": "0.5"}

// multipliers scale the number words before them.
var multipliers = map[string]float64{"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9}

// unitMS is each time unit's length in milliseconds.
var unitMS = map[string]float64{"ns": 1e-6, "nanosecond": 1e-6, "µs": 1e-3, "us": 1e-3, "microsecond": 1e-3,
	"ms": 1, "millisecond": 1, "s": 1e3, "sec": 1e3, "second": 1e3, "min": 6e4, "minute": 6e4, "h": 3.6e6,
	"hour": 3.6e6, "day": 8.64e7}

var (
	// digitsRE is a number in digits, not part of a word, with the unit
	// that may follow it.
	digitsRE = regexp.MustCompile(`(^|[^\p{L}\p{N}_.])(\d+(?:[.,]\d+)*)(?:\s*\*\s*time\.|\s*-?\s*)?` +
		`(ns|µs|us|ms|s|secs?|seconds?|min|minutes?|h|hours?|days?|nanoseconds?|microseconds?|milliseconds?|` +
		`Nanosecond|Microsecond|Millisecond|Second|Minute|Hour)?\b`)
	unitRE = regexp.MustCompile(`^(ns|µs|us|ms|s|secs?|seconds?|min|minutes?|h|hours?|days?|nanoseconds?|microseconds?|milliseconds?)\b`)
)

// number is one number of a text: its digits, and its length in
// milliseconds when a time unit follows it ("" otherwise).
type number struct {
	digits, duration string
}

// numbersOf finds the numbers of a text, in digits and in words; with
// words false, "one" alone is no number unless a time unit follows it
// (a claim's "one of them" is a pronoun, not a count).
func numbersOf(s string, words bool) []number {
	return numbersIn(s, wordRE.FindAllString(strings.ToLower(s), -1), words)
}

// numbersIn is numbersOf for a text and its lower-cased words.
func numbersIn(s string, toks []string, words bool) []number {
	var out []number
	if strings.ContainsAny(s, "0123456789") {
		for _, m := range digitsRE.FindAllStringSubmatch(s, -1) {
			out = append(out, withUnit(normNumber(m[2]), m[3]))
		}
	}
	for i := 0; i < len(toks); {
		v, n := spelled(toks[i:])
		if n == 0 {
			i++
			continue
		}
		unit := ""
		if i+n < len(toks) {
			unit = toks[i+n]
		}
		if unit == "a" && i+n+1 < len(toks) && unitRE.MatchString(toks[i+n+1]) { // "half a second"
			unit = toks[i+n+1]
		}
		if words || n > 1 || toks[i] != "one" || unitRE.MatchString(unit) {
			out = append(out, withUnit(v, unit))
		}
		i += n
	}
	return out
}

// spelled reads a number written in words at the start of toks ("forty",
// "two hundred", "a dozen", "twenty five"); n is how many words it took.
func spelled(toks []string) (digits string, n int) {
	total, cur, took := 0.0, 0.0, 0
	for took < len(toks) {
		w := toks[took]
		if d, ok := numberWords[w]; ok {
			v, _ := strconv.ParseFloat(d, 64)
			cur += v
			took++
			continue
		}
		if m, ok := multipliers[w]; ok {
			if cur == 0 {
				cur = 1
			}
			total += cur * m
			cur = 0
			took++
			continue
		}
		if w == "a" && took == 0 && len(toks) > 1 && (toks[1] == "dozen" || multipliers[toks[1]] > 0) {
			took++
			continue
		}
		if w == "and" && took > 0 && len(toks) > took+1 && numberWords[toks[took+1]] != "" {
			took++
			continue
		}
		break
	}
	if took == 0 || took == 1 && toks[0] == "a" {
		return "", 0
	}
	return strconv.FormatFloat(total+cur, 'f', -1, 64), took
}

// withUnit is a number with the time unit after it, if it is one.
func withUnit(digits, unit string) number {
	n := number{digits: digits}
	u := strings.ToLower(unit)
	if m := unitRE.FindString(u); m != "" {
		u = strings.TrimSuffix(m, "s")
		if u == "" || m == "ms" || m == "ns" || m == "us" || m == "µs" {
			u = m
		}
		if u == "sec" || u == "secs" {
			u = "s"
		}
		if ms, ok := unitMS[u]; ok {
			if v, err := strconv.ParseFloat(digits, 64); err == nil {
				n.duration = "dur:" + strconv.FormatFloat(v*ms, 'f', -1, 64)
			}
		}
	}
	return n
}

// normNumber drops thousands separators.
func normNumber(n string) string {
	return strings.ReplaceAll(n, ",", "")
}
