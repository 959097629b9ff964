package kb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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

	"github.com/gbresearch/gb/jobs/doctext"
)

// FromPaths reads documents from files and directories (FromPathsWith
// with no options); a file that could not be read as a document is left
// out.
func FromPaths(paths []string) ([]Document, error) {
	docs, _, err := FromPathsWith(paths, ReadOptions{})
	return docs, err
}

// ReadOptions are how FromPathsWith reads files.
type ReadOptions struct {
	// Doc is how documents are read (doctext's limits, its HTML reader).
	Doc doctext.Options
	// Known are the file hashes stored by source (FileHashes): a file of
	// that hash is not read again, and comes back Unchanged.
	Known map[string]string
	// Progress, when set, is called after each file is read (or found
	// unchanged, or skipped) with its path.
	Progress func(path string)
}

// Skipped is a file FromPathsWith left out, and why.
type Skipped struct {
	Path string
	Err  error
}

// FromPathsWith reads documents from files and directories. A directory
// tree is walked: each Go package in it becomes one document of its
// package documentation (extracted with go/doc, see goDoc), and each file
// of a format jobs/doctext reads (.md, .txt, .pdf, .docx, .pptx, .xlsx,
// .csv, .html, …) one document of its text, read with opt (its pages
// marked in the text, doctext.PartsOf). Test packages, testdata and
// vendor trees are skipped. A file that is malformed, past a limit or
// without a text layer is Skipped, not an error. The documents found
// under a directory have it, made absolute, as their Root, so that
// loading the same directory again can remove the documents whose files
// are gone (Sync).
func FromPathsWith(paths []string, opt ReadOptions) ([]Document, []Skipped, error) {
	var docs []Document
	var skipped []Skipped
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, fmt.Errorf("error reading %s: %w", p, err)
		}
		if !info.IsDir() {
			d, err := docFile(p, opt)
			var skip *skipError
			if errors.As(err, &skip) {
				skipped = append(skipped, Skipped{p, skip.err})
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			docs = append(docs, d)
			continue
		}
		found, skips, err := walkDir(p, opt)
		skipped = append(skipped, skips...)
		if err != nil {
			return nil, nil, err
		}
		root, err := filepath.Abs(p)
		if err != nil {
			return nil, nil, fmt.Errorf("error reading %s: %w", p, err)
		}
		for i := range found {
			found[i].Root = root
		}
		docs = append(docs, found...)
	}
	return docs, skipped, nil
}

// walked are the extensions of the files a directory's walk reads (a
// single file may be of any format doctext reads, JSON and XML too).
var walked = map[string]bool{".md": true, ".markdown": true, ".txt": true, ".pdf": true, ".docx": true,
	".pptx": true, ".xlsx": true, ".csv": true, ".html": true, ".htm": true}

// skipError is a file that is not read as a document.
type skipError struct{ err error }

func (e *skipError) Error() string { return e.err.Error() }

func walkDir(root string, opt ReadOptions) ([]Document, []Skipped, error) {
	var docs []Document
	var skipped []Skipped
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
		if !walked[strings.ToLower(filepath.Ext(path))] || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		doc, err := docFile(path, opt)
		var skip *skipError
		if errors.As(err, &skip) {
			skipped = append(skipped, Skipped{path, skip.err})
			return nil
		}
		if err != nil {
			return err
		}
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		return nil, skipped, fmt.Errorf("error walking %s: %w", root, err)
	}
	return docs, skipped, nil
}

// docFile reads one file as a document: .md and .txt as they are, the
// others through doctext. Its source is "file:" and its path; a file
// whose hash is the one Known is not read.
func docFile(path string, opt ReadOptions) (doc Document, err error) {
	if opt.Progress != nil {
		defer func() { opt.Progress(path) }()
	}
	source := "file:" + filepath.ToSlash(path)
	b, err := os.ReadFile(path)
	if err != nil {
		return Document{}, fmt.Errorf("error reading %s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])
	if opt.Known[source] == hash {
		return Document{Source: source, FileHash: hash, Unchanged: true}, nil
	}
	switch filepath.Ext(path) {
	case ".md", ".txt":
		d := textDocument(path, b)
		d.FileHash = hash
		return d, nil
	}
	d, err := doctext.Extract(context.Background(), b, "", path, opt.Doc)
	if err != nil {
		return Document{}, &skipError{err}
	}
	title := d.Title
	if title == "" {
		title = filepath.Base(path)
	}
	return Document{Source: source, Title: title, Body: d.Text, FileHash: hash}, nil
}

func textDocument(path string, b []byte) Document {
	title := filepath.Base(path)
	for _, line := range strings.SplitN(string(b), "\n", 5) {
		if t := strings.TrimSpace(strings.TrimLeft(line, "# ")); t != "" {
			title = t
			break
		}
	}
	return Document{Source: "file:" + filepath.ToSlash(path), Title: title, Body: string(b)}
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
