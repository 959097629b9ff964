package kb

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FromPaths reads documents from files and directories. A directory tree is
// walked: each Go package in it becomes one document of its package
// documentation (extracted with go/doc), and each .md or .txt file one
// document of its text. Test packages, testdata and vendor trees are skipped.
func FromPaths(paths []string) ([]Document, error) {
	var docs []Document
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("error reading %s: %w", p, err)
		}
		if !info.IsDir() {
			d, err := textFile(p)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
			continue
		}
		found, err := walkDir(p)
		if err != nil {
			return nil, err
		}
		docs = append(docs, found...)
	}
	return docs, nil
}

func walkDir(root string) ([]Document, error) {
	var docs []Document
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "vendor", "internal", "cmd":
				if path != root {
					return filepath.SkipDir
				}
			}
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			pkg, ok, err := goPackage(root, path)
			if err != nil {
				return err
			}
			if ok {
				docs = append(docs, pkg)
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".md", ".txt":
			doc, err := textFile(path)
			if err != nil {
				return err
			}
			docs = append(docs, doc)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error walking %s: %w", root, err)
	}
	return docs, nil
}

func textFile(path string) (Document, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Document{}, fmt.Errorf("error reading %s: %w", path, err)
	}
	title := filepath.Base(path)
	for _, line := range strings.SplitN(string(b), "\n", 5) {
		if t := strings.TrimSpace(strings.TrimLeft(line, "# ")); t != "" {
			title = t
			break
		}
	}
	return Document{Source: "file:" + filepath.ToSlash(path), Title: title, Body: string(b)}, nil
}

// goPackage extracts the documentation of the Go package in dir, if any.
func goPackage(root, dir string) (Document, bool, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil || len(pkgs) == 0 {
		return Document{}, false, nil // not a Go package, or one that does not parse
	}
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	var files []*ast.File
	for _, f := range pkgs[names[0]].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, importPath(root, dir))
	if err != nil {
		return Document{}, false, nil
	}
	if p.Name == "main" || strings.TrimSpace(p.Doc) == "" {
		return Document{}, false, nil
	}
	return Document{
		Source: "https://pkg.go.dev/" + p.ImportPath,
		Title:  "package " + p.ImportPath,
		Body:   packageText(p),
	}, true, nil
}

func importPath(root, dir string) string {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return filepath.Base(dir)
	}
	return filepath.ToSlash(rel)
}

// packageText renders a package's documentation as plain text: the package
// comment, then each exported type, function and method with its comment.
func packageText(p *doc.Package) string {
	var b strings.Builder
	pr := p.Printer()
	b.Write(pr.Text(p.Parser().Parse(p.Doc)))
	add := func(name, comment string) {
		if strings.TrimSpace(comment) == "" {
			return
		}
		b.WriteString("\n\n" + name + "\n\n")
		b.Write(pr.Text(p.Parser().Parse(comment)))
	}
	for _, f := range p.Funcs {
		add("func "+f.Name, f.Doc)
	}
	for _, t := range p.Types {
		add("type "+t.Name, t.Doc)
		for _, f := range t.Funcs {
			add("func "+f.Name, f.Doc)
		}
		for _, m := range t.Methods {
			add("func ("+t.Name+") "+m.Name, m.Doc)
		}
	}
	return b.String()
}
