package kb

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FromPaths reads documents from files and directories. A directory tree is
// walked: each Go package in it becomes one document of its package
// documentation (extracted with go/doc, see goDoc), and each .md or .txt
// file one document of its text. Test packages, testdata and vendor trees
// are skipped. The documents found under a directory have it, made
// absolute, as their Root, so that loading the same directory again can
// remove the documents whose files are gone (Sync).
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
		root, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("error reading %s: %w", p, err)
		}
		for i := range found {
			found[i].Root = root
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

// goPackage extracts the documentation of the Go package in dir, if any,
// with the examples of its test files. It reads the files the go command
// would build for this platform, as go doc does.
func goPackage(root, dir string) (Document, bool, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil || bp.Name == "main" {
		return Document{}, false, nil // not a Go package, or a command
	}
	fset := token.NewFileSet()
	var files []*ast.File
	names := append(append([]string{}, bp.GoFiles...), bp.CgoFiles...)
	for _, n := range append(append([]string{}, bp.TestGoFiles...), bp.XTestGoFiles...) {
		if hasExamples(filepath.Join(dir, n)) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return Document{}, false, nil // a package that does not parse
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, importPath(root, dir))
	if err != nil || strings.TrimSpace(p.Doc) == "" {
		return Document{}, false, nil
	}
	return packageDocument(fset, p), true, nil
}

// hasExamples reports whether a test file may hold examples, so that the
// test files without any are not parsed.
func hasExamples(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte("\nfunc Example"))
}

// importPath is the import path of the package in dir, found under root:
// its path under the Go toolchain's src for a package of the standard
// library (so net/http is net/http, whichever directory was loaded),
// else its path under root, or its directory's name for root itself.
func importPath(root, dir string) string {
	if goroot := build.Default.GOROOT; goroot != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			if rel, err := filepath.Rel(filepath.Join(goroot, "src"), abs); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
				return filepath.ToSlash(rel)
			}
		}
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return filepath.Base(dir)
	}
	return filepath.ToSlash(rel)
}
