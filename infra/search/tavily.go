package search

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// TavilyBaseURL is the Tavily API's root.
const TavilyBaseURL = "https://api.tavily.com"

// tavilyMax is the most results Tavily's max_results allows.
const tavilyMax = 20

// TavilyClient searches with the Tavily API: POST /search with a JSON body
// {query, max_results, …} and the key as Authorization: Bearer tvly-….
type TavilyClient struct {
	base, key string
	r         *retrier
}

var _ jobs.Searcher = (*TavilyClient)(nil)

// NewTavily returns a Tavily client using apiKey (o.BaseURL overrides
// TavilyBaseURL).
func NewTavily(apiKey string, o Options) (*TavilyClient, error) {
	if strings.TrimSpace(apiKey) == "" {
		return nil, fmt.Errorf("tavily: %s is required", EnvAPIKey)
	}
	base := cmp.Or(o.BaseURL, TavilyBaseURL)
	if err := checkURL(base); err != nil {
		return nil, fmt.Errorf("tavily: %s: %w", EnvURL, err)
	}
	return &TavilyClient{base: base, key: strings.TrimSpace(apiKey), r: o.retrier(Tavily, TimeoutDefault, tavilyErrText)}, nil
}

// Name implements jobs.Searcher.
func (c *TavilyClient) Name() string { return Tavily }

// tavilyRequest is the body of POST /search.
type tavilyRequest struct {
	Query       string `json:"query"`
	MaxResults  int    `json:"max_results"`
	SearchDepth string `json:"search_depth"`
	Topic       string `json:"topic"`
}

// tavilyAnswer is the part of Tavily's answer that is read.
type tavilyAnswer struct {
	Results []struct {
		Title         string `json:"title"`
		URL           string `json:"url"`
		Content       string `json:"content"`
		PublishedDate string `json:"published_date"`
	} `json:"results"`
}

// Search implements jobs.Searcher.
func (c *TavilyClient) Search(ctx context.Context, query string, max int) ([]jobs.SearchResult, llm.Usage, error) {
	n := clampMax(max, tavilyMax)
	payload, err := json.Marshal(tavilyRequest{Query: query, MaxResults: n, SearchDepth: "basic", Topic: "general"})
	if err != nil {
		return nil, llm.Usage{}, fmt.Errorf("tavily: encoding request: %w", err)
	}
	body, err := c.r.postJSON(ctx, endpoint(c.base, "/search"), c.key, payload)
	if err != nil {
		return nil, llm.Usage{}, err
	}
	var a tavilyAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, llm.Usage{}, fmt.Errorf("tavily: the answer is not a search response: %w", err)
	}
	out := make([]jobs.SearchResult, 0, len(a.Results))
	for _, r := range a.Results {
		if len(out) == n {
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

// tavilyErrText reads Tavily's error bodies: {"detail":{"error":"…"}},
// {"detail":"…"}, {"error":"…"} or {"error":{"message":"…"}}.
func tavilyErrText(body []byte) string {
	var e struct {
		Detail json.RawMessage `json:"detail"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return cmp.Or(textOf(e.Detail, "error"), textOf(e.Error, "message"))
}

// textOf is raw as a JSON string, or the string field of it named field.
func textOf(raw json.RawMessage, field string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		s, _ = obj[field].(string)
	}
	return s
}
