package fetch

import (
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Locate finds where a URL's #fragment points in the text: the character
// where the text of the element of that id (or anchor of that name)
// starts, and the heading of the section it falls in ("" before the
// first). An id matches as it is, unescaped, or else regardless of case;
// with no such element, a fragment that is a heading's text as a slug
// ("graceful-shutdown") names that heading. ok is false when none does.
func (e *Extraction) Locate(fragment string) (offset int, heading string, ok bool) {
	offset, ok = e.anchorOffset(fragment)
	if !ok {
		return 0, "", false
	}
	offset = min(offset, utf8.RuneCountInString(e.Text))
	if h, found := sectionOf(e.Headings, offset); found {
		heading = strings.Repeat("#", h.Level) + " " + h.Text
	}
	return offset, heading, true
}

// anchorOffset is the offset of the element that fragment names.
func (e *Extraction) anchorOffset(fragment string) (int, bool) {
	if fragment == "" {
		return 0, false
	}
	names := []string{fragment}
	if u, err := url.PathUnescape(fragment); err == nil && u != fragment {
		names = append(names, u)
	}
	for _, id := range names {
		if at, ok := e.anchors[id]; ok {
			return at, true
		}
	}
	for _, id := range names {
		if at, ok := anchorFold(e.anchors, id); ok {
			return at, true
		}
	}
	want := slug(names[len(names)-1])
	for _, h := range e.Headings {
		if slug(h.Text) == want {
			return h.Offset, true
		}
	}
	return 0, false
}

// anchorFold is the earliest anchor whose id equals id regardless of
// case.
func anchorFold(anchors map[string]int, id string) (int, bool) {
	best, found := 0, false
	for k, at := range anchors {
		if strings.EqualFold(k, id) && (!found || at < best) {
			best, found = at, true
		}
	}
	return best, found
}

// slug is a heading's text as sites make ids of it: lower case, its
// letters and digits kept, each other run of characters one "-".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// sectionOf is the last heading at or before offset.
func sectionOf(headings []Heading, offset int) (Heading, bool) {
	i := sort.Search(len(headings), func(i int) bool { return headings[i].Offset > offset })
	if i == 0 {
		return Heading{}, false
	}
	return headings[i-1], true
}

// mergeAnchors places the ids of the whole page in the article: those
// the article holds where it holds them, and each other at the heading
// of the section it falls in on the page, when the article keeps that
// heading. An id the article has no place for is left out.
func mergeAnchors(art articleText, page rendered) map[string]int {
	out := make(map[string]int, len(page.anchors))
	for id, at := range art.anchors {
		out[id] = at
	}
	byText := map[string]int{}
	for _, h := range art.headings {
		if _, seen := byText[h.Text]; !seen {
			byText[h.Text] = h.Offset
		}
	}
	for id, at := range page.anchors {
		if _, ok := out[id]; ok {
			continue
		}
		if h, ok := sectionOf(page.headings, at); ok {
			if where, kept := byText[h.Text]; kept {
				out[id] = where
			}
		}
	}
	return out
}
