package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

const testKey = "sk-test-do-not-log-3f9a"

// reply is one scripted answer of the fake server.
type reply struct {
	status  int
	fixture string // file in testdata, or "" for body
	body    string
	header  map[string]string
	// cut sends the body less its last cut bytes under the Content-Length
	// of the whole, so that the connection closes before the body is whole.
	cut int
}

// fakeAPI is a chat-completions server that answers from a script (the last
// reply repeats) and keeps what it received.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	script   []reply
	requests []wireRequest
	raw      [][]byte
	auth     []string
}

// The request as it goes over the wire, decoded with the test's own types
// so that the conversion is checked against the protocol, not the library.
type wireRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	ReasoningEffort     string          `json:"reasoning_effort"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Name       string         `json:"name"`
	ToolCallID string         `json:"tool_call_id"`
	ToolCalls  []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // a string holding JSON
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func newFakeAPI(t *testing.T, script ...reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.serve)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	var req wireRequest
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		f.t.Errorf("fake server: bad request body: %v", err)
	}
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, req)
	f.raw = append(f.raw, body)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	rep := f.script[min(n, len(f.script)-1)]
	f.mu.Unlock()

	out := []byte(rep.body)
	if rep.fixture != "" {
		out = fixture(f.t, rep.fixture)
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.cut > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		out = out[:len(out)-rep.cut]
	}
	w.WriteHeader(cmpInt(rep.status, http.StatusOK))
	_, _ = w.Write(out)
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeAPI) request(i int) wireRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

// rawRequest is the body of request i decoded as a generic JSON object, to
// see which fields were sent at all.
func (f *fakeAPI) rawRequest(i int) map[string]json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f.raw[i], &m); err != nil {
		f.t.Fatalf("request %d: %v", i, err)
	}
	return m
}

// config points at the fake server.
func (f *fakeAPI) config(model string) Config {
	return Config{
		BaseURL: f.srv.URL + "/v1",
		APIKey:  testKey,
		Model:   model,
		Logger:  slog.New(slog.DiscardHandler),
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}

func cmpInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func mustNew(t *testing.T, cfg Config) *Model {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("sameJSON: %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("sameJSON: %s: %v", b, err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func simpleRequest() llm.Request {
	return llm.Request{System: "You research.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Tidal power?"}}}
}

// (a) tool calls round-trip: request encoding, response decoding, usage and
// cost of a known model.
func TestCompleteToolCallRoundTrip(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "tool_call.json"})
	m := mustNew(t, api.config("gpt-4.1-mini"))

	searchSchema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"}},"required":["query"]}`)
	readSchema := json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"},"max_chars":{"type":"integer"}},"required":["url"]}`)
	req := llm.Request{
		System: "You are a research agent. Cite sources.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "How much power do tides supply?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_a1", Name: "search", Arguments: json.RawMessage(`{"query":"tidal power share"}`)},
				{ID: "call_a2", Name: "search", Arguments: json.RawMessage(`{"query":"tidal barrage capacity"}`)},
			}},
			{Role: llm.RoleTool, ToolCallID: "call_a1", Name: "search", Content: "1. https://example.org/tides"},
			{Role: llm.RoleTool, ToolCallID: "call_a2", Name: "search", Content: "no results"},
		},
		Tools: []llm.ToolSpec{
			{Name: "search", Description: "Search the web.", Parameters: searchSchema},
			{Name: "read_page", Description: "Read a page.", Parameters: readSchema},
		},
	}
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}

	if n := api.count(); n != 1 {
		t.Fatalf("server saw %d requests, want 1", n)
	}
	if got := api.auth[0]; got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	got := api.request(0)
	if got.Model != "gpt-4.1-mini" {
		t.Errorf("model = %q", got.Model)
	}
	if len(got.Messages) != 5 {
		t.Fatalf("sent %d messages, want 5 (system + 4): %+v", len(got.Messages), got.Messages)
	}
	if s := got.Messages[0]; s.Role != "system" || s.Content != req.System {
		t.Errorf("first message = %+v, want the system prompt", s)
	}
	if u := got.Messages[1]; u.Role != "user" || u.Content != "How much power do tides supply?" {
		t.Errorf("user message = %+v", u)
	}
	a := got.Messages[2]
	if a.Role != "assistant" || len(a.ToolCalls) != 2 {
		t.Fatalf("assistant message = %+v, want 2 tool calls", a)
	}
	for i, want := range req.Messages[1].ToolCalls {
		tc := a.ToolCalls[i]
		if tc.ID != want.ID || tc.Type != "function" || tc.Function.Name != want.Name {
			t.Errorf("tool call %d = %+v, want id %s, type function, name %s", i, tc, want.ID, want.Name)
		}
		if !sameJSON(t, []byte(tc.Function.Arguments), want.Arguments) {
			t.Errorf("tool call %d arguments = %s, want %s", i, tc.Function.Arguments, want.Arguments)
		}
	}
	for i, want := range []string{"call_a1", "call_a2"} {
		tm := got.Messages[3+i]
		if tm.Role != "tool" || tm.ToolCallID != want || tm.Content != req.Messages[2+i].Content {
			t.Errorf("tool result %d = %+v, want tool_call_id %s", i, tm, want)
		}
	}
	if len(got.Tools) != 2 {
		t.Fatalf("sent %d tools, want 2", len(got.Tools))
	}
	for i, want := range req.Tools {
		tool := got.Tools[i]
		if tool.Type != "function" || tool.Function.Name != want.Name || tool.Function.Description != want.Description {
			t.Errorf("tool %d = %+v, want function %s", i, tool, want.Name)
		}
		if !sameJSON(t, tool.Function.Parameters, want.Parameters) {
			t.Errorf("tool %d parameters = %s, want %s", i, tool.Function.Parameters, want.Parameters)
		}
	}

	if resp.Message.Role != llm.RoleAssistant || resp.Message.Content != "" {
		t.Errorf("message = %+v, want an assistant message with no content", resp.Message)
	}
	if len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v, want 1", resp.Message.ToolCalls)
	}
	tc := resp.Message.ToolCalls[0]
	if tc.ID != "call_next_7" || tc.Name != "read_page" {
		t.Errorf("tool call = %+v, want call_next_7 read_page", tc)
	}
	if !sameJSON(t, tc.Arguments, []byte(`{"url":"https://example.org/tides","max_chars":4000}`)) {
		t.Errorf("arguments = %s", tc.Arguments)
	}
	if resp.Usage.PromptTokens != 1200 || resp.Usage.CompletionTokens != 80 {
		t.Errorf("usage = %+v, want 1200 prompt and 80 completion tokens", resp.Usage)
	}
	// gpt-4.1-mini: $0.40 in, $1.60 out per 1M tokens.
	if want := 1200*0.40/1e6 + 80*1.60/1e6; math.Abs(resp.Usage.CostUSD-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", resp.Usage.CostUSD, want)
	}
}

