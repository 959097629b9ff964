package cite

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/doctext"
)

// maxAlternatives bounds how many more passages are tried when the best
// one's sense differs from the claim's.
const maxAlternatives = 20

// alternativeMargin is how much lower than the best passage's score
// another passage may score and still stand for it.
const alternativeMargin = 0.15

// Check checks every citation of a report.
func (ch *Checker) Check(report string) *Result {
	blocks, entries := parse(report)
	res := &Result{Claims: claims(report, blocks), Sources: entries}
	byN := map[int]Entry{}
	for _, e := range entries {
		if _, ok := byN[e.N]; !ok {
			byN[e.N] = e
		}
	}
	for _, c := range res.Claims {
		if c.Verdict != Uncited && len(entries) == 0 {
			res.SourcesUnparsed = true
		}
	}
	for i := range res.Claims {
		c := &res.Claims[i]
		if c.Verdict == Uncited {
			continue
		}
		k := kind(stripMarkup(c.Text))
		for pi, pt := range claimParts(c.Text) {
			f := features(stripMarkup(pt.text))
			pages := pagesOf(pt.text)
			for _, n := range pt.markers {
				p := Pair{Claim: c.Index, Part: pi, Text: strings.TrimLeft(stripMarkup(pt.text), ",;: "), Marker: n, Page: pages[n]}
				switch {
				case res.SourcesUnparsed:
					p.Verdict, p.Reason = NoSources, "the report's sources could not be parsed"
				default:
					ch.judge(&p, byN, &f)
					ch.placePassage(&p, byN)
				}
				if k != "" {
					p.Verdict, p.Reason = k, ""
				}
				res.Pairs = append(res.Pairs, p)
			}
		}
	}
	res.Recount()
	return res
}

// judge gives the verdict of one claim–source pair.
func (ch *Checker) judge(p *Pair, byN map[int]Entry, f *claimFeatures) {
	opt := ch.opt
	p.Verdict = Unread
	e, ok := byN[p.Marker]
	if !ok {
		p.Reason = fmt.Sprintf("no source [%d] in the report's sources", p.Marker)
		return
	}
	p.Ref = e.Ref
	src := ch.lib.find(e)
	switch {
	case src == nil:
		p.Reason = "never read by this research"
		return
	case !src.read:
		p.Reason = "only seen as a search result's snippet, never read"
		return
	case len(src.text.sentences) == 0:
		p.Reason = "read, but no text came of it"
		return
	}
	t := src.text
	ws := ranked(t, f, opt.Window, ch.lib.known)
	best := ws[0]
	p.Score = best.score
	switch {
	case len(best.missing) > 0:
		p.Verdict, p.Reason = Unsupported, missingReason(best.missing)
	case best.score >= opt.SupportedAt:
		p.Verdict = Supported
		if v, why := sense(t, best, f); v != "" {
			p.Verdict, p.Reason = v, why
			if alt, ok := consistent(t, ws[1:], f, max(opt.SupportedAt, best.score-alternativeMargin)); ok {
				best, p.Verdict, p.Reason, p.Score = alt, Supported, "", alt.score
			}
		}
	case best.score >= opt.WeakAt:
		p.Verdict, p.Reason = Weak, fmt.Sprintf("only %.0f%% of the claim's words are in the passage", best.score*100)
		if v, why := sense(t, best, f); v != "" {
			p.Reason = why
		}
	default:
		p.Verdict, p.Reason = Unsupported, fmt.Sprintf("only %.0f%% of the claim's words are in the passage", best.score*100)
	}
	p.Passages = passages(t, best, ws)
	p.Passage = p.Passages[0]
}

// placePassage says which page of its source the pair's passage is on,
// when the source has pages (doctext's marks), and says so in the reason
// when the claim cites another page (more than one away: a passage may
// run over a page's end).
func (ch *Checker) placePassage(p *Pair, byN map[int]Entry) {
	if p.Passage == "" {
		return
	}
	src := ch.lib.find(byN[p.Marker])
	if src == nil {
		return
	}
	// The passage's longest piece between ellipses, found in the text.
	piece := ""
	for _, seg := range strings.Split(p.Passage, "…") {
		if seg = strings.TrimSpace(seg); len(seg) > len(piece) {
			piece = seg
		}
	}
	words := strings.Fields(piece)
	if len(words) > 8 {
		words = words[:8]
	}
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	re, err := regexp.Compile(strings.Join(words, `\s+`))
	if err != nil || len(words) == 0 {
		return
	}
	for _, raw := range src.texts {
		parts := doctext.PartsOf(raw)
		if len(parts) == 0 {
			continue
		}
		loc := re.FindStringIndex(raw)
		if loc == nil {
			continue
		}
		part, ok := doctext.PartAt(parts, utf8.RuneCountInString(raw[:loc[0]]))
		if !ok {
			return
		}
		p.PassagePage = part.Cite()
		if p.Page > 0 && (part.Number < p.Page-1 || part.Number > p.Page+1) && (p.Verdict == Supported || p.Verdict == Weak) {
			cited := doctext.Part{Kind: part.Kind, Number: p.Page}.Cite()
			p.Reason = strings.TrimPrefix(p.Reason+"; ", "; ") + fmt.Sprintf("cites %s, but the passage is on %s", cited, part.Cite())
		}
		return
	}
}

// consistent finds, among ranked windows, one as good as a supported
// passage whose sense is the claim's.
func consistent(t *text, ws []window, f *claimFeatures, at float64) (window, bool) {
	for i, w := range ws {
		if i == maxAlternatives || len(w.missing) > 0 || w.score < at {
			break
		}
		if v, _ := sense(t, w, f); v == "" {
			return w, true
		}
	}
	return window{}, false
}

// passages are the texts of the chosen window and of the next best ones
// that do not overlap it, best first.
func passages(t *text, chosen window, ws []window) []string {
	picked := top(append([]window{chosen}, ws...))
	out := make([]string, len(picked))
	for i, w := range picked {
		out[i] = t.passage(w)
	}
	return out
}

// Recount sets each cited claim's verdict from its pairs' and recounts,
// after a pair's verdict changed (a judge's, for one): each part of a
// claim takes the best verdict of its sources, and the claim the gravest
// of its parts'. Inferences and claims of absence keep their verdict.
func (r *Result) Recount() {
	parts := map[[2]int]Verdict{}
	for _, p := range r.Pairs {
		key := [2]int{p.Claim, p.Part}
		if v, ok := parts[key]; !ok || better(p.Verdict) < better(v) {
			parts[key] = p.Verdict
		}
	}
	claim := map[int]Verdict{}
	for key, v := range parts {
		if w, ok := claim[key[0]]; !ok || severity(v) > severity(w) {
			claim[key[0]] = v
		}
	}
	for i, c := range r.Claims {
		v, ok := claim[c.Index]
		if ok && c.Verdict != Uncited && c.Verdict != Inference && c.Verdict != Absence {
			r.Claims[i].Verdict = v
		}
	}
	r.Counts = count(r.Claims)
}

// flagged reports whether Flag marks a claim of this verdict.
func flagged(v Verdict) bool { return v == Unsupported || v == Contradicted || v == Unread }

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
		case Contradicted:
			c.Contradicted++
		case Unread:
			c.Unread++
		case NoSources:
			c.NoSources++
		case Uncited:
			c.Uncited++
		case Inference:
			c.Inference++
		case Absence:
			c.Absence++
		}
	}
	return c
}
