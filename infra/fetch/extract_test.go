package fetch

import (
	"context"
	"fmt"
	"go/build"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// bashref is the Bash Reference Manual in HTML, from Debian's bash-doc
// package (installed by .ci/run).
const bashref = "/usr/share/doc/bash/bashref.html"

// realPage reads a page nobody here wrote; a missing one skips the test,
// except under CI=true, where it fails.
func realPage(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("page missing under CI: %v", err)
		}
		t.Skipf("page missing: %v", err)
	}
	return b
}

func goDoc(name string) string { return filepath.Join(build.Default.GOROOT, "doc", name) }

// serveFiles serves real pages over loopback as text/html.
func serveFiles(t *testing.T, pages map[string][]byte) (*Fetcher, string) {
	return localFetcher(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(b)
	}), Config{})
}

// TestExtractRealPages fetches the Go specification, the Go memory model,
// the Bash manual and two pages of PostgreSQL's manual over a loopback
// server and checks that their text holds headings and paragraphs, and no
// style, script or navigation text; that it keeps every section of the
// page's whole text and 95% of its characters; and that the page says
// that text's length.
func TestExtractRealPages(t *testing.T) {
	cases := []struct {
		path, file, title string
		has, hasNot       []string
	}{
		{"/ref/spec", goDoc("go_spec.html"), "",
			[]string{"## Introduction\n", "\n## Notation\n", "\n### Select statements\n", "\n## Appendix\n",
				"This is the reference manual for the Go programming language.",
				"A \"select\" statement chooses which of a set of possible send or receive operations will proceed."},
			[]string{"<h2", "<p>", "&lt;", `"Title":`, "Subtitle"}},
		{"/ref/mem", goDoc("go_mem.html"), "",
			[]string{"## Introduction\n", "\n### Advice\n", "\n## Memory Model\n",
				"The Go memory model specifies the conditions under which reads of a variable in one goroutine"},
			[]string{"p.rule", "font-style", "<style", "<h2"}},
		{"/bash/bashref.html", bashref, "Bash Reference Manual",
			[]string{"# Bash Features\n", "\n#### 3.2.3 Pipelines\n", "Bash is the shell, or command language interpreter, for the GNU operating system.",
				"A pipeline is a sequence of one or more commands separated by one of the control operators"},
			[]string{"Next: ", "Previous: ", "[Contents][Index]", "copiable-anchor", "text-decoration", "accesskey"}},
		{"/pg/runtime-config-resource.html", "testdata/postgresql/runtime-config-resource.html", "20.4. Resource Consumption",
			[]string{"\n### 20.4.4. Cost-based Vacuum Delay\n", "vacuum_cost_page_dirty (integer)\n", "\n### 20.4.6. Asynchronous Behavior\n"},
			[]string{"Prev Up Next", "Submit correction", "Home"}},
		{"/pg/routine-vacuuming.html", "testdata/postgresql/routine-vacuuming.html", "25.1. Routine Vacuuming",
			[]string{"\n### 25.1.6. The Autovacuum Daemon\n", "The autovacuum daemon, if enabled, will automatically issue"},
			[]string{"Prev Up Next", "Submit correction"}},
	}
	pages := map[string][]byte{}
	for _, c := range cases {
		pages[c.path] = realPage(t, c.file)
	}
	f, base := serveFiles(t, pages)
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			page, err := f.Fetch(context.Background(), base+c.path)
			if err != nil {
				t.Fatal(err)
			}
			if page.URL != base+c.path || page.Title != c.title || page.Bytes != len(pages[c.path]) {
				t.Errorf("url %q title %q bytes %d", page.URL, page.Title, page.Bytes)
			}
			checkText(t, page.Text, c.has, c.hasNot)
			whole, lost := sectionsLost(pages[c.path], page.Text)
			n := utf8.RuneCountInString(page.Text)
			if len(lost) > 0 || page.PageChars != utf8.RuneCountInString(whole.text) || n < page.PageChars*95/100 {
				t.Errorf("extract %d of %d characters (page text %d); sections lost %q", n, page.PageChars,
					utf8.RuneCountInString(whole.text), lost)
			}
		})
	}
}

// TestExtractDropsScriptsAndNavigation adds a script, a style sheet and a
// navigation bar to a real page: none of their text reaches the page's
// text, readability's or the plain fallback's.
func TestExtractDropsScriptsAndNavigation(t *testing.T) {
	mem := string(realPage(t, goDoc("go_mem.html")))
	hostile := `<nav><a href="/">NAVLINK Home</a> | <a href="/blog">NAVLINK Blog</a></nav>` +
		`<script>var leaked = "SCRIPTTEXT";</script><style>.x{color:STYLETEXT}</style>`
	page := "<html><head><title>The Go Memory Model</title><script>HEADSCRIPT()</script></head><body>" +
		hostile + mem + `<footer>FOOTERTEXT copyright</footer></body></html>`
	short := "<html><head><title>Short</title></head><body>" + hostile +
		"<h1>Short page</h1><p>Only one short paragraph.</p><footer>FOOTERTEXT</footer></body></html>"
	for name, c := range map[string]struct {
		body, title string
		has         []string
	}{
		"article":  {page, "The Go Memory Model", []string{"\n### Advice\n", "must serialize such access"}},
		"fallback": {short, "Short", []string{"# Short page\n", "Only one short paragraph."}},
	} {
		t.Run(name, func(t *testing.T) {
			title, text, err := Extract([]byte(c.body), "text/html", nil)
			if err != nil {
				t.Fatal(err)
			}
			if title != c.title {
				t.Errorf("title %q, want %q", title, c.title)
			}
			checkText(t, text, c.has, []string{"NAVLINK", "SCRIPTTEXT", "STYLETEXT", "HEADSCRIPT", "FOOTERTEXT", "p.rule"})
		})
	}
}

