package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/fetch"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/infra/search"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// localWeb serves the Go toolchain's HTML documents, and a SearXNG fake
// (its JSON API: GET /search?q=…&format=json) that ranks them by the words
// of the query.
func localWeb(t *testing.T) (pages, searx *httptest.Server) {
	t.Helper()
	dir := filepath.Join(build.Default.GOROOT, "doc")
	names := []string{"go_spec.html", "go_mem.html"}
	texts := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatalf("the Go toolchain's %s is needed: %v", n, err)
		}
		texts["/doc/"+n] = strings.ToLower(string(b))
	}
	pages = httptest.NewServer(http.StripPrefix("/doc/", http.FileServer(http.Dir(dir))))
	t.Cleanup(pages.Close)
	searx = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		words := strings.Fields(strings.ToLower(r.URL.Query().Get("q")))
		type hit struct {
			path  string
			score int
		}
		var hits []hit
		for p, text := range texts {
			score := 0
			for _, w := range words {
				score += strings.Count(text, w)
			}
			if score > 0 {
				hits = append(hits, hit{p, score})
			}
		}
		sort.Slice(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
		var results []map[string]any
		for _, h := range hits {
			results = append(results, map[string]any{"url": pages.URL + h.path, "title": filepath.Base(h.path),
				"content": "The Go documentation page " + filepath.Base(h.path), "engine": "local"})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"query": r.URL.Query().Get("q"), "results": results})
	}))
	t.Cleanup(searx.Close)
	return pages, searx
}

// TestOfflineResearchOfTheLocalWeb runs a research on the offline policy
// with the web tools against the local web: it ends succeeded, and the
// numbered sources of its report are pages it fetched, all of them listed
// by the sources route.
func TestOfflineResearchOfTheLocalWeb(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pages, searx := localWeb(t)
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "s", Title: "t", Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	searcher, err := search.New(search.Config{Provider: search.SearXNG, URL: searx.URL})
	if err != nil {
		t.Fatal(err)
	}
	port := pages.Listener.Addr().(*net.TCPAddr).Port
	fetcher := fetch.New(fetch.Config{Allow: []fetch.Rule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"),
		Low: uint16(port), Top: uint16(port)}}})
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Search: searcher, Fetch: fetcher, Work: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Stop(context.Background()) })
	key, err := jobs.CreateKey(ctx, pool, "webber")
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(httpapi.New(httpapi.Deps{Service: agent}))
	t.Cleanup(api.Close)
	call := func(method, path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequest(method, api.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	var run jobs.Run
	if code := call("POST", "/v1/gb/research", `{"topic":"What does the Go memory model say about channels and happens before?"}`, &run); code != 202 {
		t.Fatalf("create answered %d", code)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !run.Ended() {
		if time.Now().After(deadline) {
			t.Fatalf("research did not end: %s %s", run.Status, run.State)
		}
		time.Sleep(100 * time.Millisecond)
		call("GET", fmt.Sprintf("/v1/gb/research/%d", run.ID), "", &run)
	}
	if run.Status != jobs.StatusSucceeded {
		t.Fatalf("research %s: %q", run.Status, run.Error)
	}
	var got struct{ Sources []jobs.Source }
	if code := call("GET", fmt.Sprintf("/v1/gb/research/%d/sources?tree=true", run.ID), "", &got); code != 200 {
		t.Fatalf("sources answered %d", code)
	}
	fetched := map[string]bool{}
	for _, s := range got.Sources {
		if s.Kind == jobs.SourceFetch && s.Status == 200 {
			fetched[s.URL] = true
		}
	}
	cited := regexp.MustCompile(`https?://[^\s)\]>]+`).FindAllString(sourcesSection(run.Report), -1)
	t.Logf("report cites %v; the tree fetched %d pages", cited, len(fetched))
	if len(cited) == 0 {
		t.Fatalf("the report cites no web page:\n%s", run.Report)
	}
	for _, u := range cited {
		if !fetched[strings.TrimRight(u, ".,;")] {
			t.Errorf("the report cites %s, which no agent of the tree fetched", u)
		}
	}
	if !slices.ContainsFunc(cited, func(u string) bool { return strings.HasSuffix(u, "/doc/go_mem.html") }) {
		t.Errorf("a question on the memory model does not cite go_mem.html: %v", cited)
	}
}

// sourcesSection is the part of a report from its "Sources" heading on.
func sourcesSection(report string) string {
	if i := strings.LastIndex(report, "Sources"); i >= 0 {
		return report[i:]
	}
	return report
}
