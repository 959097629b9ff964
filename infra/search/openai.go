package search

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	oai "github.com/sashabaranov/go-openai"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// OpenAI provider defaults.
const (
	// OpenAIBaseURL is OpenAI's public API, version 1.
	OpenAIBaseURL = "https://api.openai.com/v1"
	// ModelDefault is the search-capable model used when none is set.
	ModelDefault = "gpt-4o-mini-search-preview"
	// SearchContextSize is sent as web_search_options.search_context_size.
	SearchContextSize = "medium"
	openaiMax         = 10
)

// searchPrices are list prices of the search models, USD per million
// tokens (input, output). The per-call web search fee is not counted.
var searchPrices = map[string][2]float64{
	"gpt-4o-search-preview":      {2.50, 10.00},
	"gpt-4o-mini-search-preview": {0.15, 0.60},
}

// OpenAIClient searches by asking a search-capable chat model (for example
// gpt-4o-mini-search-preview, with web_search_options) on an
// OpenAI-compatible endpoint, with prompts.WebSearch as the system prompt.
// Its results are the url_citation annotations of the answer, and its
// usage is returned for the run that searched.
type OpenAIClient struct {
	base, key, model string
	r                *retrier
	price            [2]float64
	priced           bool
	warnOnce         sync.Once
}

var _ jobs.Searcher = (*OpenAIClient)(nil)

// NewOpenAI returns the provider using apiKey (the model endpoint's key);
// o.BaseURL overrides OpenAIBaseURL and o.Model ModelDefault.
func NewOpenAI(apiKey string, o Options) (*OpenAIClient, error) {
	if strings.TrimSpace(apiKey) == "" {
		return nil, fmt.Errorf("openai search: %s is required", EnvOpenAIAPIKey)
	}
	base := cmp.Or(o.BaseURL, OpenAIBaseURL)
	if err := checkURL(base); err != nil {
		return nil, fmt.Errorf("openai search: %s: %w", EnvURL, err)
	}
	c := &OpenAIClient{base: base, key: strings.TrimSpace(apiKey), model: cmp.Or(o.Model, ModelDefault),
		r: o.retrier(OpenAI, OpenAITimeoutDefault, openaiErrText)}
	c.price, c.priced = searchPrices[c.model]
	return c, nil
}

// Name implements jobs.Searcher.
func (c *OpenAIClient) Name() string { return OpenAI }

// Model is the model the searches ask.
func (c *OpenAIClient) Model() string { return c.model }

// webSearchOptions is the chat-completion field go-openai v1.43.0 lacks.
type webSearchOptions struct {
	SearchContextSize string `json:"search_context_size,omitempty"`
}

// openaiRequest is a chat completion with web_search_options.
type openaiRequest struct {
	oai.ChatCompletionRequest
	WebSearchOptions webSearchOptions `json:"web_search_options"`
}

// urlCitation is a url_citation annotation of an assistant message.
type urlCitation struct {
	URL        string `json:"url"`
	Title      string `json:"title"`
	StartIndex int    `json:"start_index"`
	EndIndex   int    `json:"end_index"`
}

// annotation is one annotation of an assistant message.
type annotation struct {
	Type        string      `json:"type"`
	URLCitation urlCitation `json:"url_citation"`
}

// openaiAnswer is the part of the chat completion that is read.
type openaiAnswer struct {
	Choices []struct {
		Message struct {
			Content     string       `json:"content"`
			Annotations []annotation `json:"annotations"`
		} `json:"message"`
	} `json:"choices"`
	Usage oai.Usage `json:"usage"`
}

