package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/gbresearch/gb/infra/bedrock"
	"github.com/gbresearch/gb/infra/bedrock/conversefake"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs/llm"
)

const nova = "amazon.nova-lite-v1:0"

var searchTool = llm.ToolSpec{Name: "search", Description: "Search the knowledge base.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)}

// A conversation with tool calls and results goes to Converse as
// alternating messages with toolUse and toolResult blocks and a toolConfig,
// signed with SigV4; the brain sees it as sent, and its tool call comes
// back as an llm tool call with its finish reason and usage.
func TestConverseRoundTrip(t *testing.T) {
	t.Parallel()
	var seen *openaifake.Request
	var mu sync.Mutex
	f := newFake(t, conversefake.Config{Brain: func(req *openaifake.Request) openaifake.Answer {
		mu.Lock()
		seen = req
		mu.Unlock()
		return openaifake.Answer{Content: "Looking.", ToolCalls: []openaifake.ToolCall{{ID: "call_2", Name: "search",
			Arguments: `{"query":"more"}`}}}
	}})
	m := newModel(t, f, nova)
	req := llm.Request{System: "You research.", Tools: []llm.ToolSpec{searchTool}, MaxCompletionTokens: 500, ID: "gb-call-7",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Topic: tides."},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{llm.NewToolCall("call_1", "search", `{"query":"tides"}`)}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: "Tides follow the moon."},
			{Role: llm.RoleUser, Content: "A note from a sibling."},
		}}
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != llm.FinishToolCalls || resp.Message.Content != "Looking." || len(resp.Message.ToolCalls) != 1 ||
		resp.Message.ToolCalls[0].Name != "search" || string(resp.Message.ToolCalls[0].Arguments) != `{"query":"more"}` {
		t.Fatalf("response %+v", resp)
	}
	mu.Lock()
	defer mu.Unlock()
	roles := []string{}
	for _, m := range seen.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,user" {
		t.Errorf("the brain saw roles %s", got)
	}
	if seen.Messages[2].ToolCalls[0].Arguments != `{"query":"tides"}` || seen.Messages[3].Content != "Tides follow the moon." ||
		len(seen.Tools) != 1 || seen.Tools[0].Name != "search" || seen.ClientRequestID != "gb-call-7" {
		t.Errorf("the brain saw %+v", seen)
	}
	calls := f.Calls()
	if len(calls) != 1 || calls[0].MaxTokens != 500 || calls[0].CallID != "gb-call-7" {
		t.Fatalf("calls %+v", calls)
	}
	if resp.Usage.PromptTokens != calls[0].PromptTokens || resp.Usage.CompletionTokens != calls[0].CompletionTokens ||
		math.Abs(resp.Usage.CostUSD-calls[0].CostUSD) > 1e-12 || resp.Usage.CostUSD == 0 {
		t.Errorf("usage %+v, billed %+v", resp.Usage, calls[0])
	}
}

// The cache points mark the stable prefix: a second call that extends the
// first reads what the first wrote, and both are priced at their rates.
func TestCachePointsReadWhatTheLastCallWrote(t *testing.T) {
	t.Parallel()
	f := newFake(t, conversefake.Config{})
	m := newModel(t, f, "anthropic.claude-3-5-haiku-20241022-v1:0")
	long := strings.Repeat("The tide tables of the harbour list every high water. ", 300)
	req := llm.Request{System: long, Tools: []llm.ToolSpec{searchTool}, MaxCompletionTokens: 200,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Topic: tides."}}}
	first, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, first.Message, llm.Message{Role: llm.RoleUser, Content: "Go on."})
	second, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.CacheWriteTokens == 0 || first.Usage.CachedPromptTokens != 0 {
		t.Errorf("first call %+v: want a cache write and no read", first.Usage)
	}
	if second.Usage.CachedPromptTokens < first.Usage.CacheWriteTokens {
		t.Errorf("second call read %d cached tokens; the first wrote %d", second.Usage.CachedPromptTokens,
			first.Usage.CacheWriteTokens)
	}
	p, _ := bedrock.PriceOf("anthropic.claude-3-5-haiku-20241022-v1:0")
	for _, u := range []llm.Usage{first.Usage, second.Usage} {
		plain := u.PromptTokens - u.CachedPromptTokens - u.CacheWriteTokens
		want := (float64(plain)*p.Input + float64(u.CachedPromptTokens)*p.CachedInput +
			float64(u.CacheWriteTokens)*p.CacheWrite + float64(u.CompletionTokens)*p.Output) / 1e6
		if math.Abs(u.CostUSD-want) > 1e-12 {
			t.Errorf("usage %+v costs %g, want %g", u, u.CostUSD, want)
		}
	}
	st := f.Stats()
	if st.CacheReadTokens != second.Usage.CachedPromptTokens || st.CacheWriteTokens != first.Usage.CacheWriteTokens+second.Usage.CacheWriteTokens {
		t.Errorf("stats %+v", st)
	}
}

