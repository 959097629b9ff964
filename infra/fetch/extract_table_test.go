package fetch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	"golang.org/x/net/html"
)

// extractBefore is the extraction of commit fa1327b, kept to measure
// against: readability's article as its inner text when it holds 200
// characters, else the decluttered body's, each line's white space
// collapsed.
func extractBefore(body []byte) string {
	doc, err := html.Parse(strings.NewReader(toUTF8(body, "text/html")))
	if err != nil {
		return ""
	}
	declutterNames(doc, nil)
	if art, err := readability.FromDocument(doc, nil); err == nil && art.Node != nil {
		if t := tidyBefore(render.InnerText(art.Node)); utf8.RuneCountInString(t) >= minArticle {
			return t
		}
	}
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.Data == "head" {
			n.Parent.RemoveChild(n)
			return false
		}
		return true
	})
	return tidyBefore(render.InnerText(doc))
}

// tidyBefore is fa1327b's tidy: each line trimmed, at most one blank line
// between blocks.
func tidyBefore(s string) string {
	var out []string
	blank := true
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" && !blank {
			out = append(out, "")
		}
		if l != "" {
			out = append(out, l)
		}
		blank = l == ""
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// measure is one page's row of the extraction table.
type measure struct {
	name                            string
	page, before, after             int // characters
	sections, keptBefore, keptAfter int
	method                          string
	// lostAfter are the headings of the sections the extract after lacks.
	lostAfter []string
}

// measurePage extracts body before and after and counts the characters
// and the sections of the page's text each keeps (sectionsLost).
func measurePage(name string, body []byte) measure {
	before := extractBefore(body)
	after, _ := ExtractPage(body, "text/html", nil)
	page, lostBefore := sectionsLost(body, before)
	_, lostAfter := sectionsLost(body, after.Text)
	return measure{name: name, page: utf8.RuneCountInString(page.text), before: utf8.RuneCountInString(before),
		after: utf8.RuneCountInString(after.Text), sections: len(page.headings), method: after.Method,
		keptBefore: len(page.headings) - len(lostBefore), keptAfter: len(page.headings) - len(lostAfter), lostAfter: lostAfter}
}

// sectionsLost renders the whole text of the page body and lists the
// headings of its sections whose opening words (sectionOpening) text
// lacks.
func sectionsLost(body []byte, text string) (page rendered, lost []string) {
	doc, _ := html.Parse(strings.NewReader(toUTF8(body, "text/html")))
	declutter(doc)
	page = renderText(doc)
	flat := strings.Join(strings.Fields(text), " ")
	for _, h := range page.headings {
		if !strings.Contains(flat, sectionOpening(page.text, h)) {
			lost = append(lost, h.Text)
		}
	}
	return page, lost
}

// tablePages are the pages of the extraction table: the Go toolchain's
// documents, the Bash manual (bash-doc) and two pages of PostgreSQL's
// manual kept in testdata.
func tablePages() []struct{ name, path string } {
	return []struct{ name, path string }{
		{"go_spec.html", goDoc("go_spec.html")},
		{"go_mem.html", goDoc("go_mem.html")},
		{"asm.html", goDoc("asm.html")},
		{"bashref.html", bashref},
		{"runtime-config-resource.html", "testdata/postgresql/runtime-config-resource.html"},
		{"routine-vacuuming.html", "testdata/postgresql/routine-vacuuming.html"},
	}
}

// TestExtractionTable prints the extraction table of docs/extraction.md;
// it runs only when asked to print (TestExtractRealPages holds the
// extraction to the same pages in every run):
//
//	go test -v -run TestExtractionTable ./infra/fetch/
func TestExtractionTable(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("prints the extraction table: run with -v")
	}
	var rows []measure
	for _, p := range tablePages() {
		rows = append(rows, measurePage(p.name, realPage(t, p.path)))
	}
	t.Log("\n" + tableMarkdown(rows))
}