// TestExtractPagesWholeTextOnce pages the extracted spec as the fetch tool
// does (20,000 characters a call): the parts rebuild the text exactly.
func TestExtractPagesWholeTextOnce(t *testing.T) {
	_, text, err := Extract(realPage(t, goDoc("go_spec.html")), "text/html; charset=utf-8", nil)
	if err != nil {
		t.Fatal(err)
	}
	total := utf8.RuneCountInString(text)
	if total < 100000 {
		t.Fatalf("the spec's text is only %d characters", total)
	}
	var b strings.Builder
	calls := 0
	for offset := 0; ; calls++ {
		part, left := Slice(text, offset, 20000)
		b.WriteString(part)
		offset += utf8.RuneCountInString(part)
		if left == 0 {
			break
		}
	}
	if b.String() != text || calls != (total-1)/20000 {
		t.Errorf("%d calls rebuilt %d of %d characters", calls+1, utf8.RuneCountInString(b.String()), total)
	}
}

func checkText(t *testing.T, text string, has, hasNot []string) {
	t.Helper()
	for _, s := range has {
		if !strings.Contains(text, s) {
			t.Errorf("the text lacks %q", s)
		}
	}
	for _, s := range hasNot {
		if strings.Contains(text, s) {
			i := strings.Index(text, s)
			t.Errorf("the text holds %q: …%s…", s, text[max(i-80, 0):min(i+80, len(text))])
		}
	}
}

// TestExtractTextKinds: text, Markdown and JSON are kept as they are
// (decoded from their charset), and other types are refused.
func TestExtractTextKinds(t *testing.T) {
	for ctype, c := range map[string]struct{ body, text string }{
		"text/markdown; charset=utf-8":   {"# Title\n\n*emphasis* <b>kept</b>", "# Title\n\n*emphasis* <b>kept</b>"},
		"application/json":               {`{"k": "<v>"}`, `{"k": "<v>"}`},
		"text/plain; charset=iso-8859-1": {"caf\xe9 cr\xe8me", "café crème"},
		"application/problem+json":       {`{"title": "x"}`, `{"title": "x"}`},
	} {
		title, text, err := Extract([]byte(c.body), ctype, nil)
		if err != nil || title != "" || text != c.text {
			t.Errorf("%s: %q, %q, %v; want %q", ctype, title, text, err, c.text)
		}
	}
	for _, ctype := range []string{"image/png", "application/pdf", "application/octet-stream", "video/mp4"} {
		if _, _, err := Extract([]byte("\x00\x01binary"), ctype, nil); err == nil || !strings.Contains(err.Error(), ctype) {
			t.Errorf("%s: err = %v, want a refusal naming the type", ctype, err)
		}
	}
}

// TestExtractKeepsReadabilityArticle: beside an article of several
// sections, a blog's side column of links and a comment form that no
// element or class marks as navigation are left out: readability's
// article is the text when it keeps every section.
func TestExtractKeepsReadabilityArticle(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<html><head><title>Tuning autovacuum</title></head><body><div class="wrap"><div class="post">`)
	for i := range 5 {
		fmt.Fprintf(&b, "<h2>Part %d</h2>", i+1)
		for j := range 3 {
			fmt.Fprintf(&b, "<p>Paragraph %d of part %d says how the autovacuum daemon chooses the tables it visits, "+
				"and which of its settings change that choice, with an example of each setting at work.</p>", j+1, i+1)
		}
	}
	b.WriteString(`</div><div class="column"><div class="box"><h3>Popular</h3><ul>`)
	for i := range 12 {
		fmt.Fprintf(&b, `<li><a href="/p/%d">SIDELINK post %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></div></div></div></body></html>`)
	e, err := ExtractPage([]byte(b.String()), "text/html", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Method != MethodArticle || len(e.Headings) != 5 || utf8.RuneCountInString(e.Text) >= e.PageChars {
		t.Errorf("method %s, %d headings, %d of %d characters: want readability's article of 5 parts",
			e.Method, len(e.Headings), utf8.RuneCountInString(e.Text), e.PageChars)
	}
	checkText(t, e.Text, []string{"## Part 1\n", "## Part 5\n", "Paragraph 3 of part 5"}, []string{"SIDELINK", "Popular"})
}