// A request that may not call tools keeps its tools (Converse needs them
// with toolUse blocks in the history) and ends with NoToolsNote; a tool
// call made all the same is dropped.
func TestToolChoiceNoneKeepsTheToolsAndDropsCalls(t *testing.T) {
	t.Parallel()
	var last string
	var mu sync.Mutex
	f := newFake(t, conversefake.Config{Brain: func(req *openaifake.Request) openaifake.Answer {
		mu.Lock()
		last = req.Messages[len(req.Messages)-1].Content
		mu.Unlock()
		return openaifake.Answer{Content: "The report.", ToolCalls: []openaifake.ToolCall{{Name: "search", Arguments: `{}`}}}
	}})
	m := newModel(t, f, nova)
	resp, err := m.Complete(context.Background(), llm.Request{Tools: []llm.ToolSpec{searchTool}, ToolChoice: llm.ToolChoiceNone,
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Topic."},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{llm.NewToolCall("c1", "search", `{}`)}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: ""},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 0 || resp.Message.Content != "The report." || resp.FinishReason != llm.FinishStop {
		t.Errorf("response %+v", resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if last != bedrock.NoToolsNote {
		t.Errorf("last message %q, want the note", last)
	}
}

// Each refusal of Bedrock becomes the llm sentinel the step acts on, with
// whether the request was sent.
func TestFailuresMapToSentinels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	small := conversefake.Config{RPM: 1, Models: map[string]conversefake.ModelSpec{nova: {ContextWindow: 300, MaxOutput: 100, MinCacheTokens: 1024}},
		Brain: func(req *openaifake.Request) openaifake.Answer {
			if strings.Contains(req.Messages[len(req.Messages)-1].Content, "fail") {
				return openaifake.Answer{Fault: openaifake.ServerError}
			}
			return openaifake.Answer{Content: "ok"}
		}}
	f := newFake(t, small)
	m := newModel(t, f, nova)
	ask := func(m *bedrock.Model, text string, capTokens int) error {
		_, err := m.Complete(ctx, llm.Request{MaxCompletionTokens: capTokens, Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}})
		return err
	}
	if err := ask(m, "hello", 50); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
		sent bool
	}{
		{"throttled", ask(m, "again", 50), llm.ErrRateLimited, true},
		{"over the window", ask(m, strings.Repeat("word ", 400), 50), llm.ErrContextLength, true},
		{"over the output limit", ask(m, "hello", 500), llm.ErrPermanent, true},
		{"unknown model", ask(newModel(t, f, "meta.unknown-v1:0"), "hello", 50), llm.ErrPermanent, true},
		{"bad signature", ask(mustModel(t, f, "wrong-secret"), "hello", 50), llm.ErrPermanent, true},
		{"unreachable", ask(unreachable(t), "hello", 50), llm.ErrTransient, false},
	} {
		var ce *llm.CallError
		if !errors.As(tc.err, &ce) || !errors.Is(tc.err, tc.want) || ce.Sent != tc.sent {
			t.Errorf("%s: %v (sent %v), want %v (sent %v)", tc.name, tc.err, ce != nil && ce.Sent, tc.want, tc.sent)
		}
	}
	g := newFake(t, conversefake.Config{Brain: small.Brain})
	if err := ask(newModel(t, g, nova), "please fail", 50); !errors.Is(err, llm.ErrTransient) {
		t.Errorf("a 500 InternalServerException: %v, want ErrTransient", err)
	}
	st := f.Stats()
	if st.ThrottledRPM == 0 || st.Unauthorized != 1 || st.NotFound != 1 {
		t.Errorf("stats %+v", st)
	}
}

