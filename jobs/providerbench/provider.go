package providerbench

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/gbresearch/gb/infra/bedrock"
	"github.com/gbresearch/gb/infra/bedrock/conversefake"
	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// startProvider starts the scenario's fake provider with brain and returns
// the real client of it: infra/openai on the OpenAI-compatible fake, or
// infra/bedrock through the AWS SDK on the Converse fake.
func (e *Env) startProvider(ctx context.Context, o EnvOptions, brain openaifake.Brain, logger *slog.Logger) (llm.Model, error) {
	if o.ProviderName != ProviderBedrock {
		pc := o.Provider
		pc.Brain = brain
		e.Fake = openaifake.New(pc)
		return openai.New(openai.Config{BaseURL: e.Fake.URL(), APIKey: apiKey(pc), Model: e.Model,
			Profiles: o.Profiles, Logger: logger})
	}
	cc := conversefake.Config{RPM: o.Provider.RPM, TPM: o.Provider.TPM, Latency: o.Provider.Latency,
		Brain: bedrockBrain(brain)}
	if o.Provider.Models != nil {
		cc.Models = map[string]conversefake.ModelSpec{}
		for name, m := range o.Provider.Models {
			cc.Models[name] = conversefake.ModelSpec{ContextWindow: m.ContextWindow, MaxOutput: m.MaxCompletion,
				MinCacheTokens: 1024}
		}
	}
	e.Converse = conversefake.New(cc)
	c := e.Converse.Config()
	ac := &aws.Config{Region: c.Region,
		Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")}
	return bedrock.New(ctx, bedrock.Config{Model: e.Model, Endpoint: e.Converse.URL(), AWS: ac,
		Profiles: o.Profiles, Logger: logger})
}

// bedrockBrain is brain behind the Converse fake: a request that ends
// with bedrock.NoToolsNote (Converse has no tool choice "none") is shown
// to it as tool_choice "none", as the model reads the note.
func bedrockBrain(brain openaifake.Brain) openaifake.Brain {
	return func(req *openaifake.Request) openaifake.Answer {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" &&
			strings.HasSuffix(req.Messages[n-1].Content, bedrock.NoToolsNote) {
			req.ToolChoice = "none"
		}
		return brain(req)
	}
}

// Stats is what the scenario's provider counted, in the OpenAI fake's
// terms: on Bedrock, PromptTokens counts every input token, CachedTokens
// those read from the cache, and ThrottlingExceptions are 429s.
func (e *Env) Stats() openaifake.Stats {
	if e.Converse == nil {
		return e.Fake.Stats()
	}
	s := e.Converse.Stats()
	return openaifake.Stats{Requests: s.Requests, Billed: s.Billed, Unauthorized: s.Unauthorized,
		BadRequests: s.BadRequests, NotFound: s.NotFound, OverWindow: s.OverWindow, Refused429RPM: s.ThrottledRPM,
		Refused429TPM: s.ThrottledTPM, ServerErrors: s.ServerErrors, MaxInFlight: s.MaxInFlight,
		PromptTokens: s.PromptTokens, CachedTokens: s.CacheReadTokens, CompletionTokens: s.CompletionTokens,
		CostUSD: s.CostUSD, TPMUsed: s.TPMUsed, FirstAccepted: s.FirstAccepted, LastAccepted: s.LastAccepted}
}

// CacheWriteTokens is the prompt tokens the provider wrote to its cache
// (Bedrock bills them at their own rate; OpenAI does not report them).
func (e *Env) CacheWriteTokens() int {
	if e.Converse == nil {
		return 0
	}
	return e.Converse.Stats().CacheWriteTokens
}

// Calls is the provider's billed calls, in the OpenAI fake's terms (the
// call's name is its ClientRequestID).
func (e *Env) Calls() []openaifake.Call {
	if e.Converse == nil {
		return e.Fake.Calls()
	}
	var out []openaifake.Call
	for _, c := range e.Converse.Calls() {
		out = append(out, openaifake.Call{Time: c.Time, Model: c.Model, PromptTokens: c.PromptTokens,
			CachedTokens: c.CacheReadTokens, CompletionTokens: c.CompletionTokens, MaxCompletionTokens: c.MaxTokens,
			FinishReason: c.StopReason, CostUSD: c.CostUSD, ClientRequestID: c.CallID})
	}
	return out
}

// pageSearch is a web search over the page server: every query finds its
// first three pages.
type pageSearch struct{ p *pages }

func (pageSearch) Name() string { return "pages" }

func (s pageSearch) Search(_ context.Context, query string, n int) ([]jobs.SearchResult, llm.Usage, error) {
	var out []jobs.SearchResult
	for i := 1; i <= min(max(n, 1), 3); i++ {
		out = append(out, jobs.SearchResult{Title: fmt.Sprintf("Page %d on %s", i, query), URL: s.p.URL(i),
			Snippet: fmt.Sprintf("The page %d of the benchmark.", i)})
	}
	return out, llm.Usage{}, nil
}
