// Package doctexttest makes the documents doctext's tests read: PDFs
// written with codeberg.org/go-pdf/fpdf (a two-column paper with a table,
// a long manual, a scanned page), Office files written as their zip + XML
// parts, and the hostile ones (malformed, bombs, deep nesting, too many
// pages or entries) written byte by byte. Nothing large is committed: each
// is made when a test asks for it. It is for tests only.
//
// It may import nothing of the project.
package doctexttest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"time"

	"codeberg.org/go-pdf/fpdf"
)

// Paper facts the tests look for.
const (
	PaperTitle   = "Tidal Heat Flow in Layered Ice Shells"
	PaperAuthor  = "Ada Quill"
	PaperAuthor2 = "Ben Marsh"
	// PaperTablePage is the page of the paper's table, PaperTableRow
	// its row the tests look for.
	PaperTablePage = 2
	PaperTableRow  = "Europa | 1.8 | 23.4"
	// PaperClaim is a sentence of the paper's page PaperClaimPage,
	// in its right column.
	PaperClaim     = "The shell conducts 41 milliwatts per square metre at the equator."
	PaperClaimPage = 3
)

var fixed = time.Date(2024, 3, 14, 10, 0, 0, 0, time.UTC)

func newPDF() *fpdf.Fpdf {
	p := fpdf.New("P", "mm", "A4", "")
	p.SetCreationDate(fixed)
	p.SetModificationDate(fixed)
	p.SetFont("Helvetica", "", 10)
	p.SetAutoPageBreak(false, 10)
	return p
}

func output(p *fpdf.Fpdf) []byte {
	var b bytes.Buffer
	if err := p.Output(&b); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// lorem is n sentences of filler, numbered from k.
func lorem(k, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "Sentence %d of the study describes the layered shell and its heat in plain words. ", k+i)
	}
	return b.String()
}

// Paper is a three-page, two-column paper: a title and authors across the
// top of page 1, two columns of text on each page, a table across page 2,
// and PaperClaim at the top of page 3's right column.
func Paper() []byte {
	p := newPDF()
	p.SetTitle(PaperTitle, false)
	p.SetAuthor(PaperAuthor+"; "+PaperAuthor2, false)
	footer := func() {
		p.SetXY(100, 285)
		p.CellFormat(10, 5, fmt.Sprintf("%d", p.PageNo()), "", 0, "C", false, 0, "")
	}
	columns := func(top float64, left, right string) {
		p.SetXY(15, top)
		p.MultiCell(85, 5, left, "", "L", false)
		p.SetXY(110, top)
		p.MultiCell(85, 5, right, "", "L", false)
	}
	p.AddPage()
	p.SetFont("Helvetica", "B", 16)
	p.SetXY(15, 15)
	p.CellFormat(180, 10, PaperTitle, "", 1, "C", false, 0, "")
	p.SetFont("Helvetica", "", 11)
	p.CellFormat(180, 6, PaperAuthor+" and "+PaperAuthor2, "", 1, "C", false, 0, "")
	p.SetFont("Helvetica", "", 10)
	columns(40, "Abstract. Left column of page one. "+lorem(1, 12), "Right column of page one. "+lorem(100, 12))
	footer()
	p.AddPage()
	columns(15, "Left column of page two. "+lorem(200, 6), "Right column of page two. "+lorem(300, 6))
	p.SetXY(40, 120)
	for i, row := range [][]string{{"Moon", "Shell km", "Flux mW"}, {"Europa", "1.8", "23.4"}, {"Enceladus", "0.9", "11.2"}, {"Ganymede", "3.1", "40.7"}} {
		p.SetXY(40, 120+float64(i)*7)
		for _, c := range row {
			p.CellFormat(40, 7, c, "1", 0, "L", false, 0, "")
		}
	}
	p.SetXY(15, 160)
	p.MultiCell(180, 5, "Table 1 gives the shell thickness and the heat flux of each moon.", "", "L", false)
	footer()
	p.AddPage()
	columns(15, "Left column of page three. "+lorem(400, 10), PaperClaim+" "+lorem(500, 10))
	footer()
	return output(p)
}

// Manual is a manual of pages pages, each a chapter heading and text.
func Manual(pages int) []byte {
	p := newPDF()
	p.SetTitle("Pump Station Operator Manual", false)
	for i := 1; i <= pages; i++ {
		p.AddPage()
		p.SetFont("Helvetica", "B", 14)
		p.SetXY(15, 15)
		p.CellFormat(180, 8, fmt.Sprintf("Section %d. Valve %d maintenance", i, i), "", 1, "L", false, 0, "")
		p.SetFont("Helvetica", "", 10)
		p.SetXY(15, 30)
		p.MultiCell(180, 5, fmt.Sprintf("On page %d the operator checks valve %d. ", i, i)+lorem(i*10, 14), "", "L", false)
	}
	return output(p)
}

