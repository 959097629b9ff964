// Package doctext reduces documents to text for reading and citing: PDF
// (text by page, in reading order), DOCX, PPTX and XLSX (the zip + XML
// formats read directly), CSV, Markdown and plain text, chosen by content
// type, file name and the document's first bytes. HTML is recognised and
// handed to the caller's reader (Options.HTML), so that the web's and the
// knowledge base's pages share one main-content extraction.
//
// A document keeps its parts (pages, slides, sheets) with their offsets in
// its text, so that a passage can be cited to its page. Every document is
// read within limits (Limits) checked while it is read: bytes, pages,
// characters, zip entries and inflated bytes, nesting depth, rows, and the
// context's deadline; a limit passed is a *LimitError naming it. A
// malformed document is an error, never a crash: a panic of a parser is
// recovered into one.
//
// It may import nothing of the project.
package doctext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"
)

// Formats a document is read as.
const (
	FormatHTML     = "html"
	FormatPDF      = "pdf"
	FormatDOCX     = "docx"
	FormatPPTX     = "pptx"
	FormatXLSX     = "xlsx"
	FormatCSV      = "csv"
	FormatMarkdown = "markdown"
	FormatText     = "text"
)

// Kinds of a document's parts.
const (
	PartPage  = "page"
	PartSlide = "slide"
	PartSheet = "sheet"
)

// Part is one page, slide or sheet of a document's text.
type Part struct {
	// Kind is PartPage, PartSlide or PartSheet.
	Kind string `json:"kind"`
	// Number counts the parts from 1, as a reader cites them.
	Number int `json:"n"`
	// Name is a sheet's name or a slide's title, when it has one.
	Name string `json:"name,omitempty"`
	// Offset and Len are in characters (runes) of Doc.Text.
	Offset int `json:"offset"`
	Len    int `json:"len"`
}

// Doc is a document's text and what is known of it.
type Doc struct {
	Format string
	Title  string
	// Authors and Date are the document's own, when it says them.
	Authors []string
	Date    string
	// Text is the readable text, headings as "## Heading" lines.
	Text string
	// Parts are the pages, slides or sheets of Text, in order; none for
	// a document without them (HTML, Markdown, plain text, CSV).
	Parts []Part
}

// PartAt is the part holding character offset, or false.
func (d Doc) PartAt(offset int) (Part, bool) {
	return PartAt(d.Parts, offset)
}

// PartAt is the part of parts holding character offset, or false.
func PartAt(parts []Part, offset int) (Part, bool) {
	for i := len(parts) - 1; i >= 0; i-- {
		if offset >= parts[i].Offset {
			return parts[i], true
		}
	}
	return Part{}, false
}

// Limits bound the reading of one document. Zero fields take the
// defaults (DefaultLimits).
type Limits struct {
	// MaxBytes is the largest document read.
	MaxBytes int64
	// MaxPages is the most pages (slides, sheets) of a document.
	MaxPages int
	// MaxChars is the most characters of text a document gives.
	MaxChars int
	// MaxEntries is the most files a zip (DOCX, PPTX, XLSX) may hold.
	MaxEntries int
	// MaxInflated is the most bytes a document's compressed parts may
	// inflate to, all together.
	MaxInflated int64
	// MaxDepth is the deepest nesting of XML elements or PDF objects.
	MaxDepth int
	// MaxRows is the most rows read of a sheet or CSV file; the rest are
	// counted and said, not read.
	MaxRows int
	// Timeout bounds one document when the context has no earlier
	// deadline.
	Timeout time.Duration
}

// DefaultLimits are the limits of a zero Limits.
var DefaultLimits = Limits{
	MaxBytes:    64 << 20,
	MaxPages:    2000,
	MaxChars:    8 << 20,
	MaxEntries:  10000,
	MaxInflated: 64 << 20,
	MaxDepth:    100,
	MaxRows:     5000,
	Timeout:     60 * time.Second,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	return Limits{
		MaxBytes:    positiveOr(l.MaxBytes, d.MaxBytes),
		MaxPages:    positiveOr(l.MaxPages, d.MaxPages),
		MaxChars:    positiveOr(l.MaxChars, d.MaxChars),
		MaxEntries:  positiveOr(l.MaxEntries, d.MaxEntries),
		MaxInflated: positiveOr(l.MaxInflated, d.MaxInflated),
		MaxDepth:    positiveOr(l.MaxDepth, d.MaxDepth),
		MaxRows:     positiveOr(l.MaxRows, d.MaxRows),
		Timeout:     positiveOr(l.Timeout, d.Timeout),
	}
}

// positiveOr is v when it is above zero, else its default.
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// LimitError says which limit a document passed.
type LimitError struct {
	// Limit names the limit, as "MaxPages".
	Limit string
	// Max is the limit's value.
	Max int64
	// What says what passed it.
	What string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: more than the limit of %d (%s)", e.What, e.Max, e.Limit)
}

