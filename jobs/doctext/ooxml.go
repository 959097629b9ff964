package doctext

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
)

// officeZip is an Office document's zip, opened within the limits.
type officeZip struct {
	r     *reader
	files map[string]*zip.File
}

// openZip opens a zip after checking, from its end record, that it holds
// at most MaxEntries files (the central directory of a million entries is
// not read).
func (r *reader) openZip(body []byte) (*officeZip, error) {
	if n, ok := zipEntries(body); ok && n > uint64(r.lim.MaxEntries) {
		return nil, limitErr("MaxEntries", int64(r.lim.MaxEntries), "the zip holds %d files", n)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(zr.File) > r.lim.MaxEntries {
		return nil, limitErr("MaxEntries", int64(r.lim.MaxEntries), "the zip holds %d files", len(zr.File))
	}
	z := &officeZip{r: r, files: make(map[string]*zip.File, len(zr.File))}
	for _, f := range zr.File {
		z.files[strings.TrimPrefix(f.Name, "/")] = f
	}
	return z, nil
}

// zipEntries reads the number of entries of a zip from its end of
// central directory record (zip64's when the record says 0xFFFF).
func zipEntries(b []byte) (uint64, bool) {
	from := max(0, len(b)-(22+65535))
	i := bytes.LastIndex(b[from:], []byte("PK\x05\x06"))
	if i < 0 {
		return 0, false
	}
	i += from
	if i+22 > len(b) {
		return 0, false
	}
	n := uint64(binary.LittleEndian.Uint16(b[i+10:]))
	if n != 0xFFFF || i < 20 || !bytes.Equal(b[i-20:i-16], []byte("PK\x06\x07")) {
		return n, true
	}
	off := binary.LittleEndian.Uint64(b[i-12:])
	if off+40 > uint64(len(b)) || !bytes.Equal(b[off:off+4], []byte("PK\x06\x06")) {
		return n, true
	}
	return binary.LittleEndian.Uint64(b[off+32:]), true
}

// has reports whether the zip holds name.
func (z *officeZip) has(name string) bool { _, ok := z.files[name]; return ok }

// open opens one file of the zip for reading through a counter that
// fails past MaxInflated.
func (z *officeZip) open(name string) (io.ReadCloser, error) {
	f, ok := z.files[name]
	if !ok {
		return nil, fmt.Errorf("%w: the zip has no %s", ErrMalformed, name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, name, err)
	}
	return &countingReader{rc: rc, z: z, name: name}, nil
}

// countingReader counts what a zip's file inflates to against the
// document's MaxInflated.
// It fails too on a run of text (bytes without a '<') longer than
// MaxChars, which the XML decoder would hold whole.
type countingReader struct {
	rc   io.ReadCloser
	z    *officeZip
	name string
	run  int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.z.r.inflated += int64(n)
	if c.z.r.inflated > c.z.r.lim.MaxInflated {
		return n, limitErr("MaxInflated", c.z.r.lim.MaxInflated, "the zip's files inflate to more bytes (a decompression bomb?) at %s", c.name)
	}
	if i := bytes.LastIndexByte(p[:n], '<'); i >= 0 {
		c.run = n - i - 1
	} else {
		c.run += n
	}
	if c.run > c.z.r.lim.MaxChars {
		return n, limitErr("MaxChars", int64(c.z.r.lim.MaxChars), "%s holds a run of text longer (a decompression bomb?)", c.name)
	}
	return n, err
}

func (c *countingReader) Close() error { return c.rc.Close() }

// walkFile decodes one XML file of the zip as it inflates (xmlWalk).
func (z *officeZip) walkFile(name string, start func(e xml.StartElement), end func(name string), text func(s string)) error {
	rc, err := z.open(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	return z.xmlWalk(rc, start, end, text)
}

// xmlWalk decodes an XML part, calling start and end for elements (by
// local name) and text for character data, and checks MaxDepth and the
// context as it goes.
func (z *officeZip) xmlWalk(src io.Reader, start func(e xml.StartElement), end func(name string), text func(s string)) error {
	d := xml.NewDecoder(src)
	d.Strict = false
	depth := 0
	for n := 0; ; n++ {
		if n%4096 == 0 {
			z.r.check()
		}
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				return le
			}
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > z.r.lim.MaxDepth {
				return limitErr("MaxDepth", int64(z.r.lim.MaxDepth), "the XML's elements nest deeper")
			}
			if start != nil {
				start(t)
			}
		case xml.EndElement:
			depth--
			if end != nil {
				end(t.Name.Local)
			}
		case xml.CharData:
			if text != nil {
				text(string(t))
			}
		}
	}
}