// Scanned is a one-page PDF holding only an image of text, as a scanner
// makes.
func Scanned() []byte {
	img := image.NewGray(image.Rect(0, 0, 400, 500))
	for y := 0; y < 500; y++ {
		for x := 0; x < 400; x++ {
			c := uint8(250)
			if y%20 < 3 && x > 40 && x < 360 {
				c = 30 // lines, as of text
			}
			img.SetGray(x, y, color.Gray{c})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	p := newPDF()
	p.AddPage()
	p.RegisterImageOptionsReader("scan", fpdf.ImageOptions{ImageType: "PNG"}, &b)
	p.ImageOptions("scan", 10, 10, 190, 237, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
	return output(p)
}

// Malformed is the paper cut off in the middle.
func Malformed() []byte {
	b := Paper()
	return b[:len(b)/2]
}

// rawPDF writes a PDF of the given objects (numbered from 1; object 1 the
// catalog) with its cross-reference table.
func rawPDF(objects []string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// Bomb is a one-page PDF whose content stream of some hundred kilobytes
// inflates to inflated bytes (spaces, then a line of text).
func Bomb(inflated int) []byte {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, flate.BestCompression)
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for n := 0; n < inflated; n += len(chunk) {
		_, _ = w.Write(chunk)
	}
	_, _ = w.Write([]byte("BT /F1 12 Tf 72 700 Td (boom) Tj ET"))
	_ = w.Close()
	return rawPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	})
}

// ManyPages is a PDF of n pages of one word each, written directly.
func ManyPages(n int) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Length 34 >>\nstream\nBT /F1 12 Tf 72 700 Td (word) Tj ET\nendstream"}
	var kids strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&kids, "%d 0 R ", len(objs)+1)
		objs = append(objs, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 3 0 R >> >> >>")
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n)
	return rawPDF(objs)
}

// DeepPDF is a PDF whose page holds an array nested depth deep.
func DeepPDF(depth int) []byte {
	return rawPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Deep " + strings.Repeat("[", depth) + strings.Repeat("]", depth) + " >>",
	})
}

