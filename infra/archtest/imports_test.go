package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gbresearch/gb/"

// pkg is one package of the module: its directory (relative to the root,
// slash-separated), its package doc comments and the project packages its
// non-test files import.
type pkg struct {
	dir     string
	main    bool
	doc     string
	imports []string
}

// TestMayImportLinesMatchImports reads every package's "It may import …"
// sentence and fails for an import of the project it does not allow, and
// for a library package without such a sentence.
func TestMayImportLinesMatchImports(t *testing.T) {
	pkgs := loadPackages(t, filepath.Join("..", ".."))
	known := map[string]bool{}
	for _, p := range pkgs {
		known[p.dir] = true
	}
	for _, p := range pkgs {
		rule, ok := mayImport(p.doc, known)
		if !ok {
			if !p.main {
				t.Errorf("%s: its package doc has no \"It may import …\" sentence", p.dir)
			}
			continue
		}
		for _, imp := range p.imports {
			if !rule.allows(imp) {
				t.Errorf("%s imports %s, which its doc does not allow (%q)", p.dir, imp, rule.sentence)
			}
		}
	}
}

// loadPackages parses the imports and package comments of every non-test Go
// file under root, skipping testdata and node_modules.
func loadPackages(t *testing.T, root string) []*pkg {
	t.Helper()
	byDir := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		p := byDir[rel]
		if p == nil {
			p = &pkg{dir: rel}
			byDir[rel] = p
		}
		p.main = p.main || f.Name.Name == "main"
		if f.Doc != nil {
			p.doc += f.Doc.Text() + "\n"
		}
		for _, s := range f.Imports {
			imp, _ := strconv.Unquote(s.Path.Value)
			if rest, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(p.imports, rest) {
				p.imports = append(p.imports, rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the module: %v", err)
	}
	var out []*pkg
	for _, p := range byDir {
		out = append(out, p)
	}
	if len(out) < 20 {
		t.Fatalf("found %d packages under %s: the walk did not reach the module", len(out), root)
	}
	return out
}

// rule is what one "may import" sentence allows: packages by name, and
// trees of packages ("jobs and its subpackages").
type rule struct {
	sentence string
	exact    map[string]bool
	trees    []string
}

func (r rule) allows(imp string) bool {
	if r.exact[imp] {
		return true
	}
	for _, tree := range r.trees {
		if strings.HasPrefix(imp, tree+"/") {
			return true
		}
	}
	return false
}

var (
	maySentence = regexp.MustCompile(`\b(?:may import|imports)\b(.*?)(?:\.\s|\.$|;|:)`)
	parenthesis = regexp.MustCompile(`\([^)]*\)`)
	word        = regexp.MustCompile(`[a-z][a-z0-9_/]*`)
)

// mayImport finds the doc's "may import" sentence (or, without one, its
// "imports nothing of the project" kind) and the packages it names, leaving
// out what is said in parentheses; known is the set of the module's package directories, so that
// ordinary words ("only", "and") are not taken for packages.
func mayImport(doc string, known map[string]bool) (rule, bool) {
	doc = strings.Join(strings.Fields(doc), " ") + " "
	if i := strings.Index(doc, "may import"); i >= 0 {
		doc = doc[i:]
	}
	m := maySentence.FindStringSubmatch(parenthesis.ReplaceAllString(doc, ""))
	if m == nil {
		return rule{}, false
	}
	r := rule{sentence: strings.TrimSpace(m[0]), exact: map[string]bool{}}
	words := word.FindAllString(m[1], -1)
	for i, w := range words {
		if !known[w] {
			continue
		}
		r.exact[w] = true
		if next := strings.Join(words[i+1:min(i+4, len(words))], " "); strings.HasPrefix(next, "its subpackage") ||
			strings.HasPrefix(next, "and its subpackage") {
			r.trees = append(r.trees, w)
		}
	}
	return r, true
}

// TestMayImportReadsTheSentences checks the reading of the sentence itself
// on the forms the packages use.
func TestMayImportReadsTheSentences(t *testing.T) {
	known := map[string]bool{"jobs": true, "jobs/llm": true, "migrations": true, "infra/db": true}
	cases := []struct {
		doc     string
		allowed []string
		refused []string
	}{
		{"It may import nothing of the project.", nil, []string{"jobs"}},
		{"It may import migrations and nothing else of the project.", []string{"migrations"}, []string{"infra/db"}},
		{"It may import jobs and its subpackages, and infra/db.", []string{"jobs", "jobs/llm", "jobs/x/y", "infra/db"}, []string{"migrations"}},
		{"It may import jobs/llm only.", []string{"jobs/llm"}, []string{"jobs"}},
		{"It may import jobs; it knows nothing of HTTP.", []string{"jobs"}, []string{"jobs/llm"}},
		{"This package imports nothing of the project (its tests may use infra/db).", nil, []string{"infra/db"}},
		{"It imports the standard library only.", nil, []string{"jobs"}},
	}
	for _, c := range cases {
		r, ok := mayImport(c.doc, known)
		if !ok {
			t.Errorf("%q: no sentence found", c.doc)
			continue
		}
		for _, a := range c.allowed {
			if !r.allows(a) {
				t.Errorf("%q should allow %s", c.doc, a)
			}
		}
		for _, a := range c.refused {
			if r.allows(a) {
				t.Errorf("%q should not allow %s", c.doc, a)
			}
		}
	}
	if _, ok := mayImport("Package x does things.", known); ok {
		t.Error("a doc without the sentence was read as having one")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "go.mod")); err != nil {
		t.Fatalf("the tests run from infra/archtest: %v", err)
	}
}