func limitErr(limit string, max int64, format string, args ...any) error {
	return &LimitError{Limit: limit, Max: max, What: fmt.Sprintf(format, args...)}
}

// ErrNoTextLayer is the answer for a PDF whose pages hold no text, as a
// scanned document's images.
var ErrNoTextLayer = errors.New("no text layer (scanned?): the PDF's pages hold images but no text to read")

// ErrUnsupported is wrapped by the error for a document of a format not
// read.
var ErrUnsupported = errors.New("not a format doctext reads (HTML, PDF, DOCX, PPTX, XLSX, CSV, Markdown, plain text, JSON, XML)")

// ErrMalformed is wrapped by the error for a document that could not be
// parsed.
var ErrMalformed = errors.New("malformed document")

// HTMLFunc reduces an HTML document to its title and text.
type HTMLFunc func(body []byte, contentType string) (title, text string, err error)

// Options are how Extract reads.
type Options struct {
	Limits Limits
	// HTML reads HTML; nil keeps the text of the body's elements, less
	// scripts and styles.
	HTML HTMLFunc
}

// Extract reads a document: contentType (a Content-Type header, may be
// empty) and name (a file name or URL path, may be empty) choose the
// format, with the body's first bytes.
func Extract(ctx context.Context, body []byte, contentType, name string, opt Options) (d Doc, err error) {
	lim := opt.Limits.withDefaults()
	format := Sniff(body, contentType, name)
	if format == "" {
		mt, _, _ := mime.ParseMediaType(contentType)
		return Doc{}, fmt.Errorf("content type %q: %w", mt, ErrUnsupported)
	}
	if int64(len(body)) > lim.MaxBytes {
		return Doc{}, limitErr("MaxBytes", lim.MaxBytes, "the document has %d bytes", len(body))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lim.Timeout)
		defer cancel()
	}
	r := &reader{ctx: ctx, lim: lim}
	d, err = r.run(func() (Doc, error) { return r.read(format, body, contentType, opt.HTML) })
	if err != nil {
		return Doc{Format: format}, fmt.Errorf("%s: %w", format, err)
	}
	d.Format = format
	return d, nil
}

// reader is the state of one Extract.
type reader struct {
	ctx context.Context
	lim Limits
	// inflated counts the bytes inflated from the document's streams.
	inflated int64
}

// run calls read in its own goroutine, so that a parser that does not
// look at the context is still cut off at its deadline (its goroutine
// ends at the next check, or when the bounded work is done), and turns
// its panic into an error.
func (r *reader) run(read func() (Doc, error)) (Doc, error) {
	type result struct {
		d   Doc
		err error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if p := recover(); p != nil {
				if a, ok := p.(abort); ok {
					res.err = a.err
				} else {
					res.err = fmt.Errorf("%w: the parser failed: %v (%s)", ErrMalformed, p, firstFrame(debug.Stack()))
				}
			}
			done <- res
		}()
		res.d, res.err = read()
	}()
	select {
	case res := <-done:
		return res.d, res.err
	case <-r.ctx.Done():
		return Doc{}, r.ctxErr()
	}
}

// abort carries an error out of a parser's callback by panic.
type abort struct{ err error }

// check panics with abort when the context is done.
func (r *reader) check() {
	if r.ctx.Err() != nil {
		panic(abort{r.ctxErr()})
	}
}

func (r *reader) ctxErr() error {
	if errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("reading the document took past its deadline (Timeout %s or the step's): %w", r.lim.Timeout, r.ctx.Err())
	}
	return r.ctx.Err()
}

// firstFrame is the first line of a stack below the runtime's and this
// package's own frames, to say where a parser failed.
func firstFrame(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.Contains(l, ".go:") && !strings.Contains(l, "/runtime/") && !strings.Contains(l, "doctext/doctext.go") {
			if i := strings.LastIndex(l, "/"); i >= 0 {
				l = l[i+1:]
			}
			if i := strings.Index(l, " +"); i >= 0 {
				l = l[:i]
			}
			return l
		}
	}
	return "unknown place"
}

func (r *reader) read(format string, body []byte, contentType string, htmlFn HTMLFunc) (Doc, error) {
	switch format {
	case FormatPDF:
		return r.pdf(body)
	case FormatDOCX:
		return r.docx(body)
	case FormatPPTX:
		return r.pptx(body)
	case FormatXLSX:
		return r.xlsx(body)
	case FormatCSV:
		return r.csv(body)
	case FormatHTML:
		if htmlFn != nil {
			title, text, err := htmlFn(body, contentType)
			return Doc{Title: title, Text: text}, err
		}
		return r.html(body)
	}
	text := toText(body)
	if utf8.RuneCountInString(text) > r.lim.MaxChars {
		return Doc{}, limitErr("MaxChars", int64(r.lim.MaxChars), "the text has more characters")
	}
	return Doc{Text: text, Title: textTitle(text)}, nil
}

