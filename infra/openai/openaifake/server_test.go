package openaifake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	oai "github.com/sashabaranov/go-openai"
)

func TestAuth(t *testing.T) {
	srv, _ := start(t, Config{})
	body := chat("gpt-4o-mini", "hello", nil)
	wantError(t, post(t, srv, "", body), http.StatusUnauthorized, "invalid_request_error", "", "", "")
	r := post(t, srv, "sk-wrong-key-1234567890", body)
	wantError(t, r, http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key",
		"Incorrect API key provided: sk-*************7890. You can find your API key at "+
			"https://platform.openai.com/account/api-keys.")
	if hasBytes(r.body, "sk-wrong-key-1234567890") {
		t.Errorf("the 401 echoes the whole key: %s", r.body)
	}
	decodeCompletion(t, post(t, srv, testKey, body))

	_, err := client(srv, "sk-other").CreateChatCompletion(context.Background(),
		oai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: userMessage("hello")})
	var apiErr *oai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusUnauthorized || apiErr.Code != "invalid_api_key" {
		t.Errorf("go-openai with a wrong key: %v, want a 401 invalid_api_key APIError", err)
	}
	if got := srv.Stats(); got.Unauthorized != 3 || got.Billed != 1 || got.Requests != 4 {
		t.Errorf("Stats = %+v, want 3 unauthorized and 1 billed of 4", got)
	}
}

func TestModelNotFound(t *testing.T) {
	srv, _ := start(t, Config{})
	_, err := client(srv, testKey).CreateChatCompletion(context.Background(),
		oai.ChatCompletionRequest{Model: "gpt-9", Messages: userMessage("hello")})
	var apiErr *oai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" ||
		apiErr.Message != "The model `gpt-9` does not exist or you do not have access to it." {
		t.Errorf("unknown model: %v, want a 404 model_not_found", err)
	}
	if got := srv.Stats(); got.NotFound != 1 {
		t.Errorf("Stats.NotFound = %d, want 1", got.NotFound)
	}
}

// Requests the API refuses for their shape.
func TestBadRequests(t *testing.T) {
	srv, _ := start(t, Config{})
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "find"}}}
	call := map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "find", "arguments": "{}"}}
	for _, tc := range []struct {
		name        string
		body        any
		param, code string
		message     string
	}{
		{"not JSON", `{"model":`, "", "", ""},
		{"unknown argument", chat("gpt-4o-mini", "hi", map[string]any{"max_output_tokens": 5}), "", "",
			"Unrecognized request argument supplied: max_output_tokens"},
		{"no messages", map[string]any{"model": "gpt-4o-mini", "messages": []any{}}, "messages", "empty_array", ""},
		{"bad role", map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "robot", "content": "x"}}},
			"messages.[0].role", "invalid_value", ""},
		{"wrong type", chat("gpt-4o-mini", "hi", map[string]any{"max_completion_tokens": "ten"}),
			"max_completion_tokens", "invalid_type", ""},
		{"cap below 1", chat("gpt-4o-mini", "hi", map[string]any{"max_completion_tokens": 0}),
			"max_completion_tokens", "integer_below_min_value", ""},
		{"cap over the model's output", chat("gpt-4o-mini", "hi", map[string]any{"max_completion_tokens": 20000}),
			"max_completion_tokens", "invalid_value", ""},
		{"tool_choice without tools", chat("gpt-4o-mini", "hi", map[string]any{"tool_choice": "none"}), "tool_choice", "",
			"Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."},
		{"tool result without a call", map[string]any{"model": "gpt-4o-mini", "tools": tools, "messages": []any{
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "x"}}}, "messages.[1].role", "", ""},
		{"call without a result", map[string]any{"model": "gpt-4o-mini", "tools": tools, "messages": []any{
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}},
			map[string]any{"role": "user", "content": "and?"}}}, "messages.[1].role", "",
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
				"'tool_call_id'. The following tool_call_ids did not have response messages: call_1"},
		{"user content null", map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": nil}}},
			"messages.[0].content", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, post(t, srv, testKey, tc.body), http.StatusBadRequest, "invalid_request_error", tc.param, tc.code, tc.message)
		})
	}
	if got := srv.Stats(); got.BadRequests != 11 || got.Billed != 0 {
		t.Errorf("Stats = %+v, want 11 bad requests, none billed", got)
	}
}

