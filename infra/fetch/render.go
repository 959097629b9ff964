package fetch

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Heading is one heading of an extracted text: its level (1 to 6), its
// text, and the character (rune) its line starts at.
type Heading struct {
	Level  int
	Text   string
	Offset int
	// node is the heading's element.
	node *html.Node
}

// rendered is the text of an HTML tree, with its headings and where the
// ids and names of its elements fall in it.
type rendered struct {
	text     string
	headings []Heading
	// anchors maps an element's id (or an anchor's name) to the character
	// where its text starts.
	anchors map[string]int
	// links are the spans of the text written inside links, in order:
	// the first character and the one after the last.
	links [][2]int
}

// Breaks a renderer may owe before the next text.
const (
	noBreak   = 0
	lineBreak = 1 // a new line
	paraBreak = 2 // a blank line
)

// blocks are the elements set off from their neighbours by a blank line;
// lines those that start a new line.
var (
	blocks = map[atom.Atom]bool{
		atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
		atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Blockquote: true, atom.Pre: true,
		atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Figure: true,
		atom.Figcaption: true, atom.Address: true, atom.Hr: true, atom.Details: true,
		atom.Fieldset: true, atom.Center: true, atom.Body: true,
	}
	lines = map[atom.Atom]bool{
		atom.Li: true, atom.Tr: true, atom.Dt: true, atom.Dd: true, atom.Br: true,
		atom.Caption: true, atom.Summary: true, atom.Option: true,
	}
	headingLevel = map[atom.Atom]int{atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6}
)

// renderer writes an HTML tree as plain text in the manner of Markdown:
// headings as "## Heading" lines, paragraphs apart by a blank line, list
// items as "- item", table cells apart by " | ", preformatted text as it
// is, and every other run of white space as one space. It counts the
// characters it writes, so the offsets it records are those of the text.
type renderer struct {
	b      strings.Builder
	n      int // characters written
	brk    int // the break owed before the next text
	space  bool
	prefix string // owed after the break: a list item's marker or a cell's separator
	pre    int    // depth inside <pre>
	// newlines is how many new lines the text ends with.
	newlines int
	pending  []string
	out      rendered
}

// renderText renders n and its descendants (a document, or readability's
// article).
func renderText(n *html.Node) rendered {
	r := &renderer{out: rendered{anchors: map[string]int{}}}
	r.node(n)
	r.settle()
	r.out.text = strings.TrimRight(r.b.String(), "\n")
	return r.out
}

func (r *renderer) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		r.textNode(n.Data)
		return
	case html.ElementNode:
	case html.DocumentNode:
		r.children(n)
		return
	default:
		return
	}
	if n.DataAtom == atom.Head || clutter[n.DataAtom] {
		return
	}
	r.mark(n)
	if level := headingLevel[n.DataAtom]; level > 0 {
		r.heading(n, level)
		return
	}
	r.open(n)
	start := r.n
	switch {
	case n.DataAtom == atom.Pre:
		r.pre++
		r.children(n)
		r.pre--
	case n.DataAtom == atom.A && attr(n, "href") != "":
		r.children(n)
		if r.n > start {
			r.out.links = append(r.out.links, [2]int{start, r.n})
		}
	default:
		r.children(n)
	}
	if blocks[n.DataAtom] {
		r.owe(paraBreak)
	} else if lines[n.DataAtom] {
		r.owe(lineBreak)
	}
}

func (r *renderer) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.node(c)
	}
}

// open starts an element: the break it owes, and the marker of a list
// item or the separator of a table cell.
func (r *renderer) open(n *html.Node) {
	switch {
	case blocks[n.DataAtom]:
		r.owe(paraBreak)
	case lines[n.DataAtom]:
		r.owe(lineBreak)
	}
	switch n.DataAtom {
	case atom.Li:
		r.prefix = itemMarker(n)
	case atom.Td, atom.Th:
		if previousCell(n) && r.brk == noBreak {
			r.prefix, r.space = " | ", false
		}
	}
}