func attr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// coreProps reads docProps/core.xml: title, creator, created date.
func (z *officeZip) coreProps(d *Doc) {
	if !z.has("docProps/core.xml") {
		return
	}
	var cur string
	var creator string
	_ = z.walkFile("docProps/core.xml", func(e xml.StartElement) { cur = e.Name.Local }, func(string) { cur = "" }, func(s string) {
		switch cur {
		case "title":
			d.Title += s
		case "creator":
			creator += s
		case "created":
			if len(s) >= 10 {
				d.Date = s[:10]
			}
		}
	})
	d.Title = cleanLine(d.Title)
	if c := cleanLine(creator); c != "" {
		d.Authors = splitAuthors(c)
	}
}

// docx reads word/document.xml: paragraphs, headings by their style
// (Heading1…, Title), tables as rows of cells apart by " | ". Its pages
// are those Word marked when it last laid the document out
// (lastRenderedPageBreak) and its explicit page breaks, each starting at
// the next paragraph; a document without them is one page.
func (r *reader) docx(body []byte) (Doc, error) {
	z, err := r.openZip(body)
	if err != nil {
		return Doc{}, err
	}
	b := newBuilder(r.lim.MaxChars)
	b.startPart(PartPage, 1, "")
	page, breakNext := 1, false
	var para strings.Builder
	style := ""
	var row []string
	inCell := 0
	var cell strings.Builder
	err = z.walkFile("word/document.xml", func(e xml.StartElement) {
		switch e.Name.Local {
		case "p":
			para.Reset()
			style = ""
			if breakNext && inCell == 0 {
				page, breakNext = page+1, false
				b.startPart(PartPage, page, "")
			}
		case "pStyle":
			style = attr(e, "val")
		case "tab":
			para.WriteString("\t")
		case "br":
			if attr(e, "type") == "page" {
				breakNext = true
			} else {
				para.WriteString("\n")
			}
		case "lastRenderedPageBreak":
			breakNext = true
		case "tbl":
			b.sep()
		case "tr":
			row = nil
		case "tc":
			inCell++
			cell.Reset()
		}
	}, func(name string) {
		switch name {
		case "p":
			s := strings.TrimSpace(para.String())
			if inCell > 0 {
				if cell.Len() > 0 && s != "" {
					cell.WriteString(" ")
				}
				cell.WriteString(s)
				return
			}
			if level := headingLevel(style); level > 0 {
				b.heading(level, s)
			} else {
				b.para(s)
			}
		case "tc":
			inCell--
			row = append(row, strings.Join(strings.Fields(cell.String()), " "))
		case "tr":
			if inCell == 0 {
				b.write(strings.Join(row, " | ") + "\n")
			}
		}
	}, func(s string) { para.WriteString(s) })
	if err != nil {
		return Doc{}, err
	}
	d := b.doc()
	z.coreProps(&d)
	if d.Title == "" {
		d.Title = textTitle(d.Text)
	}
	return d, nil
}

// headingLevel is the level of a Word paragraph style that is a heading
// ("Heading2", "heading 2", "Title"), else 0.
func headingLevel(style string) int {
	s := strings.ToLower(strings.ReplaceAll(style, " ", ""))
	switch {
	case s == "title":
		return 1
	case strings.HasPrefix(s, "heading"):
		if n, err := strconv.Atoi(s[len("heading"):]); err == nil && n >= 1 && n <= 5 {
			return n + 1
		}
	}
	return 0
}