// tableMarkdown renders rows as the Markdown table of docs/extraction.md.
func tableMarkdown(rows []measure) string {
	var b strings.Builder
	b.WriteString("| page | page text | extract before | extract after | kept by | sections | kept before | kept after |\n")
	b.WriteString("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n")
	for _, m := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d (%d%%) | %d (%d%%) | %s | %d | %d | %d |\n", m.name, m.page,
			m.before, percent(m.before, m.page), m.after, percent(m.after, m.page), m.method, m.sections, m.keptBefore, m.keptAfter)
	}
	return b.String()
}

func percent(n, of int) int {
	if of == 0 {
		return 100
	}
	return 100 * n / of
}

// TestExtractionWholeManual measures the whole of PostgreSQL's HTML
// manual, the directory GB_EXTRACT_MANUAL names (Debian's
// postgresql-doc-15: /usr/share/doc/postgresql-doc-15/html): how many
// pages lose more than 30% and more than 50% of their text, before and
// after, and fails for a page that loses more than 30% of its text or
// any section after. It is opt-in, not part of CI:
//
//	GB_EXTRACT_MANUAL=/usr/share/doc/postgresql-doc-15/html go test -v -run TestExtractionWholeManual ./infra/fetch/
func TestExtractionWholeManual(t *testing.T) {
	dir := os.Getenv("GB_EXTRACT_MANUAL")
	if dir == "" {
		t.Skip("GB_EXTRACT_MANUAL is not set")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.html"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no HTML pages in %s: %v", dir, err)
	}
	var rows []measure
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, measurePage(filepath.Base(path), b))
	}
	t.Log("\n" + lossTable(rows))
	for _, m := range rows {
		if m.after < m.page*7/10 || len(m.lostAfter) > 0 {
			t.Errorf("%s: extract %d of %d characters (%s), sections lost %q", m.name, m.after, m.page, m.method, m.lostAfter)
		}
	}
}

// lossTable counts the pages losing more than 30% and 50% of their text.
func lossTable(rows []measure) string {
	var b strings.Builder
	count := func(share float64, of func(measure) int) int {
		n := 0
		for _, m := range rows {
			if float64(of(m)) < (1-share)*float64(m.page) {
				n++
			}
		}
		return n
	}
	before, after := func(m measure) int { return m.before }, func(m measure) int { return m.after }
	sections := func(kept func(measure) int) (int, int) {
		k, all := 0, 0
		for _, m := range rows {
			k, all = k+kept(m), all+m.sections
		}
		return k, all
	}
	kb, all := sections(func(m measure) int { return m.keptBefore })
	ka, _ := sections(func(m measure) int { return m.keptAfter })
	fmt.Fprintf(&b, "| %d pages | before | after |\n| --- | ---: | ---: |\n", len(rows))
	fmt.Fprintf(&b, "| lose more than 30%% of their text | %d | %d |\n", count(0.3, before), count(0.3, after))
	fmt.Fprintf(&b, "| lose more than 50%% of their text | %d | %d |\n", count(0.5, before), count(0.5, after))
	fmt.Fprintf(&b, "| sections kept (of %d) | %d | %d |\n", all, kb, ka)
	articles := 0
	for _, m := range rows {
		if m.method == MethodArticle {
			articles++
		}
	}
	fmt.Fprintf(&b, "| text from readability's article (else the page's whole text) | | %d |\n", articles)
	return b.String()
}

// BenchmarkExtract times the extraction of the Bash manual (472 kB of
// HTML), before and after.
//
//	go test -run '^$' -bench BenchmarkExtract ./infra/fetch/
func BenchmarkExtract(b *testing.B) {
	body, err := os.ReadFile(bashref)
	if err != nil {
		b.Skipf("page missing: %v", err)
	}
	b.Run("before", func(b *testing.B) {
		for b.Loop() {
			extractBefore(body)
		}
	})
	b.Run("after", func(b *testing.B) {
		for b.Loop() {
			if _, err := ExtractPage(body, "text/html", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
