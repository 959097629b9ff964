package cite

import (
	"strings"
)

// Verdict is what the check says of a claim–source pair, or of a claim.
type Verdict string

// Verdicts, from best to worst; Uncited is a claim with no marker.
const (
	Supported   Verdict = "supported"
	Weak        Verdict = "weak"
	Unsupported Verdict = "unsupported"
	// Contradicted is a passage that says the opposite of the claim (a
	// negation the passage lacks, subject and object swapped), or a
	// judge's "contradicted".
	Contradicted Verdict = "contradicted"
	Unread       Verdict = "unread"
	// NoSources is a cited claim of a report whose sources section could
	// not be parsed: the claim is not checked, and not counted unread.
	NoSources Verdict = "no_sources"
	Uncited   Verdict = "uncited"
	// Inference is a claim the report marks as its writer's inference,
	// and Absence a claim that a source says nothing of something; both
	// are counted apart and never flagged.
	Inference Verdict = "inference"
	Absence   Verdict = "absence"
)

// better orders verdicts from best (0) to worst for the pairs of one
// part of a claim: one good source is enough.
func better(v Verdict) int {
	switch v {
	case Supported:
		return 0
	case Weak:
		return 1
	case Unsupported:
		return 2
	case Contradicted:
		return 3
	case Unread:
		return 4
	case NoSources:
		return 5
	}
	return 6
}

// severity orders verdicts from mildest (0) to gravest across the parts
// of a claim: a claim is as good as its worst part.
func severity(v Verdict) int {
	switch v {
	case Supported:
		return 0
	case Weak:
		return 1
	case Unsupported:
		return 2
	case Unread:
		return 3
	case NoSources:
		return 4
	case Contradicted:
		return 5
	}
	return -1
}

// Defaults of Options.
const (
	WindowDefault      = 3
	SupportedAtDefault = 0.6
	WeakAtDefault      = 0.34
)

// Options tune the test; zero fields take their defaults.
type Options struct {
	// Window is how many consecutive sentences a passage has at most.
	Window int
	// SupportedAt and WeakAt are the least scores of a supported and of a
	// weak passage.
	SupportedAt float64
	WeakAt      float64
}

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = WindowDefault
	}
	if o.SupportedAt <= 0 {
		o.SupportedAt = SupportedAtDefault
	}
	if o.WeakAt <= 0 {
		o.WeakAt = WeakAtDefault
	}
	return o
}

// Document is what the writers of a report got from one source: the text
// they read, or only a mention (a search result they were shown).
type Document struct {
	// Refs are the URLs or references the source is known by (its final
	// URL, the URL asked for, a knowledge-base document's source).
	Refs  []string
	Title string
	// Text is what was read; Read false means the source was only shown.
	Text string
	Read bool
}

// Pair is the verdict on one claim citing one source.
type Pair struct {
	Claim int `json:"claim"`
	// Part is the index of the part of the claim the pair checks: a
	// sentence with markers in several places is cut after each group of
	// markers, and each part checked against its own sources.
	Part int `json:"part"`
	// Text is that part, without markers, emphasis or leading punctuation.
	Text    string  `json:"text,omitempty"`
	Marker  int     `json:"marker"`
	Ref     string  `json:"ref"`
	Verdict Verdict `json:"verdict"`
	// Page is the page (slide, sheet) the claim cites of the source, as
	// in "[3, p. 7]"; 0 when it names none.
	Page int `json:"page,omitempty"`
	// PassagePage says where Passage is in a source that has pages
	// ("p. 7"), as the reader cites it; "" for a source without pages.
	PassagePage string  `json:"passage_page,omitempty"`
	Passage     string  `json:"passage,omitempty"`
	Score       float64 `json:"score"`
	Reason      string  `json:"reason,omitempty"`
	// Passages are the source's best passages for the claim, best first
	// (Passage is the first), for a judge to read; bounded in number and
	// length.
	Passages []string `json:"-"`
}

// Counts are a report's claims by verdict; every claim is counted once,
// under its own verdict, so Claims is the sum of the others.
type Counts struct {
	Claims      int `json:"claims"`
	Supported   int `json:"supported"`
	Weak        int `json:"weak"`
	Unsupported int `json:"unsupported"`
	Unread      int `json:"unread"`
	Uncited     int `json:"uncited"`
	// Contradicted, NoSources, Inference and Absence count the claims of
	// those verdicts.
	Contradicted int `json:"contradicted,omitempty"`
	NoSources    int `json:"no_sources,omitempty"`
	Inference    int `json:"inference,omitempty"`
	Absence      int `json:"absence,omitempty"`
}

// Result is the check of one report.
type Result struct {
	Claims  []Claim `json:"claims"`
	Pairs   []Pair  `json:"pairs"`
	Sources []Entry `json:"sources"`
	Counts  Counts  `json:"counts"`
	// SourcesUnparsed is true when the report cites markers but no entry
	// of a sources section could be parsed.
	SourcesUnparsed bool `json:"sources_unparsed,omitempty"`
}

// Check checks every citation of a report against the documents its
// writers read, with the default options.
func Check(report string, docs []Document) *Result {
	return NewChecker(docs, Options{}).Check(report)
}

// Checker checks reports against one set of documents, prepared once.
type Checker struct {
	lib *library
	opt Options
}

// NewChecker prepares documents for checking reports with options.
func NewChecker(docs []Document, opt Options) *Checker {
	opt = opt.withDefaults()
	return &Checker{lib: newLibrary(docs, opt.Window), opt: opt}
}

// StripMarkers is a claim's text without its markers and Markdown
// emphasis, as the test reads it.
func StripMarkers(text string) string { return stripMarkup(text) }

// Flag marks in a report each claim whose verdict is unsupported,
// contradicted or unread, with " ⚠ " and its verdict right after it.
// Claims of absence, inferences and claims of a report whose sources
// could not be parsed are never marked.
func Flag(report string, res *Result) string {
	var b strings.Builder
	last := 0
	for _, c := range res.Claims {
		if !flagged(c.Verdict) {
			continue
		}
		if c.End < last || c.End > len(report) {
			continue
		}
		mark := " ⚠ " + string(c.Verdict)
		if strings.HasPrefix(report[c.End:], mark) {
			continue
		}
		b.WriteString(report[last:c.End])
		b.WriteString(mark)
		last = c.End
	}
	b.WriteString(report[last:])
	return b.String()
}
