package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/gbresearch/gb/infra/httpapi"
)

// spec is the API's OpenAPI description, loaded and validated once.
var spec = sync.OnceValues(func() (*openapi3.T, error) {
	b, err := httpapi.OpenAPI()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

func loadSpec(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := spec()
	if err != nil {
		t.Fatalf("the OpenAPI description does not load: %v", err)
	}
	return doc
}

// TestOpenAPIDescribesEveryRouteAndOnlyThose checks both ways that each
// route the router serves is described with its method, and each described
// path and method is routed.
func TestOpenAPIDescribesEveryRouteAndOnlyThose(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi is %q, want 3.1", doc.OpenAPI)
	}
	routed := map[string]bool{}
	for _, r := range slices.Concat(httpapi.Routes, httpapi.KeyRoutes, httpapi.WebhookRoutes, httpapi.PublicRoutes) {
		routed[r.Method+" "+r.Path] = true
	}
	described := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described[method+" "+path] = true
		}
	}
	for k := range routed {
		if !described[k] {
			t.Errorf("route %s is served but not described in openapi.yaml", k)
		}
	}
	for k := range described {
		if !routed[k] {
			t.Errorf("openapi.yaml describes %s, which the router does not serve", k)
		}
	}
}

// TestOpenAPIIsServed checks that the description is served as JSON
// without a key, and that it is the embedded one.
func TestOpenAPIIsServed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(validated(t, httpapi.New(httpapi.Deps{})))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/gb/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	want, _ := httpapi.OpenAPI()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(got, want) {
		t.Fatalf("GET /v1/gb/openapi.json: %d %s, %d bytes (want the %d of httpapi.OpenAPI)",
			resp.StatusCode, resp.Header.Get("Content-Type"), len(got), len(want))
	}
}

// validated wraps h so that every request and answer of a test is checked
// against the OpenAPI description: an answer must match what is described
// for its route and status, and a request the description calls invalid
// must be refused (4xx), never served.
func validated(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	router, err := legacy.NewRouter(loadSpec(t))
	if err != nil {
		t.Fatalf("routing the OpenAPI description: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The handler reads the body itself, as it would unchecked; what
		// it leaves unread is read after it, for the check.
		var seen bytes.Buffer
		r.Body = io.NopCloser(io.TeeReader(r.Body, &seen))
		rec := httptest.NewRecorder()
		if strings.HasSuffix(r.URL.Path, "/events/stream") {
			// A stream goes out as it is written, and is checked once it
			// has ended.
			h.ServeHTTP(&streamTee{w: w, rec: rec}, r)
			checkExchange(t, router, r, seen.Bytes(), rec)
			return
		}
		h.ServeHTTP(rec, r)
		if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)); err == nil {
			checkExchange(t, router, r, seen.Bytes(), rec)
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// streamTee writes an answer to w as it comes, flushes included, and
// records it in rec too.
type streamTee struct {
	w     http.ResponseWriter
	rec   *httptest.ResponseRecorder
	wrote bool
}

func (s *streamTee) Header() http.Header { return s.w.Header() }

func (s *streamTee) WriteHeader(code int) {
	if s.wrote {
		return
	}
	s.wrote = true
	maps.Copy(s.rec.Header(), s.w.Header())
	s.rec.WriteHeader(code)
	s.w.WriteHeader(code)
}

func (s *streamTee) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	s.rec.Write(p)
	return s.w.Write(p)
}

func (s *streamTee) Flush() { http.NewResponseController(s.w).Flush() }

func init() {
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.FileBodyDecoder)
}

// checkExchange validates one request and its answer against the
// description.
func checkExchange(t testing.TB, router routers.Router, r *http.Request, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	what := r.Method + " " + r.URL.RequestURI()
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json") // the API reads every body as JSON
	}
	head := req.Method == http.MethodHead
	if head {
		req.Method = http.MethodGet // the mux answers HEAD on every GET route
	}
	req.URL.Scheme, req.URL.Host = "http", "127.0.0.1:8080"
	route, params, err := router.FindRoute(req)
	if err != nil {
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed && rec.Code < 300 {
			t.Errorf("%s is not described, yet answered %d", what, rec.Code)
		}
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	// The validator's time grows with the cube of a body's nesting, and the
	// random test's mutated bodies nest thousands deep: those requests go
	// unchecked (their answers are checked).
	if nesting(body) <= maxCheckedNesting {
		if reqErr := openapi3filter.ValidateRequest(context.Background(), in); reqErr != nil && rec.Code < 400 {
			t.Errorf("%s: the description refuses the request (%v), yet it was answered %d", what, short(reqErr), rec.Code)
		}
	}
	if head {
		return // no body to check
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code,
		Header: rec.Header(), Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s: answer %d does not match the description: %v\n%s", what, rec.Code, short(err), clipBody(rec.Body.String()))
	}
}

// maxCheckedNesting is the deepest request body whose request is checked
// (its answer always is).
const maxCheckedNesting = 64

// nesting is the deepest nesting of arrays and objects in a JSON text,
// counted without parsing it (brackets in strings count too, which only
// overstates it).
func nesting(b []byte) int {
	depth, most := 0, 0
	for _, c := range b {
		switch c {
		case '[', '{':
			depth++
			most = max(most, depth)
		case ']', '}':
			depth--
		}
	}
	return most
}

var spaces = regexp.MustCompile(`\s+`)

func short(err error) string { return clipBody(spaces.ReplaceAllString(err.Error(), " ")) }

func clipBody(s string) string {
	if len(s) > 600 {
		return strings.ToValidUTF8(s[:600], "") + "…"
	}
	return s
}

// recordingTB collects the errors of the validator instead of failing.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// TestValidatorCatchesWhatTheDescriptionRefuses checks the checker: an
// answer of the wrong shape, and a request the description refuses but
// the handler serves, are both reported.
func TestValidatorCatchesWhatTheDescriptionRefuses(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	wrong := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"runs":"not a list"}`)
	})
	srv := httptest.NewServer(validated(rec, wrong))
	defer srv.Close()
	for _, path := range []string{"/v1/gb/research", "/v1/gb/research?limit=500"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	all := strings.Join(rec.errs, "\n")
	if !strings.Contains(all, "does not match the description") || !strings.Contains(all, "the description refuses the request") {
		t.Fatalf("the validator reported:\n%s\nwant a wrong answer and a refused request", all)
	}
}
