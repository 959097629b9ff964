package doctext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// builder writes a document's text, counting its characters so that
// parts have offsets, and stops at the MaxChars limit.
type builder struct {
	b     strings.Builder
	chars int
	max   int
	parts []Part
	open  int // index of the part being written, or -1
}

func newBuilder(max int) *builder { return &builder{max: max, open: -1} }

// write adds s; past the limit it panics with a LimitError (recovered by
// reader.run).
func (b *builder) write(s string) {
	n := utf8.RuneCountInString(s)
	if b.chars+n > b.max {
		panic(abort{limitErr("MaxChars", int64(b.max), "the text runs past %d characters", b.max)})
	}
	b.b.WriteString(s)
	b.chars += n
}

// para writes a paragraph: s, trimmed, apart from what came before by a
// blank line.
func (b *builder) para(s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	b.sep()
	b.write(s)
}

// heading writes a heading line of level 1 to 6.
func (b *builder) heading(level int, s string) {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return
	}
	level = max(1, min(level, 6))
	b.sep()
	b.write(strings.Repeat("#", level) + " " + s)
}

// sep ends the text so far with a blank line, when there is text.
func (b *builder) sep() {
	if b.chars == 0 {
		return
	}
	s := b.b.String()
	switch {
	case strings.HasSuffix(s, "\n\n"):
	case strings.HasSuffix(s, "\n"):
		b.write("\n")
	default:
		b.write("\n\n")
	}
}

// startPart ends the part being written and starts one.
func (b *builder) startPart(kind string, number int, name string) {
	b.sep()
	b.endPart()
	b.parts = append(b.parts, Part{Kind: kind, Number: number, Name: name, Offset: b.chars})
	b.open = len(b.parts) - 1
	if kind == PartPage {
		b.write(fmt.Sprintf("[page %d]", number))
	}
}

func (b *builder) endPart() {
	if b.open >= 0 {
		b.parts[b.open].Len = b.chars - b.parts[b.open].Offset
		b.open = -1
	}
}

// doc is the text written and its parts.
func (b *builder) doc() Doc {
	b.endPart()
	return Doc{Text: b.b.String(), Parts: b.parts}
}
