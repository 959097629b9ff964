package doctext

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// pdf reads a PDF page by page: the page tree is walked here (bounded in
// depth and pages, so a cycle or a 10,000-page file is a LimitError), each
// page's content streams are inflated once to check their size and
// nesting, then interpreted for the text they show with its place on the
// page, which is put in reading order (pdfLines).
func (r *reader) pdf(body []byte) (Doc, error) {
	if err := scanNesting(body, r.lim.MaxDepth, true); err != nil {
		return Doc{}, err
	}
	pr, err := pdf.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return Doc{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	root := pr.Trailer().Key("Root")
	pages, err := r.pageTree(root.Key("Pages"))
	if err != nil {
		return Doc{}, err
	}
	if len(pages) == 0 {
		return Doc{}, fmt.Errorf("%w: the PDF has no pages", ErrMalformed)
	}
	b := newBuilder(r.lim.MaxChars)
	withText := 0
	for i, p := range pages {
		r.check()
		b.startPart(PartPage, i+1, "")
		lines, err := r.pdfPage(p, i+1)
		if err != nil {
			return Doc{}, err
		}
		if len(lines) > 0 {
			withText++
		}
		for _, para := range paragraphs(lines) {
			b.para(para)
		}
	}
	if withText == 0 {
		return Doc{}, ErrNoTextLayer
	}
	d := b.doc()
	info := pr.Trailer().Key("Info")
	d.Title = cleanLine(info.Key("Title").Text())
	if a := cleanLine(info.Key("Author").Text()); a != "" {
		d.Authors = splitAuthors(a)
	}
	d.Date = pdfDate(info.Key("CreationDate").Text())
	if d.Title == "" {
		d.Title = textTitle(d.Text)
	}
	return d, nil
}

// pageTree lists the pages under node, depth first, at most MaxPages of
// them and MaxDepth deep.
func (r *reader) pageTree(node pdf.Value) ([]pdf.Value, error) {
	if n := node.Key("Count").Int64(); n > int64(r.lim.MaxPages) {
		return nil, limitErr("MaxPages", int64(r.lim.MaxPages), "the PDF has %d pages", n)
	}
	var pages []pdf.Value
	visits := 0
	var walk func(v pdf.Value, depth int) error
	walk = func(v pdf.Value, depth int) error {
		if depth > r.lim.MaxDepth {
			return limitErr("MaxDepth", int64(r.lim.MaxDepth), "the PDF's page tree nests deeper (or loops)")
		}
		visits++
		if visits > 4*r.lim.MaxPages+16 {
			return limitErr("MaxPages", int64(r.lim.MaxPages), "the PDF's page tree has more nodes than its pages could need (a loop?)")
		}
		kids := v.Key("Kids")
		if v.Key("Type").Name() == "Page" || kids.Kind() != pdf.Array {
			if v.Kind() == pdf.Dict {
				if len(pages) >= r.lim.MaxPages {
					return limitErr("MaxPages", int64(r.lim.MaxPages), "the PDF has more pages")
				}
				pages = append(pages, v)
			}
			return nil
		}
		for i := 0; i < kids.Len(); i++ {
			if err := walk(kids.Index(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return pages, walk(node, 0)
}

// glyphRun is text a show operator put on the page: from x to x+w on the
// baseline y, in a font of size points.
type glyphRun struct {
	x, y, w, size float64
	text          string
}

// maxStreamBytes is the most one content stream may inflate to; more is
// a decompression bomb, as no page's text needs it.
const maxStreamBytes = 64 << 20

// pdfPage is the text of one page as lines in reading order.
func (r *reader) pdfPage(page pdf.Value, number int) ([]string, error) {
	contents := page.Key("Contents")
	var streams []pdf.Value
	switch contents.Kind() {
	case pdf.Stream:
		streams = append(streams, contents)
	case pdf.Array:
		for i := 0; i < contents.Len() && i < 1000; i++ {
			if s := contents.Index(i); s.Kind() == pdf.Stream {
				streams = append(streams, s)
			}
		}
	}
	var runs []glyphRun
	st := newTextState(page, r)
	for _, s := range streams {
		if err := r.checkStream(s, number); err != nil {
			return nil, err
		}
		st.interpret(s, &runs)
	}
	width := mediaWidth(page)
	return pdfLines(runs, width), nil
}

// checkStream inflates a content stream to check its size (MaxInflated,
// and maxStreamBytes for one stream) and nesting (MaxDepth) before it is
// interpreted; it streams, holding a chunk at a time.
func (r *reader) checkStream(s pdf.Value, page int) error {
	rc := s.Reader()
	defer rc.Close()
	limit := min(int64(maxStreamBytes), r.lim.MaxInflated-r.inflated)
	var ns nestScanner
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := rc.Read(buf)
		n += int64(k)
		if n > limit {
			r.inflated += n
			if limit < maxStreamBytes {
				return limitErr("MaxInflated", r.lim.MaxInflated, "the PDF's content streams inflate to more bytes (a decompression bomb?) by page %d", page)
			}
			return limitErr("MaxInflated", maxStreamBytes, "page %d's content stream inflates to more bytes (a decompression bomb?)", page)
		}
		if ns.feed(buf[:k]) > r.lim.MaxDepth {
			return limitErr("MaxDepth", int64(r.lim.MaxDepth), "page %d's content nests arrays or dictionaries deeper", page)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if n == 0 {
				return fmt.Errorf("%w: page %d's content: %w", ErrMalformed, page, err)
			}
			break // the interpreter reads what there is
		}
		if n%(4<<20) < int64(k) {
			r.check()
		}
	}
	r.inflated += n
	return nil
}

// nestScanner follows the nesting of a content stream's arrays and
// dictionaries across the chunks it is fed, skipping strings and
// comments.
type nestScanner struct {
	depth, max      int
	str             int // depth of parentheses in a string
	escape, comment bool
	lt, gt          bool // the previous byte was '<' or '>'
}

// feed scans b and returns the deepest nesting seen so far.
func (ns *nestScanner) feed(b []byte) int {
	for _, c := range b {
		switch {
		case ns.comment:
			ns.comment = c != '\n' && c != '\r'
			continue
		case ns.str > 0:
			switch {
			case ns.escape:
				ns.escape = false
			case c == '\\':
				ns.escape = true
			case c == '(':
				ns.str++
			case c == ')':
				ns.str--
			}
			continue
		}
		lt, gt := ns.lt, ns.gt
		ns.lt, ns.gt = false, false
		switch c {
		case '%':
			ns.comment = true
		case '(':
			ns.str = 1
		case '[':
			ns.depth++
		case ']':
			ns.depth = max0(ns.depth - 1)
		case '<':
			if lt {
				ns.depth++
			} else {
				ns.lt = true
			}
		case '>':
			if gt {
				ns.depth = max0(ns.depth - 1)
			} else {
				ns.gt = true
			}
		}
		ns.max = max(ns.max, ns.depth)
	}
	return ns.max
}

// scanNesting checks that no array or dictionary of a PDF (or of a
// content stream) nests deeper than max, as the parser's recursion would
// overflow the stack on a file of a million "[". Strings, comments and
// (in a file) the data of streams are skipped.
func scanNesting(b []byte, max int, file bool) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '%':
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
		case '(':
			n := 0
			for ; i < len(b); i++ {
				switch b[i] {
				case '\\':
					i++
				case '(':
					n++
				case ')':
					n--
				}
				if n == 0 {
					break
				}
			}
		case '[':
			depth++
		case '<':
			if i+1 < len(b) && b[i+1] == '<' {
				depth++
				i++
			}
		case ']':
			depth = max0(depth - 1)
		case '>':
			if i+1 < len(b) && b[i+1] == '>' {
				depth = max0(depth - 1)
				i++
			}
		case 's':
			if file && bytes.HasPrefix(b[i:], []byte("stream")) && (i+6 < len(b) && (b[i+6] == '\r' || b[i+6] == '\n')) {
				end := bytes.Index(b[i:], []byte("endstream"))
				if end < 0 {
					return nil
				}
				i += end + len("endstream") - 1
			}
		}
		if depth > max {
			return limitErr("MaxDepth", int64(max), "the PDF's arrays or dictionaries nest deeper")
		}
	}
	return nil
}

func max0(n int) int { return max(n, 0) }

// mediaWidth is the width of the page's media box, 612 (US letter) when
// it has none.
func mediaWidth(page pdf.Value) float64 {
	for v, i := page, 0; v.Kind() == pdf.Dict && i < 32; v, i = v.Key("Parent"), i+1 {
		if box := v.Key("MediaBox"); box.Kind() == pdf.Array && box.Len() == 4 {
			if w := box.Index(2).Float64() - box.Index(0).Float64(); w > 0 {
				return w
			}
		}
	}
	return 612
}

// matrix is a PDF transformation matrix [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul is m × n.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

// gstate is the graphics and text state the text's place depends on.
type gstate struct {
	ctm                       matrix
	tc, tw, th, tl, tfs, rise float64
	font                      string
}

// textState interprets content streams for the text they show.
type textState struct {
	r        *reader
	fonts    map[string]pdf.Font
	encoders map[string]pdf.TextEncoding
	g        gstate
	stack    []gstate
	tm, tlm  matrix
	ops      int
}

func newTextState(page pdf.Value, r *reader) *textState {
	st := &textState{r: r, fonts: map[string]pdf.Font{}, encoders: map[string]pdf.TextEncoding{}}
	p := pdf.Page{V: page}
	for _, name := range p.Fonts() {
		f := p.Font(name)
		st.fonts[name] = f
		st.encoders[name] = f.Encoder()
	}
	st.g = gstate{ctm: identity, th: 1}
	st.tm, st.tlm = identity, identity
	return st
}

// maxOps is the most operators one page's content may run.
const maxOps = 5_000_000

func (st *textState) interpret(s pdf.Value, runs *[]glyphRun) {
	pdf.Interpret(s, func(stk *pdf.Stack, op string) {
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		st.ops++
		if st.ops%4096 == 0 {
			st.r.check()
			if st.ops > maxOps {
				panic(abort{limitErr("MaxOps", maxOps, "a page's content runs more operators")})
			}
		}
		num := func(i int) float64 {
			if i < len(args) {
				return args[i].Float64()
			}
			return 0
		}
		switch op {
		case "q":
			if len(st.stack) < 1024 {
				st.stack = append(st.stack, st.g)
			}
		case "Q":
			if k := len(st.stack); k > 0 {
				st.g, st.stack = st.stack[k-1], st.stack[:k-1]
			}
		case "cm":
			st.g.ctm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}.mul(st.g.ctm)
		case "BT":
			st.tm, st.tlm = identity, identity
		case "Tc":
			st.g.tc = num(0)
		case "Tw":
			st.g.tw = num(0)
		case "Tz":
			st.g.th = num(0) / 100
		case "TL":
			st.g.tl = num(0)
		case "Ts":
			st.g.rise = num(0)
		case "Tf":
			if len(args) == 2 {
				st.g.font, st.g.tfs = args[0].Name(), num(1)
			}
		case "Td":
			st.moveLine(num(0), num(1))
		case "TD":
			st.g.tl = -num(1)
			st.moveLine(num(0), num(1))
		case "Tm":
			st.tm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}
			st.tlm = st.tm
		case "T*":
			st.moveLine(0, -st.g.tl)
		case "Tj":
			if len(args) == 1 {
				st.show(args[0].RawString(), runs)
			}
		case "'":
			st.moveLine(0, -st.g.tl)
			if len(args) == 1 {
				st.show(args[0].RawString(), runs)
			}
		case "\"":
			if len(args) == 3 {
				st.g.tw, st.g.tc = num(0), num(1)
				st.moveLine(0, -st.g.tl)
				st.show(args[2].RawString(), runs)
			}
		case "TJ":
			if len(args) != 1 {
				return
			}
			a := args[0]
			for i := 0; i < a.Len(); i++ {
				x := a.Index(i)
				if x.Kind() == pdf.String {
					st.show(x.RawString(), runs)
				} else {
					st.advance(-x.Float64() / 1000 * st.g.tfs * st.g.th)
				}
			}
		}
	})
}