// go-openai's requests and answers go through as the API's do: tool calls,
// their replay with the results, usage and the rate-limit headers.
func TestGoOpenAIToolRound(t *testing.T) {
	var mu sync.Mutex
	var seen []*Request
	brain := func(req *Request) Answer {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return Answer{Content: "found: " + last.Content}
		}
		return Answer{ToolCalls: []ToolCall{{Name: "find", Arguments: `{"q":"go"}`}}}
	}
	srv, _ := start(t, Config{Brain: brain, RPM: 100, TPM: 100000})
	c := client(srv, testKey)
	tools := []oai.Tool{{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: "find",
		Description: "Finds things.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}}
	msgs := append([]oai.ChatCompletionMessage{{Role: oai.ChatMessageRoleSystem, Content: "Be brief."}}, userMessage("search go")...)
	resp, err := c.CreateChatCompletion(context.Background(), oai.ChatCompletionRequest{Model: "gpt-4o-mini",
		Messages: msgs, Tools: tools, MaxCompletionTokens: 500})
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	choice := resp.Choices[0]
	if choice.FinishReason != oai.FinishReasonToolCalls || len(choice.Message.ToolCalls) != 1 || choice.Message.Content != "" {
		t.Fatalf("first answer = %+v, want one tool call and no content", choice)
	}
	tc := choice.Message.ToolCalls[0]
	if !strings.HasPrefix(tc.ID, "call_") || tc.Function.Name != "find" || tc.Function.Arguments != `{"q":"go"}` {
		t.Errorf("tool call = %+v", tc)
	}
	if want := PromptTokens(seen[0]); resp.Usage.PromptTokens != want || resp.Usage.CompletionTokens != callTokens(ToolCall{Name: "find", Arguments: `{"q":"go"}`}) {
		t.Errorf("usage = %+v, want %d prompt tokens", resp.Usage, want)
	}
	limits := resp.GetRateLimitHeaders()
	if limits.LimitRequests != 100 || limits.RemainingRequests != 99 || limits.LimitTokens != 100000 ||
		limits.RemainingTokens != 100000-resp.Usage.PromptTokens-500 {
		t.Errorf("rate-limit headers = %+v", limits)
	}

	msgs = append(msgs, choice.Message, oai.ChatCompletionMessage{Role: oai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: "gopher"})
	resp, err = c.CreateChatCompletion(context.Background(), oai.ChatCompletionRequest{Model: "gpt-4o-mini",
		Messages: msgs, Tools: tools, MaxCompletionTokens: 500})
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	if got := resp.Choices[0]; got.Message.Content != "found: gopher" || got.FinishReason != oai.FinishReasonStop {
		t.Errorf("second answer = %+v", got)
	}
	replayed := seen[1].Messages[2]
	if replayed.Role != "assistant" || len(replayed.ToolCalls) != 1 || replayed.ToolCalls[0].ID != tc.ID ||
		seen[1].Messages[3].ToolCallID != tc.ID || seen[1].Tools[0].Description != "Finds things." {
		t.Errorf("the brain saw %+v", seen[1])
	}
}

func TestToolChoiceNone(t *testing.T) {
	brain := func(*Request) Answer { return Answer{ToolCalls: []ToolCall{{Name: "find", Arguments: "{}"}}} }
	srv, _ := start(t, Config{Brain: brain})
	resp, err := client(srv, testKey).CreateChatCompletion(context.Background(), oai.ChatCompletionRequest{
		Model: "gpt-4o-mini", Messages: userMessage("hi"), ToolChoice: "none",
		Tools: []oai.Tool{{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: "find"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0]; len(got.Message.ToolCalls) != 0 || got.Message.Content != noneContent || got.FinishReason != oai.FinishReasonStop {
		t.Errorf("tool_choice none: answer = %+v, want content and no tool calls", got)
	}
}
