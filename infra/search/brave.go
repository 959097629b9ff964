package search

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// BraveBaseURL is the Brave Search API's root.
const BraveBaseURL = "https://api.search.brave.com"

// braveMax is the most results Brave gives on one page (its count limit).
const braveMax = 20

// BraveClient searches with the Brave Search API: GET
// /res/v1/web/search?q=…&count=… with the key in X-Subscription-Token.
type BraveClient struct {
	base, key string
	r         *retrier
}

var _ jobs.Searcher = (*BraveClient)(nil)

// NewBrave returns a Brave client using apiKey (o.BaseURL overrides
// BraveBaseURL).
func NewBrave(apiKey string, o Options) (*BraveClient, error) {
	if strings.TrimSpace(apiKey) == "" {
		return nil, fmt.Errorf("brave: %s is required", EnvAPIKey)
	}
	base := cmp.Or(o.BaseURL, BraveBaseURL)
	if err := checkURL(base); err != nil {
		return nil, fmt.Errorf("brave: %s: %w", EnvURL, err)
	}
	return &BraveClient{base: base, key: strings.TrimSpace(apiKey), r: o.retrier(Brave, TimeoutDefault, braveErrText)}, nil
}

// Name implements jobs.Searcher.
func (c *BraveClient) Name() string { return Brave }

// braveAnswer is the part of Brave's WebSearchApiResponse that is read.
type braveAnswer struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
			PageAge     string `json:"page_age"`
			Age         string `json:"age"`
		} `json:"results"`
	} `json:"web"`
}

// Search implements jobs.Searcher.
func (c *BraveClient) Search(ctx context.Context, query string, max int) ([]jobs.SearchResult, llm.Usage, error) {
	n := clampMax(max, braveMax)
	q := url.Values{"q": {query}, "count": {strconv.Itoa(n)}}
	target := endpoint(c.base, "/res/v1/web/search") + "?" + q.Encode()
	body, err := c.r.do(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err == nil {
			req.Header.Set("Accept", "application/json")
			req.Header.Set("X-Subscription-Token", c.key)
		}
		return req, err
	})
	if err != nil {
		return nil, llm.Usage{}, err
	}
	var a braveAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, llm.Usage{}, fmt.Errorf("brave: the answer is not a web search response: %w", err)
	}
	out := make([]jobs.SearchResult, 0, len(a.Web.Results))
	for _, r := range a.Web.Results {
		if len(out) == n {
			break
		}
		if r.URL == "" {
			continue
		}
		out = append(out, jobs.SearchResult{Title: stripTags(r.Title), URL: r.URL,
			Snippet: stripTags(r.Description), Date: cmp.Or(r.PageAge, r.Age)})
	}
	return out, llm.Usage{}, nil
}

// braveErrText reads Brave's ErrorResponse: {"type":"ErrorResponse",
// "error":{"code","detail","status",…}}.
func braveErrText(body []byte) string {
	var e struct {
		Error struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	switch {
	case e.Error.Code != "" && e.Error.Detail != "":
		return e.Error.Code + ": " + e.Error.Detail
	default:
		return cmp.Or(e.Error.Detail, e.Error.Code)
	}
}