func (st *textState) moveLine(tx, ty float64) {
	st.tlm = matrix{1, 0, 0, 1, tx, ty}.mul(st.tlm)
	st.tm = st.tlm
}

func (st *textState) advance(tx float64) {
	st.tm = matrix{1, 0, 0, 1, tx, 0}.mul(st.tm)
}

// show records the glyphs of raw, shown in the current font, and moves
// the text matrix past them.
func (st *textState) show(raw string, runs *[]glyphRun) {
	enc, ok := st.encoders[st.g.font]
	var text string
	if ok {
		text = enc.Decode(raw)
	} else {
		text = raw
	}
	font := st.fonts[st.g.font]
	trm := matrix{st.g.tfs * st.g.th, 0, 0, st.g.tfs, 0, st.g.rise}.mul(st.tm).mul(st.g.ctm)
	size := math.Hypot(trm[2], trm[3])
	x, y := trm[4], trm[5]
	// Widths: one code a byte for simple fonts, two for composite ones
	// (the text decodes to fewer runes than bytes).
	step := 1
	if runes := utf8.RuneCountInString(text); runes > 0 && len(raw) >= 2*runes {
		step = 2
	}
	var tx float64
	for i := 0; i < len(raw); i += step {
		code := int(raw[i])
		if step == 2 && i+1 < len(raw) {
			code = code<<8 | int(raw[i+1])
		}
		w0 := 0.0
		if ok && step == 1 {
			w0 = font.Width(code)
		}
		if w0 <= 0 {
			w0 = standardWidth(code) // no widths: a standard font
		}
		adv := w0/1000*st.g.tfs + st.g.tc
		if code == ' ' && step == 1 {
			adv += st.g.tw
		}
		tx += adv * st.g.th
	}
	st.advance(tx)
	w := math.Abs(tx * math.Hypot(st.tm[0], st.tm[1]) * math.Hypot(st.g.ctm[0], st.g.ctm[1]))
	if strings.TrimSpace(text) == "" && text != " " {
		return
	}
	if len(*runs) >= 200000 {
		panic(abort{limitErr("MaxRuns", 200000, "a page shows more pieces of text")})
	}
	*runs = append(*runs, glyphRun{x: x, y: y, w: w, size: max(size, 1), text: text})
}

