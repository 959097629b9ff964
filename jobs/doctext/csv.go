package doctext

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// csv reads a CSV file as one table: rows of cells apart by " | ", at
// most MaxRows of them (the rest counted and said).
func (r *reader) csv(body []byte) (Doc, error) {
	cr := csv.NewReader(bytes.NewReader(body))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	if bytes.Count(body[:min(len(body), 4096)], []byte(";")) > bytes.Count(body[:min(len(body), 4096)], []byte(",")) {
		cr.Comma = ';'
	}
	b := newBuilder(r.lim.MaxChars)
	rows, more := 0, 0
	for {
		if rows%4096 == 0 {
			r.check()
		}
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Doc{}, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if rows >= r.lim.MaxRows {
			more++
			continue
		}
		rows++
		cells := make([]string, 0, min(len(rec), 1000))
		for _, c := range rec[:min(len(rec), 1000)] {
			cells = append(cells, strings.Join(strings.Fields(toText([]byte(c))), " "))
		}
		b.write(strings.Join(cells, " | ") + "\n")
	}
	if more > 0 {
		b.write(fmt.Sprintf("[%d more rows not read (MaxRows %d)]\n", more, r.lim.MaxRows))
	}
	return b.doc(), nil
}

// html keeps the text of an HTML document's elements, less scripts and
// styles, headings as "## Heading" lines: the reading of HTML when the
// caller gives none (Options.HTML).
func (r *reader) html(body []byte) (Doc, error) {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return Doc{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	b := newBuilder(r.lim.MaxChars)
	var title string
	var para strings.Builder
	flush := func() {
		b.para(strings.Join(strings.Fields(para.String()), " "))
		para.Reset()
	}
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if depth > 512 {
			return
		}
		switch n.DataAtom {
		case atom.Script, atom.Style, atom.Noscript, atom.Template:
			return
		case atom.Title:
			if n.FirstChild != nil {
				title = cleanLine(n.FirstChild.Data)
			}
			return
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			flush()
			var t strings.Builder
			collect(n, &t)
			b.heading(int(n.Data[1]-'0'), t.String())
			return
		case atom.P, atom.Div, atom.Li, atom.Tr, atom.Br, atom.Section, atom.Article, atom.Pre, atom.Blockquote:
			flush()
			defer flush()
		}
		if n.Type == html.TextNode {
			para.WriteString(n.Data)
			para.WriteString(" ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
	}
	walk(doc, 0)
	flush()
	d := b.doc()
	d.Title = title
	return d, nil
}

func collect(n *html.Node, b *strings.Builder) {
	if n.Type == html.TextNode {
		b.WriteString(n.Data)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		collect(c, b)
	}
}
