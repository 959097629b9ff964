package openaifake

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	oai "github.com/sashabaranov/go-openai"
)

// faultBody is a request with a tool the faults can call.
func faultBody() map[string]any {
	return chat("gpt-4o-mini", "hi", map[string]any{
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "find"}}}})
}

// str decodes a JSON string field; "<null>" for null, "<absent>" when missing.
func str(t *testing.T, m map[string]json.RawMessage, key string) string {
	t.Helper()
	raw, ok := m[key]
	switch {
	case !ok:
		return "<absent>"
	case string(raw) == "null":
		return "<null>"
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s = %s: %v", key, raw, err)
	}
	return s
}

// calls decodes the tool calls of a message loosely.
func calls(t *testing.T, m map[string]json.RawMessage) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	if raw, ok := m["tool_calls"]; ok {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("tool_calls %s: %v", raw, err)
		}
	}
	return out
}

func function(t *testing.T, call map[string]json.RawMessage) (name, args string) {
	t.Helper()
	var f struct{ Name, Arguments string }
	if err := json.Unmarshal(call["function"], &f); err != nil {
		t.Fatalf("function %s: %v", call["function"], err)
	}
	return f.Name, f.Arguments
}

// The faults that are answers: each one's shape on the wire, all billed.
func TestAnswerFaults(t *testing.T) {
	for _, tc := range []struct {
		fault Fault
		check func(t *testing.T, r reply, c completionBody)
	}{
		{EmptyChoices, func(t *testing.T, r reply, c completionBody) {
			if !hasBytes(r.body, `"choices":[]`) || c.Usage.PromptTokens == 0 {
				t.Errorf("body %s: want \"choices\":[] and the usage", r.body)
			}
		}},
		{EmptyMessage, func(t *testing.T, r reply, c completionBody) {
			m := c.Choices[0].Message
			if str(t, m, "content") != "" || len(calls(t, m)) != 0 || c.Choices[0].FinishReason != "stop" {
				t.Errorf("body %s: want empty content, no tool calls, stop", r.body)
			}
		}},
		{Refusal, func(t *testing.T, r reply, c completionBody) {
			m := c.Choices[0].Message
			if str(t, m, "refusal") != refusalText || str(t, m, "content") != "<null>" {
				t.Errorf("body %s: want a refusal and null content", r.body)
			}
		}},
		{NoToolCallID, func(t *testing.T, r reply, c completionBody) {
			cs := calls(t, c.Choices[0].Message)
			if len(cs) != 1 || cs[0]["id"] != nil {
				t.Errorf("body %s: want a tool call without id", r.body)
			}
		}},
		{NULInContent, func(t *testing.T, r reply, c completionBody) {
			if !strings.Contains(str(t, c.Choices[0].Message, "content"), "\x00") {
				t.Errorf("body %s: want a NUL in the content", r.body)
			}
		}},
		{NULInToolName, func(t *testing.T, r reply, c completionBody) {
			cs := calls(t, c.Choices[0].Message)
			if name, _ := function(t, cs[0]); name != "find\x00" {
				t.Errorf("tool name %q, want a NUL after find", name)
			}
		}},
		{InvalidUTF8, func(t *testing.T, r reply, c completionBody) {
			if utf8.Valid(r.body) || strings.Count(string(r.body), invalidUTF8) != 2 {
				t.Errorf("body %q: want raw bytes that are not UTF-8 in the content and the tool name", r.body)
			}
		}},
		{ContentWithToolCalls, func(t *testing.T, r reply, c completionBody) {
			m := c.Choices[0].Message
			if str(t, m, "content") != "ok" || len(calls(t, m)) != 1 {
				t.Errorf("body %s: want content and a tool call", r.body)
			}
		}},
		{CutArguments, func(t *testing.T, r reply, c completionBody) {
			_, args := function(t, calls(t, c.Choices[0].Message)[0])
			if json.Valid([]byte(args)) || !strings.HasPrefix(faultArguments, args) || c.Choices[0].FinishReason != "length" {
				t.Errorf("arguments %q finish %q: want JSON cut midway and length", args, c.Choices[0].FinishReason)
			}
		}},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			srv, _ := start(t, Config{})
			srv.Inject(tc.fault, 1)
			r := post(t, srv, testKey, faultBody())
			c := decodeCompletion(t, r)
			tc.check(t, r, c)
			calls := srv.Calls()
			if len(calls) != 1 || calls[0].Fault != tc.fault || calls[0].CompletionTokens != c.Usage.CompletionTokens {
				t.Errorf("Calls = %+v, want one billed with the fault and the usage sent", calls)
			}
			if after := decodeCompletion(t, post(t, srv, testKey, faultBody())); str(t, after.Choices[0].Message, "content") != "ok" {
				t.Errorf("the fault lasted past its one request: %+v", after)
			}
		})
	}
}

// The faults that are not answers: not billed.
func TestErrorFaults(t *testing.T) {
	srv, _ := start(t, Config{HangFor: 10 * time.Millisecond})
	srv.Inject(ServerError, 1)
	srv.Inject(Overloaded, 1)
	srv.Inject(Garbage, 1)
	wantError(t, post(t, srv, testKey, faultBody()), http.StatusInternalServerError, "server_error", "", "",
		"The server had an error while processing your request. Sorry about that!")
	wantError(t, post(t, srv, testKey, faultBody()), http.StatusServiceUnavailable, "server_error", "", "", "")
	r := post(t, srv, testKey, faultBody())
	if r.status != http.StatusOK || json.Valid(r.body) {
		t.Errorf("garbage: status %d body %q, want a 200 that is not JSON", r.status, r.body)
	}
	_, err := client(srv, testKey).CreateChatCompletion(context.Background(),
		oai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: userMessage("hi")})
	if err != nil {
		t.Fatalf("after the faults: %v", err)
	}
	srv.Inject(Timeout, 1)
	if _, err := client(srv, testKey).CreateChatCompletion(context.Background(),
		oai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: userMessage("hi")}); err == nil {
		t.Errorf("a held request that is dropped got an answer")
	}
	got := srv.Stats()
	if got.ServerErrors != 2 || got.Garbage != 1 || got.Timeouts != 1 || got.Billed != 1 {
		t.Errorf("Stats = %+v, want 2 server errors, 1 garbage, 1 timeout, 1 billed", got)
	}
}

// A Brain sets faults too; Inject counts the requests it spoils.
func TestBrainFaultAndInjectCount(t *testing.T) {
	brain := func(req *Request) Answer {
		if req.Messages[0].Content == "refuse" {
			return Answer{Fault: Refusal}
		}
		return Answer{Content: "fine"}
	}
	srv, _ := start(t, Config{Brain: brain})
	c := decodeCompletion(t, post(t, srv, testKey, chat("gpt-4o-mini", "refuse", nil)))
	if str(t, c.Choices[0].Message, "refusal") != refusalText {
		t.Errorf("brain's fault: %+v, want a refusal", c)
	}
	srv.Inject(EmptyMessage, 2)
	for i, want := range []string{"", "", "fine"} {
		c := decodeCompletion(t, post(t, srv, testKey, chat("gpt-4o-mini", "hi", nil)))
		if got := str(t, c.Choices[0].Message, "content"); got != want {
			t.Errorf("request %d after Inject(EmptyMessage, 2): content %q, want %q", i, got, want)
		}
	}
	resp, err := client(srv, testKey).CreateChatCompletion(context.Background(),
		oai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: userMessage("refuse")})
	if err != nil || resp.Choices[0].Message.Refusal != refusalText {
		t.Errorf("go-openai reads the refusal: %+v, %v", resp, err)
	}
}
