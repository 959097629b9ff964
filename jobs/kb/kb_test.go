package kb_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/kb"
)

func TestGoDocsAreExtracted(t *testing.T) {
	t.Parallel()
	docs, err := kb.FromPaths([]string{filepath.Join(runtime.GOROOT(), "src", "sync")})
	if err != nil {
		t.Fatal(err)
	}
	var sync *kb.Document
	for i := range docs {
		if docs[i].Source == "https://pkg.go.dev/sync" {
			sync = &docs[i]
		}
	}
	if sync == nil || sync.Title != "package sync" || !strings.Contains(sync.Body, "WaitGroup") {
		t.Fatalf("package sync not extracted: %d docs", len(docs))
	}
}

func TestSearchReadRemember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tides.md"), []byte("# Tidal power\n\nTidal barrages store water at high tide and release it through turbines."), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := kb.FromPaths([]string{dir})
	if err != nil || len(docs) != 1 || docs[0].Title != "Tidal power" {
		t.Fatalf("docs %+v, %v", docs, err)
	}
	if n, err := kb.Load(ctx, pool, "energy", docs); err != nil || n != 1 {
		t.Fatalf("load: %d, %v", n, err)
	}
	if _, err := kb.Load(ctx, pool, "Bad Name", docs); err == nil {
		t.Fatal("a bad dataset name was accepted")
	}
	hits, err := kb.Search(ctx, pool, "energy", "turbines tide", 5)
	if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Snippet, "turbines") {
		t.Fatalf("search: %+v, %v", hits, err)
	}
	if hits, _ := kb.Search(ctx, pool, "other", "turbines", 5); len(hits) != 0 {
		t.Fatalf("search leaked across datasets: %+v", hits)
	}
	d, err := kb.Read(ctx, pool, "energy", hits[0].ID)
	if err != nil || !strings.Contains(d.Body, "release it through turbines") {
		t.Fatalf("read: %+v, %v", d, err)
	}
	if _, err := kb.Read(ctx, pool, "other", hits[0].ID); !errors.Is(err, kb.ErrNotFound) {
		t.Fatalf("read from another dataset: %v", err)
	}
	if _, err := kb.Remember(ctx, pool, "energy", 0, "Lagoons", "Tidal lagoons are costlier than barrages."); err == nil {
		t.Fatal("a note for run 0 (no such run) was stored")
	}
}
