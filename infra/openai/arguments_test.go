package openai

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

// Arguments cut off by the completion limit are the model's answer, not a
// malformed response: they are passed on as they came, they encode as
// valid JSON, and the next request replays them as a JSON object.
func TestCompleteInvalidArgumentsArePassedOn(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "bad_arguments.json"}, reply{fixture: "answer.json"})
	m := mustNew(t, api.config("gpt-4o-mini"))
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v (permanent: %v)", err, errors.Is(err, llm.ErrPermanent))
	}
	if len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v, want 1", resp.Message.ToolCalls)
	}
	call := resp.Message.ToolCalls[0]
	const cut = `{"query": "tidal ener`
	if call.ID != "call_cut_1" || call.Name != "search" || call.InvalidArguments != cut || call.Arguments != nil {
		t.Fatalf("call = %+v, want call_cut_1 search with the cut arguments kept as invalid", call)
	}
	if call.ArgumentsText() != cut {
		t.Errorf("ArgumentsText = %q, want %q", call.ArgumentsText(), cut)
	}
	if resp.Usage.CompletionTokens != 16 {
		t.Errorf("usage = %+v, want the 16 completion tokens counted", resp.Usage)
	}

	// The step stores the message as JSON, then replays it.
	stored, err := json.Marshal(resp.Message)
	if err != nil || !json.Valid(stored) {
		t.Fatalf("the message does not encode: %s, %v", stored, err)
	}
	var back llm.Message
	if err := json.Unmarshal(stored, &back); err != nil {
		t.Fatal(err)
	}
	req := simpleRequest()
	req.Messages = append(req.Messages, back,
		llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: "Error: invalid arguments"})
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatalf("replaying the call: %v", err)
	}
	if n := api.count(); n != 2 {
		t.Fatalf("server saw %d requests, want 2", n)
	}
	replayed := api.request(1).Messages[2]
	if len(replayed.ToolCalls) != 1 || replayed.ToolCalls[0].ID != "call_cut_1" {
		t.Fatalf("replayed assistant message = %+v", replayed)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(replayed.ToolCalls[0].Function.Arguments), &args); err != nil || args["invalid_arguments"] != cut {
		t.Errorf("replayed arguments = %s (%v), want a JSON object quoting %q", replayed.ToolCalls[0].Function.Arguments, err, cut)
	}
}

// Arguments that are JSON but not an object, or nothing at all, are sorted
// the same way; valid ones are replayed unchanged.
func TestToolCallArgumentsConversion(t *testing.T) {
	cases := []struct {
		sent, invalid, replay string
	}{
		{`{"query":"tides"}`, "", `{"query":"tides"}`},
		{"", "", "{}"},
		{`"tides"`, `"tides"`, `{"invalid_arguments":"\"tides\""}`},
		{`[1]`, `[1]`, `{"invalid_arguments":"[1]"}`},
		{`{"a":1} {"b":2}`, `{"a":1} {"b":2}`, `{"invalid_arguments":"{\"a\":1} {\"b\":2}"}`},
	}
	for _, c := range cases {
		call := llm.NewToolCall("c1", "search", c.sent)
		if call.InvalidArguments != c.invalid {
			t.Errorf("%q: invalid arguments %q, want %q", c.sent, call.InvalidArguments, c.invalid)
		}
		got, err := replayArguments(call)
		if err != nil || got != c.replay {
			t.Errorf("%q: replayed as %s (%v), want %s", c.sent, got, err, c.replay)
		}
	}
}

// The completion cap is sent as max_completion_tokens, and not at all when 0.
func TestCompleteSendsMaxCompletionTokens(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json"})
	m := mustNew(t, api.config("gpt-4o-mini"))
	req := simpleRequest()
	req.MaxCompletionTokens = 1234
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if got := api.request(0).MaxCompletionTokens; got == nil || *got != 1234 {
		t.Errorf("max_completion_tokens = %v, want 1234", got)
	}
	if got := api.request(1).MaxCompletionTokens; got != nil {
		t.Errorf("max_completion_tokens = %d with no cap, want it left out", *got)
	}
}
