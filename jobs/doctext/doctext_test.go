package doctext_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/doctext"
	"github.com/gbresearch/gb/jobs/doctext/doctexttest"
)

func extract(t *testing.T, body []byte, ctype, name string) (doctext.Doc, error) {
	t.Helper()
	return doctext.Extract(context.Background(), body, ctype, name, doctext.Options{})
}

func TestPaperPagesAndReadingOrder(t *testing.T) {
	d, err := extract(t, doctexttest.Paper(), "application/pdf", "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Title != doctexttest.PaperTitle || len(d.Authors) != 2 || d.Authors[0] != doctexttest.PaperAuthor || d.Date != "2024-03-14" {
		t.Errorf("title %q, authors %q, date %q", d.Title, d.Authors, d.Date)
	}
	if len(d.Parts) != 3 {
		t.Fatalf("%d parts, want 3 pages: %+v", len(d.Parts), d.Parts)
	}
	runes := []rune(d.Text)
	page := func(n int) string {
		p := d.Parts[n-1]
		return string(runes[p.Offset : p.Offset+p.Len])
	}
	// Reading order: the left column whole before the right one.
	p1 := page(1)
	if l, r := strings.Index(p1, "Sentence 12 "), strings.Index(p1, "Right column of page one"); l < 0 || r < 0 || l > r {
		t.Errorf("page 1 does not read the left column before the right (%d, %d):\n%s", l, r, p1)
	}
	if !strings.Contains(page(doctexttest.PaperTablePage), doctexttest.PaperTableRow) {
		t.Errorf("page %d lacks the table row %q:\n%s", doctexttest.PaperTablePage, doctexttest.PaperTableRow, page(2))
	}
	if !strings.Contains(strings.Join(strings.Fields(page(doctexttest.PaperClaimPage)), " "), doctexttest.PaperClaim) {
		t.Errorf("page 3 lacks the claim:\n%s", page(3))
	}
	i := strings.Index(d.Text, "The shell conducts")
	if p, ok := d.PartAt(len([]rune(d.Text[:i]))); !ok || p.Number != 3 {
		t.Errorf("the claim is on part %+v, want page 3", p)
	}
}

func TestOffice(t *testing.T) {
	d, err := extract(t, doctexttest.DOCX(), "", "review.docx")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Pump Failure Review", "## Findings", doctexttest.DOCXClaim, "Pump | Hours\n4 | 1,200", "### Next steps"} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("docx lacks %q:\n%s", want, d.Text)
		}
	}
	if d.Title != "Pump Failure Review" || d.Authors[0] != "Cora Vance" || d.Date != "2024-05-02" {
		t.Errorf("docx title %q authors %q date %q", d.Title, d.Authors, d.Date)
	}
	deck, err := extract(t, doctexttest.Deck(), "application/octet-stream", "")
	if err != nil {
		t.Fatal(err)
	}
	if deck.Format != doctext.FormatPPTX || len(deck.Parts) != 3 || deck.Parts[0].Name != "Quarterly Results" || deck.Parts[2].Name != "Outlook" {
		t.Fatalf("deck parts %+v (format %s)", deck.Parts, deck.Format)
	}
	if !strings.Contains(deck.Text, "## Slide 2: Regional View\n\nThe north grew fastest.") {
		t.Errorf("deck text:\n%s", deck.Text)
	}
	sheet, err := extract(t, doctexttest.Sheet(10), "", "levels.xlsx")
	if err != nil {
		t.Fatal(err)
	}
	if len(sheet.Parts) != 2 || sheet.Parts[1].Name != "Notes" || !strings.Contains(sheet.Text, "Site | Year | Level m\nSite 1 | 2002 | 0.2") {
		t.Errorf("sheet parts %+v, text:\n%s", sheet.Parts, sheet.Text)
	}
	big, err := doctext.Extract(context.Background(), doctexttest.Sheet(50), "", "x.xlsx", doctext.Options{Limits: doctext.Limits{MaxRows: 20}})
	if err != nil || !strings.Contains(big.Text, "[31 more rows not read (MaxRows 20)]") {
		t.Errorf("bounded rows: %v\n%s", err, big.Text)
	}
}

