package kb_test

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gbresearch/gb/jobs/kb"
)

var (
	httpDocsOnce sync.Once
	httpDocs     []kb.Document
	httpDocsErr  error
)

// netHTTPAndContext is the toolchain's net/http (with its subpackages)
// and context, as FromPaths reads them, read once for the tests.
func netHTTPAndContext(t testing.TB) []kb.Document {
	t.Helper()
	httpDocsOnce.Do(func() {
		src := filepath.Join(build.Default.GOROOT, "src")
		httpDocs, httpDocsErr = kb.FromPaths([]string{filepath.Join(src, "net", "http"), filepath.Join(src, "context")})
	})
	if httpDocsErr != nil {
		t.Fatal(httpDocsErr)
	}
	return httpDocs
}

// docBySource is the document of docs with that source.
func docBySource(t testing.TB, docs []kb.Document, source string) kb.Document {
	t.Helper()
	for _, d := range docs {
		if d.Source == source {
			return d
		}
	}
	t.Fatalf("no document %s among %d", source, len(docs))
	return kb.Document{}
}

// sectionOf is the text of the section whose heading is h: from its first
// passage to the start of the next section.
func sectionOf(t *testing.T, d kb.Document, h string) (string, []kb.Passage) {
	t.Helper()
	runes := []rune(d.Body)
	var ps []kb.Passage
	for _, p := range d.Passages {
		if p.Heading == h && (p.First || len(ps) > 0) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		t.Fatalf("%s has no section %q", d.Source, h)
	}
	last := ps[len(ps)-1]
	return string(runes[ps[0].Offset : last.Offset+last.Len]), ps
}

// The loader keeps what `go doc -all` shows: constants and variables with
// their declarations and comments, struct fields and interface methods
// with theirs, methods under their receivers, and examples; each under a
// heading of its own that names its symbols.
func TestGoLoaderKeepsEveryFact(t *testing.T) {
	t.Parallel()
	docs := netHTTPAndContext(t)
	http := docBySource(t, docs, "https://pkg.go.dev/net/http")
	ctx := docBySource(t, docs, "https://pkg.go.dev/context")
	for _, d := range []kb.Document{http, ctx} {
		if !strings.HasPrefix(d.Body, "package ") || len(d.Passages) < 10 {
			t.Fatalf("%s: %d passages, body starts %.40q", d.Source, len(d.Passages), d.Body)
		}
	}
	cases := []struct {
		doc      kb.Document
		heading  string
		symbol   string
		contains []string
	}{
		{http, "func (*Server) Shutdown", "Server.Shutdown", []string{
			"func (s *Server) Shutdown(ctx context.Context) error",
			"Shutdown gracefully shuts down the server without interrupting any active connections."}},
		{http, "var ErrServerClosed", "http.ErrServerClosed", []string{
			`var ErrServerClosed = errors.New("http: Server closed")`, "after a call to Server.Shutdown or Server.Close"}},
		{http, "type Server", "Server.BaseContext", []string{
			"BaseContext func(net.Listener) context.Context",
			"// BaseContext optionally specifies a function that returns",
			"ReadHeaderTimeout time.Duration", "// ReadHeaderTimeout is the amount of time allowed to read"}},
		{http, "func (*Server) RegisterOnShutdown", "Server.RegisterOnShutdown", []string{
			"func (s *Server) RegisterOnShutdown(f func())"}},
		{http, "const MethodGet, MethodHead, MethodPost, MethodPut, MethodPatch, MethodDelete, MethodConnect, MethodOptions, MethodTrace", "MethodGet", []string{
			`MethodGet     = "GET"`}},
		{http, "example Server.Shutdown", "ExampleServer_Shutdown", []string{
			"srv.Shutdown(context.Background())", "signal.Notify(sigint, os.Interrupt)"}},
		{ctx, "type Context", "Context.Done", []string{
			"Done() <-chan struct{}", "// Done returns a channel that's closed when work done on behalf of this"}},
		{ctx, "var Canceled", "Canceled", []string{`var Canceled = errors.New("context canceled")`}},
		{ctx, "func WithTimeout", "context.WithTimeout", []string{
			"func WithTimeout(parent Context, timeout time.Duration) (Context, CancelFunc)"}},
	}
	for _, c := range cases {
		text, ps := sectionOf(t, c.doc, c.heading)
		if !strings.HasPrefix(text, "## "+c.heading+"\n") {
			t.Errorf("%s: section starts %.60q, not with its heading", c.heading, text)
		}
		for _, want := range c.contains {
			if !strings.Contains(text, want) {
				t.Errorf("%s: section has no %q:\n%.600s", c.heading, want, text)
			}
		}
		found := false
		for _, p := range ps {
			found = found || slices.Contains(p.Symbols, c.symbol)
		}
		if !found {
			t.Errorf("%s: no passage declares %s: %+v", c.heading, c.symbol, ps)
		}
	}
	// A field's symbol is on the passage that holds the field.
	for _, p := range http.Passages {
		if slices.Contains(p.Symbols, "Server.BaseContext") {
			if got := string([]rune(http.Body)[p.Offset : p.Offset+p.Len]); !strings.Contains(got, "\tBaseContext func(") {
				t.Errorf("the passage declaring Server.BaseContext does not hold it: %.200q", got)
			}
		}
	}
}

func TestGoDocsAreExtracted(t *testing.T) {
	t.Parallel()
	docs, err := kb.FromPaths([]string{filepath.Join(build.Default.GOROOT, "src", "sync")})
	if err != nil {
		t.Fatal(err)
	}
	sync := docBySource(t, docs, "https://pkg.go.dev/sync")
	if sync.Title != "package sync" || !strings.Contains(sync.Body, "## type WaitGroup") || !strings.Contains(sync.Body, "## func (*WaitGroup) Wait") {
		t.Fatalf("package sync not extracted: %.300q", sync.Body)
	}
	// An example's output is given once: by the "// Output:" comment its
	// code keeps.
	if n := strings.Count(sync.Body, "Computed once: 499500"); n != 1 {
		t.Errorf("OnceValue's example output is given %d times, want once", n)
	}
	if want, _ := filepath.Abs(filepath.Join(build.Default.GOROOT, "src", "sync")); sync.Root != want {
		t.Errorf("root %q, want %q", sync.Root, want)
	}
}
