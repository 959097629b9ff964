package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dbtest"
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
