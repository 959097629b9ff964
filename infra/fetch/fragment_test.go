package fetch

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// pgPage is a page of PostgreSQL's manual kept in testdata.
func pgPage(t *testing.T, name string) []byte {
	t.Helper()
	return realPage(t, "testdata/postgresql/"+name)
}

// TestFetchFragmentStartsAtItsSection fetches pages of PostgreSQL's
// manual over loopback with a #fragment: the fragment is located at its
// element's text, in its section, whether the page's text is readability's
// article or the whole page, whatever the fragment's case; a fragment no
// element has is not found.
func TestFetchFragmentStartsAtItsSection(t *testing.T) {
	pages := map[string][]byte{
		"/docs/runtime-config-resource.html": pgPage(t, "runtime-config-resource.html"),
		"/docs/routine-vacuuming.html":       pgPage(t, "routine-vacuuming.html"),
	}
	f, base := serveFiles(t, pages)
	cases := []struct {
		path, fragment, heading, startsWith string
	}{
		{"/docs/runtime-config-resource.html", "RUNTIME-CONFIG-RESOURCE-VACUUM-COST",
			"### 20.4.4. Cost-based Vacuum Delay", "### 20.4.4. Cost-based Vacuum Delay\n\nDuring the execution of VACUUM"},
		{"/docs/runtime-config-resource.html", "guc-vacuum-cost-delay",
			"### 20.4.4. Cost-based Vacuum Delay", "vacuum_cost_delay (floating point)\n"},
		{"/docs/runtime-config-resource.html", "RUNTIME-CONFIG-RESOURCE-BACKGROUND-WRITER",
			"### 20.4.5. Background Writer", "### 20.4.5. Background Writer\n"},
		{"/docs/routine-vacuuming.html", "AUTOVACUUM",
			"### 25.1.6. The Autovacuum Daemon", "### 25.1.6. The Autovacuum Daemon\n"},
	}
	for _, c := range cases {
		t.Run(c.fragment, func(t *testing.T) {
			page, err := f.Fetch(context.Background(), base+c.path+"#"+c.fragment)
			if err != nil {
				t.Fatal(err)
			}
			fr := page.Fragment
			if fr == nil || !fr.Found || fr.ID != c.fragment || fr.Heading != c.heading {
				t.Fatalf("fragment %+v, want %q found in %q", fr, c.fragment, c.heading)
			}
			part, _ := Slice(page.Text, fr.Offset, 20000)
			if !strings.HasPrefix(part, c.startsWith) {
				t.Errorf("the read from offset %d starts %.120q, want %q", fr.Offset, part, c.startsWith)
			}
		})
	}
	page, err := f.Fetch(context.Background(), base+"/docs/routine-vacuuming.html#NO-SUCH-SECTION")
	if err != nil || page.Fragment == nil || page.Fragment.Found || page.Fragment.ID != "NO-SUCH-SECTION" {
		t.Errorf("an unknown fragment: %+v, %v", page.Fragment, err)
	}
	page, err = f.Fetch(context.Background(), base+"/docs/routine-vacuuming.html")
	if err != nil || page.Fragment != nil {
		t.Errorf("no fragment: %+v, %v", page.Fragment, err)
	}
}

// TestFetchStatesPageAndExtractLengths: the Resource Consumption page,
// of which readability keeps one section, is read whole, and the page
// says both lengths.
func TestFetchStatesPageAndExtractLengths(t *testing.T) {
	f, base := serveFiles(t, map[string][]byte{"/r.html": pgPage(t, "runtime-config-resource.html")})
	page, err := f.Fetch(context.Background(), base+"/r.html")
	if err != nil {
		t.Fatal(err)
	}
	n := utf8.RuneCountInString(page.Text)
	if page.PageChars < 30000 || n < page.PageChars*95/100 {
		t.Errorf("page text %d characters, extract %d: the extract must keep the page's text", page.PageChars, n)
	}
	for _, h := range []string{"20.4.1. Memory", "20.4.2. Disk", "20.4.3. Kernel Resource Usage", "20.4.4. Cost-based Vacuum Delay",
		"20.4.5. Background Writer", "20.4.6. Asynchronous Behavior"} {
		if !strings.Contains(page.Text, "\n### "+h+"\n") {
			t.Errorf("the text lacks the heading line %q", "### "+h)
		}
	}
	if strings.Contains(page.Text, "Prev Up Next") || strings.Contains(page.Text, "Submit correction") {
		t.Errorf("the manual's navigation bars are in the text")
	}
	md, err := ExtractPage([]byte("# Title\n\nplain"), "text/markdown", nil)
	if err != nil || md.PageChars != 0 || md.Method != MethodBody {
		t.Errorf("a Markdown body: %+v, %v", md, err)
	}
}

// TestLocateFragment: an id matches as it is, percent-escaped or in
// another case; a heading with no id matches its text as a slug; an id
// readability's article left out falls at its section's heading.
func TestLocateFragment(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<html><head><title>Server</title></head><body><article>`)
	for _, h := range []string{"Starting", "Graceful shutdown", "Timeouts"} {
		fmt.Fprintf(&b, "<h2>%s</h2>", h)
		for i := range 3 {
			fmt.Fprintf(&b, "<p>Paragraph %d on %s explains what the server does at that point of its life, and why.</p>", i, h)
		}
	}
	b.WriteString(`<p id="délai">The last paragraph has an id with an accent.</p></article></body></html>`)
	e, err := ExtractPage([]byte(b.String()), "text/html", nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) int { return utf8.RuneCountInString(e.Text[:strings.Index(e.Text, s)]) }
	for frag, want := range map[string]struct {
		offset  int
		heading string
	}{
		"graceful-shutdown": {at("## Graceful shutdown"), "## Graceful shutdown"},
		"d%C3%A9lai":        {at("The last paragraph"), "## Timeouts"},
		"DÉLAI":             {at("The last paragraph"), "## Timeouts"},
	} {
		offset, heading, ok := e.Locate(frag)
		if !ok || offset != want.offset || heading != want.heading {
			t.Errorf("#%s: %d %q %v, want %d %q", frag, offset, heading, ok, want.offset, want.heading)
		}
	}
	if _, _, ok := e.Locate("nowhere"); ok {
		t.Errorf("#nowhere was found")
	}

	art := rendered{text: "## Timeouts\n\nkept", headings: []Heading{{Level: 2, Text: "Timeouts", Offset: 0}}, anchors: map[string]int{}}
	page := rendered{text: "## Starting\n\nx\n\n## Timeouts\n\nkept <span id=t>", anchors: map[string]int{"t": 30, "s": 2},
		headings: []Heading{{Level: 2, Text: "Starting", Offset: 0}, {Level: 2, Text: "Timeouts", Offset: 16}}}
	merged := mergeAnchors(articleText{rendered: art}, page)
	if at, ok := merged["t"]; !ok || at != 0 {
		t.Errorf("an id of a kept section: %d %v, want its heading's offset 0", at, ok)
	}
	if _, ok := merged["s"]; ok {
		t.Errorf("an id of a section the article dropped was placed")
	}
}
