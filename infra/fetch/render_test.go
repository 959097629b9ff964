package fetch

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// TestRenderText renders each kind of block as the fetch tool shows it,
// and places every id at the start of its element's text.
func TestRenderText(t *testing.T) {
	const page = `<html><head><title>T</title><style>p{}</style></head><body>
<h1 id="top">The  <em>title</em></h1>
<p>One   paragraph,
 with <a href="/x">a link</a> and <code>code</code>.</p>
<section id="lists"><h2><a name="old-anchor"></a>Lists</h2>
<ul><li>first</li><li><p>second</p></li></ul>
<ol><li>one</li><li id="item-two">two</li></ol></section>
<h3>Table</h3>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>
<pre>func f() {
	return  1
}
</pre>
<p>line<br>break</p>
<dl><dt id="term">term</dt><dd>its meaning</dd></dl>
</body></html>`
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	got := renderText(doc)
	want := "# The title\n\n" +
		"One paragraph, with a link and code.\n\n" +
		"## Lists\n\n" +
		"- first\n\n- second\n\n" +
		"1. one\n2. two\n\n" +
		"### Table\n\n" +
		"Name | Value\na | 1\n\n" +
		"func f() {\n\treturn  1\n}\n\n" +
		"line\nbreak\n\n" +
		"term\nits meaning"
	if got.text != want {
		t.Fatalf("text:\n%s\nwant:\n%s", got.text, want)
	}
	at := func(s string) int { return utf8.RuneCountInString(want[:strings.Index(want, s)]) }
	for id, line := range map[string]string{"top": "# The title", "lists": "## Lists", "old-anchor": "## Lists",
		"item-two": "2. two", "term": "term\n"} {
		if got.anchors[id] != at(line) {
			t.Errorf("#%s at %d, want %d (%q)", id, got.anchors[id], at(line), line)
		}
	}
	var heads []string
	for _, h := range got.headings {
		heads = append(heads, strings.Repeat("#", h.Level)+" "+h.Text)
		if h.Offset != at(strings.Repeat("#", h.Level)+" "+h.Text) {
			t.Errorf("heading %q at %d", h.Text, h.Offset)
		}
	}
	if strings.Join(heads, "|") != "# The title|## Lists|### Table" {
		t.Errorf("headings %q", heads)
	}
}