func TestCSVAndText(t *testing.T) {
	d, err := extract(t, []byte("a,b\n1,\"two, three\"\n"), "text/csv", "")
	if err != nil || d.Text != "a | b\n1 | two, three\n" {
		t.Errorf("csv: %v %q", err, d.Text)
	}
	d, err = extract(t, []byte("# Notes\n\nplain"), "", "notes.md")
	if err != nil || d.Format != doctext.FormatMarkdown || d.Title != "Notes" {
		t.Errorf("markdown: %v %+v", err, d)
	}
	_, err = extract(t, []byte{0x89, 'P', 'N', 'G', 0, 0}, "image/png", "")
	if !errors.Is(err, doctext.ErrUnsupported) {
		t.Errorf("png: %v", err)
	}
}

func TestHostile(t *testing.T) {
	limit := func(err error) string {
		var le *doctext.LimitError
		if errors.As(err, &le) {
			return le.Limit
		}
		return ""
	}
	cases := []struct {
		name, want string
		body       []byte
		lim        doctext.Limits
	}{
		{"pdf bomb", "MaxInflated", doctexttest.Bomb(100 << 20), doctext.Limits{}},
		{"10,000 pages", "MaxPages", doctexttest.ManyPages(10000), doctext.Limits{}},
		{"deep pdf", "MaxDepth", doctexttest.DeepPDF(100000), doctext.Limits{}},
		{"docx bomb", "MaxChars", doctexttest.BombDOCX(300 << 20), doctext.Limits{}},
		{"docx markup bomb", "MaxInflated", doctexttest.MarkupBombDOCX(100 << 20), doctext.Limits{MaxInflated: 16 << 20}},
		{"many entries", "MaxEntries", doctexttest.ManyEntries(20000), doctext.Limits{}},
		{"deep docx", "MaxDepth", doctexttest.DeepDOCX(100000), doctext.Limits{}},
		{"chars", "MaxChars", doctexttest.Manual(5), doctext.Limits{MaxChars: 1000}},
	}
	for _, c := range cases {
		_, err := doctext.Extract(context.Background(), c.body, "", "", doctext.Options{Limits: c.lim})
		if limit(err) != c.want || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a %s LimitError", c.name, err, c.want)
		}
	}
	if _, err := extract(t, doctexttest.Scanned(), "application/pdf", ""); !errors.Is(err, doctext.ErrNoTextLayer) || !strings.Contains(err.Error(), "no text layer (scanned?)") {
		t.Errorf("scanned: %v", err)
	}
	if _, err := extract(t, doctexttest.Malformed(), "application/pdf", ""); !errors.Is(err, doctext.ErrMalformed) {
		t.Errorf("malformed: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := doctext.Extract(ctx, doctexttest.Manual(20), "", "", doctext.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}

func TestPartsOfText(t *testing.T) {
	for _, body := range [][]byte{doctexttest.Paper(), doctexttest.Deck(), doctexttest.Sheet(3)} {
		d, err := extract(t, body, "", "")
		if err != nil {
			t.Fatal(err)
		}
		got := doctext.PartsOf(d.Text)
		if len(got) != len(d.Parts) {
			t.Fatalf("PartsOf found %d parts, Extract %d", len(got), len(d.Parts))
		}
		for i := range got {
			if got[i] != d.Parts[i] {
				t.Errorf("part %d: PartsOf %+v, Extract %+v", i, got[i], d.Parts[i])
			}
		}
	}
	if p := doctext.PartsOf("intro\n[page 1]\nx"); p != nil {
		t.Errorf("a marker not at the start made parts: %+v", p)
	}
	if s := doctext.Span([]doctext.Part{{Kind: "page", Number: 1, Offset: 0, Len: 10}, {Kind: "page", Number: 2, Offset: 10, Len: 10}}, 5, 15); s != "pp. 1–2" {
		t.Errorf("span %q", s)
	}
}
