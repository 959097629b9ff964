package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/httpwait"
	"github.com/gbresearch/gb/infra/httpwait/httpwaittest"
	"github.com/gbresearch/gb/jobs/llm"
)

const testKey = "sk-test-do-not-log-3f9a"

// reply is one scripted answer of the fake server.
type reply struct {
	status  int
	fixture string // file in testdata, or "" for body
	body    string
	header  map[string]string
}

// fakeAPI is a chat-completions server that answers from a script (the last
// reply repeats) and keeps what it received.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	script   []reply
	requests []wireRequest
	auth     []string
}

// The request as it goes over the wire, decoded with the test's own types
// so that the conversion is checked against the protocol, not the library.
type wireRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Tools               []wireTool    `json:"tools"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
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

// config points at the fake server with millisecond backoff.
func (f *fakeAPI) config(model string) Config {
	return Config{
		BaseURL:     f.srv.URL + "/v1",
		APIKey:      testKey,
		Model:       model,
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Logger:      slog.New(slog.DiscardHandler),
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

// (b) a 429 then a success: retried once.
func TestCompleteRetries429(t *testing.T) {
	api := newFakeAPI(t,
		reply{status: http.StatusTooManyRequests, fixture: "error_429.json"},
		reply{fixture: "answer.json"},
	)
	m := mustNew(t, api.config("gpt-4o-mini"))
	resp, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n := api.count(); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
	if resp.Message.Content == "" {
		t.Errorf("empty answer after retry")
	}
}

// 5xx are retried too, and Retry-After-Ms and Retry-After are obeyed
// instead of a (here deliberately huge) backoff.
func TestCompleteHonoursRetryAfter(t *testing.T) {
	api := newFakeAPI(t,
		reply{status: http.StatusServiceUnavailable, fixture: "error_503.json", header: map[string]string{"Retry-After-Ms": "20"}},
		reply{status: http.StatusTooManyRequests, fixture: "error_429.json", header: map[string]string{"Retry-After": "0"}},
		reply{fixture: "answer.json"},
	)
	cfg := api.config("gpt-4o-mini")
	cfg.BackoffBase, cfg.BackoffMax = 10*time.Second, 10*time.Second
	m := mustNew(t, cfg)
	w := &httpwaittest.Waits{}
	m.sleep = w.Sleep
	if _, err := m.Complete(context.Background(), simpleRequest()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n := api.count(); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
	if got, _ := w.All(); !slices.Equal(got, []time.Duration{20 * time.Millisecond, 0}) {
		t.Errorf("waited %v, want the [20ms 0s] the server asked for", got)
	}
}

// A Retry-After over RetryAfterMax is not obeyed: the backoff is waited.
func TestCompleteCapsRetryAfter(t *testing.T) {
	api := newFakeAPI(t,
		reply{status: http.StatusTooManyRequests, fixture: "error_429.json", header: map[string]string{"Retry-After": "3600"}},
		reply{fixture: "answer.json"},
	)
	cfg := api.config("gpt-4o-mini")
	cfg.BackoffBase, cfg.BackoffMax = 2*time.Second, 2*time.Second
	m := mustNew(t, cfg)
	w := &httpwaittest.Waits{}
	m.sleep = w.Sleep
	if _, err := m.Complete(context.Background(), simpleRequest()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n := api.count(); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
	if got, _ := w.All(); len(got) != 1 || got[0] < time.Second || got[0] >= 2*time.Second {
		t.Errorf("waited %v, want one backoff in [1s, 2s), not the hour asked", got)
	}
}

// Persistent 5xx: MaxRetries retries, then a non-permanent error.
func TestCompleteGivesUp(t *testing.T) {
	api := newFakeAPI(t, reply{status: http.StatusInternalServerError, body: `{"error":{"message":"boom","type":"server_error"}}`})
	cfg := api.config("gpt-4o-mini")
	cfg.MaxRetries = 2
	m := mustNew(t, cfg)
	_, err := m.Complete(context.Background(), simpleRequest())
	if err == nil {
		t.Fatal("no error")
	}
	if errors.Is(err, llm.ErrPermanent) {
		t.Errorf("error %v is permanent, want retryable by the step job", err)
	}
	if n := api.count(); n != 3 {
		t.Errorf("server saw %d requests, want 3 (1 + 2 retries)", n)
	}
	if !strings.Contains(err.Error(), "3 attempts") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error = %v", err)
	}
}

// A negative MaxRetries disables retries.
func TestCompleteNoRetries(t *testing.T) {
	api := newFakeAPI(t, reply{status: http.StatusBadGateway, body: "bad gateway"})
	cfg := api.config("gpt-4o-mini")
	cfg.MaxRetries = -1
	m := mustNew(t, cfg)
	if _, err := m.Complete(context.Background(), simpleRequest()); err == nil || errors.Is(err, llm.ErrPermanent) {
		t.Fatalf("err = %v, want a non-permanent error", err)
	}
	if n := api.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// failOnce is a transport whose first round trip fails like a dropped
// connection.
type failOnce struct {
	mu    sync.Mutex
	tries int
}

func (f *failOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.tries++
	first := f.tries == 1
	f.mu.Unlock()
	if first {
		return nil, errors.New("connection reset by peer")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A network error is retried.
func TestCompleteRetriesNetworkError(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json"})
	cfg := api.config("gpt-4o-mini")
	tr := &failOnce{}
	cfg.HTTPClient = &http.Client{Transport: tr}
	m := mustNew(t, cfg)
	if _, err := m.Complete(context.Background(), simpleRequest()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if tr.tries != 2 || api.count() != 1 {
		t.Errorf("transport tries %d, server requests %d; want 2 and 1", tr.tries, api.count())
	}
}

// Retries stop when the context's deadline leaves no time for the backoff:
// the call gives up before the deadline instead of waiting for it.
func TestCompleteStopsAtDeadline(t *testing.T) {
	api := newFakeAPI(t, reply{status: http.StatusServiceUnavailable, fixture: "error_503.json"})
	cfg := api.config("gpt-4o-mini")
	cfg.BackoffBase, cfg.BackoffMax = time.Hour, time.Hour
	m := mustNew(t, cfg)
	w := &httpwaittest.Waits{Then: httpwait.Sleep}
	m.sleep = w.Sleep
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := m.Complete(ctx, simpleRequest())
	if err == nil || errors.Is(err, llm.ErrPermanent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a non-permanent deadline error", err)
	}
	if ctx.Err() != nil {
		t.Errorf("Complete ended with its context (%v): it waited for the deadline instead of giving up", ctx.Err())
	}
	if asked, took := w.All(); len(asked) != 1 || asked[0] < 30*time.Minute || asked[0] >= time.Hour || took[0] {
		t.Errorf("waits asked %v, taken %v; want one backoff in [30m, 1h), not taken", asked, took)
	}
	if n := api.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// A cancelled context stops the wait between attempts.
func TestCompleteStopsWhenCancelled(t *testing.T) {
	api := newFakeAPI(t, reply{status: http.StatusTooManyRequests, fixture: "error_429.json"})
	cfg := api.config("gpt-4o-mini")
	cfg.BackoffBase, cfg.BackoffMax = time.Hour, time.Hour
	m := mustNew(t, cfg)
	waiting := make(chan struct{})
	var once sync.Once
	w := &httpwaittest.Waits{Then: func(ctx context.Context, d time.Duration) bool {
		once.Do(func() { close(waiting) })
		return httpwait.Sleep(ctx, d)
	}}
	m.sleep = w.Sleep
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, simpleRequest())
		done <- err
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("Complete ended (%v) without waiting to retry", err)
	case <-time.After(30 * time.Second):
		t.Fatal("Complete never waited to retry")
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Complete never returned after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrPermanent) {
		t.Fatalf("err = %v, want context.Canceled, not permanent", err)
	}
	if asked, took := w.All(); len(asked) != 1 || took[0] {
		t.Errorf("waits asked %v, taken %v; want one, cut short", asked, took)
	}
	if n := api.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// (c) malformed answers are permanent, not retried, and say what is wrong.
func TestCompleteMalformed(t *testing.T) {
	cases := []struct {
		name string
		rep  reply
		want []string
	}{
		{"no choices", reply{fixture: "no_choices.json"}, []string{"no choices"}},
		{"empty message", reply{fixture: "empty_message.json"}, []string{"neither content nor tool calls", "content_filter"}},
		{"body not JSON", reply{body: "<html>upstream error</html>"}, []string{"not a chat completion", "invalid character"}},
		{"empty body", reply{body: ""}, []string{"not a chat completion"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.rep)
			m := mustNew(t, api.config("gpt-4o-mini"))
			_, err := m.Complete(context.Background(), simpleRequest())
			if !errors.Is(err, llm.ErrPermanent) || !errors.Is(err, ErrMalformedResponse) {
				t.Fatalf("err = %v, want permanent and malformed", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if n := api.count(); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

// (d) a 400 is permanent and not retried.
func TestComplete400IsPermanent(t *testing.T) {
	api := newFakeAPI(t, reply{status: http.StatusBadRequest, fixture: "error_400.json"})
	m := mustNew(t, api.config("gpt-4o-mini"))
	_, err := m.Complete(context.Background(), simpleRequest())
	if !errors.Is(err, llm.ErrPermanent) {
		t.Fatalf("err = %v, want permanent", err)
	}
	if errors.Is(err, ErrMalformedResponse) {
		t.Errorf("a rejected request is not a malformed response: %v", err)
	}
	if !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Invalid schema") {
		t.Errorf("error = %v, want the status and the API's message", err)
	}
	if n := api.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// Other 4xx (auth, not found) are permanent too.
func TestCompleteOther4xxArePermanent(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity} {
		api := newFakeAPI(t, reply{status: status, body: `{"error":{"message":"nope","type":"invalid_request_error"}}`})
		m := mustNew(t, api.config("gpt-4o-mini"))
		_, err := m.Complete(context.Background(), simpleRequest())
		if !errors.Is(err, llm.ErrPermanent) || api.count() != 1 {
			t.Errorf("status %d: err = %v after %d requests, want permanent after 1", status, err, api.count())
		}
		if err != nil && strings.Contains(err.Error(), testKey) {
			t.Errorf("status %d: error shows the API key", status)
		}
	}
}

// A request that cannot be sent is permanent and never reaches the server.
func TestCompleteInvalidRequest(t *testing.T) {
	cases := map[string]llm.Request{
		"tool result without id": {Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}},
		"unknown role":           {Messages: []llm.Message{{Role: "narrator", Content: "x"}}},
		"schema not JSON":        {Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{`)}}},
		"negative token cap":     {Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, MaxCompletionTokens: -1},
	}
	for name, req := range cases {
		api := newFakeAPI(t, reply{fixture: "answer.json"})
		m := mustNew(t, api.config("gpt-4o-mini"))
		if _, err := m.Complete(context.Background(), req); !errors.Is(err, llm.ErrPermanent) {
			t.Errorf("%s: err = %v, want permanent", name, err)
		}
		if api.count() != 0 {
			t.Errorf("%s: the request was sent", name)
		}
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

// (e) an unknown model: tokens counted, cost 0, one warning per Model.
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
	if n := strings.Count(out, "no list price"); n != 1 {
		t.Errorf("logged the unknown price %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "local-model") {
		t.Errorf("warning does not name the model:\n%s", out)
	}
	if strings.Contains(out, testKey) {
		t.Errorf("the log shows the API key")
	}
	if m.Name() != "local-model" {
		t.Errorf("Name = %q", m.Name())
	}
}

// Retries are logged without the key.
func TestRetryLogHasNoKey(t *testing.T) {
	api := newFakeAPI(t, reply{status: http.StatusTooManyRequests, fixture: "error_429.json"}, reply{fixture: "answer.json"})
	var logs syncBuffer
	cfg := api.config("gpt-4o-mini")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	m := mustNew(t, cfg)
	if _, err := m.Complete(context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "retrying") || strings.Contains(out, testKey) {
		t.Errorf("log = %s", out)
	}
}

// (f) configuration from the environment and its validation.
func TestConfigFromEnvAndNew(t *testing.T) {
	env := map[string]string{
		EnvBaseURL: " http://localhost:8080/v1 ",
		EnvAPIKey:  testKey,
		EnvModel:   "gpt-4.1-nano",
	}
	cfg := ConfigFromEnv(func(k string) string { return env[k] })
	if cfg.BaseURL != "http://localhost:8080/v1" || cfg.APIKey != testKey || cfg.Model != "gpt-4.1-nano" {
		t.Errorf("ConfigFromEnv = %+v", cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if m.Name() != "gpt-4.1-nano" || m.maxRetries != MaxRetriesDefault || m.backoffBase != BackoffBaseDefault {
		t.Errorf("defaults not applied: name %q, retries %d, backoff %v", m.Name(), m.maxRetries, m.backoffBase)
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
	empty := ConfigFromEnv(func(string) string { return "" })
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

func TestPriceOf(t *testing.T) {
	mini, ok := PriceOf("gpt-4o-mini")
	if !ok || mini != (Price{Input: 0.15, Output: 0.60}) {
		t.Errorf("gpt-4o-mini = %+v, %v", mini, ok)
	}
	if p, ok := PriceOf("gpt-4o-mini-2024-07-18"); !ok || p != mini {
		t.Errorf("dated snapshot = %+v, %v; want the gpt-4o-mini price", p, ok)
	}
	if p, _ := PriceOf("gpt-4o"); p == mini {
		t.Errorf("gpt-4o priced like gpt-4o-mini")
	}
	if _, ok := PriceOf("gpt-4o-mini-preview"); ok {
		t.Errorf("a model not in the table has a price")
	}
	if got := (Price{Input: 2, Output: 8}).Cost(1_000_000, 500_000); got != 6 {
		t.Errorf("Cost = %v, want 6", got)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "-1"}, 0, false},
		{map[string]string{"Retry-After-Ms": "150", "Retry-After": "9"}, 150 * time.Millisecond, true},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		got, ok := httpwait.RetryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: got %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoff(t *testing.T) {
	base, most := 200*time.Millisecond, 3*time.Second
	for attempt, full := range []time.Duration{200, 400, 800, 1600, 3000, 3000} {
		full *= time.Millisecond
		for range 20 {
			d := backoff(attempt, base, most)
			if d < full/2 || d >= full {
				t.Fatalf("attempt %d: backoff %v outside [%v, %v)", attempt, d, full/2, full)
			}
		}
	}
	// No overflow with a long base and many attempts.
	if d := backoff(200, time.Hour, 2*time.Hour); d < time.Hour || d >= 2*time.Hour {
		t.Errorf("backoff(200, 1h, 2h) = %v", d)
	}
}
