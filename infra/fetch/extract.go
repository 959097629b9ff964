package fetch

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// minArticle is the fewest characters of an article readability found for
// it to be used instead of the plain rendering.
const minArticle = 200

// Extract reduces a body of the given Content-Type (sniffed when empty) to
// its title and readable text: the main text of HTML, or the body as it is
// for plain text, Markdown, JSON and XML. pageURL, the page's final URL,
// may be nil. A type it does not read is an error.
func Extract(body []byte, ctype string, pageURL *url.URL) (title, text string, err error) {
	mediaType, kind := contentType(ctype, body)
	if kind == "" {
		return "", "", fmt.Errorf("content type %q is not one fetch reads (HTML, plain text, Markdown, JSON, XML)", mediaType)
	}
	title, text = extract(body, kind, ctype, pageURL)
	return title, text, nil
}

// extract reduces a body of a readable kind to its title and text;
// contentType is the header, for the charset.
func extract(body []byte, kind, contentType string, pageURL *url.URL) (title, text string) {
	if kind != kindHTML {
		return "", toUTF8(body, contentType)
	}
	doc, err := html.Parse(strings.NewReader(toUTF8(body, contentType)))
	if err != nil {
		return "", toUTF8(body, contentType)
	}
	title = docTitle(doc)
	declutter(doc)
	if art, err := readability.FromDocument(doc, pageURL); err == nil && art.Node != nil {
		if t := tidy(render.InnerText(art.Node)); utf8.RuneCountInString(t) >= minArticle {
			return firstNonEmpty(title, strings.TrimSpace(art.Title())), t
		}
	}
	return title, plainText(doc)
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

// clutter are elements never part of a page's text.
var clutter = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Nav: true, atom.Aside: true, atom.Form: true, atom.Svg: true,
	atom.Iframe: true, atom.Button: true, atom.Select: true, atom.Menu: true,
	atom.Object: true, atom.Embed: true, atom.Dialog: true,
}

// pageChrome are elements that are the site's, not the content's, unless
// they are inside an article or main element.
var pageChrome = map[atom.Atom]bool{atom.Header: true, atom.Footer: true}

// declutter removes from doc what is never text: scripts, styles,
// navigation, forms, hidden elements, and the page's own header and
// footer. It runs before readability, which keeps a navigation bar that
// sits beside a page's text.
func declutter(doc *html.Node) {
	var drop []*html.Node
	var visit func(n *html.Node, inContent bool)
	visit = func(n *html.Node, inContent bool) {
		if n.Type == html.ElementNode {
			if clutter[n.DataAtom] || isNavigation(n) || pageChrome[n.DataAtom] && !inContent {
				drop = append(drop, n)
				return
			}
			inContent = inContent || n.DataAtom == atom.Article || n.DataAtom == atom.Main
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c, inContent)
		}
	}
	visit(doc, false)
	for _, n := range drop {
		n.Parent.RemoveChild(n)
	}
}

// plainText renders the body of a decluttered document, for pages
// readability finds no article in.
func plainText(doc *html.Node) string {
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Head {
			n.Parent.RemoveChild(n)
			return false
		}
		return true
	})
	return tidy(render.InnerText(doc))
}

// isNavigation reports an element marked as navigation by its role.
func isNavigation(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key == "role" && (a.Val == "navigation" || a.Val == "banner" || a.Val == "contentinfo") {
			return true
		}
		if a.Key == "hidden" || a.Key == "aria-hidden" && a.Val == "true" {
			return true
		}
	}
	return false
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

// tidy trims each line, and keeps at most one blank line between blocks.
func tidy(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	out := make([]string, 0, len(lines))
	blank := true
	for _, l := range lines {
		l = strings.TrimRight(strings.Join(strings.Fields(l), " "), " ")
		if l == "" {
			if !blank {
				out = append(out, "")
			}
			blank = true
			continue
		}
		out = append(out, l)
		blank = false
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
