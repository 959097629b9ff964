package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/gbresearch/gb/jobs/doctext"
)

// minArticle is the fewest characters of an article readability found for
// it to be used instead of the page's whole text.
const minArticle = 200

// MinArticleShare is the least share of the page's whole text that the
// article readability found must hold to be used: below it, readability
// has taken one part of the page for all of it (on PostgreSQL's manual it
// keeps one section of eight), and the whole text is kept instead.
const MinArticleShare = 0.7

// How an Extraction was made.
const (
	// MethodArticle: the article readability found in an HTML page.
	MethodArticle = "article"
	// MethodPage: the whole text of an HTML page, less its navigation.
	MethodPage = "page"
	// MethodBody: a text body as it was served.
	MethodBody = "body"
	// MethodDocument: the text of a document (PDF, Office, CSV) read by
	// doctext.
	MethodDocument = "document"
)

// Extraction is the readable text of a body and what is known of it.
type Extraction struct {
	Title string
	// Text is the readable text, headings as "## Heading" lines.
	Text string
	// PageChars is the length in characters of the page's whole visible
	// text (its body less scripts, styles and navigation), which Text was
	// taken from; 0 for a body kept as it was.
	PageChars int
	// Headings are the headings of Text, in order.
	Headings []Heading
	// Method says how Text was made (MethodArticle, MethodPage,
	// MethodBody, MethodDocument).
	Method string
	// Format is the doctext format of a document ("pdf", "docx", …).
	Format string
	// anchors maps the ids of the page's elements to the character of
	// Text where their text starts.
	anchors map[string]int
}

// Extract reduces a body of the given Content-Type (sniffed when empty) to
// its title and readable text: the main text of HTML, or the body as it is
// for plain text, Markdown, JSON and XML. pageURL, the page's final URL,
// may be nil. A type it does not read is an error.
func Extract(body []byte, ctype string, pageURL *url.URL) (title, text string, err error) {
	e, err := ExtractPage(body, ctype, pageURL)
	return e.Title, e.Text, err
}

// ExtractPage is Extract with what is known of the text: the page's own
// length, the headings, and where its elements' ids fall (Locate).
func ExtractPage(body []byte, ctype string, pageURL *url.URL) (Extraction, error) {
	mediaType, kind := contentType(ctype, body, urlPath(pageURL))
	if kind == "" {
		return Extraction{}, fmt.Errorf("content type %q is not one fetch reads (%s)", mediaType, readableTypes)
	}
	return extractKind(context.Background(), body, kind, ctype, pageURL)
}

// extractKind reads a body of a format doctext names: HTML and text here
// (extract), the documents (PDF, Office, CSV) by doctext, whose text marks
// its pages ("[page 7]" lines, doctext.PartsOf).
func extractKind(ctx context.Context, body []byte, kind, contentType string, pageURL *url.URL) (Extraction, error) {
	switch kind {
	case kindHTML, kindText, doctext.FormatMarkdown:
		return extract(body, kind, contentType, pageURL), nil
	}
	d, err := doctext.Extract(ctx, body, contentType, urlPath(pageURL), doctext.Options{Limits: doctext.Limits{MaxBytes: int64(len(body)) + 1}})
	if err != nil {
		return Extraction{}, err
	}
	return Extraction{Title: d.Title, Text: d.Text, PageChars: utf8.RuneCountInString(d.Text), Method: MethodDocument, Format: d.Format}, nil
}

// urlPath is u's path, or "" without a URL.
func urlPath(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Path
}

// HTML reads an HTML body as fetch does, for doctext.Options.HTML: the
// knowledge base's HTML files are read as the web's pages.
func HTML(body []byte, contentType string) (title, text string, err error) {
	e := extract(body, kindHTML, contentType, nil)
	return e.Title, e.Text, nil
}

// extract reduces a body of a readable kind to its text; contentType is
// the header, for the charset.
func extract(body []byte, kind, contentType string, pageURL *url.URL) Extraction {
	text := toUTF8(body, contentType)
	if kind != kindHTML {
		return Extraction{Text: text, Method: MethodBody}
	}
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return Extraction{Text: text, Method: MethodBody}
	}
	title := docTitle(doc)
	declutter(doc)
	page := renderText(doc)
	e := Extraction{Title: title, PageChars: utf8.RuneCountInString(page.text)}
	if art, ok := article(doc, pageURL, page); ok {
		e.Title = firstNonEmpty(title, art.title)
		e.Text, e.Headings, e.Method = art.text, art.headings, MethodArticle
		e.anchors = mergeAnchors(art, page)
		return e
	}
	e.Text, e.Headings, e.anchors, e.Method = page.text, page.headings, page.anchors, MethodPage
	return e
}

// articleText is readability's article, rendered.
type articleText struct {
	rendered
	title string
}

// article is the article readability finds in doc, when it holds at least
// minArticle characters and MinArticleShare of the page's text, and
// drops no section from among those it keeps.
func article(doc *html.Node, pageURL *url.URL, page rendered) (articleText, bool) {
	pageChars := utf8.RuneCountInString(page.text)
	art, err := readability.FromDocument(doc, pageURL)
	if err != nil || art.Node == nil {
		return articleText{}, false
	}
	r := renderText(art.Node)
	n := utf8.RuneCountInString(r.text)
	title := strings.Join(strings.Fields(art.Title()), " ")
	if n < minArticle || float64(n) < MinArticleShare*float64(pageChars) || dropsSection(r, page, title) {
		return articleText{}, false
	}
	return articleText{rendered: r, title: title}, true
}

// toUTF8 decodes body from the charset its header or content declares.
func toUTF8(body []byte, contentType string) string {
	if utf8.Valid(body) {
		return string(body)
	}
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	decoded, err := io.ReadAll(r)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return strings.ToValidUTF8(string(decoded), "\uFFFD")
}

// docTitle is the text of the document's <title>.
func docTitle(doc *html.Node) string {
	var title string
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			title = strings.Join(strings.Fields(textOf(n)), " ")
			return false
		}
		return title == ""
	})
	return title
}

// walk visits n and its descendants depth first; visit returns whether to
// descend into a node.
func walk(n *html.Node, visit func(*html.Node) bool) {
	if !visit(n) {
		return
	}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling // visit may detach c
		walk(c, visit)
		c = next
	}
}

// textOf is the concatenated text of n's descendants.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return true
	})
	return b.String()
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sectionOpening is what shows that a text keeps a section: the first 60
// characters of the first line after its heading, less a list item's
// marker and what follows a table's first cell; or the heading's text when
// the section has no text of its own before the next heading.
func sectionOpening(text string, h Heading) string {
	rest := text[byteOffset(text, h.Offset):]
	rest = rest[:min(len(rest), 4000)]
	lines := strings.Split(rest, "\n")
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if isHeadingLine(l) {
			break
		}
		l = strings.TrimLeft(strings.TrimPrefix(l, "- "), "0123456789. ")
		l, _, _ = strings.Cut(l, " | ")
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			return firstRunes(l, 60)
		}
	}
	return h.Text
}

// isHeadingLine reports a line rendered from a heading: one to six "#"
// and a space.
func isHeadingLine(l string) bool {
	n := len(l) - len(strings.TrimLeft(l, "#"))
	return n >= 1 && n <= 6 && strings.HasPrefix(l[n:], " ")
}

// byteOffset is the byte index of character (rune) n of s.
func byteOffset(s string, n int) int {
	i := 0
	for b := range s {
		if i == n {
			return b
		}
		i++
	}
	return len(s)
}

// firstRunes is the first n characters of s.
func firstRunes(s string, n int) string {
	return s[:byteOffset(s, n)]
}
