package cite

import (
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	gmtext "github.com/yuin/goldmark/text"
)

// This file reads a report's Markdown as CommonMark (goldmark, with GFM
// tables), as the dashboard's markdown-it renders it: what is a paragraph,
// a list item, a table row, a heading or code is the parser's call, not a
// guess from each line's look.

// Goldmark parsers, pooled since one is not documented as safe for
// concurrent use: blockParsers read a report (GFM tables included),
// inlineParsers a claim's text, for its code spans.
var (
	blockParsers  = sync.Pool{New: func() any { return goldmark.New(goldmark.WithExtensions(extension.Table)).Parser() }}
	inlineParsers = sync.Pool{New: func() any { return goldmark.New().Parser() }}
)

// parseMarkdown parses src with a pooled parser from pool.
func parseMarkdown(pool *sync.Pool, src []byte) ast.Node {
	p := pool.Get().(parser.Parser)
	defer pool.Put(p)
	return p.Parse(gmtext.NewReader(src))
}

// maskCode returns text with the contents of its code spans replaced byte
// for byte by 'x', so that "`a[1]`" holds no marker and no sentence ends
// inside "`fmt.Println`", while every offset stays that of text.
func maskCode(s string) string {
	if !strings.Contains(s, "`") {
		return s
	}
	src := []byte(s)
	masked := []byte(s)
	_ = ast.Walk(parseMarkdown(&inlineParsers, src), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if _, ok := n.(*ast.CodeSpan); ok {
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				if t, ok := c.(*ast.Text); ok {
					for i := t.Segment.Start; i < t.Segment.Stop; i++ {
						masked[i] = 'x'
					}
				}
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return string(masked)
}

// markdownBlocks are the blocks of a report that hold claims, in order:
// its paragraphs and list items' text (list set for list items and table
// rows), each a byte range of the report; headings, code blocks and
// thematic breaks hold none. code are the byte ranges of its code blocks
// (fence lines included), which hold no source either.
func markdownBlocks(report string) (blocks []block, code [][2]int) {
	src := []byte(report)
	doc := parseMarkdown(&blockParsers, src)
	var codeAt []int // the starts of code blocks, their ends found below
	var starts []int // the start of every block, in order
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || n.Type() != ast.TypeBlock || n.Kind() == ast.KindDocument {
			return ast.WalkContinue, nil
		}
		starts = append(starts, n.Pos())
		switch n.(type) {
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			codeAt = append(codeAt, lineStart(report, n.Pos()))
			return ast.WalkSkipChildren, nil
		case *ast.Heading, *ast.ThematicBreak:
			return ast.WalkSkipChildren, nil
		case *ast.Paragraph, *ast.TextBlock, *ast.HTMLBlock:
			if b, ok := textBlock(report, n); ok {
				blocks = append(blocks, b)
			}
			return ast.WalkSkipChildren, nil
		}
		if k := n.Kind(); k == extast.KindTableHeader || k == extast.KindTableRow {
			s := lineStart(report, n.Pos())
			e := strings.IndexByte(report[s:], '\n')
			if e < 0 {
				e = len(report) - s
			}
			blocks = append(blocks, block{start: s, end: s + e, list: true})
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	for _, s := range codeAt {
		e := len(report)
		for _, p := range starts {
			if p > s && lineStart(report, p) > s {
				e = min(e, p)
			}
		}
		code = append(code, [2]int{s, e})
	}
	return blocks, code
}

// textBlock is the block of a paragraph, a list item's text or an HTML
// block (which markdown-it, with HTML off, shows as text): the range of
// its lines, trailing space left out. A paragraph of one line that is a
// label ("Findings:", a wholly emphasised line) is none.
func textBlock(report string, n ast.Node) (block, bool) {
	lines := n.Lines()
	if lines.Len() == 0 {
		return block{}, false
	}
	s, e := lines.At(0).Start, lines.At(lines.Len()-1).Stop
	for e > s && strings.ContainsRune(" \t\r\n", rune(report[e-1])) {
		e--
	}
	if s >= e {
		return block{}, false
	}
	_, inItem := n.Parent().(*ast.ListItem)
	if lines.Len() == 1 && !inItem && isLabel(strings.TrimSpace(report[s:e])) {
		return block{}, false
	}
	return block{start: s, end: e, list: inItem}, true
}

// lineStart is the offset of the start of the line holding offset i.
func lineStart(s string, i int) int {
	return strings.LastIndexByte(s[:min(i, len(s))], '\n') + 1
}
