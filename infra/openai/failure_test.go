package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// sentinels are the errors a call may fail with; exactly one must match.
var sentinels = map[string]error{
	"rate limited":   llm.ErrRateLimited,
	"too large":      llm.ErrTooLarge,
	"context length": llm.ErrContextLength,
	"unusable":       llm.ErrUnusable,
	"transient":      llm.ErrTransient,
	"permanent":      llm.ErrPermanent,
}

// callError checks that err is a *llm.CallError wrapping want and no other
// sentinel, whose text does not show the API key.
func callError(t *testing.T, err error, want error) *llm.CallError {
	t.Helper()
	var ce *llm.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want a *llm.CallError", err, err)
	}
	for name, s := range sentinels {
		if got := errors.Is(err, s); got != (s == want) {
			t.Errorf("errors.Is(err, %s) = %v; err = %v", name, got, err)
		}
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("the error shows the API key: %v", err)
	}
	return ce
}

// Each answer of the provider is sorted into its sentinel; the call is
// made once, it reached the provider, and the error says what it said.
func TestCompleteErrorMapping(t *testing.T) {
	limitsHeader := map[string]string{
		"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s",
		"x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "12000", "x-ratelimit-reset-tokens": "1s",
	}
	cases := []struct {
		name       string
		rep        reply
		want       error
		retryAfter time.Duration
		says       string
	}{
		{"429 request too large", reply{status: 429, fixture: "error_429_too_large.json"}, llm.ErrTooLarge, 0, "Request too large"},
		{"429 retry-after-ms", reply{status: 429, fixture: "error_429.json",
			header: map[string]string{"retry-after-ms": "150", "retry-after": "9"}}, llm.ErrRateLimited, 150 * time.Millisecond, "Rate limit reached"},
		{"429 retry-after seconds", reply{status: 429, fixture: "error_429.json",
			header: map[string]string{"retry-after": "2"}}, llm.ErrRateLimited, 2 * time.Second, "429"},
		{"429 try again in the message", reply{status: 429, fixture: "error_429_try_again.json"},
			llm.ErrRateLimited, 1500 * time.Millisecond, "try again in 1.5s"},
		// The requests are exhausted: their reset, not the tokens'.
		{"429 rate-limit reset headers", reply{status: 429, fixture: "error_429.json", header: limitsHeader},
			llm.ErrRateLimited, 6 * time.Minute, "Rate limit reached"},
		{"429 nothing said", reply{status: 429, fixture: "error_429.json"}, llm.ErrRateLimited, 0, "Rate limit reached"},
		{"429 quota", reply{status: 429, fixture: "error_429_quota.json"}, llm.ErrPermanent, 0, "exceeded your current quota"},
		{"400 context length code", reply{status: 400, fixture: "error_400_context.json"}, llm.ErrContextLength, 0, "maximum context length"},
		{"400 context length message", reply{status: 400,
			body: `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error"}}`},
			llm.ErrContextLength, 0, "8192"},
		{"400 other", reply{status: 400, fixture: "error_400.json"}, llm.ErrPermanent, 0, "Invalid schema"},
		{"401", reply{status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`},
			llm.ErrPermanent, 0, "Incorrect API key"},
		{"403", reply{status: 403, body: `{"error":{"message":"nope","type":"invalid_request_error"}}`}, llm.ErrPermanent, 0, "nope"},
		{"404", reply{status: 404, body: `{"error":{"message":"The model does not exist","type":"invalid_request_error"}}`},
			llm.ErrPermanent, 0, "does not exist"},
		{"422 not JSON", reply{status: 422, body: "unprocessable"}, llm.ErrPermanent, 0, "unprocessable"},
		{"408", reply{status: 408, body: "timeout"}, llm.ErrTransient, 0, "408"},
		{"500", reply{status: 500, body: `{"error":{"message":"boom","type":"server_error"}}`}, llm.ErrTransient, 0, "boom"},
		{"502 not JSON", reply{status: 502, body: "bad gateway"}, llm.ErrTransient, 0, "bad gateway"},
		{"503 retry-after", reply{status: 503, fixture: "error_503.json", header: map[string]string{"retry-after": "3"}},
			llm.ErrTransient, 3 * time.Second, "overloaded"},
		{"529 overloaded", reply{status: 529,
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, llm.ErrTransient, 0, "Overloaded"},
		{"2xx body not JSON", reply{body: "<html>upstream error</html>"}, llm.ErrTransient, 0, "invalid character"},
		{"2xx empty body", reply{body: ""}, llm.ErrTransient, 0, "EOF"},
		{"2xx body cut", reply{fixture: "answer.json", cut: 100}, llm.ErrTransient, 0, "unexpected EOF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.rep)
			m := mustNew(t, api.config("gpt-4o-mini"))
			_, err := m.Complete(context.Background(), simpleRequest())
			ce := callError(t, err, tc.want)
			if ce.RetryAfter != tc.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", ce.RetryAfter, tc.retryAfter)
			}
			if !ce.Sent {
				t.Errorf("Sent is false for a request the server answered")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			if (tc.rep.header["x-ratelimit-limit-requests"] != "") != (ce.Limits != nil) {
				t.Errorf("Limits = %+v with headers %v", ce.Limits, tc.rep.header)
			}
			if n := api.count(); n != 1 {
				t.Errorf("server saw %d requests, want 1 (no retry)", n)
			}
		})
	}
}

// The rate limits of an error response come back in the CallError.
func TestCompleteErrorLimits(t *testing.T) {
	api := newFakeAPI(t, reply{status: http.StatusTooManyRequests, fixture: "error_429.json", header: map[string]string{
		"x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20ms",
	}})
	m := mustNew(t, api.config("gpt-4o-mini"))
	_, err := m.Complete(context.Background(), simpleRequest())
	ce := callError(t, err, llm.ErrRateLimited)
	want := llm.RateLimits{LimitTokens: 30000, RemainingTokens: 0, ResetTokens: 20 * time.Millisecond}
	if ce.Limits == nil || *ce.Limits != want || ce.RetryAfter != 20*time.Millisecond {
		t.Errorf("limits %+v, retry after %v; want %+v and 20ms", ce.Limits, ce.RetryAfter, want)
	}
}

// An answer with nothing to use is ErrUnusable, with what it cost.
func TestCompleteUnusable(t *testing.T) {
	cases := []struct {
		name, fixture, model, says string
		usage                      llm.Usage
	}{
		{"no choices", "no_choices.json", "gpt-4o-mini", "no choices",
			// 10 prompt tokens × 0.15 / 1e6.
			llm.Usage{PromptTokens: 10, CostUSD: 10 * 0.15 / 1e6}},
		{"empty message", "empty_message.json", "gpt-4o-mini", `finish_reason "content_filter"`,
			llm.Usage{PromptTokens: 300, CostUSD: 300 * 0.15 / 1e6}},
		// A reasoning model that spent its whole cap thinking: o4-mini,
		// 2,000 × 1.10 + 5,120 × 4.40 = 2,200 + 22,528 → $0.024728.
		{"cap spent thinking", "reasoning_spent.json", "o4-mini", `finish_reason "length"`,
			llm.Usage{PromptTokens: 2000, CompletionTokens: 5120, ReasoningTokens: 5120, CostUSD: 0.024728}},
		{"only a call of another type", "only_other_type.json", "local-model", "neither content nor tool calls",
			llm.Usage{PromptTokens: 300, CompletionTokens: 12}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, reply{fixture: tc.fixture})
			m := mustNew(t, api.config(tc.model))
			_, err := m.Complete(context.Background(), simpleRequest())
			ce := callError(t, err, llm.ErrUnusable)
			if !ce.Sent || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("sent %v, error %q; want sent and saying %q", ce.Sent, err, tc.says)
			}
			got := ce.Usage
			if d := got.CostUSD - tc.usage.CostUSD; d > 1e-12 || d < -1e-12 {
				t.Errorf("cost = %v, want %v", got.CostUSD, tc.usage.CostUSD)
			}
			got.CostUSD = tc.usage.CostUSD
			if got != tc.usage {
				t.Errorf("usage = %+v, want %+v", got, tc.usage)
			}
		})
	}
}

// A request that cannot be sent is permanent and never reaches the server.
func TestCompleteInvalidRequest(t *testing.T) {
	cases := map[string]llm.Request{
		"tool result without id": {Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}},
		"unknown role":           {Messages: []llm.Message{{Role: "narrator", Content: "x"}}},
		"schema not JSON":        {Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.ToolSpec{{Name: "t", Parameters: []byte(`{`)}}},
		"negative token cap":     {Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, MaxCompletionTokens: -1},
		"unknown tool choice":    {Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, ToolChoice: "sometimes"},
	}
	for name, req := range cases {
		api := newFakeAPI(t, reply{fixture: "answer.json"})
		m := mustNew(t, api.config("gpt-4o-mini"))
		_, err := m.Complete(context.Background(), req)
		if ce := callError(t, err, llm.ErrPermanent); ce.Sent {
			t.Errorf("%s: Sent is true", name)
		}
		if api.count() != 0 {
			t.Errorf("%s: the request was sent", name)
		}
	}
}

// A request go-openai itself refuses before any HTTP request (a GPT-6
// model with tools on chat completions) is permanent and was not sent.
func TestCompleteRefusedByTheLibrary(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json"})
	m := mustNew(t, api.config("gpt-6-astra"))
	req := simpleRequest()
	req.Tools = []llm.ToolSpec{{Name: "search", Parameters: []byte(`{"type":"object"}`)}}
	_, err := m.Complete(context.Background(), req)
	if ce := callError(t, err, llm.ErrPermanent); ce.Sent {
		t.Errorf("Sent is true")
	}
	if api.count() != 0 {
		t.Errorf("the request was sent")
	}
}

// A server that echoes the key back in its error does not get it into the
// error text.
func TestCompleteErrorHidesTheKey(t *testing.T) {
	api := newFakeAPI(t, reply{status: 401,
		body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error"}}`})
	m := mustNew(t, api.config("gpt-4o-mini"))
	_, err := m.Complete(context.Background(), simpleRequest())
	callError(t, err, llm.ErrPermanent)
	if !strings.Contains(err.Error(), "Incorrect API key provided: [redacted]") {
		t.Errorf("error = %v, want the message with the key redacted", err)
	}
}
