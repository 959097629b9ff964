package kb_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/kb"
)

// loadHTTP loads the toolchain's net/http and context into dataset godoc
// and checks that a second load writes nothing.
func loadHTTP(t *testing.T, db kb.DB) {
	t.Helper()
	docs := netHTTPAndContext(t)
	ctx := context.Background()
	s, err := kb.Sync(ctx, db, "godoc", docs)
	if err != nil || s.Loaded != len(docs) || s.Unchanged != 0 {
		t.Fatalf("first load: %+v, %v; want %d loaded", s, err, len(docs))
	}
	s, err = kb.Sync(ctx, db, "godoc", docs)
	if err != nil || s.Loaded != 0 || s.Unchanged != len(docs) || s.Removed != 0 {
		t.Fatalf("second load: %+v, %v; want %d unchanged", s, err, len(docs))
	}
}

// A symbol, a declaration's name and a sentence deep in a long document
// are found, each at the passage that holds it, and read from there.
func TestSearchFindsThePassage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadHTTP(t, pool)
	cases := []struct{ query, source, heading, read string }{
		{"BaseContext", "https://pkg.go.dev/net/http", "type Server", "BaseContext func(net.Listener) context.Context"},
		{"ErrServerClosed", "https://pkg.go.dev/net/http", "var ErrServerClosed", `var ErrServerClosed = errors.New("http: Server closed")`},
		{"Context.Done", "https://pkg.go.dev/context", "type Context", "Done() <-chan struct{}"},
		{"Shutdown gracefully shuts down the server without interrupting any active connections",
			"https://pkg.go.dev/net/http", "func (*Server) Shutdown", "func (s *Server) Shutdown(ctx context.Context) error"},
		{"RegisterOnShutdown", "https://pkg.go.dev/net/http", "func (*Server) RegisterOnShutdown", "func (s *Server) RegisterOnShutdown(f func())"},
	}
	for _, c := range cases {
		hits, err := kb.Search(ctx, pool, "godoc", c.query, 5)
		if err != nil || len(hits) == 0 {
			t.Fatalf("%q: %v, %v", c.query, hits, err)
		}
		h := hits[0]
		if h.Source != c.source || h.Heading != c.heading || !h.Every {
			t.Errorf("%q: first hit %s at %q (every term %v), want %s at %q", c.query, h.Source, h.Heading, h.Every, c.source, c.heading)
			continue
		}
		d, _, err := kb.ReadAt(ctx, pool, "godoc", h.ID, h.Offset)
		if err != nil || !strings.Contains(d.Body[:min(len(d.Body), 2*kb.MaxPassageLen)], c.read) {
			t.Errorf("%q: reading from the hit's offset %d gives no %q: %.300q (%v)", c.query, h.Offset, c.read, d.Body, err)
		}
	}
	// Several documents when several match, the ones with every term first.
	hits, err := kb.Search(ctx, pool, "godoc", "context canceled deadline", 5)
	if err != nil || len(hits) < 3 {
		t.Fatalf("context canceled deadline: %d hits, %v; want several", len(hits), err)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Every && !hits[i-1].Every {
			t.Errorf("hit %d has every term, the one before does not: %+v", i, hits)
		}
	}
}

