package kb

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// checkCover fails unless passages cover body from its start to its end,
// in order, without gaps, each at most MaxPassageLen characters.
func checkCover(t *testing.T, body string, ps []Passage) {
	t.Helper()
	at := 0
	for i, p := range ps {
		if p.Offset != at {
			t.Fatalf("passage %d starts at %d, want %d (the end of the one before)", i, p.Offset, at)
		}
		if p.Len > MaxPassageLen || p.Len == 0 {
			t.Fatalf("passage %d is %d characters; want 1 to %d", i, p.Len, MaxPassageLen)
		}
		at += p.Len
	}
	if n := utf8.RuneCountInString(body); at != n {
		t.Fatalf("passages end at %d, the body at %d", at, n)
	}
}

// text is the passage's text, cut from body by its character offsets.
func text(body string, p Passage) string {
	return string([]rune(body)[p.Offset : p.Offset+p.Len])
}

func TestSplitAtHeadingsAndParagraphs(t *testing.T) {
	long := strings.Repeat("Ωmega tidal words here. ", 200) // 4,800 characters, one paragraph
	body := "Intro line.\n\n# Tides\n\nBarrages store water.\n\n```\n# not a heading\n```\n\n## Wind é\n\n" + long + "\n\nLast paragraph."
	ps := Split(body)
	checkCover(t, body, ps)
	var headings []string
	for _, p := range ps {
		if p.First {
			headings = append(headings, p.Heading)
		}
	}
	if got := strings.Join(headings, "|"); got != "|Tides|Wind é" {
		t.Fatalf("sections %q; want the text before the first heading, Tides and Wind é (a # in fenced code is none)", got)
	}
	for _, p := range ps {
		got := text(body, p)
		if p.First && p.Heading != "" && !strings.HasPrefix(got, "#") {
			t.Errorf("section %q starts with %.20q, not its heading", p.Heading, got)
		}
		if p.Heading == "Wind é" && strings.Contains(got, "Barrages") {
			t.Errorf("a passage of Wind holds text of Tides: %.40q", got)
		}
	}
	if last := ps[len(ps)-1]; !strings.HasSuffix(text(body, last), "Last paragraph.") || last.Heading != "Wind é" {
		t.Errorf("last passage %+v", last)
	}
}

func TestSplitLongLines(t *testing.T) {
	body := strings.Repeat("x", 2*MaxPassageLen+7) + "\n" + strings.Repeat("line\n", 400)
	ps := Split(body)
	checkCover(t, body, ps)
	if len(ps) < 3 {
		t.Fatalf("%d passages for %d characters", len(ps), len(body))
	}
	if len(Split("")) != 0 || len(Split("  \n\n ")) != 0 {
		t.Error("an empty text has passages")
	}
}

func TestSymbolWords(t *testing.T) {
	got := symbolWords([]string{"Server.ReadHeaderTimeout", "http.ErrServerClosed", "HTTPServer", "Context.Done", "ParseHTTP2Frame"})
	want := "Server Read Header Timeout http Err Closed Context Done Parse HTTP2 Frame" // HTTP is http, seen
	if got != want {
		t.Errorf("symbolWords = %q, want %q", got, want)
	}
}
