package cite

import (
	"slices"
	"strings"
	"testing"
)

// TestSourcesFormats checks that every common form of a numbered sources
// list is parsed, titles and references in either order.
func TestSourcesFormats(t *testing.T) {
	want := []Entry{{1, "The Go Memory Model", "https://go.dev/ref/mem"}, {2, "package net/http", "https://pkg.go.dev/net/http"}}
	cases := map[string]string{
		"brackets, em dash":       "## Sources\n[1] The Go Memory Model — https://go.dev/ref/mem\n[2] package net/http — https://pkg.go.dev/net/http\n",
		"numbered list":           "## Sources\n\n1. The Go Memory Model — https://go.dev/ref/mem\n2. package net/http — https://pkg.go.dev/net/http\n",
		"parenthesis, en dash":    "### References\n1) The Go Memory Model – https://go.dev/ref/mem\n2) package net/http – https://pkg.go.dev/net/http\n",
		"bullets, colon":          "**Sources**\n- [1]: The Go Memory Model: https://go.dev/ref/mem\n* [2]: package net/http: https://pkg.go.dev/net/http\n",
		"footnotes, no heading":   "[^1]: The Go Memory Model, https://go.dev/ref/mem\n[^2]: package net/http | https://pkg.go.dev/net/http\n",
		"link references":         "[1]: https://go.dev/ref/mem \"The Go Memory Model\"\n[2]: <https://pkg.go.dev/net/http> \"package net/http\"\n",
		"markdown links":          "Sources:\n1. [The Go Memory Model](https://go.dev/ref/mem)\n2. [package net/http](https://pkg.go.dev/net/http)\n",
		"url first, pipe":         "# Bibliography\n[1] https://go.dev/ref/mem | The Go Memory Model\n[2] https://pkg.go.dev/net/http — package net/http\n",
		"no separator, bold mark": "## Works cited\n**[1]** The Go Memory Model https://go.dev/ref/mem\n**[2]** package net/http https://pkg.go.dev/net/http\n",
		"url on the next line":    "#### Sources\n1. The Go Memory Model\n   https://go.dev/ref/mem\n2. package net/http\n   https://pkg.go.dev/net/http\n",
	}
	for name, sources := range cases {
		report := "Channels synchronize goroutines [1]. Servers shut down gracefully [^2].\n\n" + sources
		res := Check(report, nil)
		if !slices.Equal(res.Sources, want) {
			t.Errorf("%s: sources = %+v, want %+v", name, res.Sources, want)
		}
		if len(res.Claims) != 2 || res.SourcesUnparsed || res.Counts.Unread != 2 {
			t.Errorf("%s: claims %+v, counts %+v: want two claims, unread (no document was read)", name, res.Claims, res.Counts)
		}
	}
}

// TestSourcesByTitle checks that an entry whose reference matches no
// document is found by its title.
func TestSourcesByTitle(t *testing.T) {
	report := "The sync package implements two lock data types [1].\n\n## Sources\n1. The Go Memory Model — go memory model page\n"
	res := Check(report, []Document{memDoc})
	if res.Claims[0].Verdict != Supported {
		t.Fatalf("claims %+v pairs %+v, want the claim supported through the entry's title", res.Claims, res.Pairs)
	}
}

// TestSourcesUnparsed checks that a report whose markers have no parsable
// sources is told so and its cited claims counted no_sources, not unread.
func TestSourcesUnparsed(t *testing.T) {
	report := "The sync package implements two lock data types [1].\n\nThe docs do not mention a third [1].\n\n" +
		"Sources: the memory model, read on go.dev.\n"
	res := Check(report, []Document{memDoc})
	if !res.SourcesUnparsed {
		t.Fatalf("SourcesUnparsed false, want true (sources %+v)", res.Sources)
	}
	// The sources line, unparsed, is an uncited sentence (it names go.dev).
	if want := (Counts{Claims: 3, NoSources: 1, Absence: 1, Uncited: 1}); res.Counts != want {
		t.Errorf("counts = %+v, want %+v", res.Counts, want)
	}
	if got := Flag(report, res); got != report {
		t.Errorf("flagged report:\n%s\nwant it unchanged", got)
	}
}

// TestMarkers checks the forms of citation markers.
func TestMarkers(t *testing.T) {
	for text, want := range map[string][]int{
		"a [1]": {1}, "a [1, 3]": {1, 3}, "a [2-4]": {2, 3, 4}, "a [1–2]": {1, 2}, "a [^3]": {3}, "a [1][2]": {1, 2},
		"a [1](https://x.org)": nil, "a [12]": {12},
	} {
		if got := markersOf(text); !slices.Equal(got, want) {
			t.Errorf("markersOf(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestEntry checks titles and references read from one entry's text.
func TestEntry(t *testing.T) {
	for rest, want := range map[string][2]string{
		"Title — ref-without-url":            {"Title", "ref-without-url"},
		"\"Quoted title\": https://a.org/x.": {"Quoted title", "https://a.org/x"},
		"pkg.go.dev/net/http (package docs)": {"package docs", "pkg.go.dev/net/http"},
		"[Go spec](https://go.dev/ref/spec)": {"Go spec", "https://go.dev/ref/spec"},
		"file:docs/guide.md — The guide":     {"The guide", "file:docs/guide.md"},
		"Only a title":                       {"Only a title", "Only a title"},
	} {
		e := entry(1, rest)
		if e.Title != want[0] || e.Ref != want[1] {
			t.Errorf("entry(%q) = %q, %q; want %q, %q", rest, e.Title, e.Ref, want[0], want[1])
		}
	}
	if got := NormalizeRef("pkg.go.dev/net/http#Server"); got != "https://pkg.go.dev/net/http" || !strings.HasPrefix(NormalizeRef("x y"), "x y") {
		t.Errorf("NormalizeRef(bare host) = %q, want https://pkg.go.dev/net/http", got)
	}
}