// mustModel is a model on the fake signing with another secret.
func mustModel(t *testing.T, f *conversefake.Server, secret string) *bedrock.Model {
	t.Helper()
	c := f.Config()
	other := conversefake.New(conversefake.Config{AccessKeyID: c.AccessKeyID, SecretAccessKey: secret})
	defer other.Close()
	m, err := bedrock.New(context.Background(), bedrock.Config{Model: nova, Endpoint: f.URL(), AWS: awsConfig(other)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// unreachable is a model whose endpoint refuses connections.
func unreachable(t *testing.T) *bedrock.Model {
	t.Helper()
	f := conversefake.New(conversefake.Config{})
	url, cfg := f.URL(), awsConfig(f)
	f.Close()
	m, err := bedrock.New(context.Background(), bedrock.Config{Model: nova, Endpoint: url, AWS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Model ids of inference profiles and ARNs find their foundation model's
// profile and price; an unknown model has no price.
func TestProfilesAndPrices(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"us.anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic.claude-3-5-haiku-20241022-v1:0",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-3-5-haiku-20241022-v1:0"} {
		if got := bedrock.FoundationModel(id); got != "anthropic.claude-3-5-haiku-20241022-v1:0" {
			t.Errorf("%s: foundation model %s", id, got)
		}
		p, ok := bedrock.PriceOf(id)
		if !ok || p.Input != 0.80 || p.CacheWrite != 1.00 || p.CachedInput != 0.08 || p.Output != 4.00 {
			t.Errorf("%s: price %+v %v", id, p, ok)
		}
	}
	if _, ok := bedrock.PriceOf("meta.unknown-v1:0"); ok {
		t.Error("an unknown model has a price")
	}
	u := llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 200_000, CacheWriteTokens: 300_000, CompletionTokens: 100_000}
	p, _ := bedrock.PriceOf("anthropic.claude-3-5-haiku-20241022-v1:0")
	if got, want := p.Cost(u), 0.5*0.80+0.2*0.08+0.3*1.00+0.1*4.00; math.Abs(got-want) > 1e-12 {
		t.Errorf("cost %g, want %g", got, want)
	}
	n, _ := bedrock.PriceOf(nova) // no cache-write price: writes at the input rate
	if got, want := n.Cost(u), 0.8*0.06+0.2*0.015+0.1*0.24; math.Abs(got-want) > 1e-12 {
		t.Errorf("nova cost %g, want %g", got, want)
	}
}

// Conversations Converse would refuse as they are stored are sent in its
// shape: an assistant first, two user turns in a row, blank text, an empty
// tool result and arguments that are not JSON all pass its checks.
func TestOddConversationsAreSentInConverseShape(t *testing.T) {
	t.Parallel()
	var seen *openaifake.Request
	var mu sync.Mutex
	f := newFake(t, conversefake.Config{Brain: func(req *openaifake.Request) openaifake.Answer {
		mu.Lock()
		seen = req
		mu.Unlock()
		return openaifake.Answer{Content: "ok"}
	}})
	m := newModel(t, f, nova)
	bad := llm.ToolCall{ID: "c1", Name: "search", InvalidArguments: `{"query": "cut`}
	_, err := m.Complete(context.Background(), llm.Request{Tools: []llm.ToolSpec{searchTool}, Messages: []llm.Message{
		{Role: llm.RoleAssistant, Content: "I start."},
		{Role: llm.RoleUser, Content: "a"},
		{Role: llm.RoleUser, Content: "  "},
		{Role: llm.RoleSystem, Content: "b"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{bad}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: ""},
	}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var roles []string
	for _, m := range seen.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,user,assistant,tool" {
		t.Errorf("roles %s", got)
	}
	if seen.Messages[2].Content != "a\nb" || seen.Messages[3].ToolCalls[0].Arguments != `{"invalid_arguments":"{\"query\": \"cut"}` ||
		seen.Messages[4].Content != "(empty)" {
		t.Errorf("the brain saw %+v", seen.Messages)
	}
}

// Traces name Bedrock as the provider of its calls (gen_ai.provider.name),
// not the OpenAI-compatible default.
func TestDeclaresItsGenAIProvider(t *testing.T) {
	var m llm.Model = &bedrock.Model{}
	p, ok := m.(interface{ GenAIProvider() string })
	if !ok || p.GenAIProvider() != "aws.bedrock" {
		t.Fatalf("the Bedrock model does not declare gen_ai.provider.name aws.bedrock")
	}
}

// TestAnswerIDAndServer: an answer carries Bedrock's request id, and the
// model says which host and port it calls: the endpoint set, else the
// Region's.
func TestAnswerIDAndServer(t *testing.T) {
	t.Parallel()
	f := newFake(t, conversefake.Config{})
	m := newModel(t, f, nova)
	resp, err := m.Complete(context.Background(), llm.Request{MaxCompletionTokens: 50,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Topic: tides."}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID != "conversefake" {
		t.Errorf("answer id %q, want the request id the fake sent", resp.ID)
	}
	if host, port := m.ServerAddress(); host != "127.0.0.1" || port == 0 || !strings.Contains(f.URL(), fmt.Sprintf(":%d", port)) {
		t.Errorf("server %s:%d, want the fake's %s", host, port, f.URL())
	}
	r, err := bedrock.New(context.Background(), bedrock.Config{Model: nova, Region: "eu-west-3", AWS: awsConfig(f),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if host, port := r.ServerAddress(); host != "bedrock-runtime.eu-west-3.amazonaws.com" || port != 443 {
		t.Errorf("Region's server %s:%d", host, port)
	}
}
