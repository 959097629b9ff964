package bedrock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/gbresearch/gb/infra/bedrock"
	"github.com/gbresearch/gb/infra/bedrock/conversefake"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs/llm"
)

// exactArgs holds an integer past float64's precision and a number past
// its range: both must reach the model, and come back, as written.
const exactArgs = `{"query":"tides","n":12345678901234567890,"x":1e400,"f":0.1000000000000000055511151231257827}`

// Tool arguments pass both ways byte for byte in their numbers: a past
// call's arguments are sent as they were, and a new call's come back so.
func TestToolArgumentsKeepTheirNumbers(t *testing.T) {
	t.Parallel()
	var seen string
	var mu sync.Mutex
	f := newFake(t, conversefake.Config{Brain: func(req *openaifake.Request) openaifake.Answer {
		mu.Lock()
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				seen = c.Arguments
			}
		}
		mu.Unlock()
		return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{ID: "call_2", Name: "search", Arguments: exactArgs}}}
	}})
	resp, err := newModel(t, f, nova).Complete(context.Background(), llm.Request{Tools: []llm.ToolSpec{searchTool},
		MaxCompletionTokens: 500, Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Topic: tides."},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{llm.NewToolCall("call_1", "search", exactArgs)}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: "Tides follow the moon."},
		}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range []string{"12345678901234567890", "1e400", "0.1000000000000000055511151231257827"} {
		if !strings.Contains(seen, n) {
			t.Errorf("the replayed arguments %s lost %s", seen, n)
		}
		if got := string(resp.Message.ToolCalls[0].Arguments); !strings.Contains(got, n) {
			t.Errorf("the answered arguments %s lost %s", got, n)
		}
	}
}

// An answer that stops on malformed_tool_use is unusable, billed, and its
// text is not taken for an answer (nor, on a last step, for a report).
func TestMalformedToolUseIsUnusable(t *testing.T) {
	t.Parallel()
	f := newFake(t, conversefake.Config{Brain: func(*openaifake.Request) openaifake.Answer {
		return openaifake.Answer{Content: "Here is my report.", ToolCalls: []openaifake.ToolCall{{ID: "c", Name: "search",
			Arguments: `{"query": "cut`}}}
	}})
	resp, err := newModel(t, f, nova).Complete(context.Background(), llm.Request{Tools: []llm.ToolSpec{searchTool},
		MaxCompletionTokens: 500, Messages: []llm.Message{{Role: llm.RoleUser, Content: "Topic: tides."}}})
	var ce *llm.CallError
	if !errors.As(err, &ce) || !errors.Is(err, llm.ErrUnusable) || ce.Usage.CompletionTokens == 0 ||
		!strings.Contains(err.Error(), "malformed_tool_use") {
		t.Fatalf("response %+v, err %v; want ErrUnusable with its usage", resp, err)
	}
	if calls := f.Calls(); len(calls) != 1 || calls[0].StopReason != "malformed_tool_use" {
		t.Fatalf("calls %+v", calls)
	}
}

// Every model's caps stay within its output limit, an unknown model's
// within its report cap; Claude 3.7 Sonnet and Claude 4 burn the quota at
// 5× their output; geography profiles of Claude 4.5 cost 10% over global.
func TestOutputLimitsBurndownAndRegionalPrices(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id            string
		most, burn    int
		input, output float64
	}{
		{nova, 5000, 1, 0.06, 0.24},
		{"meta.llama3-1-8b-instruct-v1:0", 2048, 1, 0.08, 0.32},
		{"us.anthropic.claude-3-7-sonnet-20250219-v1:0", 64_000, 5, 3.00, 15.00},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", 8192, 1, 0.80, 4.00},
		{"global.anthropic.claude-haiku-4-5-20251001-v1:0", 64_000, 5, 1.00, 5.00},
		{"us.anthropic.claude-haiku-4-5-20251001-v1:0", 64_000, 5, 1.10, 5.50},
		{"eu.anthropic.claude-sonnet-4-5-20250929-v1:0", 64_000, 5, 3.30, 16.50},
		{"apac.anthropic.claude-sonnet-4-5-20250929-v1:0", 64_000, 5, 3.30, 16.50},
		{"us.anthropic.claude-opus-4-1-20250805-v1:0", 32_000, 5, 15.00, 75.00},
		{"cohere.unknown-v1:0", 4096, 1, 0, 0},
	} {
		p := bedrock.ProfileOf(c.id, nil)
		if p.MaxCompletion != c.most || p.StepCap > c.most || p.ReportCap > c.most || p.OutputBurndown != c.burn ||
			math.Abs(p.Price.Input-c.input) > 1e-9 || math.Abs(p.Price.Output-c.output) > 1e-9 {
			t.Errorf("%s: profile %+v; want output limit %d, burndown %d, $%g/$%g", c.id, p, c.most, c.burn, c.input, c.output)
		}
	}
}

