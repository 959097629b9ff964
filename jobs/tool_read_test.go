package jobs_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs"
)

// hitLineRE is the first hit of a search result: its id and source, then
// where its best passage is.
var hitLineRE = regexp.MustCompile(`(?m)^\[id (\d+)\] .+ \((\S+)\)\nat offset (\d+)`)

// BaseContext, ErrServerClosed and Context.Done (a struct field, a
// variable and an interface method of the toolchain's net/http and
// context, loaded with go/doc) are found by search, at the passage that
// holds them, and read by offset and by find.
func TestSearchAndReadReachTheFacts(t *testing.T) {
	t.Parallel()
	tool := rootTools(t, "graceful HTTP shutdown")
	var httpID string
	for _, c := range []struct{ query, source, want string }{
		{"BaseContext", "https://pkg.go.dev/net/http", "BaseContext func(net.Listener) context.Context"},
		{"ErrServerClosed", "https://pkg.go.dev/net/http", `var ErrServerClosed = errors.New("http: Server closed")`},
		{"Context.Done", "https://pkg.go.dev/context", "Done() <-chan struct{}"},
	} {
		out := tool("search", fmt.Sprintf(`{"query": %q}`, c.query))
		m := hitLineRE.FindStringSubmatch(out)
		if m == nil || m[2] != c.source {
			t.Errorf("search %q: first hit %q, want %s:\n%s", c.query, m, c.source, out)
			continue
		}
		if c.source == "https://pkg.go.dev/net/http" {
			httpID = m[1]
		}
		read := tool("read", fmt.Sprintf(`{"id": %s, "offset": %s}`, m[1], m[3]))
		if i := strings.Index(read, c.want); i < 0 || i > 3000 {
			t.Errorf("read %s from the hit's offset %s: %q at %d, want it in the first passage:\n%.800s", m[1], m[3], c.want, i, read)
		}
		found := tool("read", fmt.Sprintf(`{"id": %s, "find": %q}`, m[1], c.query))
		if !strings.Contains(found, fmt.Sprintf("[find %q: reading from offset ", c.query)) || !strings.Contains(found, c.want) {
			t.Errorf("read %s with find %q:\n%.800s", m[1], c.query, found)
		}
	}
	if httpID == "" {
		t.Fatal("net/http not found")
	}
	// With an offset, find lists the places from there on.
	list := tool("read", fmt.Sprintf(`{"id": %s, "find": "Shutdown", "offset": 1}`, httpID))
	for _, want := range []string{`find "Shutdown": 1 passage is named by it;`, "\nNamed:\n- offset ", "in func (*Server) Shutdown: ## func (*Server) Shutdown",
		"\nWith the text:\n", "Read one with {\"id\": " + httpID + ", \"offset\": N}."} {
		if !strings.Contains(list, want) {
			t.Errorf("find with an offset: no %q in\n%s", want, list)
		}
	}
	for args, want := range map[string]string{
		`{"id": ` + httpID + `, "find": "zzqxv"}`: `find "zzqxv": no passage is named by it or has it.`,
		`{"id": 0}`: "id must be 1 or more (got 0)",
		`{"id": ` + httpID + `, "find": "` + strings.Repeat("x", 201) + `"}`: "find is 201 characters; at most 200 are allowed",
		`{"id": 999999, "find": "Shutdown"}`:                                 "no document with id 999999",
		`{"id": ` + httpID + `, "find": "Shutdown", "offset": -1}`:           "offset must be 0 or more (got -1)",
		`{"id": ` + httpID + `, "find": "Shutdown", "where": "x"}`:           `unknown field "where"`,
	} {
		if got := tool("read", args); !strings.Contains(got, want) {
			t.Errorf("read %s: %q, want %q", args, got, want)
		}
	}
}

// A note an agent remembers is cut into passages as it is stored: search
// finds it by its title and its text, and find's places in it come inside
// an untrusted block, as its reads do.
func TestRememberedNoteIsSearchedAndFound(t *testing.T) {
	t.Parallel()
	tool := rootTools(t, "tides")
	note := "# Barrages\\n\\nTidal barrages store water at high tide.\\n\\n# Lagoons\\n\\nTidal lagoons cost more than barrages."
	got := tool("remember", `{"title": "Zyxtide notes", "text": "`+note+`"}`)
	id := strings.TrimSuffix(strings.TrimPrefix(got, "Remembered as document "), ".")
	for query, heading := range map[string]string{"zyxtide": "Barrages", "lagoons cost": "Lagoons"} {
		out := tool("search", fmt.Sprintf(`{"query": %q}`, query))
		if !strings.HasPrefix(out, "[id "+id+"] Zyxtide notes (note:") || !strings.Contains(out, ": "+heading+" (") {
			t.Errorf("search %q: want note %s at its %s passage first:\n%s", query, id, heading, out)
		}
	}
	found := tool("read", `{"id": `+id+`, "find": "Lagoons"}`)
	if !strings.Contains(found, "[find \"Lagoons\": reading from offset ") || !strings.Contains(found, "<<<") ||
		!strings.Contains(found, "Tidal lagoons cost more than barrages.") || strings.Contains(found, "store water") {
		t.Errorf("find Lagoons in the note:\n%s", found)
	}
}

// rootTools starts a research on topic (no worker) and returns a call of
// its root's tools by name and arguments, which fails the test on an
// error.
func rootTools(t *testing.T, topic string) func(name, args string) string {
	t.Helper()
	ctx := context.Background()
	b := setup(t, setupOpts{noWork: true})
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	return func(name, args string) string {
		t.Helper()
		out, err := b.agent.RunToolForTest(ctx, root.ID, name, args)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}