// Media types by format.
var mediaTypes = map[string]string{
	"text/html":             FormatHTML,
	"application/xhtml+xml": FormatHTML,
	"application/pdf":       FormatPDF,
	"application/x-pdf":     FormatPDF,
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   FormatDOCX,
	"application/vnd.openxmlformats-officedocument.presentationml.presentation": FormatPPTX,
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         FormatXLSX,
	"text/csv":             FormatCSV,
	"text/markdown":        FormatMarkdown,
	"text/x-markdown":      FormatMarkdown,
	"text/plain":           FormatText,
	"text/xml":             FormatText,
	"application/xml":      FormatText,
	"application/json":     FormatText,
	"application/ld+json":  FormatText,
	"application/rss+xml":  FormatText,
	"application/atom+xml": FormatText,
}

// Extensions by format.
var extensions = map[string]string{
	".html": FormatHTML, ".htm": FormatHTML, ".xhtml": FormatHTML,
	".pdf": FormatPDF, ".docx": FormatDOCX, ".pptx": FormatPPTX, ".xlsx": FormatXLSX,
	".csv": FormatCSV, ".md": FormatMarkdown, ".markdown": FormatMarkdown,
	".txt": FormatText, ".text": FormatText, ".rst": FormatText, ".json": FormatText, ".xml": FormatText,
}

// Extension is the format of a file name's extension, or "".
func Extension(name string) string {
	return extensions[strings.ToLower(path.Ext(name))]
}

// Sniff is the format of a document, or "" when it is not one read: the
// bytes decide for the binary formats (a PDF served as
// application/octet-stream, or an HTML page named .pdf, is read as what
// it is); else the content type, else the name's extension, else the
// sniffed type of the bytes.
func Sniff(body []byte, contentType, name string) string {
	switch {
	case bytes.HasPrefix(body, []byte("%PDF-")) || bytes.Contains(body[:min(len(body), 1024)], []byte("%PDF-")):
		return FormatPDF
	case bytes.HasPrefix(body, []byte("PK\x03\x04")):
		return zipFormat(body, contentType, name)
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	mt = strings.ToLower(mt)
	if f, ok := mediaTypes[mt]; ok && f != FormatPDF && f != FormatDOCX && f != FormatPPTX && f != FormatXLSX {
		return f
	}
	if strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") && mt != "application/xhtml+xml" {
		return FormatText
	}
	if f := Extension(name); f != "" && f != FormatPDF && f != FormatDOCX && f != FormatPPTX && f != FormatXLSX {
		return f
	}
	if len(body) == 0 {
		if f := Extension(name); f == FormatText || f == FormatMarkdown {
			return f
		}
		if f := mediaTypes[mt]; f == FormatText || f == FormatMarkdown {
			return f
		}
		return ""
	}
	sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(body))
	switch f := mediaTypes[sniffed]; f {
	case FormatHTML, FormatText:
		return f
	}
	return ""
}

// zipFormat is the Office format of a zip, by its content type or name,
// else by the parts it names in its first bytes.
func zipFormat(body []byte, contentType, name string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	if f := mediaTypes[strings.ToLower(mt)]; f == FormatDOCX || f == FormatPPTX || f == FormatXLSX {
		return f
	}
	if f := Extension(name); f == FormatDOCX || f == FormatPPTX || f == FormatXLSX {
		return f
	}
	head := body[:min(len(body), 64<<10)]
	switch {
	case bytes.Contains(head, []byte("word/")):
		return FormatDOCX
	case bytes.Contains(head, []byte("ppt/")):
		return FormatPPTX
	case bytes.Contains(head, []byte("xl/")):
		return FormatXLSX
	}
	return ""
}

// toText is body as UTF-8 text, invalid bytes replaced.
func toText(body []byte) string {
	return strings.ToValidUTF8(strings.ReplaceAll(string(body), "\x00", ""), "\uFFFD")
}

// textTitle is a text's first line, less Markdown heading marks.
func textTitle(text string) string {
	for _, line := range strings.SplitN(text, "\n", 5) {
		if t := strings.TrimSpace(strings.TrimLeft(line, "# ")); t != "" {
			return firstRunes(t, 200)
		}
	}
	return ""
}

func firstRunes(s string, n int) string {
	i := 0
	for b := range s {
		if i == n {
			return s[:b]
		}
		i++
	}
	return s
}

// MayRead reports whether a body served with contentType may be a
// document Extract reads, before the body is read: a type it reads, or
// one that says nothing (application/octet-stream, binary/octet-stream),
// whose bytes decide.
func MayRead(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return true
	}
	mt = strings.ToLower(mt)
	switch {
	case mediaTypes[mt] != "":
		return true
	case mt == "application/octet-stream", mt == "binary/octet-stream", mt == "application/zip", mt == "application/x-zip-compressed":
		return true
	case strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	return false
}
