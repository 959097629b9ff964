package openaifake

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestCountTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"   \n\t", 0},
		{"a", 1},
		{"abcd", 1},
		{"hello", 2},         // ceil(5/4)
		{"hello, world!", 6}, // hello 2, "," 1, world 2, "!" 1
		{`{"a":1}`, 7},       // every rune of punctuation is a token
		{"héllo", 2},         // runes, not bytes
		{"abc123def", 3},     // letters and digits run together
		{"\xff\xfe", 2},      // bytes that are not UTF-8 count one each
	} {
		if got := CountTokens(tc.in); got != tc.want {
			t.Errorf("CountTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// A client that estimates four bytes a token undercounts JSON, as real
// tokenizers make it do.
func TestCountTokensIsNotBytesOverFour(t *testing.T) {
	s := strings.Repeat(`{"k":[1,2]},`, 50)
	if got, estimate := CountTokens(s), len(s)/4; got <= 2*estimate {
		t.Errorf("CountTokens = %d for %d bytes of JSON: want well over the bytes/4 estimate %d", got, len(s), estimate)
	}
}

func TestCutTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello, world!", 0, ""},
		{"hello, world!", 1, "hell"},
		{"hello, world!", 3, "hello,"},
		{"hello, world!", 4, "hello, worl"},
		{"hello, world!", 99, "hello, world!"},
	} {
		if got := cutTokens(tc.in, tc.n); got != tc.want {
			t.Errorf("cutTokens(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestPromptTokens(t *testing.T) {
	req := &Request{Messages: []Message{{Role: "user", Content: "hello"}}}
	if got := PromptTokens(req); got != perMessage+2+perReply {
		t.Errorf("one message of 2 tokens: PromptTokens = %d, want %d", got, perMessage+2+perReply)
	}
	withCall := &Request{Messages: []Message{
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "find", Arguments: `{"q":"x"}`}}},
		{Role: "tool", ToolCallID: "c1", Content: "found"},
	}}
	// c1 1, find 1, {"q":"x"} 9; c1 1, found 2; two messages and the reply.
	if got, want := PromptTokens(withCall), 11+3+2*perMessage+perReply; got != want {
		t.Errorf("tool call and result: PromptTokens = %d, want %d", got, want)
	}
	tools := &Request{Messages: req.Messages, Tools: []Tool{{Name: "find", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	want := CountTokens(`[{"type":"function","function":{"name":"find","parameters":{"type":"object"}}}]`) + PromptTokens(req)
	if got := PromptTokens(tools); got != want {
		t.Errorf("with a tool: PromptTokens = %d, want %d (its JSON counted)", got, want)
	}
}

func TestContextWindow(t *testing.T) {
	srv, _ := start(t, Config{RPM: 100, Models: map[string]ModelSpec{"tiny": {ContextWindow: 100}}})
	// "hello" is 8 prompt tokens.
	r := post(t, srv, testKey, chat("tiny", "hello", map[string]any{"max_completion_tokens": 93}))
	wantError(t, r, http.StatusBadRequest, "invalid_request_error", "messages", "context_length_exceeded",
		"This model's maximum context length is 100 tokens. However, you requested 101 tokens (8 in the messages, "+
			"93 in the completion). Please reduce the length of the messages or completion.")
	if r.header.Get("x-ratelimit-limit-requests") != "100" || r.header.Get("x-ratelimit-remaining-requests") != "100" {
		t.Errorf("a 400 carries the rate-limit headers, untouched: got %v", r.header)
	}
	if got := srv.Stats(); got.OverWindow != 1 || got.Billed != 0 {
		t.Errorf("Stats = %+v, want OverWindow 1 and nothing billed", got)
	}
	decodeCompletion(t, post(t, srv, testKey, chat("tiny", "hello", map[string]any{"max_completion_tokens": 92})))

	// max_tokens counts the same; no cap at all counts the model's default.
	r = post(t, srv, testKey, chat("tiny", "hello", map[string]any{"max_tokens": 93}))
	wantError(t, r, http.StatusBadRequest, "invalid_request_error", "messages", "context_length_exceeded", "")
	r = post(t, srv, testKey, chat("tiny", "hello", nil))
	wantError(t, r, http.StatusBadRequest, "invalid_request_error", "messages", "context_length_exceeded",
		"This model's maximum context length is 100 tokens. However, you requested 4104 tokens (8 in the messages, "+
			"4096 in the completion). Please reduce the length of the messages or completion.")
}
