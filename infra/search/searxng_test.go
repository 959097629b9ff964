package search

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// searxngPage is an answer of SearXNG's JSON API (GET /search?format=json).
const searxngPage = `{"query": "go memory model", "number_of_results": 0,
 "results": [
  {"url": "https://go.dev/ref/mem", "title": "The Go Memory Model", "content": "The Go memory model specifies the conditions under which reads of a variable in one goroutine can be guaranteed to observe values produced by writes.",
   "engine": "duckduckgo", "parsed_url": ["https", "go.dev", "/ref/mem", "", "", ""], "template": "default.html", "engines": ["duckduckgo", "brave"], "positions": [1, 2], "publishedDate": null, "score": 4.0, "category": "general"},
  {"url": "https://research.swtch.com/gomm", "title": "Updating the Go Memory Model", "content": "The current Go language memory model was written in 2009.",
   "engine": "brave", "parsed_url": ["https", "research.swtch.com", "/gomm", "", "", ""], "template": "default.html", "engines": ["brave"], "positions": [2], "publishedDate": "2021-07-12T00:00:00", "score": 1.5, "category": "general"},
  {"url": "https://example.org/third", "title": "Third", "content": "third", "engine": "brave", "score": 0.5, "category": "general"}
 ],
 "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["go memory model happens before"], "unresponsive_engines": [["google", "timeout"]]}`

func TestSearXNG(t *testing.T) {
	f := newFake(t, rateLimited(`Too Many Requests`), answer{body: searxngPage})
	s, err := NewSearXNG(f.srv.URL+"/", f.opts())
	if err != nil {
		t.Fatal(err)
	}
	results, usage, err := s.Search(context.Background(), "go memory model", 2)
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want a 429 then a retry", len(reqs))
	}
	r := reqs[1]
	if r.Method != http.MethodGet || r.URL.Path != "/search" || r.URL.Query().Get("q") != "go memory model" ||
		r.URL.Query().Get("format") != "json" || r.Header.Get("Authorization") != "" {
		t.Errorf("request %s %s, auth %q", r.Method, r.URL, r.Header.Get("Authorization"))
	}
	if len(results) != 2 || results[0].URL != "https://go.dev/ref/mem" || results[0].Title != "The Go Memory Model" ||
		!strings.HasPrefix(results[0].Snippet, "The Go memory model specifies") || results[0].Date != "" ||
		results[1].Date != "2021-07-12T00:00:00" {
		t.Errorf("results %+v", results)
	}
	if usage.PromptTokens != 0 || usage.CostUSD != 0 {
		t.Errorf("usage %+v, want none", usage)
	}
}

// TestSearXNGErrorPassedOn: an instance without the json format answers
// 403 with an HTML page; its text is in the error, and it is not retried.
func TestSearXNGErrorPassedOn(t *testing.T) {
	f := newFake(t, answer{status: http.StatusForbidden, ctype: "text/html",
		body: "<!doctype html>\n<html lang=en>\n<title>403 Forbidden</title>\n<h1>Forbidden</h1>\n<p>You don&#39;t have the permission to access the requested resource.</p>"})
	s, _ := NewSearXNG(f.srv.URL, f.opts())
	_, _, err := s.Search(context.Background(), "q", 5)
	if err == nil || !strings.Contains(err.Error(), "searxng: HTTP 403 Forbidden") ||
		!strings.Contains(err.Error(), "You don't have the permission to access the requested resource.") {
		t.Errorf("err = %v", err)
	}
	if reqs, _ := f.requests(); len(reqs) != 1 {
		t.Errorf("%d requests: a 403 is not retried", len(reqs))
	}
}
