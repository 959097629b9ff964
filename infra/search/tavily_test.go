package search

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// tavilyPage is a Tavily POST /search response.
const tavilyPage = `{"query": "go memory model", "follow_up_questions": null, "answer": null, "images": [],
 "results": [
  {"url": "https://go.dev/ref/mem", "title": "The Go Memory Model", "content": "The Go memory model specifies the conditions under which reads of a variable in one goroutine can be guaranteed to observe values produced by writes to the same variable in a different goroutine.", "score": 0.93, "raw_content": null},
  {"url": "https://go.dev/blog/memory-model", "title": "Updating the Go memory model", "content": "The Go memory model was revised in Go 1.19.", "score": 0.81, "raw_content": null, "published_date": "Tue, 02 Aug 2022 00:00:00 GMT"}
 ],
 "response_time": 1.09, "request_id": "123e4567-e89b-12d3-a456-426614174111"}`

func TestTavily(t *testing.T) {
	f := newFake(t, rateLimited(`{"detail": {"error": "Rate limit exceeded"}}`), answer{body: tavilyPage})
	s, err := NewTavily("tvly-test-key", f.opts())
	if err != nil {
		t.Fatal(err)
	}
	results, _, err := s.Search(context.Background(), "go memory model", 3)
	if err != nil {
		t.Fatal(err)
	}
	reqs, bodies := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want a 429 then a retry", len(reqs))
	}
	for i, r := range reqs {
		var body map[string]any
		if err := json.Unmarshal(bodies[i], &body); err != nil {
			t.Fatalf("body %q: %v", bodies[i], err)
		}
		if r.Method != http.MethodPost || r.URL.Path != "/search" || r.Header.Get("Authorization") != "Bearer tvly-test-key" ||
			r.Header.Get("Content-Type") != "application/json" || body["query"] != "go memory model" || body["max_results"] != 3.0 {
			t.Errorf("request %s %s %v, body %s", r.Method, r.URL, r.Header, bodies[i])
		}
		if _, ok := body["api_key"]; ok {
			t.Errorf("the key is sent in the body too: %s", bodies[i])
		}
	}
	if len(results) != 2 || results[0].URL != "https://go.dev/ref/mem" || results[0].Title != "The Go Memory Model" ||
		!strings.HasPrefix(results[0].Snippet, "The Go memory model specifies") || results[0].Date != "" ||
		results[1].Date != "Tue, 02 Aug 2022 00:00:00 GMT" {
		t.Errorf("results %+v", results)
	}
}

func TestTavilyErrorPassedOn(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   string
	}{
		{http.StatusUnauthorized, `{"detail": {"error": "Unauthorized: missing or invalid API key."}}`, "tavily: HTTP 401 Unauthorized: Unauthorized: missing or invalid API key."},
		{432, `{"detail": {"error": "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com"}}`, "This request exceeds your plan's set usage limit."},
		{http.StatusBadRequest, `{"detail": "Query is missing."}`, "Query is missing."},
	} {
		f := newFake(t, answer{status: c.status, body: c.body})
		s, _ := NewTavily("tvly-test-key", f.opts())
		_, _, err := s.Search(context.Background(), "q", 5)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: err = %v, want %q", c.status, err, c.want)
		}
		if reqs, _ := f.requests(); len(reqs) != 1 {
			t.Errorf("%d: %d requests, want no retry", c.status, len(reqs))
		}
	}
}