// pdfLines puts a page's runs in reading order. When the page has a
// gutter that most runs keep clear of (a two-column paper), it is read in
// bands from the top: in a band, the left column's lines, then the
// right's; a line across the gutter (a title, a table's row) is a band of
// its own. In each column, lines from the top, runs from the left.
func pdfLines(runs []glyphRun, width float64) []string {
	if len(runs) == 0 {
		return nil
	}
	gutter, ok := findGutter(runs, width)
	if !ok {
		return linesOf(runs)
	}
	var out []string
	var left, right []glyphRun
	flush := func() {
		out = append(out, linesOf(left)...)
		out = append(out, linesOf(right)...)
		left, right = nil, nil
	}
	for _, line := range groupLines(runs) {
		var l, r []glyphRun
		wide := false
		for _, g := range line {
			switch {
			case g.x+g.w <= gutter+0.02*width && g.x < gutter:
				l = append(l, g)
			case g.x >= gutter-0.01*width:
				r = append(r, g)
			default:
				wide = true
			}
		}
		if !wide && len(l) > 0 && len(r) > 0 && (cellGap(l) || cellGap(r)) {
			wide = true // a table's row across both columns
		}
		if wide {
			flush()
			out = append(out, linesOf(line)...)
			continue
		}
		left, right = append(left, l...), append(right, r...)
	}
	flush()
	return out
}