// A plain answer; the request has no tools field at all.
func TestCompleteTextAnswer(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json"})
	m := mustNew(t, api.config("gpt-4o"))
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Message.Content != "Tidal power supplies under 1% of the grid [1]." || len(resp.Message.ToolCalls) != 0 {
		t.Errorf("message = %+v", resp.Message)
	}
	if got := api.request(0).Tools; len(got) != 0 {
		t.Errorf("sent tools %+v, want none", got)
	}
	if want := 1000*2.50/1e6 + 500*10.00/1e6; math.Abs(resp.Usage.CostUSD-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", resp.Usage.CostUSD, want)
	}
}

// (f) configuration from the environment and its validation.
func TestConfigFromEnvAndNew(t *testing.T) {
	env := map[string]string{
		EnvBaseURL: " http://localhost:8080/v1 ",
		EnvAPIKey:  testKey,
		EnvModel:   "gpt-4.1-nano",
	}
	cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("ConfigFromEnv: %v", err)
	}
	if cfg.BaseURL != "http://localhost:8080/v1" || cfg.APIKey != testKey || cfg.Model != "gpt-4.1-nano" {
		t.Errorf("ConfigFromEnv = %+v", cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if m.Name() != "gpt-4.1-nano" || m.Profile().ContextWindow != 1047576 {
		t.Errorf("name %q, profile %+v", m.Name(), m.Profile())
	}
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg)} {
		if strings.Contains(s, testKey) {
			t.Errorf("formatting a Config shows the key: %s", s)
		}
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "cfg", cfg)
	if strings.Contains(logs.String(), testKey) {
		t.Errorf("logging a Config shows the key: %s", logs.String())
	}

	// Empty environment: defaults, but no key.
	empty, err := ConfigFromEnv(func(string) string { return "" })
	if err != nil || empty.Profiles != nil || empty.ReasoningEffort != "" {
		t.Fatalf("ConfigFromEnv of nothing = %+v, %v", empty, err)
	}
	_, err = New(empty)
	if err == nil || !strings.Contains(err.Error(), "API key") || !strings.Contains(err.Error(), EnvAPIKey) {
		t.Errorf("New without key: err = %v, want one naming %s", err, EnvAPIKey)
	}
	empty.APIKey = "k"
	if m, err := New(empty); err != nil || m.Name() != ModelDefault {
		t.Errorf("New with defaults: %v, %v", m, err)
	}

	for _, bad := range []string{"ftp://example.org/v1", "localhost:8080", "http://", "::not a url"} {
		_, err := New(Config{APIKey: "k", BaseURL: bad})
		if err == nil || !strings.Contains(err.Error(), "base URL") {
			t.Errorf("base URL %q: err = %v, want a base URL error", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "k\"") {
			t.Errorf("error shows the key: %v", err)
		}
	}
}

