package doctext_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gbresearch/gb/jobs/doctext"
	"github.com/gbresearch/gb/jobs/doctext/doctexttest"
)

var updateSeeds = flag.Bool("update-seeds", false, "write testdata/seeds from doctexttest")

// seeds are the fuzz seeds, small documents of each format.
func seeds() map[string][]byte {
	return map[string][]byte{
		"paper.pdf":   doctexttest.Paper(),
		"scanned.pdf": doctexttest.Scanned(),
		"deep.pdf":    doctexttest.DeepPDF(200),
		"pages.pdf":   doctexttest.ManyPages(3),
		"review.docx": doctexttest.DOCX(),
		"deep.docx":   doctexttest.DeepDOCX(200),
		"deck.pptx":   doctexttest.Deck(),
		"levels.xlsx": doctexttest.Sheet(5),
		"table.csv":   []byte("site,year,level\nnorth,2021,1.5\n\"south, far\",2022,\"2.0\"\n"),
		"page.html":   []byte("<html><head><title>T</title><script>x()</script></head><body><h1>Head</h1><p>One <b>two</b></p><ul><li>a</li></ul></body></html>"),
	}
}

// TestSeedsCurrent checks that testdata/seeds holds a seed of each kind
// doctexttest makes (go test -run TestSeedsCurrent -update-seeds writes
// them; fpdf's bytes vary from one process to the next, so the PDFs are
// compared by their text).
func TestSeedsCurrent(t *testing.T) {
	for name, b := range seeds() {
		path := filepath.Join("testdata", "seeds", name)
		if *updateSeeds {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err == nil && filepath.Ext(name) == ".pdf" {
			have, b = pdfText(t, have), pdfText(t, b)
		}
		if err != nil || !bytes.Equal(have, b) {
			t.Errorf("%s is not what doctexttest makes (%v): run go test -run TestSeedsCurrent -update-seeds ./jobs/doctext/", path, err)
		}
	}
}

// pdfText is a PDF's text, or its error.
func pdfText(t *testing.T, b []byte) []byte {
	d, err := doctext.Extract(context.Background(), b, "", "", doctext.Options{})
	if err != nil {
		return []byte(err.Error())
	}
	return []byte(d.Text)
}
