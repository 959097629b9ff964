package fetch

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

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

// chromeNames are the class and id words that mark an element as the
// site's navigation, repeated on each of its pages around the content:
// the navigation bars of DocBook (PostgreSQL's manual) and Texinfo (the
// Bash manual), breadcrumbs, sidebars and skip links. Only whole words
// count, so "toc" or "header-anchor" do not.
var chromeNames = map[string]bool{
	"navheader": true, "navfooter": true, "nav-panel": true, "navbar": true, "navigation": true,
	"breadcrumb": true, "breadcrumbs": true, "sidebar": true, "skip-link": true, "skiplink": true,
	"site-header": true, "site-footer": true, "cookie-banner": true, "cookie-notice": true,
}

// declutter removes from doc what is never text: scripts, styles,
// navigation (by element, role or class), forms, hidden elements, and the
// page's own header and footer, and navigation repeated through the
// page (dropRepeatedNavigation). It runs before readability, which keeps a
// navigation bar that sits beside a page's text, and before the page's
// whole text is rendered.
func declutter(doc *html.Node) {
	declutterNames(doc, chromeNames)
	dropRepeatedNavigation(doc)
}

// declutterNames is declutter with names as the class and id words of
// navigation.
func declutterNames(doc *html.Node, names map[string]bool) {
	var drop []*html.Node
	var visit func(n *html.Node, inContent bool)
	visit = func(n *html.Node, inContent bool) {
		if n.Type == html.ElementNode {
			if clutter[n.DataAtom] || isNavigation(n, names) || pageChrome[n.DataAtom] && !inContent {
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

// isNavigation reports an element marked as navigation by its role or
// by a class or id word among names, or hidden.
func isNavigation(n *html.Node, names map[string]bool) bool {
	for _, a := range n.Attr {
		switch {
		case a.Key == "role" && (a.Val == "navigation" || a.Val == "banner" || a.Val == "contentinfo"):
			return true
		case a.Key == "hidden" || a.Key == "aria-hidden" && a.Val == "true":
			return true
		case a.Key == "class" || a.Key == "id":
			for _, w := range strings.Fields(strings.ToLower(a.Val)) {
				if names[w] {
					return true
				}
			}
		}
	}
	return false
}

// Repeated navigation: an element of a class found at least
// minRepeats times on the page, each time short (under maxNavChars
// characters) and mostly the text of at least two links, is the site's
// navigation repeated by section, as the "Next: …, Previous: …" bars of
// Texinfo manuals, whatever its class is called.
const (
	minRepeats  = 3
	maxNavChars = 300
)

// navKey names an element by its tag and class, for counting repeats.
type navKey struct {
	tag   atom.Atom
	class string
}

// dropRepeatedNavigation removes the repeated navigation of doc.
func dropRepeatedNavigation(doc *html.Node) {
	found := map[navKey][]*html.Node{}
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		class := attr(n, "class")
		if class == "" || !linkBar(n) {
			return true
		}
		k := navKey{n.DataAtom, class}
		found[k] = append(found[k], n)
		return false
	})
	for _, ns := range found {
		if len(ns) < minRepeats {
			continue
		}
		for _, n := range ns {
			n.Parent.RemoveChild(n)
		}
	}
}

// linkBar reports whether n is short and mostly the text of two or more
// links.
func linkBar(n *html.Node) bool {
	if !shortText(n, 4*maxNavChars) {
		return false
	}
	text := strings.Join(strings.Fields(visibleText(n)), " ")
	if text == "" || len(text) > maxNavChars {
		return false
	}
	links, linkChars := 0, 0
	walk(n, func(c *html.Node) bool {
		if c.Type == html.ElementNode && c.DataAtom == atom.A && attr(c, "href") != "" {
			links++
			linkChars += len(strings.Join(strings.Fields(visibleText(c)), " "))
			return false
		}
		return true
	})
	return links >= 2 && 2*linkChars >= len(text)
}

// attr is the value of n's attribute key, "" when it has none.
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// shortText reports whether the text of n's descendants is at most limit
// bytes, white space included, reading no more of it than that.
func shortText(n *html.Node, limit int) bool {
	size := 0
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			size += len(c.Data)
		}
		return size <= limit
	})
	return size <= limit
}