// cellGap reports whether runs of one line stand far apart, as the cells
// of a table's row.
func cellGap(line []glyphRun) bool {
	sort.SliceStable(line, func(i, j int) bool { return line[i].x < line[j].x })
	for i := 1; i < len(line); i++ {
		if line[i].x-(line[i-1].x+line[i-1].w) > 2.5*line[i].size {
			return true
		}
	}
	return false
}

// findGutter finds the x between 30% and 70% of the page that the fewest
// runs cross, when at most 10% do and at least 20% of the runs lie on
// each side of it.
func findGutter(runs []glyphRun, width float64) (float64, bool) {
	best, bestN := 0.0, len(runs)+1
	slack := 0.01 * width
	for x := 0.3 * width; x <= 0.7*width; x += 2 {
		n := 0
		for _, g := range runs {
			if g.x+slack < x && g.x+g.w-slack > x {
				n++
			}
		}
		if n < bestN {
			best, bestN = x, n
		}
	}
	if float64(bestN) > 0.1*float64(len(runs)) {
		return 0, false
	}
	var l, r int
	for _, g := range runs {
		switch {
		case g.x+g.w <= best+slack:
			l++
		case g.x >= best-slack:
			r++
		}
	}
	n := float64(len(runs))
	return best, float64(l) >= 0.2*n && float64(r) >= 0.2*n && len(runs) >= 10
}