// Search implements jobs.Searcher: one chat completion, whose cited pages
// are the results.
func (c *OpenAIClient) Search(ctx context.Context, query string, max int) ([]jobs.SearchResult, llm.Usage, error) {
	n := clampMax(max, openaiMax)
	payload, err := json.Marshal(c.request(query, n))
	if err != nil {
		return nil, llm.Usage{}, fmt.Errorf("openai search: encoding request: %w", err)
	}
	body, err := c.r.postJSON(ctx, endpoint(c.base, "/chat/completions"), c.key, payload)
	if err != nil {
		return nil, llm.Usage{}, err
	}
	var a openaiAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, llm.Usage{}, fmt.Errorf("openai search: the answer is not a chat completion: %w", err)
	}
	usage := c.usage(ctx, a.Usage)
	if len(a.Choices) == 0 {
		return nil, usage, fmt.Errorf("openai search: %s answered no choices", c.model)
	}
	return citations(a.Choices[0].Message.Content, a.Choices[0].Message.Annotations, n), usage, nil
}

// request is the chat completion a search sends.
func (c *OpenAIClient) request(query string, n int) openaiRequest {
	user := fmt.Sprintf("Search query: %s\n\nGive at most %d results.", query, n)
	return openaiRequest{
		ChatCompletionRequest: oai.ChatCompletionRequest{Model: c.model, Messages: []oai.ChatCompletionMessage{
			{Role: oai.ChatMessageRoleSystem, Content: prompts.WebSearch},
			{Role: oai.ChatMessageRoleUser, Content: user},
		}},
		WebSearchOptions: webSearchOptions{SearchContextSize: SearchContextSize},
	}
}

// usage converts the answer's usage and prices it.
func (c *OpenAIClient) usage(ctx context.Context, u oai.Usage) llm.Usage {
	out := llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if c.priced {
		out.CostUSD = (float64(u.PromptTokens)*c.price[0] + float64(u.CompletionTokens)*c.price[1]) / 1e6
	} else {
		c.warnOnce.Do(func() {
			c.r.log.WarnContext(ctx, "search: no list price for the search model; its tokens count at cost 0",
				"model", c.model)
		})
	}
	return out
}

// citations turns url_citation annotations into results, one per URL, in
// order of first citation; a result's snippet is the cited span of text.
func citations(content string, anns []annotation, n int) []jobs.SearchResult {
	seen := map[string]int{}
	var out []jobs.SearchResult
	for _, a := range anns {
		cit := a.URLCitation
		if a.Type != "url_citation" || cit.URL == "" {
			continue
		}
		span := citedSpan(content, cit.StartIndex, cit.EndIndex)
		if i, ok := seen[cit.URL]; ok {
			if out[i].Snippet == "" {
				out[i].Snippet = span
			}
			continue
		}
		if len(out) == n {
			continue
		}
		seen[cit.URL] = len(out)
		out = append(out, jobs.SearchResult{Title: strings.TrimSpace(cit.Title), URL: cit.URL, Snippet: span})
	}
	return out
}

// citedSpan is the text of [start, end) in characters, widened to its
// sentence when the span is only the citation link itself.
func citedSpan(content string, start, end int) string {
	r := []rune(content)
	start, end = max(start, 0), min(end, len(r))
	if start >= end {
		return ""
	}
	// The model puts the citation, a markdown link, after the sentence it
	// backs: take the sentence before the link too.
	from := start
	for from > 0 && !sentenceStart(r, from) {
		from--
	}
	text := string(r[from:start])
	if strings.TrimSpace(text) == "" {
		text = string(r[start:end])
	}
	return strings.Join(strings.Fields(text), " ")
}

// sentenceStart reports whether a sentence starts at r[i]: after a line
// break, or after a space that follows ., ! or ?.
func sentenceStart(r []rune, i int) bool {
	if r[i-1] == '\n' {
		return true
	}
	return i >= 2 && r[i-1] == ' ' && strings.ContainsRune(".!?", r[i-2])
}

// openaiErrText reads the error envelope {"error":{"message",…}}.
func openaiErrText(body []byte) string {
	var e oai.ErrorResponse
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return ""
	}
	return e.Error.Message
}