// Find lists the passages that name a symbol and those that have a
// phrase, with their offsets; the one passage that names a symbol is the
// place to read.
func TestFindInDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadHTTP(t, pool)
	id := func(source string) int64 {
		hits, err := kb.Search(ctx, pool, "godoc", strings.TrimPrefix(source, "https://pkg.go.dev/"), 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.Source == source {
				return h.ID
			}
		}
		t.Fatalf("%s not found", source)
		return 0
	}
	http, ctxDoc := id("https://pkg.go.dev/net/http"), id("https://pkg.go.dev/context")
	cases := []struct {
		doc          int64
		find, named  string
		startsWith   string
		moreThanOnce bool
	}{
		{http, "Shutdown", "func (*Server) Shutdown", "## func (*Server) Shutdown\n\nfunc (s *Server) Shutdown(", true},
		{http, "Server.Shutdown", "func (*Server) Shutdown", "## func (*Server) Shutdown", true},
		{http, "(*Server) Shutdown", "func (*Server) Shutdown", "## func (*Server) Shutdown", false},
		{http, "BaseContext", "type Server", "", false},
		{http, "ErrServerClosed", "var ErrServerClosed", "## var ErrServerClosed", true},
		{ctxDoc, "Context.Done", "type Context", "", false},
	}
	for _, c := range cases {
		f, err := kb.Find(ctx, pool, "godoc", c.doc, c.find, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.find, err)
		}
		if len(f.Named) != 1 || f.Named[0].Passage.Heading != c.named {
			t.Errorf("find %q: named %+v; want one passage, %q", c.find, f.Named, c.named)
			continue
		}
		d, _, err := kb.ReadAt(ctx, pool, "godoc", c.doc, f.Named[0].Offset)
		if err != nil || !strings.HasPrefix(d.Body, c.startsWith) || !strings.Contains(d.Body[:min(len(d.Body), kb.MaxPassageLen)], lastPart(c.find)) {
			t.Errorf("find %q: reading at %d gives %.120q (%v)", c.find, f.Named[0].Offset, d.Body, err)
		}
		if c.moreThanOnce && len(f.Matches) < 2 {
			t.Errorf("find %q: %d places with the text; want several", c.find, len(f.Matches))
		}
	}
	f, err := kb.Find(ctx, pool, "godoc", http, "without   interrupting ANY active", 0)
	if err != nil || len(f.Named) != 0 || len(f.Matches) != 1 || f.Matches[0].Passage.Heading != "func (*Server) Shutdown" ||
		!strings.Contains(f.Matches[0].Excerpt, "without interrupting any active connections") {
		t.Fatalf("find a phrase: %+v, %v", f, err)
	}
	// From an offset on, only the places after it.
	all, _ := kb.Find(ctx, pool, "godoc", http, "Shutdown", 0)
	later, _ := kb.Find(ctx, pool, "godoc", http, "Shutdown", all.Named[0].Offset+1)
	if len(later.Named) != 0 || len(later.Matches) == 0 || later.Matches[0].Offset <= all.Named[0].Offset {
		t.Errorf("find from %d: %+v", all.Named[0].Offset+1, later)
	}
	if _, err := kb.Find(ctx, pool, "godoc", http, strings.Repeat("x", kb.MaxFindLen+1), 0); err == nil {
		t.Error("a find text too long was accepted")
	}
	if _, err := kb.Find(ctx, pool, "other", http, "Shutdown", 0); err != kb.ErrNotFound {
		t.Errorf("find in another dataset: %v", err)
	}
}

func lastPart(s string) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == ' ' || r == ')' })
	return f[len(f)-1]
}

// A load of a directory writes only what changed, and removes the
// documents of that directory whose files are gone, never those loaded
// from another directory.
func TestSyncSkipsUnchangedAndRemovesGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	dir, other := t.TempDir(), t.TempDir()
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a.md"), "# A\n\nAlpha text.")
	write(filepath.Join(dir, "b.md"), "# B\n\nBeta text.")
	write(filepath.Join(other, "c.md"), "# C\n\nGamma text.")
	load := func(path string) kb.LoadStats {
		docs, err := kb.FromPaths([]string{path})
		if err != nil {
			t.Fatal(err)
		}
		s, err := kb.Sync(ctx, pool, "notes", docs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := load(dir); s != (kb.LoadStats{Loaded: 2}) {
		t.Fatalf("first load: %+v", s)
	}
	if s := load(other); s != (kb.LoadStats{Loaded: 1}) {
		t.Fatalf("other root: %+v", s)
	}
	write(filepath.Join(dir, "a.md"), "# A\n\nAlpha text, changed.")
	if err := os.Remove(filepath.Join(dir, "b.md")); err != nil {
		t.Fatal(err)
	}
	s := load(dir)
	if s != (kb.LoadStats{Loaded: 1, Removed: 1}) || s.String() != "1 loaded, 0 unchanged, 1 removed" {
		t.Fatalf("reload: %+v (%s); want a.md loaded, b.md removed", s, s)
	}
	if s := load(other); s != (kb.LoadStats{Unchanged: 1}) || s.String() != "0 loaded, 1 unchanged" {
		t.Fatalf("other root again: %+v (%s)", s, s)
	}
	for q, want := range map[string]int{"changed": 1, "beta": 0, "gamma": 1} {
		if hits, err := kb.Search(ctx, pool, "notes", q, 5); err != nil || len(hits) != want {
			t.Errorf("search %q: %d hits, %v; want %d", q, len(hits), err, want)
		}
	}
}
