package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

func toolRequest() llm.Request {
	req := simpleRequest()
	req.Tools = []llm.ToolSpec{{Name: "search", Description: "Search the web.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}}
	return req
}

// ToolChoiceNone is sent as tool_choice "none" with the tools still
// listed (so the provider's cached prefix still matches); no tool_choice
// is sent when the model may choose, nor when there are no tools.
func TestCompleteToolChoiceNone(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json"})
	m := mustNew(t, api.config("gpt-4o-mini"))
	none := toolRequest()
	none.ToolChoice = llm.ToolChoiceNone
	noTools := simpleRequest()
	noTools.ToolChoice = llm.ToolChoiceNone
	for _, req := range []llm.Request{none, toolRequest(), noTools} {
		if _, err := m.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if got := api.request(0); string(got.ToolChoice) != `"none"` || len(got.Tools) != 1 || got.Tools[0].Function.Name != "search" {
		t.Errorf("tool_choice %s with tools %+v; want \"none\" and the search tool", got.ToolChoice, got.Tools)
	}
	for i := 1; i < 3; i++ {
		if _, sent := api.rawRequest(i)["tool_choice"]; sent {
			t.Errorf("request %d sent tool_choice %s", i, api.request(i).ToolChoice)
		}
	}
}

// A reasoning model gets max_completion_tokens, the configured
// reasoning_effort, and no parameter it refuses (max_tokens, temperature,
// top_p); a model that does not reason never gets reasoning_effort.
func TestCompleteReasoningRequestShape(t *testing.T) {
	refused := []string{"max_tokens", "temperature", "top_p", "presence_penalty", "frequency_penalty", "logprobs", "n"}
	cases := []struct {
		model, effort, want string
	}{
		{"o4-mini", EffortHigh, EffortHigh},
		{"gpt-5-mini-2025-08-07", EffortMinimal, EffortMinimal},
		{"o3", "", ""},
		{"gpt-4o", EffortHigh, ""},
	}
	for _, tc := range cases {
		api := newFakeAPI(t, reply{fixture: "answer.json"})
		cfg := api.config(tc.model)
		cfg.ReasoningEffort = tc.effort
		m := mustNew(t, cfg)
		req := toolRequest()
		req.MaxCompletionTokens = m.Profile().StepCap
		if _, err := m.Complete(context.Background(), req); err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		got := api.request(0)
		if got.ReasoningEffort != tc.want {
			t.Errorf("%s with effort %q: reasoning_effort %q, want %q", tc.model, tc.effort, got.ReasoningEffort, tc.want)
		}
		if got.MaxCompletionTokens == nil || *got.MaxCompletionTokens != m.Profile().StepCap {
			t.Errorf("%s: max_completion_tokens %v, want %d", tc.model, got.MaxCompletionTokens, m.Profile().StepCap)
		}
		raw := api.rawRequest(0)
		for _, field := range refused {
			if v, sent := raw[field]; sent {
				t.Errorf("%s: sent %s = %s", tc.model, field, v)
			}
		}
	}
}