// Cached prompt tokens are priced at the cached rate and reasoning tokens
// are billed as output (they are part of completion_tokens).
func TestCompleteUsageCachedAndReasoning(t *testing.T) {
	cases := []struct {
		model string
		want  float64
	}{
		// gpt-5-mini: 0.25 in, 0.025 cached, 2.00 out per 1M tokens.
		// 4,000 uncached × 0.25 = 1,000; 6,000 cached × 0.025 = 150;
		// 3,000 out (2,500 of them reasoning) × 2.00 = 6,000;
		// (1,000 + 150 + 6,000) / 1e6 = $0.00715.
		{"gpt-5-mini", 0.00715},
		// gpt-4.1: 2.00 in, 0.50 cached, 8.00 out: (8,000 + 3,000 +
		// 24,000) / 1e6 = $0.035.
		{"gpt-4.1", 0.035},
		// Not in the table: tokens counted, no price.
		{"local-model", 0},
	}
	for _, tc := range cases {
		api := newFakeAPI(t, reply{fixture: "usage_cached_reasoning.json"})
		m := mustNew(t, api.config(tc.model))
		resp, err := m.Complete(context.Background(), simpleRequest())
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		u := resp.Usage
		if u.PromptTokens != 10000 || u.CachedPromptTokens != 6000 || u.CompletionTokens != 3000 || u.ReasoningTokens != 2500 {
			t.Errorf("%s: usage = %+v, want 10000 prompt (6000 cached), 3000 completion (2500 reasoning)", tc.model, u)
		}
		if math.Abs(u.CostUSD-tc.want) > 1e-12 {
			t.Errorf("%s: cost = %v, want %v", tc.model, u.CostUSD, tc.want)
		}
		if resp.FinishReason != llm.FinishStop || resp.Refused || resp.Limits != nil {
			t.Errorf("%s: finish %q, refused %v, limits %+v", tc.model, resp.FinishReason, resp.Refused, resp.Limits)
		}
	}
}