// The Converse fake refuses what Bedrock refuses: a cachePoint among the
// tools on Nova, toolChoice members a model does not take, a toolResult
// for an unknown toolUseId, and a maxTokens over the model's limit.
func TestConverseFakeRefusesWhatBedrockRefuses(t *testing.T) {
	t.Parallel()
	f := newFake(t, conversefake.Config{})
	c := bedrockruntime.NewFromConfig(*awsConfig(f), func(o *bedrockruntime.Options) {
		o.BaseEndpoint, o.Retryer = aws.String(f.URL()), aws.NopRetryer{}
	})
	schema := document.NewLazyDocument(map[string]any{"type": "object", "properties": map[string]any{}})
	spec := &types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String("search"),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}}
	user := types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}
	ask := func(model string, tc *types.ToolConfiguration, maxTokens int32, msgs ...types.Message) error {
		in := &bedrockruntime.ConverseInput{ModelId: aws.String(model), Messages: append([]types.Message{user}, msgs...),
			ToolConfig: tc}
		if maxTokens > 0 {
			in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(maxTokens)}
		}
		_, err := c.Converse(context.Background(), in)
		return err
	}
	cached := &types.ToolConfiguration{Tools: []types.Tool{spec,
		&types.ToolMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}}}}
	choice := func(ch types.ToolChoice) *types.ToolConfiguration {
		return &types.ToolConfiguration{Tools: []types.Tool{spec}, ToolChoice: ch}
	}
	strayResult := types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
		&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String("tooluse_unknown"),
			Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "x"}}}}}}
	said := types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "ok"}}}
	const claude, llama = "anthropic.claude-3-5-haiku-20241022-v1:0", "meta.llama3-1-8b-instruct-v1:0"
	for _, tc := range []struct {
		name    string
		err     error
		refused bool
	}{
		{"tool cachePoint on Nova", ask(nova, cached, 100), true},
		{"tool cachePoint on Claude", ask(claude, cached, 100), false},
		{"toolChoice any on Llama", ask(llama, choice(&types.ToolChoiceMemberAny{}), 100), true},
		{"toolChoice tool on Llama", ask(llama, choice(&types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String("search")}}), 100), true},
		{"toolChoice auto on Llama", ask(llama, choice(&types.ToolChoiceMemberAuto{}), 100), false},
		{"toolChoice any on Claude", ask(claude, choice(&types.ToolChoiceMemberAny{}), 100), false},
		{"toolChoice of a tool not offered", ask(claude, choice(&types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String("fetch")}}), 100), true},
		{"unknown toolUseId", ask(claude, choice(nil), 100, said, strayResult), true},
		{"maxTokens over Nova's 5000", ask(nova, nil, 5001), true},
		{"maxTokens at Nova's 5000", ask(nova, nil, 5000), false},
	} {
		if refused := tc.err != nil; refused != tc.refused || refused && !strings.Contains(tc.err.Error(), "ValidationException") {
			t.Errorf("%s: %v; want refused %t (ValidationException)", tc.name, tc.err, tc.refused)
		}
	}
}