// pptx reads the slides in their order (ppt/presentation.xml's list, by
// its relationships), each a part "Slide N" with its title as a heading
// and its text frames' paragraphs; the speaker notes are left out.
func (r *reader) pptx(body []byte) (Doc, error) {
	z, err := r.openZip(body)
	if err != nil {
		return Doc{}, err
	}
	slides, err := z.slideOrder()
	if err != nil {
		return Doc{}, err
	}
	if len(slides) > r.lim.MaxPages {
		return Doc{}, limitErr("MaxPages", int64(r.lim.MaxPages), "the deck has %d slides", len(slides))
	}
	b := newBuilder(r.lim.MaxChars)
	for i, name := range slides {
		var paras []string
		title := ""
		var para strings.Builder
		inTitle, inShape := false, false
		err = z.walkFile(name, func(e xml.StartElement) {
			switch e.Name.Local {
			case "sp":
				inShape, inTitle = true, false
			case "ph":
				if t := attr(e, "type"); inShape && (t == "title" || t == "ctrTitle") {
					inTitle = true
				}
			case "p":
				para.Reset()
			case "br":
				para.WriteString(" ")
			}
		}, func(name string) {
			switch name {
			case "p":
				s := strings.TrimSpace(para.String())
				if s == "" {
					return
				}
				if inTitle && title == "" {
					title = s
				} else if inTitle {
					title += " " + s
				} else {
					paras = append(paras, s)
				}
			case "sp":
				inShape, inTitle = false, false
			}
		}, func(s string) { para.WriteString(s) })
		if err != nil {
			return Doc{}, err
		}
		b.startPart(PartSlide, i+1, cleanLine(title))
		h := fmt.Sprintf("Slide %d", i+1)
		if title != "" {
			h += ": " + title
		}
		b.heading(2, h)
		for _, p := range paras {
			b.para(p)
		}
	}
	d := b.doc()
	z.coreProps(&d)
	if d.Title == "" && len(d.Parts) > 0 {
		d.Title = d.Parts[0].Name
	}
	return d, nil
}

// slideOrder is the deck's slide files in the presentation's order, else
// (no presentation.xml) by their numbers.
func (z *officeZip) slideOrder() ([]string, error) {
	rels := z.rels("ppt/_rels/presentation.xml.rels", "ppt")
	var order []string
	if z.has("ppt/presentation.xml") {
		err := z.walkFile("ppt/presentation.xml", func(e xml.StartElement) {
			if e.Name.Local == "sldId" {
				if target, ok := rels[relID(e)]; ok && z.has(target) {
					order = append(order, target)
				}
			}
		}, nil, nil)
		if err != nil {
			return nil, err
		}
	}
	if len(order) > 0 {
		return order, nil
	}
	for name := range z.files {
		if strings.HasPrefix(name, "ppt/slides/slide") && strings.HasSuffix(name, ".xml") {
			order = append(order, name)
		}
	}
	sort.Slice(order, func(i, j int) bool { return fileNumber(order[i]) < fileNumber(order[j]) })
	if len(order) == 0 {
		return nil, fmt.Errorf("%w: the deck has no slides", ErrMalformed)
	}
	return order, nil
}

func relID(e xml.StartElement) string {
	for _, a := range e.Attr {
		if a.Name.Local == "id" && a.Name.Space != "" {
			return a.Value
		}
	}
	return ""
}

