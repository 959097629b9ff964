package doctext_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/doctext"
	"github.com/gbresearch/gb/jobs/doctext/doctexttest"
)

// TestDocumentTable reads the fixture set and prints, for each document,
// its size, the parts and characters it gives, the time and the peak heap
// (sampled) of reading it, and what it returns (docs/documents.md):
//
//	GB_DOC_TABLE=1 go test -v -run TestDocumentTable ./jobs/doctext/
//
// It checks what each returns; the figures are only printed. It is a
// measurement (its gigabyte bombs take some seconds to make), run when
// asked; TestHostile checks the same outcomes in the suite.
func TestDocumentTable(t *testing.T) {
	if os.Getenv("GB_DOC_TABLE") == "" {
		t.Skip("a measurement: GB_DOC_TABLE=1 runs it")
	}
	rows := []struct {
		name  string
		body  []byte
		ctype string
		want  string // "" for text, else a word of the error
	}{
		{"two-column paper with a table (PDF)", doctexttest.Paper(), "application/pdf", ""},
		{"manual, 320 pages (PDF)", doctexttest.Manual(320), "application/pdf", ""},
		{"slide deck (PPTX)", doctexttest.Deck(), "", ""},
		{"spreadsheet, 2 sheets, 6,000 rows (XLSX)", doctexttest.Sheet(6000), "", ""},
		{"report with a table (DOCX)", doctexttest.DOCX(), "", ""},
		{"scanned page, image only (PDF)", doctexttest.Scanned(), "application/pdf", "no text layer"},
		{"malformed: the paper cut in half (PDF)", doctexttest.Malformed(), "application/pdf", "malformed"},
		{"bomb: a content stream of 1 GB (PDF)", doctexttest.Bomb(1 << 30), "application/pdf", "MaxInflated"},
		{"bomb: document.xml of 1 GB, one text run (DOCX)", doctexttest.BombDOCX(1 << 30), "", "MaxChars"},
		{"bomb: document.xml of 256 MB, empty paragraphs (DOCX)", doctexttest.MarkupBombDOCX(256 << 20), "", "MaxInflated"},
		{"10,000 pages (PDF)", doctexttest.ManyPages(10000), "application/pdf", "MaxPages"},
		{"20,000 zip entries (DOCX)", doctexttest.ManyEntries(20000), "", "MaxEntries"},
		{"arrays nested 100,000 deep (PDF)", doctexttest.DeepPDF(100000), "application/pdf", "MaxDepth"},
		{"elements nested 100,000 deep (DOCX)", doctexttest.DeepDOCX(100000), "", "MaxDepth"},
	}
	var b strings.Builder
	b.WriteString("| document | bytes | parts | characters | time | peak heap | returns |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range rows {
		d, took, peak, err := measure(r.body, r.ctype)
		ret := fmt.Sprintf("%s text, title %q", d.Format, d.Title)
		if err != nil {
			ret = "error: " + err.Error()
			var le *doctext.LimitError
			if errors.As(err, &le) {
				ret = "LimitError " + le.Limit + ": " + err.Error()
			}
		}
		switch {
		case r.want == "" && err != nil:
			t.Errorf("%s: %v", r.name, err)
		case r.want != "" && (err == nil || !strings.Contains(err.Error(), r.want)):
			t.Errorf("%s: %v, want an error saying %q", r.name, err, r.want)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %.1f MB | %s |\n", r.name, len(r.body), len(d.Parts),
			utf8.RuneCountInString(d.Text), took.Round(time.Millisecond), float64(peak)/(1<<20), strings.ReplaceAll(ret, "|", "/"))
	}
	t.Log("\n" + b.String())
}

// measure reads a document, timing it and sampling the heap in use every
// millisecond; the peak is above the heap in use before.
func measure(body []byte, ctype string) (doctext.Doc, time.Duration, uint64, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	}()
	start := time.Now()
	d, err := doctext.Extract(context.Background(), body, ctype, "", doctext.Options{})
	took := time.Since(start)
	close(done)
	wg.Wait()
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapInuse)
	return d, took, peak - base, err
}
