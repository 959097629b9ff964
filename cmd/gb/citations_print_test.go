package main

import (
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/cite"
)

// The citations of a run whose needed revision could not run say why, and
// its counts name the verdicts most reports have none of only when there
// are some.
func TestPrintCitationsRevisionSkipped(t *testing.T) {
	rc := &jobs.RunCitations{Mode: jobs.CitationsRevise, Counts: &cite.Counts{Claims: 3, Supported: 1, Unsupported: 1,
		Contradicted: 1}, RevisionSkipped: "no steps left (3 of 3 used)"}
	var b strings.Builder
	if err := printCitations(&b, rc); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "citations: 3 claims: 1 supported, 0 weak, 1 unsupported, 0 unread, 0 uncited, 1 contradicted\n") ||
		!strings.Contains(out, "\nrevision skipped: no steps left (3 of 3 used)\n") || strings.Contains(out, "inference") {
		t.Errorf("printed:\n%s", out)
	}
}
