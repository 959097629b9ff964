package doctext

import (
	"regexp"
	"strconv"
	"unicode/utf8"
)

// The text marks where its parts start, so that a text kept without its
// Doc (a cache, a knowledge-base document) still has them (PartsOf): a
// page starts with a line "[page N]", a slide with its heading "## Slide
// N: Title", a sheet with "## Sheet N: Name".
var partRE = regexp.MustCompile(`(?m)^(?:\[page (\d{1,5})\]|## (Slide|Sheet) (\d{1,5})(?:: (.*))?)$`)

// PartsOf finds the parts of a text Extract wrote, or of a piece of it
// that starts at a part. They count only when the text starts with a
// part's mark and they number on by one from it, so that a document's own
// "[page 2]" line makes no parts of a text without them.
func PartsOf(text string) []Part {
	var parts []Part
	for _, m := range partRE.FindAllStringSubmatchIndex(text, -1) {
		kind, num, name := PartPage, "", ""
		if m[2] >= 0 {
			num = text[m[2]:m[3]]
		} else {
			kind = map[string]string{"Slide": PartSlide, "Sheet": PartSheet}[text[m[4]:m[5]]]
			num = text[m[6]:m[7]]
			if m[8] >= 0 {
				name = text[m[8]:m[9]]
			}
		}
		n, _ := strconv.Atoi(num)
		offset := utf8.RuneCountInString(text[:m[0]])
		if len(parts) == 0 && (offset != 0 || n < 1) {
			return nil
		}
		if len(parts) > 0 && (n != parts[len(parts)-1].Number+1 || parts[0].Kind != kind) {
			continue
		}
		parts = append(parts, Part{Kind: kind, Number: n, Name: name, Offset: offset})
	}
	total := utf8.RuneCountInString(text)
	for i := range parts {
		end := total
		if i+1 < len(parts) {
			end = parts[i+1].Offset
		}
		parts[i].Len = end - parts[i].Offset
	}
	return parts
}

// Cite is how a part is cited: "p. 7", "slide 3", "sheet 2".
func (p Part) Cite() string {
	switch p.Kind {
	case PartSlide:
		return "slide " + strconv.Itoa(p.Number)
	case PartSheet:
		return "sheet " + strconv.Itoa(p.Number)
	}
	return "p. " + strconv.Itoa(p.Number)
}

// Span says which parts characters from offset to end lie on: "p. 7",
// "pp. 7–9", "slides 2–3"; "" without parts.
func Span(parts []Part, offset, end int) string {
	a, ok := PartAt(parts, offset)
	if !ok {
		return ""
	}
	b, _ := PartAt(parts, max(offset, end-1))
	if a.Number == b.Number {
		return a.Cite()
	}
	plural := map[string]string{PartPage: "pp. ", PartSlide: "slides ", PartSheet: "sheets "}[a.Kind]
	return plural + strconv.Itoa(a.Number) + "–" + strconv.Itoa(b.Number)
}