// fileNumber is the number in a name as "slide12.xml".
func fileNumber(name string) int {
	base := strings.TrimSuffix(path.Base(name), ".xml")
	i := len(base)
	for i > 0 && base[i-1] >= '0' && base[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(base[i:])
	return n
}

// rels reads a relationships part: ids to targets, resolved against dir.
func (z *officeZip) rels(name, dir string) map[string]string {
	out := map[string]string{}
	if !z.has(name) {
		return out
	}
	_ = z.walkFile(name, func(e xml.StartElement) {
		if e.Name.Local == "Relationship" {
			t := attr(e, "Target")
			if strings.HasPrefix(t, "/") {
				t = strings.TrimPrefix(t, "/")
			} else {
				t = path.Join(dir, t)
			}
			out[attr(e, "Id")] = t
		}
	}, nil, nil)
	return out
}

// xlsx reads each sheet as a part: a heading with its name, then its rows
// as cells apart by " | ", at most MaxRows rows a sheet (the rest said).
func (r *reader) xlsx(body []byte) (Doc, error) {
	z, err := r.openZip(body)
	if err != nil {
		return Doc{}, err
	}
	shared, err := z.sharedStrings()
	if err != nil {
		return Doc{}, err
	}
	rels := z.rels("xl/_rels/workbook.xml.rels", "xl")
	type sheet struct{ name, file string }
	var sheets []sheet
	if z.has("xl/workbook.xml") {
		err := z.walkFile("xl/workbook.xml", func(e xml.StartElement) {
			if e.Name.Local == "sheet" {
				if t, ok := rels[relID(e)]; ok && z.has(t) {
					sheets = append(sheets, sheet{attr(e, "name"), t})
				}
			}
		}, nil, nil)
		if err != nil {
			return Doc{}, err
		}
	}
	if len(sheets) == 0 {
		return Doc{}, fmt.Errorf("%w: the workbook has no sheets", ErrMalformed)
	}
	if len(sheets) > r.lim.MaxPages {
		return Doc{}, limitErr("MaxPages", int64(r.lim.MaxPages), "the workbook has %d sheets", len(sheets))
	}
	b := newBuilder(r.lim.MaxChars)
	for i, s := range sheets {
		b.startPart(PartSheet, i+1, s.name)
		b.heading(2, "Sheet "+strconv.Itoa(i+1)+": "+s.name)
		b.sep()
		rows, more := 0, 0
		var row []string
		var cellType, value string
		col := 0
		inValue := false
		err = z.walkFile(s.file, func(e xml.StartElement) {
			switch e.Name.Local {
			case "row":
				row = row[:0]
			case "c":
				cellType, value = attr(e, "t"), ""
				col = columnIndex(attr(e, "r"))
			case "v", "t":
				inValue = true
			}
		}, func(name string) {
			switch name {
			case "v", "t":
				inValue = false
			case "c":
				if cellType == "s" {
					if k, err := strconv.Atoi(strings.TrimSpace(value)); err == nil && k >= 0 && k < len(shared) {
						value = shared[k]
					}
				}
				for col > len(row) && len(row) < 1000 {
					row = append(row, "")
				}
				if len(row) < 1000 {
					row = append(row, strings.Join(strings.Fields(value), " "))
				}
			case "row":
				if strings.TrimSpace(strings.Join(row, "")) == "" {
					return
				}
				if rows >= r.lim.MaxRows {
					more++
					return
				}
				rows++
				b.write(strings.Join(row, " | ") + "\n")
			}
		}, func(t string) {
			if inValue {
				value += t
			}
		})
		if err != nil {
			return Doc{}, err
		}
		if more > 0 {
			b.write(fmt.Sprintf("[%d more rows not read (MaxRows %d)]\n", more, r.lim.MaxRows))
		}
	}
	d := b.doc()
	z.coreProps(&d)
	if d.Title == "" {
		d.Title = sheets[0].name
	}
	return d, nil
}

// columnIndex is the 0-based column of a cell reference as "C7", or -1.
func columnIndex(ref string) int {
	n := 0
	i := 0
	for ; i < len(ref) && ref[i] >= 'A' && ref[i] <= 'Z'; i++ {
		n = n*26 + int(ref[i]-'A'+1)
	}
	if i == 0 || n > 16384 {
		return -1
	}
	return n - 1
}

// sharedStrings reads the workbook's shared strings, if any.
func (z *officeZip) sharedStrings() ([]string, error) {
	if !z.has("xl/sharedStrings.xml") {
		return nil, nil
	}
	var out []string
	var cur strings.Builder
	inT := false
	err := z.walkFile("xl/sharedStrings.xml", func(e xml.StartElement) {
		switch e.Name.Local {
		case "si":
			cur.Reset()
		case "t":
			inT = true
		}
	}, func(name string) {
		switch name {
		case "t":
			inT = false
		case "si":
			if len(out) < 1_000_000 {
				out = append(out, cur.String())
			}
		}
	}, func(s string) {
		if inT {
			cur.WriteString(s)
		}
	})
	return out, err
}
