package search

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// searxngMax caps the results taken from one searxng page.
const searxngMax = 20

// SearXNGClient searches a self-hosted SearXNG instance through its JSON
// API: GET {base}/search?q=…&format=json (the instance must list json in
// search.formats, or it answers 403).
type SearXNGClient struct {
	base string
	r    *retrier
}

var _ jobs.Searcher = (*SearXNGClient)(nil)

// NewSearXNG returns the client of the instance at baseURL (o.BaseURL is
// ignored).
func NewSearXNG(baseURL string, o Options) (*SearXNGClient, error) {
	if err := checkURL(baseURL); err != nil {
		return nil, fmt.Errorf("searxng: %s: %w", EnvURL, err)
	}
	return &SearXNGClient{base: baseURL, r: o.retrier(SearXNG, TimeoutDefault, searxngErrText)}, nil
}

// Name implements jobs.Searcher.
func (c *SearXNGClient) Name() string { return SearXNG }

// searxngAnswer is the part of searxng's JSON answer that is read.
type searxngAnswer struct {
	Results []struct {
		URL           string `json:"url"`
		Title         string `json:"title"`
		Content       string `json:"content"`
		PublishedDate string `json:"publishedDate"`
	} `json:"results"`
}

// Search implements jobs.Searcher.
func (c *SearXNGClient) Search(ctx context.Context, query string, max int) ([]jobs.SearchResult, llm.Usage, error) {
	q := url.Values{"q": {query}, "format": {"json"}}
	target := endpoint(c.base, "/search") + "?" + q.Encode()
	body, err := c.r.do(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err == nil {
			req.Header.Set("Accept", "application/json")
		}
		return req, err
	})
	if err != nil {
		return nil, llm.Usage{}, err
	}
	var a searxngAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, llm.Usage{}, fmt.Errorf("searxng: the answer is not search JSON (is json in search.formats?): %w", err)
	}
	out := make([]jobs.SearchResult, 0, len(a.Results))
	for _, r := range a.Results {
		if len(out) == clampMax(max, searxngMax) {
			break
		}
		if r.URL == "" {
			continue
		}
		out = append(out, jobs.SearchResult{Title: strings.TrimSpace(r.Title), URL: r.URL,
			Snippet: strings.TrimSpace(r.Content), Date: r.PublishedDate})
	}
	return out, llm.Usage{}, nil
}

// searxngErrText: searxng answers errors as a short HTML or text page.
func searxngErrText(body []byte) string {
	return stripTags(string(body))
}

// stripTags removes markup from a short error page and collapses spaces.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return html.UnescapeString(strings.Join(strings.Fields(b.String()), " "))
}
