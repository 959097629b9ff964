package openai

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/llm"
)

// Tool calls without an id get a deterministic one, distinct per call,
// and the conversation that replays them is accepted.
func TestCompleteGivesIDsToCalls(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "no_id.json"})
	m := mustNew(t, api.config("local-model"))
	first, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	again, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	calls := first.Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("tool calls = %+v, want 2", calls)
	}
	for i, c := range calls {
		if !strings.HasPrefix(c.ID, "call_gb_") || len(c.ID) != len("call_gb_")+16 || c.Name != "search" {
			t.Errorf("call %d = %+v, want a call_gb_ id", i, c)
		}
		if again.Message.ToolCalls[i].ID != c.ID {
			t.Errorf("call %d: id %q then %q for the same answer", i, c.ID, again.Message.ToolCalls[i].ID)
		}
	}
	if calls[0].ID == calls[1].ID {
		t.Errorf("two calls share the id %q", calls[0].ID)
	}

	req := simpleRequest()
	req.Messages = append(req.Messages, first.Message,
		llm.Message{Role: llm.RoleTool, ToolCallID: calls[0].ID, Content: "r1"},
		llm.Message{Role: llm.RoleTool, ToolCallID: calls[1].ID, Content: "r2"})
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatalf("replaying the calls: %v", err)
	}
	sent := api.request(2).Messages
	if got := sent[2].ToolCalls; len(got) != 2 || got[0].ID != calls[0].ID || sent[3].ToolCallID != calls[0].ID {
		t.Errorf("replayed %+v", sent[2:])
	}
}

// NUL characters and invalid UTF-8 are cleaned from content, names, ids
// and arguments, and the message still encodes as the JSON the store takes.
func TestCompleteCleansText(t *testing.T) {
	// \u0000 escapes decode to NUL; the raw bytes \xff\xfe are not UTF-8.
	// The arguments text holds an escaped NUL (\\u0000 in the body) and an
	// escaped backslash before "u0000", which must stay.
	body := "{\"id\":\"chatcmpl-odd\",\"choices\":[{\"index\":0,\"finish_reason\":\"tool_calls\",\"message\":{" +
		"\"role\":\"assistant\",\"content\":\"Tidal\\u0000 power \xff\xfe[1]\"," +
		"\"tool_calls\":[{\"id\":\"call_\\u0000z\xff\",\"type\":\"function\",\"function\":{" +
		"\"name\":\"sea\\u0000rch\xfe\",\"arguments\":\"{\\\"q\\\":\\\"a\\\\u0000b\\\",\\\"p\\\":\\\"c\\\\\\\\u0000\\\"}\\u0000\"}}]}}]," +
		"\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}}"
	api := newFakeAPI(t, reply{body: body})
	m := mustNew(t, api.config("local-model"))
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	msg := resp.Message
	if msg.Content != "Tidal power \uFFFD\uFFFD[1]" {
		t.Errorf("content = %q", msg.Content)
	}
	if len(msg.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v", msg.ToolCalls)
	}
	c := msg.ToolCalls[0]
	if c.ID != "call_z\uFFFD" || c.Name != "search\uFFFD" {
		t.Errorf("call id %q, name %q", c.ID, c.Name)
	}
	var args map[string]string
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args["q"] != "ab" || args["p"] != `c\u0000` {
		t.Errorf("arguments = %s (%v), want q=ab and p kept as c\\u0000", c.Arguments, err)
	}
	// Stored as JSON, every \u0000 left is the text "\u0000" after an
	// escaped backslash, never a NUL escape (which jsonb refuses).
	stored, err := json.Marshal(msg)
	if err != nil || strings.Count(string(stored), `\u0000`) != strings.Count(string(stored), `\\u0000`) {
		t.Errorf("stored message %s (%v) holds a NUL escape", stored, err)
	}
	for _, s := range []string{msg.Content, c.ID, c.Name, string(c.Arguments)} {
		if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
			t.Errorf("%q holds a NUL or invalid UTF-8", s)
		}
	}
}

// A refusal is the answer: Refused set, its text as the content.
func TestCompleteRefusal(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "refusal.json"})
	m := mustNew(t, api.config("gpt-4o-mini"))
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if !resp.Refused || resp.Message.Content != "I can't help with that request." || resp.FinishReason != llm.FinishStop {
		t.Errorf("response = %+v", resp)
	}
}

// Content that comes with tool calls is kept whole, and so are the calls.
func TestCompleteContentWithToolCalls(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "content_and_tools.json"})
	m := mustNew(t, api.config("gpt-4o-mini"))
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	calls := resp.Message.ToolCalls
	if resp.Message.Content != "Let me check two sources." || len(calls) != 2 ||
		calls[0].ID != "call_c1" || calls[1].Name != "read_page" || resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("response = %+v", resp)
	}
}

// A call of another type than function, or with no name, is dropped with
// a warning; the function call beside it is kept.
func TestCompleteDropsOtherToolTypes(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "other_type.json"})
	var logs syncBuffer
	cfg := api.config("local-model")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	m := mustNew(t, cfg)
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if calls := resp.Message.ToolCalls; len(calls) != 1 || calls[0].ID != "call_f1" {
		t.Errorf("tool calls = %+v, want only call_f1", calls)
	}
	out := logs.String()
	if n := strings.Count(out, "dropping a tool call"); n != 2 || !strings.Contains(out, "type=custom") {
		t.Errorf("logged %d drops, want 2 (the custom call, the nameless one):\n%s", n, out)
	}
}