// zipOf writes a zip of the given files, in order.
func zipOf(files ...[2]string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, f := range files {
		fw, err := w.CreateHeader(&zip.FileHeader{Name: f[0], Method: zip.Deflate, Modified: fixed})
		if err != nil {
			panic(err)
		}
		_, _ = fw.Write([]byte(f[1]))
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

const wNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

func core(title, creator string) [2]string {
	return [2]string{"docProps/core.xml", `<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"><dc:title>` + title + `</dc:title><dc:creator>` + creator + `</dc:creator><dcterms:created>2024-05-02T09:00:00Z</dcterms:created></cp:coreProperties>`}
}

// DOCXClaim is a sentence of the report DOCX, on its page 1;
// DOCXClaim2 one on its page 2 (after a page break).
const (
	DOCXClaim  = "Pump 4 failed after 1,200 hours because its seal dried out."
	DOCXClaim2 = "Seals are now checked every 500 hours by the night crew."
)

// DOCX is a short report: a title, headings, paragraphs and a table.
func DOCX() []byte {
	para := func(style, text string) string {
		s := ""
		if style != "" {
			s = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
		}
		return `<w:p>` + s + `<w:r><w:t>` + text + `</w:t></w:r></w:p>`
	}
	cell := func(t string) string { return `<w:tc>` + para("", t) + `</w:tc>` }
	body := para("Title", "Pump Failure Review") +
		para("Heading1", "Findings") +
		para("", DOCXClaim) +
		para("", "The review read the logs of six pumps over two years.") +
		`<w:tbl><w:tr>` + cell("Pump") + cell("Hours") + `</w:tr><w:tr>` + cell("4") + cell("1,200") + `</w:tr></w:tbl>` +
		`<w:p><w:r><w:br w:type="page"/></w:r></w:p>` +
		para("Heading2", "Next steps") +
		para("", DOCXClaim2)
	return zipOf(
		[2]string{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		[2]string{"word/document.xml", `<?xml version="1.0"?><w:document ` + wNS + `><w:body>` + body + `</w:body></w:document>`},
		core("Pump Failure Review", "Cora Vance"),
	)
}

// DeepDOCX is a DOCX whose body nests depth elements.
func DeepDOCX(depth int) []byte {
	return zipOf([2]string{"word/document.xml", `<w:document ` + wNS + `>` + strings.Repeat("<w:p>", depth) + strings.Repeat("</w:p>", depth) + `</w:document>`})
}

// BombDOCX is a DOCX whose document.xml inflates to about inflated bytes,
// one run of text.
func BombDOCX(inflated int) []byte { return bombDOCX(inflated, "a") }

// MarkupBombDOCX is a DOCX whose document.xml inflates to about inflated
// bytes of empty paragraphs.
func MarkupBombDOCX(inflated int) []byte { return bombDOCX(inflated, "<w:p/>") }

func bombDOCX(inflated int, unit string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	fw, _ := w.CreateHeader(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate})
	_, _ = fw.Write([]byte(`<w:document ` + wNS + `><w:body><w:p><w:r><w:t>`))
	if unit != "a" {
		_, _ = fw.Write([]byte(`</w:t></w:r></w:p>`))
	}
	chunk := bytes.Repeat([]byte(unit), (1<<20)/len(unit))
	for n := 0; n < inflated; n += len(chunk) {
		_, _ = fw.Write(chunk)
	}
	if unit == "a" {
		_, _ = fw.Write([]byte(`</w:t></w:r></w:p>`))
	}
	_, _ = fw.Write([]byte(`</w:body></w:document>`))
	_ = w.Close()
	return b.Bytes()
}

// ManyEntries is a DOCX zip of n (empty) files besides its document.
func ManyEntries(n int) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	fw, _ := w.Create("word/document.xml")
	_, _ = fw.Write([]byte(`<w:document ` + wNS + `><w:body><w:p><w:r><w:t>x</w:t></w:r></w:p></w:body></w:document>`))
	for i := 0; i < n; i++ {
		_, _ = w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f/%d", i), Method: zip.Store})
	}
	_ = w.Close()
	return b.Bytes()
}

// Deck is a slide deck of three slides, each a title and bullet points.
func Deck() []byte {
	const pNS = `xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	slide := func(title string, points ...string) string {
		s := `<p:sld ` + pNS + `><p:cSld><p:spTree>` +
			`<p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>` + title + `</a:t></a:r></a:p></p:txBody></p:sp>` +
			`<p:sp><p:nvSpPr><p:nvPr><p:ph idx="1"/></p:nvPr></p:nvSpPr><p:txBody>`
		for _, p := range points {
			s += `<a:p><a:r><a:t>` + p + `</a:t></a:r></a:p>`
		}
		return s + `</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`
	}
	// Slide files named out of order: the presentation's list decides.
	return zipOf(
		[2]string{"ppt/presentation.xml", `<p:presentation ` + pNS + `><p:sldIdLst><p:sldId id="256" r:id="rId2"/><p:sldId id="257" r:id="rId3"/><p:sldId id="258" r:id="rId1"/></p:sldIdLst></p:presentation>`},
		[2]string{"ppt/_rels/presentation.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Target="slides/slide1.xml"/><Relationship Id="rId2" Target="slides/slide2.xml"/><Relationship Id="rId3" Target="slides/slide3.xml"/></Relationships>`},
		[2]string{"ppt/slides/slide2.xml", slide("Quarterly Results", "Revenue rose 12 percent.", "Costs held flat.")},
		[2]string{"ppt/slides/slide3.xml", slide("Regional View", "The north grew fastest.")},
		[2]string{"ppt/slides/slide1.xml", slide("Outlook", "Hiring resumes in May.", "Two plants open next year.")},
		core("Quarterly Review", "Dana Holt"),
	)
}

// Sheet is a workbook of two sheets, one of rows rows.
func Sheet(rows int) []byte {
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	var s1 strings.Builder
	s1.WriteString(`<worksheet ` + ns + `><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c></row>`)
	for i := 2; i <= rows+1; i++ {
		fmt.Fprintf(&s1, `<row r="%d"><c r="A%d" t="inlineStr"><is><t>Site %d</t></is></c><c r="B%d"><v>%d</v></c><c r="C%d"><v>%.1f</v></c></row>`, i, i, i-1, i, 2000+i, i, float64(i)/10)
	}
	s1.WriteString(`</sheetData></worksheet>`)
	return zipOf(
		[2]string{"xl/workbook.xml", `<workbook ` + ns + `><sheets><sheet name="Readings" sheetId="1" r:id="rId1"/><sheet name="Notes" sheetId="2" r:id="rId2"/></sheets></workbook>`},
		[2]string{"xl/_rels/workbook.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Target="worksheets/sheet2.xml"/></Relationships>`},
		[2]string{"xl/sharedStrings.xml", `<sst ` + ns + `><si><t>Site</t></si><si><t>Year</t></si><si><t>Level m</t></si></sst>`},
		[2]string{"xl/worksheets/sheet1.xml", s1.String()},
		[2]string{"xl/worksheets/sheet2.xml", `<worksheet ` + ns + `><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>Readings are taken at noon.</t></is></c></row></sheetData></worksheet>`},
	)
}
