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
	"sort"
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
// with the examples of its test files.
func goPackage(root, dir string) (Document, bool, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go") || hasExamples(filepath.Join(dir, fi.Name()))
	}, parser.ParseComments)
	if err != nil || len(pkgs) == 0 {
		return Document{}, false, nil // not a Go package, or one that does not parse
	}
	name := packageName(pkgs)
	if name == "" {
		return Document{}, false, nil // test files alone
	}
	var files []*ast.File
	for _, n := range []string{name, name + "_test"} {
		if pkg, ok := pkgs[n]; ok {
			for _, f := range pkg.Files {
				files = append(files, f)
			}
		}
	}
	p, err := doc.NewFromFiles(fset, files, importPath(root, dir))
	if err != nil {
		return Document{}, false, nil
	}
	if p.Name == "main" || strings.TrimSpace(p.Doc) == "" {
		return Document{}, false, nil
	}
	return packageDocument(fset, p), true, nil
}

// packageName is the first, in order, of the packages of a directory that
// is not a test package ("" when there is none).
func packageName(pkgs map[string]*ast.Package) string {
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		if !strings.HasSuffix(name, "_test") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return names[0]
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
