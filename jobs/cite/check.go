package cite

import (
	"fmt"
	"net/url"
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

// rank orders verdicts from best (0) to worst.
func (v Verdict) rank() int {
	switch v {
	case Supported:
		return 0
	case Weak:
		return 1
	case Unsupported:
		return 2
	case Unread:
		return 3
	}
	return 4
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
	Claim   int     `json:"claim"`
	Marker  int     `json:"marker"`
	Ref     string  `json:"ref"`
	Verdict Verdict `json:"verdict"`
	Passage string  `json:"passage,omitempty"`
	Score   float64 `json:"score"`
	Reason  string  `json:"reason,omitempty"`
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

// Check checks every citation of a report.
func (ch *Checker) Check(report string) *Result {
	opt, lib := ch.opt, ch.lib
	blocks, entries := parse(report)
	res := &Result{Claims: claims(report, blocks), Sources: entries}
	byN := map[int]Entry{}
	for _, e := range entries {
		if _, ok := byN[e.N]; !ok {
			byN[e.N] = e
		}
	}
	for i := range res.Claims {
		c := &res.Claims[i]
		if c.Verdict == Uncited {
			continue
		}
		f := features(stripMarkup(c.Text))
		c.Verdict = Unread
		for _, n := range c.Markers {
			p := judge(c.Index, n, byN, lib, &f, opt)
			res.Pairs = append(res.Pairs, p)
			if p.Verdict.rank() < c.Verdict.rank() {
				c.Verdict = p.Verdict
			}
		}
	}
	res.Counts = count(res.Claims)
	return res
}

// judge gives the verdict of one claim–source pair.
func judge(claim, n int, byN map[int]Entry, lib *library, f *claimFeatures, opt Options) Pair {
	p := Pair{Claim: claim, Marker: n, Verdict: Unread}
	e, ok := byN[n]
	if !ok {
		p.Reason = fmt.Sprintf("no source [%d] in the report's sources", n)
		return p
	}
	p.Ref = e.Ref
	src := lib.find(e.Ref)
	switch {
	case src == nil:
		p.Reason = "never read by this research"
		return p
	case !src.read:
		p.Reason = "only seen as a search result's snippet, never read"
		return p
	case len(src.text.sentences) == 0:
		p.Reason = "read, but no text came of it"
		return p
	}
	m := best(src.text, f, opt.Window)
	p.Passage, p.Score = m.passage, m.score
	switch {
	case len(m.missing) > 0:
		p.Verdict, p.Reason = Unsupported, missingReason(m.missing)
	case m.score >= opt.SupportedAt:
		p.Verdict = Supported
	case m.score >= opt.WeakAt:
		p.Verdict, p.Reason = Weak, fmt.Sprintf("only %.0f%% of the claim's words are in the passage", m.score*100)
	default:
		p.Verdict, p.Reason = Unsupported, fmt.Sprintf("only %.0f%% of the claim's words are in the passage", m.score*100)
	}
	return p
}

// Recount sets each cited claim's verdict to the best of its pairs' and
// recounts, after a pair's verdict changed (a judge's, for one).
func (r *Result) Recount() {
	best := map[int]Verdict{}
	for _, p := range r.Pairs {
		if v, ok := best[p.Claim]; !ok || p.Verdict.rank() < v.rank() {
			best[p.Claim] = p.Verdict
		}
	}
	for i, c := range r.Claims {
		if v, ok := best[c.Index]; ok && c.Verdict != Uncited {
			r.Claims[i].Verdict = v
		}
	}
	r.Counts = count(r.Claims)
}

// StripMarkers is a claim's text without its markers and Markdown
// emphasis, as the test reads it.
func StripMarkers(text string) string { return stripMarkup(text) }

// count tallies claims by verdict.
func count(claims []Claim) Counts {
	var c Counts
	for _, cl := range claims {
		c.Claims++
		switch cl.Verdict {
		case Supported:
			c.Supported++
		case Weak:
			c.Weak++
		case Unsupported:
			c.Unsupported++
		case Unread:
			c.Unread++
		case Uncited:
			c.Uncited++
		}
	}
	return c
}

// source is what a library holds for one reference.
type source struct {
	read  bool
	title string
	text  *text
}

// library finds the documents a reference names.
type library struct {
	byRef map[string]*source
}

// newLibrary indexes documents by their normalised references; the texts
// read from one reference are joined.
func newLibrary(docs []Document, window int) *library {
	l := &library{byRef: map[string]*source{}}
	texts := map[*source][]string{}
	for _, d := range docs {
		var src *source
		for _, r := range d.Refs {
			if s := l.byRef[NormalizeRef(r)]; s != nil && r != "" {
				src = s
				break
			}
		}
		if src == nil {
			src = &source{}
		}
		for _, r := range d.Refs {
			if r != "" {
				l.byRef[NormalizeRef(r)] = src
			}
		}
		if src.title == "" {
			src.title = d.Title
		}
		if d.Read {
			src.read = true
			if strings.TrimSpace(d.Text) != "" {
				texts[src] = append(texts[src], d.Text)
			}
		}
	}
	for _, src := range l.byRef {
		if src.text == nil {
			src.text = prepare(src.title, strings.Join(texts[src], "\n"), window)
		}
	}
	return l
}

func (l *library) find(ref string) *source {
	return l.byRef[NormalizeRef(ref)]
}

// NormalizeRef is the form in which references are compared: a URL's
// scheme and host lower-cased, "www." dropped from its host, its fragment,
// default port and trailing '/' dropped; any other reference trimmed.
func NormalizeRef(ref string) string {
	ref = strings.TrimSpace(ref)
	u, err := url.Parse(ref)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return strings.TrimSuffix(ref, "/")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host := strings.TrimPrefix(strings.ToLower(u.Host), "www.")
	if u.Scheme == "https" {
		host = strings.TrimSuffix(host, ":443")
	}
	if u.Scheme == "http" {
		host = strings.TrimSuffix(host, ":80")
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String()
}

// Flag marks in a report each claim whose verdict is unsupported or
// unread, with " ⚠ unsupported" or " ⚠ unread" right after it.
func Flag(report string, res *Result) string {
	var b strings.Builder
	last := 0
	for _, c := range res.Claims {
		if c.Verdict != Unsupported && c.Verdict != Unread {
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
