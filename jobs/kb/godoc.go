package kb

import (
	"bytes"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/format"
	"go/printer"
	"go/token"
	"regexp"
	"strings"
)

// MaxDeclLen bounds the printed declaration of one Go symbol, in bytes:
// a few generated tables (unicode's) are longer, and are cut with a note.
const MaxDeclLen = 16000

// goDoc renders a Go package's documentation as a document, about as
// `go doc -all` prints it: the package comment, then every exported
// constant, variable, function, type (its whole declaration, fields and
// interface methods with their comments), method (with its receiver as
// Go writes it) and example, each under a "## " heading of its own.
type goDoc struct {
	p    *doc.Package
	fset *token.FileSet
	pr   *comment.Printer
	b    strings.Builder
	secs []section
}

// packageDocument is the document of package p, parsed into fset.
func packageDocument(fset *token.FileSet, p *doc.Package) Document {
	g := &goDoc{p: p, fset: fset, pr: p.Printer()}
	g.pr.TextWidth = -1 // a paragraph is one line, so a phrase is found as it is written
	g.overview()
	for _, v := range p.Consts {
		g.value("const", v)
	}
	for _, v := range p.Vars {
		g.value("var", v)
	}
	for _, f := range p.Funcs {
		g.function(f)
	}
	for _, t := range p.Types {
		g.typ(t)
	}
	body := g.b.String()
	return Document{
		Source:   "https://pkg.go.dev/" + p.ImportPath,
		Title:    "package " + p.ImportPath,
		Body:     body,
		Passages: passagesOf(body, g.secs),
	}
}

// overview writes the package clause and comment, one section for the
// text before its first heading and one for each heading, then the
// package's examples.
func (g *goDoc) overview() {
	g.secs = append(g.secs, section{start: 0, heading: "package " + g.p.Name, symbols: []string{g.p.Name, g.p.ImportPath}})
	g.b.WriteString("package " + g.p.Name + ` // import "` + g.p.ImportPath + `"` + "\n\n")
	start := g.b.Len()
	text := string(g.pr.Text(g.p.Parser().Parse(g.p.Doc)))
	g.b.WriteString(strings.TrimRight(text, "\n"))
	for _, m := range commentHeadingRE.FindAllStringSubmatchIndex(text, -1) {
		g.secs = append(g.secs, section{start: start + m[0], heading: text[m[2]:m[3]]})
	}
	g.examples("", g.p.Examples)
}

// commentHeadingRE is a heading of a doc comment as the comment printer
// writes it in text.
var commentHeadingRE = regexp.MustCompile(`(?m)^# (\S.*)$`)

// heading starts a section: its "## " line, with the symbols it declares.
func (g *goDoc) heading(h string, symbols []string, symbolsIn func(string) []string) {
	g.b.WriteString("\n\n")
	g.secs = append(g.secs, section{start: g.b.Len(), heading: h, symbols: symbols, symbolsIn: symbolsIn})
	g.b.WriteString("## " + h + "\n\n")
}

// decl writes a declaration as gofmt prints it (with the comments of its
// fields and methods), then the doc comment.
func (g *goDoc) decl(node ast.Node, docText string) {
	var buf bytes.Buffer
	if err := format.Node(&buf, g.fset, node); err != nil {
		buf.Reset()
		buf.WriteString("(declaration not printable: " + err.Error() + ")")
	}
	text := buf.String()
	if len(text) > MaxDeclLen {
		text = strings.ToValidUTF8(text[:MaxDeclLen], "") + "\n\t// … (declaration cut: longer than the knowledge base keeps)"
	}
	g.b.WriteString(text)
	if d := strings.TrimRight(string(g.pr.Text(g.p.Parser().Parse(docText))), "\n"); d != "" {
		g.b.WriteString("\n\n" + d)
	}
}

// qualified names each symbol alone and with its package's name.
func (g *goDoc) qualified(names ...string) []string {
	out := make([]string, 0, 2*len(names))
	for _, n := range names {
		out = append(out, n, g.p.Name+"."+n)
	}
	return out
}

