// Package dashboard is the web dashboard of gb: static HTML, CSS and
// JavaScript embedded in the binary and served under /ui/ next to the REST
// API (infra/httpapi mounts it). The page holds no secrets of its own: the
// user signs in with an API key, kept in the browser's sessionStorage, and
// the page calls the API with it.
//
// Everything the page shows that a model or a web page wrote (names,
// reasons, reports, messages, titles) is untrusted: the scripts build the
// DOM with textContent and build reports from the tokens of markdown-it
// (vendored in static/js/vendor, parsing with raw HTML off) into DOM nodes
// themselves, never through innerHTML, and the answers carry a
// Content-Security-Policy that allows no inline script.
//
// It imports the standard library only.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/ui/"

// Patterns are the paths a router sends to Handler: /ui, which redirects
// to the page, and everything under Prefix.
var Patterns = []string{"/ui", Prefix}

// GatewayRoutes are the API Gateway routes (method and path) that must
// reach the API function for it to serve the dashboard. /ui redirects to
// /ui/index.html rather than /ui/, which no greedy route matches.
var GatewayRoutes = [][2]string{{"GET", "/ui"}, {"GET", "/ui/{proxy+}"}}

// entry is where /ui redirects, relative to it, so that the redirect holds
// behind a path prefix (an API Gateway stage) too.
const entry = "ui/index.html"

// ContentSecurityPolicy is sent with every answer: scripts, styles and
// fetches from this origin only, no inline script or style, no images but
// this origin's, no plugins, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes are the types of the files the dashboard is made of, by
// extension; a file of another kind is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

//go:embed static
var static embed.FS

// Handler serves the dashboard's assets for paths under Prefix; /ui/ and
// /ui/index.html are the page itself, and /ui redirects to it. Only GET and
// HEAD are answered (405 otherwise), a path that names no asset answers
// 404, and there are no directory listings.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded folder is part of the build
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			// Not http.Redirect: it would make the location absolute.
			w.Header().Set("Location", entry)
			w.WriteHeader(http.StatusFound)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		if name == "" {
			name = "index.html"
		}
		ctype, known := contentTypes[path.Ext(name)]
		b, err := fs.ReadFile(files, name)
		if !known || err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	})
}

// setHeaders sets the security and caching headers of every answer. The
// assets are small and change with the binary, so browsers revalidate them
// each time rather than keep a stale copy.
func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
}
