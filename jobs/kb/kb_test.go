package kb_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/kb"
)

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
	for _, tree := range []int64{0, 999999} {
		if _, err := kb.Remember(ctx, pool, tree, tree, "Lagoons", "Tidal lagoons are costlier than barrages."); err == nil {
			t.Fatalf("a note for tree %d (no such tree) was stored", tree)
		}
	}
}

// loadTides makes a dataset with two documents.
func loadTides(t testing.TB, pool kb.DB) {
	t.Helper()
	docs := []kb.Document{
		{Source: "tides.md", Title: "Tidal power", Body: "Tidal barrages store water at high tide and release it through turbines."},
		{Source: "wind.md", Title: "Wind power", Body: "Offshore wind farms use tall turbines far from the coast."},
	}
	if _, err := kb.Load(context.Background(), pool, "energy", docs); err != nil {
		t.Fatal(err)
	}
}

// manyWords is a query of n distinct words that match nothing.
func manyWords(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("zq%d", i)
	}
	return strings.Join(w, " ")
}

// A multi-word search that matches nothing ends with no results and no
// error, on an empty dataset (where the fallback once recursed until the
// worker ran out of memory) and on one with documents (where Postgres
// stopped it with "stack depth limit exceeded"). BenchmarkSearchNoMatch
// measures it.
func TestSearchNoMatchEndsEmpty(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	loadTides(t, pool)
	if _, err := kb.Load(context.Background(), pool, "empty", nil); err != nil {
		t.Fatal(err)
	}
	queries := []string{
		"zebra quantum xylophone",
		"tidal zebra -turbines", // tidal or zebra, without turbines
		manyWords(kb.MaxQueryTerms),
		"or or or or",
	}
	for _, dataset := range []string{"empty", "energy", "no-such-dataset"} {
		for _, q := range queries {
			// A search that recursed or ran away would end with this
			// context's error.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			hits, err := kb.Search(ctx, pool, dataset, q, 5)
			cancel()
			if err != nil || len(hits) != 0 {
				t.Errorf("%s: search %q: %d hits, %v; want none and no error", dataset, q, len(hits), err)
			}
		}
	}
}

// BenchmarkSearchNoMatch measures searches that match nothing, which try
// the fallback to any term: a few words, and as many as a query may have.
func BenchmarkSearchNoMatch(b *testing.B) {
	pool := dbtest.NewPool(b)
	loadTides(b, pool)
	ctx := context.Background()
	for _, q := range []struct{ name, query string }{
		{"three-words", "zebra quantum xylophone"},
		{"max-terms", manyWords(kb.MaxQueryTerms)},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				if hits, err := kb.Search(ctx, pool, "energy", q.query, 5); err != nil || len(hits) != 0 {
					b.Fatalf("search %q: %d hits, %v", q.query, len(hits), err)
				}
			}
		})
	}
}

// A search matches any of its terms, the documents with every term first,
// and -term leaves out the documents that have it.
func TestSearchMatchesAnyTermEveryTermFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadTides(t, pool)
	hits, err := kb.Search(ctx, pool, "energy", `barrages "zebra" offshore`, 5)
	if err != nil || len(hits) != 2 || hits[0].Every || hits[1].Every {
		t.Fatalf("search: %+v, %v; want both documents, neither with every term", hits, err)
	}
	hits, err = kb.Search(ctx, pool, "energy", "turbines coast", 5)
	if err != nil || len(hits) != 2 || hits[0].Title != "Wind power" || !hits[0].Every || hits[1].Every {
		t.Fatalf("search: %+v, %v; want Wind power (every term) then Tidal power", hits, err)
	}
	hits, err = kb.Search(ctx, pool, "energy", "turbines -coast", 5)
	if err != nil || len(hits) != 1 || hits[0].Title != "Tidal power" {
		t.Fatalf("search with -coast: %+v, %v; want Tidal power alone", hits, err)
	}
	hits, err = kb.Search(ctx, pool, "energy", `"tall turbines" -"high tide"`, 5)
	if err != nil || len(hits) != 1 || hits[0].Title != "Wind power" {
		t.Fatalf("search for a phrase: %+v, %v; want Wind power alone", hits, err)
	}
}

// Stop words and punctuation alone are a query that matches nothing, not an
// error.
func TestSearchStopWordsAndPunctuation(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	loadTides(t, pool)
	for _, q := range []string{"the of and", "a", "!!! ??? ...", "-", `"`, `" "`, "( ) & | ! : *", "-the -of", "'", `\`, "é"} {
		hits, err := kb.Search(context.Background(), pool, "energy", q, 5)
		if err != nil || len(hits) != 0 {
			t.Errorf("search %q: %+v, %v; want no hits and no error", q, hits, err)
		}
	}
}

func TestCheckQuery(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"tides", strings.Repeat("é", kb.MaxQueryLen), strings.Repeat("w ", kb.MaxQueryTerms)} {
		if err := kb.CheckQuery(q); err != nil {
			t.Errorf("%.40q: %v", q, err)
		}
	}
	cases := map[string]string{
		"":                                       "1 to 500 characters",
		"   ":                                    "1 to 500 characters",
		strings.Repeat("é", kb.MaxQueryLen+1):    "is 501 characters; at most 500",
		strings.Repeat("w ", kb.MaxQueryTerms+1): "has 33 words; at most 32",
		strings.Repeat("a,", kb.MaxQueryTerms+1): "has 33 words",
		"tides\x00":                              "must not contain NUL",
		"tid\xffes":                              "must be valid UTF-8",
	}
	ctx := context.Background()
	for q, want := range cases {
		err := kb.CheckQuery(q)
		if !errors.Is(err, kb.ErrBadQuery) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: %v, want a bad query error saying %q", q, err, want)
		}
		// Search refuses them before asking Postgres: no database needed.
		if _, err := kb.Search(ctx, nil, "energy", q, 5); !errors.Is(err, kb.ErrBadQuery) {
			t.Errorf("search %.40q: %v, want a bad query error", q, err)
		}
	}
}

// FromPathsWith does not read a file whose hash is known: it comes back
// Unchanged, without its text.
func TestFromPathsSkipsKnownFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(path, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, _, err := kb.FromPathsWith([]string{dir}, kb.ReadOptions{})
	if err != nil || len(docs) != 1 || docs[0].FileHash == "" || docs[0].Body != "a | b\n1 | 2\n" {
		t.Fatalf("%v %+v", err, docs)
	}
	again, _, err := kb.FromPathsWith([]string{dir}, kb.ReadOptions{Known: map[string]string{docs[0].Source: docs[0].FileHash}})
	if err != nil || len(again) != 1 || !again[0].Unchanged || again[0].Body != "" {
		t.Errorf("with the hash known: %v %+v", err, again)
	}
}
