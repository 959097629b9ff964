package fetch

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/doctext"
	"github.com/gbresearch/gb/jobs/doctext/doctexttest"
)

// TestNamedPapersAndCode reads arXiv papers and GitHub repositories and
// files by their public URLs, from a local server in the same shapes.
func TestNamedPapersAndCode(t *testing.T) {
	mux := http.NewServeMux()
	abs := func(id, htmlLink string) string {
		return `<html><head><meta name="citation_title" content="Tidal  Heat Flow"><meta name="citation_author" content="Quill, Ada">` +
			`<meta name="citation_author" content="Marsh, Ben"><meta name="citation_date" content="2024/01/02"></head><body>` +
			`<a href="/pdf/` + id + `">View PDF</a>` + htmlLink + `</body></html>`
	}
	serve := func(path, ctype, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Write([]byte(body))
		})
	}
	serve("/abs/2401.01234", "text/html", abs("2401.01234", `<a href="/html/2401.01234v1">HTML (experimental)</a>`))
	serve("/html/2401.01234v1", "text/html", "<html><body><article><h1>Tidal Heat Flow</h1><p>The shell conducts 41 milliwatts per square metre.</p></article></body></html>")
	serve("/abs/2402.00002", "text/html", abs("2402.00002", ""))
	serve("/pdf/2402.00002", "application/pdf", string(doctexttest.Paper()))
	serve("/repos/ada/ice/readme", "text/plain", "# ice\n\nModels of ice shells.")
	serve("/repos/ada/ice/git/trees/HEAD", "application/json", `{"tree": [{"path": "README.md", "type": "blob"}, {"path": "src", "type": "tree"}, {"path": "src/heat.go", "type": "blob"}]}`)
	serve("/ada/ice/main/src/heat.go", "text/plain", "package heat\n")
	f, base := localFetcher(t, mux, Config{})
	f.arxivBase, f.ghAPI, f.ghRaw = base, base, base
	ctx := context.Background()

	p, err := f.Fetch(ctx, "https://arxiv.org/abs/2401.01234")
	if err != nil || p.Title != "Tidal Heat Flow" || !strings.Contains(p.Text, "arXiv:2401.01234\nAuthors: Quill, Ada; Marsh, Ben\nDate: 2024-01-02\n\n") ||
		!strings.Contains(p.Text, "41 milliwatts") || !strings.HasSuffix(p.URL, "/html/2401.01234v1") {
		t.Errorf("arXiv paper with an HTML version: %v\n%+v", err, p)
	}
	p, err = f.Fetch(ctx, "https://arxiv.org/pdf/2402.00002v1")
	if err == nil {
		t.Errorf("a paper the server does not have is not an error: %+v", p)
	}
	p, err = f.Fetch(ctx, "https://arxiv.org/abs/2402.00002")
	if err != nil || len(doctext.PartsOf(p.Text)) != 3 || !strings.Contains(p.Text, "\n\narXiv:2402.00002\nAuthors: Quill, Ada; Marsh, Ben") {
		t.Errorf("arXiv paper as PDF: %v\n%.300q", err, p.Text)
	}
	p, err = f.Fetch(ctx, "https://github.com/ada/ice")
	if err != nil || p.Title != "ada/ice" || !strings.Contains(p.Text, "## README\n\n# ice\n\nModels of ice shells.") ||
		!strings.Contains(p.Text, "## Files\n\n- README.md\n- src/heat.go\n") {
		t.Errorf("repository: %v\n%s", err, p.Text)
	}
	p, err = f.Fetch(ctx, "https://github.com/ada/ice/blob/main/src/heat.go")
	if err != nil || p.Text != "package heat\n" {
		t.Errorf("file: %v %+v", err, p)
	}
	for _, c := range []struct{ in, want string }{{"arXiv:2401.01234", "2401.01234"}, {"https://arxiv.org/abs/hep-th/9901001v2", "hep-th/9901001v2"},
		{"https://arxiv.org/pdf/2401.01234v3.pdf", "2401.01234v3"}, {"https://example.com/abs/2401.01234", ""}} {
		if got := ArxivID(c.in); got != c.want {
			t.Errorf("ArxivID(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestNamedSourcesDefaultToTheRealHosts: a Fetcher made by New reads
// papers and code from arXiv and GitHub unless its Config says otherwise.
func TestNamedSourcesDefaultToTheRealHosts(t *testing.T) {
	f := New(Config{Logger: quietLogger()})
	if f.arxivBase != ArxivBaseDefault || f.ghAPI != GitHubAPIBaseDefault || f.ghRaw != GitHubRawBaseDefault {
		t.Errorf("bases %q %q %q, want the defaults", f.arxivBase, f.ghAPI, f.ghRaw)
	}
	f = New(Config{Logger: quietLogger(), ArxivBase: "http://papers.example/", GitHubAPIBase: "http://api.example", GitHubRawBase: "http://raw.example/"})
	if f.arxivBase != "http://papers.example" || f.ghAPI != "http://api.example" || f.ghRaw != "http://raw.example" {
		t.Errorf("bases %q %q %q, want Config's without a final /", f.arxivBase, f.ghAPI, f.ghRaw)
	}
}
