package dashboard_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dashboard"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/jobs"
)

// get asks h for path and returns the answer and its body.
func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestAssetsAreServedWithSafeHeaders(t *testing.T) {
	t.Parallel()
	h := dashboard.Handler()
	cases := []struct{ path, ctype, holds string }{
		{"/ui/", "text/html; charset=utf-8", `<script type="module" src="js/app.js">`},
		{"/ui/index.html", "text/html; charset=utf-8", "<main id=\"view\">"},
		{"/ui/app.css", "text/css; charset=utf-8", ".badge"},
		{"/ui/js/app.js", "text/javascript; charset=utf-8", "import"},
		{"/ui/js/markdown.js", "text/javascript; charset=utf-8", "renderMarkdown"},
		{"/ui/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, c := range cases {
		res, body := get(t, h, "GET", c.path)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != c.ctype || !strings.Contains(body, c.holds) {
			t.Errorf("GET %s: %d %q, body holds %q: %v", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.holds, strings.Contains(body, c.holds))
		}
		checkHeaders(t, c.path, res.Header)
	}
}

func checkHeaders(t *testing.T, path string, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", path, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-") {
		t.Errorf("%s: CSP %q allows unsafe sources", path, csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("%s: nosniff %q, frame options %q", path, h.Get("X-Content-Type-Options"), h.Get("X-Frame-Options"))
	}
}

func TestOnlyAssetsAreServed(t *testing.T) {
	t.Parallel()
	h := dashboard.Handler()
	for _, p := range []string{"/ui/nope.js", "/ui/js/", "/ui/js", "/ui/static/index.html", "/ui/../dashboard.go", "/other"} {
		if res, _ := get(t, h, "GET", p); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
		}
	}
	res, _ := get(t, h, "POST", "/ui/")
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /ui/: %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
	if res, body := get(t, h, "HEAD", "/ui/app.css"); res.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD /ui/app.css: %d with %d bytes", res.StatusCode, len(body))
	}
}

// TestTheAPIMountsTheDashboard checks the mount in httpapi.New: /ui
// redirects to the page (relative to itself), the page is served without a key, and the API's own
// routes are untouched.
func TestTheAPIMountsTheDashboard(t *testing.T) {
	t.Parallel()
	api := httpapi.New(httpapi.Deps{})
	res, _ := get(t, api, "GET", "/ui")
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "ui/index.html" {
		t.Errorf("GET /ui: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	res, body := get(t, api, "GET", "/ui/")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "js/app.js") {
		t.Errorf("GET /ui/: %d", res.StatusCode)
	}
	checkHeaders(t, "/ui/ through the API", res.Header)
	if res, _ := get(t, api, "GET", "/v1/gb/research"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/gb/research without a key: %d", res.StatusCode)
	}
	if res, body := get(t, api, "GET", "/ui/missing.js"); res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"error"`) {
		t.Errorf("GET /ui/missing.js: %d %s", res.StatusCode, body)
	}
}

// TestPageReferencesExist checks that every asset index.html and the
// scripts load is embedded.
func TestPageReferencesExist(t *testing.T) {
	t.Parallel()
	h := dashboard.Handler()
	_, page := get(t, h, "GET", "/ui/")
	refs := regexp.MustCompile(`(?:src|href)="([^"#:]+)"`).FindAllStringSubmatch(page, -1)
	err := filepath.WalkDir("static/js", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		for _, m := range regexp.MustCompile(`(?:from|import) '\./([^']+)'`).FindAllStringSubmatch(string(b), -1) {
			refs = append(refs, []string{"", "js/" + m[1]})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) < 5 {
		t.Fatalf("found only %d references", len(refs))
	}
	for _, r := range refs {
		if res, _ := get(t, h, "GET", "/ui/"+r[1]); res.StatusCode != http.StatusOK {
			t.Errorf("%s is referenced but answers %d", r[1], res.StatusCode)
		}
	}
}

// TestScriptsNeverParseHTML keeps the scripts to the DOM calls that cannot
// turn untrusted text into markup or code.
func TestScriptsNeverParseHTML(t *testing.T) {
	t.Parallel()
	banned := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|DOMParser|createContextualFragment|srcdoc`)
	files, err := filepath.Glob("static/js/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := banned.Find(b); m != nil {
			t.Errorf("%s uses %s", f, m)
		}
	}
}

// TestDashboardEndStatusesAreTheAPIs checks that the statuses the
// dashboard treats as ended (endStatuses in static/js/format.js) are those
// of the API's Status enum (infra/httpapi/openapi.yaml) that jobs.Run.Ended
// reports as ended, no more and no fewer, so a status the API adds cannot
// leave a finished run looking alive.
func TestDashboardEndStatusesAreTheAPIs(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("static/js/format.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`export const endStatuses = Object\.freeze\(\[([^\]]*)\]\);`).FindSubmatch(src)
	if m == nil {
		t.Fatal("format.js does not export endStatuses as Object.freeze([...])")
	}
	var js []string
	for _, q := range regexp.MustCompile(`'([a-z_]+)'`).FindAllSubmatch(m[1], -1) {
		js = append(js, string(q[1]))
	}
	b, err := httpapi.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				Status struct {
					Enum []string `json:"enum"`
				} `json:"Status"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Components.Schemas.Status.Enum
	if len(enum) == 0 {
		t.Fatal("openapi.yaml has no Status enum")
	}
	var want []string
	for _, s := range enum {
		if (&jobs.Run{Status: s}).Ended() {
			want = append(want, s)
		}
	}
	slices.Sort(js)
	slices.Sort(want)
	if len(want) == 0 || !slices.Equal(js, want) {
		t.Errorf("format.js endStatuses %v; the API's end statuses (Status enum %v, jobs.Run.Ended) are %v", js, enum, want)
	}
}

// TestDashboardVendoredMarkdownIsTheNotedRelease checks that the vendored
// markdown-it is the file static/js/vendor/VENDOR.md names by its sha256,
// with its license beside it, and that markdown.js says which version it
// imports.
func TestDashboardVendoredMarkdownIsTheNotedRelease(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("static/js/vendor/markdown-it.min.js")
	if err != nil {
		t.Fatal(err)
	}
	note, err := os.ReadFile("static/js/vendor/VENDOR.md")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if !strings.Contains(string(note), "sha256 of `markdown-it.min.js`: `"+hex.EncodeToString(sum[:])+"`") {
		t.Errorf("VENDOR.md does not name markdown-it.min.js's sha256 %x", sum)
	}
	head := regexp.MustCompile(`^/\*! markdown-it (\d+\.\d+\.\d+) `).FindSubmatch(b)
	if head == nil {
		t.Fatal("markdown-it.min.js does not start with its version")
	}
	md, err := os.ReadFile("static/js/markdown.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, text string }{{"VENDOR.md", string(note)}, {"markdown.js", string(md)}} {
		if !strings.Contains(f.text, "markdown-it "+string(head[1])) && !strings.Contains(f.text, "version "+string(head[1])) {
			t.Errorf("%s does not name markdown-it %s", f.name, head[1])
		}
	}
	if lic, err := os.ReadFile("static/js/vendor/LICENSE"); err != nil || !strings.Contains(string(lic), "Permission is hereby granted") {
		t.Errorf("static/js/vendor/LICENSE: %v", err)
	}
}