// value writes a group of constants or variables.
func (g *goDoc) value(kind string, v *doc.Value) {
	g.heading(kind+" "+strings.Join(v.Names, ", "), g.qualified(v.Names...), nil)
	g.decl(v.Decl, v.Doc)
}

// function writes a function (a constructor too) and its examples.
func (g *goDoc) function(f *doc.Func) {
	g.heading("func "+f.Name, g.qualified(f.Name), nil)
	g.decl(f.Decl, f.Doc)
	g.examples(f.Name, f.Examples)
}

// typ writes a type's whole declaration and comment, its constants and
// variables, its constructors, its methods and its examples.
func (g *goDoc) typ(t *doc.Type) {
	g.heading("type "+t.Name, g.qualified(t.Name), memberSymbols(g.p.Name, t.Name))
	g.decl(t.Decl, t.Doc)
	g.examples(t.Name, t.Examples)
	for _, v := range t.Consts {
		g.value("const", v)
	}
	for _, v := range t.Vars {
		g.value("var", v)
	}
	for _, f := range t.Funcs {
		g.function(f)
	}
	for _, m := range t.Methods {
		g.heading("func ("+m.Recv+") "+m.Name, g.qualified(t.Name+"."+m.Name), nil)
		g.decl(m.Decl, m.Doc)
		g.examples(t.Name+"."+m.Name, m.Examples)
	}
}

// examples writes the examples of a symbol (of the package for ""): each
// one's doc, code and expected output.
func (g *goDoc) examples(of string, exs []*doc.Example) {
	for _, ex := range exs {
		name := of
		if name == "" {
			name = "package " + g.p.Name
		}
		if ex.Suffix != "" {
			name += " (" + ex.Suffix + ")"
		}
		g.heading("example "+name, []string{"Example" + ex.Name}, nil)
		if d := strings.TrimRight(string(g.pr.Text(g.p.Parser().Parse(ex.Doc))), "\n"); d != "" {
			g.b.WriteString(d + "\n\n")
		}
		code := exampleCode(g.fset, ex)
		g.b.WriteString(code)
		// The code keeps its "// Output:" comment; the output is given
		// apart only when the comment was cut or is not there.
		if ex.Output != "" && !strings.Contains(code, "// Output:") && !strings.Contains(code, "// Unordered output:") {
			g.b.WriteString("\n\nOutput:\n\n" + strings.TrimRight(ex.Output, "\n"))
		}
	}
}

// exampleCode prints an example's code with its comments: the body of its
// function, or the whole file of a whole-file example.
func exampleCode(fset *token.FileSet, ex *doc.Example) string {
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, &printer.CommentedNode{Node: ex.Code, Comments: ex.Comments}); err != nil {
		return "(example not printable: " + err.Error() + ")"
	}
	text := buf.String()
	if b, ok := ex.Code.(*ast.BlockStmt); ok && b != nil {
		// The body of an example function: its statements, unindented.
		text = strings.TrimSuffix(strings.TrimPrefix(text, "{\n"), "}")
		text = strings.ReplaceAll("\n"+text, "\n\t", "\n")[1:]
	}
	if len(text) > MaxDeclLen {
		text = strings.ToValidUTF8(text[:MaxDeclLen], "") + "\n// … (example cut)"
	}
	return strings.TrimRight(text, "\n")
}

// memberRE is a line of a struct's or interface's declaration that
// declares fields or a method: one tab, then exported names.
var memberRE = regexp.MustCompile(`(?m)^\t([A-Z][\w]*(?:, [A-Z][\w]*)*)[ \t(\[]`)

// memberSymbols names the fields and interface methods a piece of type
// typ's declaration declares, as "Type.Field" and "pkg.Type.Field".
func memberSymbols(pkg, typ string) func(string) []string {
	return func(text string) []string {
		var out []string
		for _, m := range memberRE.FindAllStringSubmatch(text, -1) {
			for n := range strings.SplitSeq(m[1], ", ") {
				out = append(out, typ+"."+n, pkg+"."+typ+"."+n)
			}
		}
		return out
	}
}
