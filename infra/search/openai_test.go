package search

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/prompts"
)

// openaiAnswerJSON is a chat completion of gpt-4o-mini-search-preview: the
// message's url_citation annotations index its content (in characters).
func openaiAnswerJSON(t *testing.T) string {
	content := "The Go memory model says when a read observes a write ([go.dev](https://go.dev/ref/mem?utm_source=openai)). " +
		"It was revised in Go 1.19 ([go.dev](https://go.dev/blog/memory-model?utm_source=openai)). " +
		"Its rules follow happens-before ([go.dev](https://go.dev/ref/mem?utm_source=openai))."
	var anns []map[string]any
	for _, c := range []struct{ link, url, title string }{
		{"([go.dev](https://go.dev/ref/mem?utm_source=openai))", "https://go.dev/ref/mem?utm_source=openai", "The Go Memory Model"},
		{"([go.dev](https://go.dev/blog/memory-model?utm_source=openai))", "https://go.dev/blog/memory-model?utm_source=openai", "Updating the Go memory model"},
	} {
		start := len([]rune(content[:strings.Index(content, c.link)]))
		anns = append(anns, map[string]any{"type": "url_citation", "url_citation": map[string]any{
			"start_index": start, "end_index": start + len([]rune(c.link)), "title": c.title, "url": c.url}})
	}
	anns = append(anns, anns[0]) // a page cited twice is one result
	b, err := json.Marshal(map[string]any{
		"id": "chatcmpl-123", "object": "chat.completion", "created": 1741121111, "model": "gpt-4o-mini-search-preview-2025-03-11",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": nil, "annotations": anns}}},
		"usage": map[string]any{"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
			"prompt_tokens_details": map[string]any{"cached_tokens": 0}, "completion_tokens_details": map[string]any{"reasoning_tokens": 0}},
		"system_fingerprint": "",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpenAI(t *testing.T) {
	f := newFake(t, rateLimited(`{"error": {"message": "Rate limit reached for gpt-4o-mini-search-preview", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`),
		answer{body: openaiAnswerJSON(t)})
	s, err := NewOpenAI("sk-test-key", f.opts())
	if err != nil {
		t.Fatal(err)
	}
	results, usage, err := s.Search(context.Background(), "go memory model", 5)
	if err != nil {
		t.Fatal(err)
	}
	reqs, bodies := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want a 429 then a retry", len(reqs))
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		WebSearchOptions map[string]any `json:"web_search_options"`
		Tools            any            `json:"tools"`
	}
	if err := json.Unmarshal(bodies[1], &body); err != nil {
		t.Fatal(err)
	}
	r := reqs[1]
	if r.Method != http.MethodPost || r.URL.Path != "/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test-key" {
		t.Errorf("request %s %s, auth %q", r.Method, r.URL, r.Header.Get("Authorization"))
	}
	if body.Model != ModelDefault || len(body.Messages) != 2 || body.Messages[0].Role != "system" ||
		body.Messages[0].Content != prompts.WebSearch || prompts.WebSearch == "" ||
		body.Messages[1].Role != "user" || !strings.Contains(body.Messages[1].Content, "go memory model") ||
		body.WebSearchOptions["search_context_size"] != SearchContextSize || body.Tools != nil {
		t.Errorf("body %s", bodies[1])
	}
	want := []struct{ url, title, snippet string }{
		{"https://go.dev/ref/mem?utm_source=openai", "The Go Memory Model", "The Go memory model says when a read observes a write"},
		{"https://go.dev/blog/memory-model?utm_source=openai", "Updating the Go memory model", "It was revised in Go 1.19"},
	}
	if len(results) != len(want) {
		t.Fatalf("results %+v", results)
	}
	for i, w := range want {
		if results[i].URL != w.url || results[i].Title != w.title || results[i].Snippet != w.snippet {
			t.Errorf("result %d = %+v, want %+v", i, results[i], w)
		}
	}
	wantCost := (1200*0.15 + 300*0.60) / 1e6
	if usage.PromptTokens != 1200 || usage.CompletionTokens != 300 || math.Abs(usage.CostUSD-wantCost) > 1e-12 {
		t.Errorf("usage %+v, want 1200/300 tokens at $%g", usage, wantCost)
	}
}

func TestOpenAIErrorPassedOn(t *testing.T) {
	f := newFake(t, answer{status: http.StatusBadRequest,
		body: `{"error": {"message": "Web search options not supported with this model.", "type": "invalid_request_error", "param": "web_search_options", "code": null}}`})
	o := f.opts()
	o.Model = "gpt-4o-mini"
	s, _ := NewOpenAI("sk-test-key", o)
	_, _, err := s.Search(context.Background(), "q", 5)
	if err == nil || !strings.Contains(err.Error(), "openai: HTTP 400 Bad Request: Web search options not supported with this model.") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(err.Error(), "sk-test-key") {
		t.Errorf("the error holds the key: %v", err)
	}
	if _, bodies := f.requests(); !strings.Contains(string(bodies[0]), `"model":"gpt-4o-mini"`) {
		t.Errorf("the configured model is not sent: %s", bodies[0])
	}
}