// The rate limits the provider reports with an answer come back with it.
func TestCompleteReportsLimits(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json", header: map[string]string{
		"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "499", "x-ratelimit-reset-requests": "120ms",
		"x-ratelimit-limit-tokens": "200000", "x-ratelimit-remaining-tokens": "198500", "x-ratelimit-reset-tokens": "450ms",
	}})
	m := mustNew(t, api.config("gpt-4o-mini"))
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := llm.RateLimits{LimitRequests: 500, RemainingRequests: 499, ResetRequests: 120 * time.Millisecond,
		LimitTokens: 200000, RemainingTokens: 198500, ResetTokens: 450 * time.Millisecond}
	if resp.Limits == nil || *resp.Limits != want {
		t.Errorf("limits = %+v, want %+v", resp.Limits, want)
	}
}

// syncBuffer is a log sink safe for the handler's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An unknown model: tokens counted, cost 0, the default window, and one
// warning when the Model is made, none per call.
func TestCompleteUnknownModel(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json"})
	var logs syncBuffer
	cfg := api.config("local-model")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	m := mustNew(t, cfg)
	for range 3 {
		resp, err := m.Complete(context.Background(), simpleRequest())
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if resp.Usage.PromptTokens != 1000 || resp.Usage.CompletionTokens != 500 || resp.Usage.CostUSD != 0 {
			t.Errorf("usage = %+v, want 1000/500 tokens and cost 0", resp.Usage)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "not in the profile table"); n != 1 {
		t.Errorf("logged the unknown model %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "local-model") || !strings.Contains(out, "context_window=16384") {
		t.Errorf("warning does not name the model and its window:\n%s", out)
	}
	if strings.Contains(out, testKey) {
		t.Errorf("the log shows the API key")
	}
	if p := m.Profile(); p.ContextWindow != ContextWindowDefault || p.Priced {
		t.Errorf("profile = %+v, want the default window and no price", p)
	}
}

func TestPriceOf(t *testing.T) {
	mini, ok := PriceOf("gpt-4o-mini")
	if !ok || mini != (llm.Price{Input: 0.15, CachedInput: 0.075, Output: 0.60}) {
		t.Errorf("gpt-4o-mini = %+v, %v", mini, ok)
	}
	if p, ok := PriceOf("gpt-4o-mini-2024-07-18"); !ok || p != mini {
		t.Errorf("dated snapshot = %+v, %v; want the gpt-4o-mini price", p, ok)
	}
	if _, ok := PriceOf("gpt-4o-mini-preview"); ok {
		t.Errorf("a model not in the table has a price")
	}
	for _, model := range []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano",
		"o3-mini", "o4-mini", "o3", "gpt-5", "gpt-5-mini", "gpt-5-nano"} {
		p, ok := PriceOf(model)
		if !ok || p.Input <= 0 || p.Output <= p.Input || p.CachedInput <= 0 || p.CachedInput > p.Input {
			t.Errorf("%s: price %+v, %v; want input > 0, output > input, 0 < cached <= input", model, p, ok)
		}
	}
}

// TestAnswerIDAndServer: an answer carries the completion's id, and the
// model says which host and port it calls (for its spans).
func TestAnswerIDAndServer(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json"})
	m := mustNew(t, api.config("gpt-4o"))
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.ID != "chatcmpl-fixture-2" {
		t.Errorf("answer id %q, want the completion's", resp.ID)
	}
	u, _ := url.Parse(api.srv.URL)
	if host, port := m.ServerAddress(); host != u.Hostname() || strconv.Itoa(port) != u.Port() {
		t.Errorf("server %s:%d, want %s", host, port, u.Host)
	}
	def := mustNew(t, Config{APIKey: "k", Model: "gpt-4o"})
	if host, port := def.ServerAddress(); host != "api.openai.com" || port != 443 {
		t.Errorf("default server %s:%d, want api.openai.com:443", host, port)
	}
}
