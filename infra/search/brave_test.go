package search

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// bravePage is a Brave Search API web search response (WebSearchApiResponse).
const bravePage = `{"type": "search",
 "query": {"original": "go memory model", "show_strict_warning": false, "is_navigational": false, "country": "us", "more_results_available": true},
 "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
 "web": {"type": "search", "family_friendly": true, "results": [
  {"title": "The Go Memory Model - The Go Programming Language", "url": "https://go.dev/ref/mem", "is_source_local": false, "is_source_both": false,
   "description": "The Go <strong>memory model</strong> specifies the conditions under which reads of a variable in one goroutine can be guaranteed to observe values.",
   "page_age": "2022-06-06T00:00:00", "age": "June 6, 2022", "language": "en", "family_friendly": true, "type": "search_result", "subtype": "generic",
   "profile": {"name": "Go", "url": "https://go.dev/ref/mem", "long_name": "go.dev", "img": ""}, "meta_url": {"scheme": "https", "netloc": "go.dev", "hostname": "go.dev", "favicon": "", "path": "› ref  › mem"}},
  {"title": "Memory models - research!rsc", "url": "https://research.swtch.com/mm", "description": "A series of posts on <strong>memory models</strong>.",
   "age": "July 6, 2021", "language": "en", "type": "search_result"}
 ]}}`

func TestBrave(t *testing.T) {
	f := newFake(t, rateLimited(`{"type": "ErrorResponse", "error": {"id": "0b1", "status": 429, "code": "RATE_LIMITED", "detail": "Request rate limit exceeded for plan.", "meta": {"plan": "Free", "rate_limit": 1}}, "time": 1700000000}`),
		answer{body: bravePage})
	s, err := NewBrave("BSA-test-key", f.opts())
	if err != nil {
		t.Fatal(err)
	}
	results, _, err := s.Search(context.Background(), "go memory model", 5)
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want a 429 then a retry", len(reqs))
	}
	for _, r := range reqs {
		q := r.URL.Query()
		if r.Method != http.MethodGet || r.URL.Path != "/res/v1/web/search" || q.Get("q") != "go memory model" || q.Get("count") != "5" ||
			r.Header.Get("X-Subscription-Token") != "BSA-test-key" || r.Header.Get("Accept") != "application/json" {
			t.Errorf("request %s %s, headers %v", r.Method, r.URL, r.Header)
		}
	}
	want := []struct{ url, title, snippet, date string }{
		{"https://go.dev/ref/mem", "The Go Memory Model - The Go Programming Language",
			"The Go memory model specifies the conditions under which reads of a variable in one goroutine can be guaranteed to observe values.", "2022-06-06T00:00:00"},
		{"https://research.swtch.com/mm", "Memory models - research!rsc", "A series of posts on memory models.", "July 6, 2021"},
	}
	if len(results) != len(want) {
		t.Fatalf("results %+v", results)
	}
	for i, w := range want {
		r := results[i]
		if r.URL != w.url || r.Title != w.title || r.Snippet != w.snippet || r.Date != w.date {
			t.Errorf("result %d = %+v, want %+v", i, r, w)
		}
	}
}

func TestBraveErrorPassedOn(t *testing.T) {
	f := newFake(t, answer{status: http.StatusUnprocessableEntity,
		body: `{"type": "ErrorResponse", "error": {"id": "9c2", "status": 422, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid.", "meta": {}}, "time": 1700000000}`})
	s, _ := NewBrave("BSA-wrong-key", f.opts())
	_, _, err := s.Search(context.Background(), "q", 50)
	if err == nil || !strings.Contains(err.Error(), "brave: HTTP 422") ||
		!strings.Contains(err.Error(), "SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid.") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(err.Error(), "BSA-wrong-key") {
		t.Errorf("the error holds the key: %v", err)
	}
	if reqs, _ := f.requests(); len(reqs) != 1 || reqs[0].URL.Query().Get("count") != "20" {
		t.Errorf("want one request with count capped at 20, got %d", len(reqs))
	}
}
