package fetch

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// MaxDroppedShare is the most of a page's text, less its links' text,
// that the sections readability leaves out around its content may hold
// for its article to be used: a side column of links may go, a column of
// prose may not.
const MaxDroppedShare = 0.1

// dropsSection reports whether readability's article leaves out a section
// of the page's content, or keeps it without its heading: the sections
// named Comments of the Go specification and the Bash manual, taken for
// readers' comments, or the synopsis and "See Also" of PostgreSQL's
// reference pages. The content is the element that holds the sections the
// article keeps (a section is kept when its opening words are in the
// article, sectionOpening); sections outside it, as a blog's side column,
// are readability's to judge unless their text, less its links', is more
// than MaxDroppedShare of the page's. A section is whole in the article
// when its opening words are there under its heading, or under none
// when the heading is the article's title.
func dropsSection(art, page rendered, title string) bool {
	flat := strings.Join(strings.Fields(art.text), " ")
	headed := make(map[string]bool, len(art.headings))
	for _, h := range art.headings {
		headed[h.Text] = true
	}
	var keptNodes []*html.Node
	whole := make([]bool, len(page.headings))
	for i, h := range page.headings {
		opens := strings.Contains(flat, sectionOpening(page.text, h))
		if headed[h.Text] || opens {
			keptNodes = append(keptNodes, h.node)
		}
		// readability takes the page's title heading for its title
		whole[i] = opens && (headed[h.Text] || h.Text == title)
	}
	content := commonAncestor(keptNodes)
	total := utf8.RuneCountInString(page.text)
	dropped := 0
	for i, h := range page.headings {
		if whole[i] {
			continue
		}
		if content != nil && within(h.node, content) {
			return true
		}
		end := total
		if i+1 < len(page.headings) {
			end = page.headings[i+1].Offset
		}
		dropped += end - h.Offset - linkChars(page.links, h.Offset, end)
	}
	return float64(dropped) > MaxDroppedShare*float64(total)
}

// commonAncestor is the deepest element that holds every node of ns (the
// parent of a lone one); nil for none.
func commonAncestor(ns []*html.Node) *html.Node {
	if len(ns) == 0 || ns[0] == nil {
		return nil
	}
	anc := ns[0].Parent
	for _, n := range ns[1:] {
		for anc != nil && !within(n, anc) {
			anc = anc.Parent
		}
	}
	return anc
}

// within reports whether n is anc or one of its descendants.
func within(n, anc *html.Node) bool {
	for ; n != nil; n = n.Parent {
		if n == anc {
			return true
		}
	}
	return false
}

// linkChars is how many characters from start to end are link text.
func linkChars(links [][2]int, start, end int) int {
	n := 0
	for _, l := range links {
		if l[1] > start && l[0] < end {
			n += min(l[1], end) - max(l[0], start)
		}
	}
	return n
}
