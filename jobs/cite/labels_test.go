package cite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// labelledSet is testdata/labels.json: claim–source pairs written by hand
// against the Go toolchain's documents (testdata/pages, made by
// internal/pagegen), with the verdict each deserves.
type labelledSet struct {
	// Pages are the documents read, by URL: their text is in testdata/pages.
	Pages map[string]string `json:"pages"`
	// Shown are search results seen but never read: URL to snippet.
	Shown map[string]string `json:"shown"`
	Pairs []struct {
		Kind  string  `json:"kind"`
		Ref   string  `json:"ref"`
		Claim string  `json:"claim"`
		Label Verdict `json:"label"`
	} `json:"pairs"`
}

// loadLabelled reads the labelled set and the documents it is written
// against.
func loadLabelled(t *testing.T) (*labelledSet, []Document) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "labels.json"))
	if err != nil {
		t.Fatalf("reading the labelled set: %v", err)
	}
	var set labelledSet
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatalf("decoding the labelled set: %v", err)
	}
	var docs []Document
	for ref, file := range set.Pages {
		b, err := os.ReadFile(filepath.Join("testdata", "pages", file))
		if err != nil {
			t.Fatalf("reading page %s: %v", file, err)
		}
		title, text, ok := strings.Cut(string(b), "\n====\n")
		if !ok {
			t.Fatalf("page %s has no title line", file)
		}
		docs = append(docs, Document{Refs: []string{ref}, Title: title, Text: text, Read: true})
	}
	for ref, snippet := range set.Shown {
		docs = append(docs, Document{Refs: []string{ref}, Title: snippet})
	}
	return &set, docs
}

// TestLabelledSet checks each labelled pair as a one-claim report and
// requires precision and recall of unsupported+unread of 0.9 or more.
func TestLabelledSet(t *testing.T) {
	set, docs := loadLabelled(t)
	checker := NewChecker(docs, Options{})
	if len(set.Pairs) < 40 {
		t.Fatalf("the labelled set has %d pairs, want 40 or more", len(set.Pairs))
	}
	order := []Verdict{Supported, Weak, Unsupported, Contradicted, Unread}
	confusion := map[Verdict]map[Verdict]int{}
	var tp, fp, fn int
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-3s %-24s %-11s %-11s %-5s %s\n", "#", "kind", "label", "verdict", "score", "claim")
	for i, p := range set.Pairs {
		report := fmt.Sprintf("# Report\n\n%s [1]\n\n## Sources\n[1] page — %s\n", p.Claim, p.Ref)
		res := checker.Check(report)
		if len(res.Pairs) != 1 {
			t.Fatalf("pair %d: the check found %d pairs in %q, want 1", i, len(res.Pairs), report)
		}
		got := res.Pairs[0]
		if confusion[p.Label] == nil {
			confusion[p.Label] = map[Verdict]int{}
		}
		confusion[p.Label][got.Verdict]++
		mark := ""
		switch {
		case flagged(p.Label) && flagged(got.Verdict):
			tp++
		case flagged(got.Verdict):
			fp++
			mark = "  <- false alarm"
		case flagged(p.Label):
			fn++
			mark = "  <- missed"
		}
		fmt.Fprintf(&table, "%-3d %-24s %-11s %-11s %-5.2f %s%s\n", i+1, p.Kind, p.Label, got.Verdict, got.Score,
			clip(p.Claim, 70), mark)
		if mark != "" {
			fmt.Fprintf(&table, "      reason: %s; passage: %s\n", got.Reason, clip(got.Passage, 160))
		}
	}
	precision := float64(tp) / float64(max(tp+fp, 1))
	recall := float64(tp) / float64(max(tp+fn, 1))
	fmt.Fprintf(&table, "\nconfusion (rows: label, columns: verdict)\n%-12s", "")
	for _, v := range order {
		fmt.Fprintf(&table, "%12s", v)
	}
	for _, l := range order {
		if confusion[l] == nil {
			continue
		}
		fmt.Fprintf(&table, "\n%-12s", l)
		for _, v := range order {
			fmt.Fprintf(&table, "%12d", confusion[l][v])
		}
	}
	fmt.Fprintf(&table, "\n\nunsupported+unread: precision %.3f (%d/%d), recall %.3f (%d/%d), %d pairs\n",
		precision, tp, tp+fp, recall, tp, tp+fn, len(set.Pairs))
	t.Log(table.String())
	if precision < 0.9 || recall < 0.9 {
		t.Errorf("precision %.3f and recall %.3f of unsupported+unread, want 0.9 or more each", precision, recall)
	}
}