// itemMarker is "- " for an item of an unordered list, "N. " for the Nth
// of an ordered one.
func itemMarker(li *html.Node) string {
	if li.Parent == nil || li.Parent.DataAtom != atom.Ol {
		return "- "
	}
	i := 1
	for s := li.PrevSibling; s != nil; s = s.PrevSibling {
		if s.Type == html.ElementNode && s.DataAtom == atom.Li {
			i++
		}
	}
	return strconv.Itoa(i) + ". "
}

// previousCell reports whether a cell follows another in its row.
func previousCell(n *html.Node) bool {
	for s := n.PrevSibling; s != nil; s = s.PrevSibling {
		if s.Type == html.ElementNode && (s.DataAtom == atom.Td || s.DataAtom == atom.Th) {
			return true
		}
	}
	return false
}

// heading writes a heading as one line of its level's "#" marks and its
// text; the ids inside it all fall on that line.
func (r *renderer) heading(n *html.Node, level int) {
	text := strings.Join(strings.Fields(visibleText(n)), " ")
	walk(n, func(c *html.Node) bool {
		r.mark(c)
		return true
	})
	if text == "" {
		return
	}
	r.owe(paraBreak)
	r.prefix, r.space = "", false
	r.flush()
	r.out.headings = append(r.out.headings, Heading{Level: level, Text: text, Offset: r.n, node: n})
	r.write(strings.Repeat("#", level) + " " + text)
	r.owe(paraBreak)
}

// mark notes the id of an element, and the name of an anchor, for the
// text that comes next.
func (r *renderer) mark(n *html.Node) {
	if n.Type != html.ElementNode {
		return
	}
	for _, a := range n.Attr {
		if a.Key == "id" || a.Key == "name" && n.DataAtom == atom.A {
			if a.Val != "" {
				r.pending = append(r.pending, a.Val)
			}
		}
	}
}

// textNode writes a text: as it is inside <pre>, its words apart by
// single spaces elsewhere.
func (r *renderer) textNode(s string) {
	if r.pre > 0 {
		if s == "" {
			return
		}
		r.flush()
		s = strings.ReplaceAll(s, "\r\n", "\n")
		r.write(strings.ReplaceAll(s, "\r", "\n"))
		return
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		r.space = r.space || s != ""
		return
	}
	if first, _ := utf8.DecodeRuneInString(s); unicode.IsSpace(first) {
		r.space = true
	}
	for i, w := range words {
		if i > 0 {
			r.space = true
		}
		r.flush()
		r.write(w)
	}
	last, _ := utf8.DecodeLastRuneInString(s)
	r.space = unicode.IsSpace(last)
}

// owe asks for at least brk before the next text.
func (r *renderer) owe(brk int) {
	r.brk = max(r.brk, brk)
}

// flush writes what is owed before a text: the break (none at the start),
// or else a space, then the prefix, and settles the pending anchors at
// the start of the line or word.
func (r *renderer) flush() {
	switch {
	case r.n == 0:
	case r.brk != noBreak:
		r.write(strings.Repeat("\n", max(r.brk-r.newlines, 0)))
	case r.space && r.prefix == "":
		r.write(" ")
	}
	r.brk, r.space = noBreak, false
	r.settle()
	if r.prefix != "" {
		r.write(r.prefix)
		r.prefix = ""
	}
}

// settle places the pending anchors at the current character.
func (r *renderer) settle() {
	for _, id := range r.pending {
		if _, seen := r.out.anchors[id]; !seen {
			r.out.anchors[id] = r.n
		}
	}
	r.pending = r.pending[:0]
}

// write writes s, counting its characters and the new lines it ends
// with.
func (r *renderer) write(s string) {
	if s == "" {
		return
	}
	r.b.WriteString(s)
	r.n += utf8.RuneCountInString(s)
	trimmed := strings.TrimRight(s, "\n")
	if trimmed == "" {
		r.newlines += len(s)
	} else {
		r.newlines = len(s) - len(trimmed)
	}
}

// visibleText is the text of n's descendants, less what is never shown.
func visibleText(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.ElementNode && clutter[c.DataAtom] {
			return false
		}
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return true
	})
	return b.String()
}
