package doctext_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/doctext"
)

// fuzzLimits keep one input small and short.
var fuzzLimits = doctext.Limits{MaxBytes: 1 << 20, MaxPages: 50, MaxChars: 1 << 20, MaxInflated: 8 << 20, MaxRows: 200, Timeout: 5 * time.Second}

// fuzzFormat fuzzes one format: its seeds are testdata/seeds/*.ext; each
// input is read as that format (by its name) and must give an error or a
// text whose parts lie in order inside it.
func fuzzFormat(f *testing.F, ext string) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "seeds", "*"+ext))
	if len(seeds) == 0 {
		f.Fatalf("no seeds testdata/seeds/*%s", ext)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := doctext.Extract(context.Background(), body, "", "input"+ext, doctext.Options{Limits: fuzzLimits})
		if err != nil {
			return
		}
		n := utf8.RuneCountInString(d.Text)
		end := 0
		for _, p := range d.Parts {
			if p.Offset < end || p.Len < 0 || p.Offset+p.Len > n {
				t.Fatalf("part %+v out of order or outside the text of %d characters", p, n)
			}
			end = p.Offset + p.Len
		}
	})
}

func FuzzPDF(f *testing.F)  { fuzzFormat(f, ".pdf") }
func FuzzDOCX(f *testing.F) { fuzzFormat(f, ".docx") }
func FuzzPPTX(f *testing.F) { fuzzFormat(f, ".pptx") }
func FuzzXLSX(f *testing.F) { fuzzFormat(f, ".xlsx") }
func FuzzCSV(f *testing.F)  { fuzzFormat(f, ".csv") }
func FuzzHTML(f *testing.F) { fuzzFormat(f, ".html") }
