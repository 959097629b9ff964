package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/doctext/doctexttest"
)

// gb kb load writes only what changed and says so; loading the same
// directory again removes the documents whose files are gone.
func TestKBLoadSaysWhatChanged(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.NewURL(t))
	dir := t.TempDir()
	for name, text := range map[string]string{"a.md": "# A\n\nAlpha.", "b.md": "# B\n\nBeta."} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func() string {
		t.Helper()
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{"kb", "load", "notes", dir})
		if err := root.Execute(); err != nil {
			t.Fatalf("gb kb load: %v\n%s", err, out.String())
		}
		return strings.TrimSpace(out.String())
	}
	if got := load(); got != `dataset "notes": 2 loaded, 0 unchanged` {
		t.Errorf("first load: %q", got)
	}
	if got := load(); got != `dataset "notes": 0 loaded, 2 unchanged` {
		t.Errorf("second load: %q", got)
	}
	if err := os.Remove(filepath.Join(dir, "b.md")); err != nil {
		t.Fatal(err)
	}
	if got := load(); got != `dataset "notes": 0 loaded, 1 unchanged, 1 removed` {
		t.Errorf("load after b.md is gone: %q", got)
	}
}

// gb kb load reads a folder of documents of every format, recursively,
// skips (and says so) a scanned PDF, and on a second load reads no file
// whose bytes did not change.
func TestKBLoadDocuments(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.NewURL(t))
	dir := t.TempDir()
	files := map[string][]byte{
		"papers/ice.pdf":     doctexttest.Paper(),
		"papers/scan.pdf":    doctexttest.Scanned(),
		"review.docx":        doctexttest.DOCX(),
		"deck/quarter.pptx":  doctexttest.Deck(),
		"levels.xlsx":        doctexttest.Sheet(20),
		"levels.csv":         []byte("site,level\nnorth,1.5\n"),
		"notes/readme.md":    []byte("# Readme\n\nNotes."),
		"notes/ignored.json": []byte(`{"a": 1}`),
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func() (string, string) {
		t.Helper()
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs([]string{"kb", "load", "docs", dir})
		if err := root.Execute(); err != nil {
			t.Fatalf("gb kb load: %v\n%s", err, errOut.String())
		}
		return strings.TrimSpace(out.String()), errOut.String()
	}
	out, errOut := load()
	if out != `dataset "docs": 6 loaded, 0 unchanged` || !strings.Contains(errOut, "scan.pdf: pdf: no text layer (scanned?)") {
		t.Errorf("first load: %q\n%s", out, errOut)
	}
	if out, _ := load(); out != `dataset "docs": 0 loaded, 6 unchanged` {
		t.Errorf("second load: %q", out)
	}
	if err := os.WriteFile(filepath.Join(dir, "levels.csv"), []byte("site,level\nnorth,1.6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := load(); out != `dataset "docs": 1 loaded, 5 unchanged` {
		t.Errorf("load after levels.csv changed: %q", out)
	}
}
