package cite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/doctext"
	"github.com/gbresearch/gb/jobs/doctext/doctexttest"
)

// TestPageMarkers checks that "[1, p. 3]" cites source 1, that the pair
// names the page its passage is on, and that citing a far page says so.
func TestPageMarkers(t *testing.T) {
	d, err := doctext.Extract(context.Background(), doctexttest.Paper(), "application/pdf", "", doctext.Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs := []cite.Document{{Refs: []string{"https://papers.example/ice.pdf"}, Title: d.Title, Text: d.Text, Read: true}}
	for _, c := range []struct {
		marker, reason string
	}{
		{"[1, p. 3]", ""},
		{"[1 p. 3]", ""},
		{"[1, pp. 2–3]", ""},
		{"[1, p. 9]", "cites p. 9, but the passage is on p. 3"},
	} {
		report := "The shell conducts 41 milliwatts per square metre at the equator " + c.marker + ".\n\n## Sources\n\n1. " + d.Title + " — https://papers.example/ice.pdf\n"
		res := cite.Check(report, docs)
		if len(res.Pairs) != 1 {
			t.Fatalf("%s: %d pairs", c.marker, len(res.Pairs))
		}
		p := res.Pairs[0]
		if p.Verdict != cite.Supported || p.PassagePage != "p. 3" || !strings.Contains(p.Reason, c.reason) || c.reason == "" && p.Reason != "" {
			t.Errorf("%s: verdict %s, passage on %q, reason %q", c.marker, p.Verdict, p.PassagePage, p.Reason)
		}
	}
}
