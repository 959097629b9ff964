package openaifake

import (
	"context"
	"net/http"
	"testing"

	oai "github.com/sashabaranov/go-openai"

	"github.com/gbresearch/gb/jobs/llm"
)

// reasoner is a reasoning model go-openai does not know, so that its own
// checks let through what the server must refuse.
const reasoner = "fake-reasoner"

func reasoningConfig() Config {
	return Config{Models: map[string]ModelSpec{
		reasoner:      {ContextWindow: 100000, Reasoning: true},
		"gpt-4o-mini": {ContextWindow: 128000},
	}}
}

func TestReasoningParameters(t *testing.T) {
	srv, _ := start(t, reasoningConfig())
	for _, tc := range []struct {
		name        string
		extra       map[string]any
		param, code string
		message     string
	}{
		{"temperature", map[string]any{"temperature": 0.2}, "temperature", "unsupported_value",
			"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported."},
		{"temperature 0", map[string]any{"temperature": 0}, "temperature", "unsupported_value",
			"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported."},
		{"max_tokens", map[string]any{"max_tokens": 100}, "max_tokens", "unsupported_parameter",
			"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."},
		{"effort", map[string]any{"reasoning_effort": "extreme"}, "reasoning_effort", "unsupported_value",
			"Unsupported value: 'reasoning_effort' does not support 'extreme' with this model. " +
				"Supported values are: 'minimal', 'low', 'medium', and 'high'."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, srv, testKey, chat(reasoner, "hi", tc.extra))
			wantError(t, r, http.StatusBadRequest, "invalid_request_error", tc.param, tc.code, tc.message)
		})
	}
	for _, extra := range []map[string]any{{"temperature": 1}, {"reasoning_effort": "minimal"}, {"max_completion_tokens": 5000}} {
		decodeCompletion(t, post(t, srv, testKey, chat(reasoner, "hi", extra)))
	}
	r := post(t, srv, testKey, chat("gpt-4o-mini", "hi", map[string]any{"reasoning_effort": "low"}))
	wantError(t, r, http.StatusBadRequest, "invalid_request_error", "reasoning_effort", "unsupported_parameter",
		"Unsupported parameter: 'reasoning_effort' is not supported with this model.")
}

func TestReasoningTokens(t *testing.T) {
	cfg := reasoningConfig()
	cfg.ReasoningTokens = map[string]int{"high": 1500}
	srv, _ := start(t, cfg)
	c := client(srv, testKey)
	for _, tc := range []struct {
		effort string
		want   int
	}{{"", 500}, {"low", 200}, {"high", 1500}} {
		resp, err := c.CreateChatCompletion(context.Background(), oai.ChatCompletionRequest{Model: reasoner,
			Messages: userMessage("hi"), ReasoningEffort: tc.effort, MaxCompletionTokens: 5000})
		if err != nil {
			t.Fatal(err)
		}
		u := resp.Usage
		if u.CompletionTokensDetails == nil || u.CompletionTokensDetails.ReasoningTokens != tc.want ||
			u.CompletionTokens != tc.want+1 || resp.Choices[0].Message.Content != "ok" {
			t.Errorf("effort %q: usage %+v, details %+v, content %q; want %d reasoning tokens and \"ok\"",
				tc.effort, u, u.CompletionTokensDetails, resp.Choices[0].Message.Content, tc.want)
		}
	}
	// The brain may say how long the model thinks; a model that does not
	// reason never does.
	brain := func(*Request) Answer { return Answer{Content: "ok", Reasoning: 42} }
	cfg.Brain = brain
	srv2, _ := start(t, cfg)
	for model, want := range map[string]int{reasoner: 42, "gpt-4o-mini": 0} {
		c := decodeCompletion(t, post(t, srv2, testKey, chat(model, "hi", nil)))
		if c.Usage.CompletionTokensDetails.ReasoningTokens != want {
			t.Errorf("%s: reasoning tokens %d, want %d", model, c.Usage.CompletionTokensDetails.ReasoningTokens, want)
		}
	}
}

// A cap under what the model would think leaves an empty answer cut at
// the cap, billed all the same.
func TestReasoningCapTooSmall(t *testing.T) {
	brain := func(*Request) Answer {
		return Answer{Content: "the answer", ToolCalls: []ToolCall{{Name: "find", Arguments: "{}"}}}
	}
	cfg := reasoningConfig()
	cfg.Brain = brain
	cfg.Prices = map[string]llm.Price{reasoner: {Input: 1, Output: 10}}
	srv, _ := start(t, cfg)
	body := chat(reasoner, "hi", map[string]any{"max_completion_tokens": 150, "reasoning_effort": "low",
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "find"}}}})
	c := decodeCompletion(t, post(t, srv, testKey, body))
	msg := c.Choices[0].Message
	if string(msg["content"]) != `""` || msg["tool_calls"] != nil || c.Choices[0].FinishReason != "length" {
		t.Errorf("answer = %v finish %q, want empty content, no tool calls, length", msg, c.Choices[0].FinishReason)
	}
	if c.Usage.CompletionTokens != 150 || c.Usage.CompletionTokensDetails.ReasoningTokens != 150 {
		t.Errorf("usage = %+v, want the 150 tokens of the cap, all reasoning", c.Usage)
	}
	got := srv.Stats()
	wantCost := float64(c.Usage.PromptTokens*1+150*10) / 1e6
	if got.Billed != 1 || got.CompletionTokens != 150 || got.ReasoningTokens != 150 || got.CostUSD != wantCost {
		t.Errorf("Stats = %+v, want one call billed for 150 completion tokens costing %v", got, wantCost)
	}
}