// groupLines groups runs into lines by baseline, top first.
func groupLines(runs []glyphRun) [][]glyphRun {
	rs := append([]glyphRun(nil), runs...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].y > rs[j].y })
	var lines [][]glyphRun
	for _, g := range rs {
		if k := len(lines); k > 0 {
			last := lines[k-1]
			if math.Abs(last[0].y-g.y) <= 0.4*math.Max(last[0].size, g.size) {
				lines[k-1] = append(last, g)
				continue
			}
		}
		lines = append(lines, []glyphRun{g})
	}
	return lines
}

// linesOf groups runs into lines by baseline, top first, and writes each
// line's runs from the left, with a space where they stand apart and " | "
// where they stand far apart (table cells).
func linesOf(runs []glyphRun) []string {
	if len(runs) == 0 {
		return nil
	}
	lines := groupLines(runs)
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		sort.SliceStable(l, func(i, j int) bool { return l[i].x < l[j].x })
		var b strings.Builder
		end := l[0].x
		for i, g := range l {
			if i > 0 {
				gap := g.x - end
				prev := b.String()
				switch {
				case gap > 2.5*g.size:
					b.WriteString(" | ")
				case gap > 0.2*g.size && !strings.HasSuffix(prev, " ") && !strings.HasPrefix(g.text, " "):
					b.WriteString(" ")
				}
			}
			b.WriteString(g.text)
			end = math.Max(end, g.x+g.w)
		}
		if s := strings.Join(strings.Fields(b.String()), " "); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// paragraphs joins lines into paragraphs; a line that ends a sentence
// short of the others ends one, and a hyphen at a line's end is kept.
func paragraphs(lines []string) []string {
	var out []string
	var cur []string
	longest := 0
	for _, l := range lines {
		longest = max(longest, utf8.RuneCountInString(l))
	}
	for _, l := range lines {
		cur = append(cur, l)
		n := utf8.RuneCountInString(l)
		if strings.Contains(l, " | ") || n < longest*6/10 && strings.ContainsAny(l[len(l)-1:], ".:!?") {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, "\n"))
	}
	return out
}

// cleanLine is s on one line, with its spaces collapsed.
func cleanLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "")), " ")
}

// splitAuthors cuts an author line at ";" or " and " or ",".
func splitAuthors(s string) []string {
	s = strings.ReplaceAll(s, " and ", ";")
	sep := ";"
	if !strings.Contains(s, ";") {
		sep = ","
	}
	var out []string
	for _, a := range strings.Split(s, sep) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// pdfDate is a PDF date ("D:20240131…") as 2024-01-31, or "".
func pdfDate(s string) string {
	s = strings.TrimPrefix(s, "D:")
	if len(s) < 8 {
		return ""
	}
	for _, c := range s[:8] {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return s[:4] + "-" + s[4:6] + "-" + s[6:8]
}

// helvetica are the widths of Helvetica's ASCII glyphs from the space on,
// in thousandths of an em: the estimate for a font that gives no widths
// (the standard fonts), near enough for Times and Courier to place runs.
var helvetica = [95]uint16{
	278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
	1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
	667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
	333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
	556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
}

func standardWidth(code int) float64 {
	if code >= 32 && code < 127 {
		return float64(helvetica[code-32])
	}
	return 556
}
