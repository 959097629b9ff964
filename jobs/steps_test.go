package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// windowModel is a scripted model with a known context window, so that
// its requests go through compaction.
type windowModel struct {
	scriptModel
	window int
}

func (m *windowModel) Profile() llm.Profile { return llm.Profile{ContextWindow: m.window} }

// A step records its model, when it started, how long its answered call
// took, the calls that did not answer it with what happened to each, and
// the compaction its request went through: here step 1 is rate limited
// once, and step 2 is refused once as too long for the window, so that it
// is asked again compacted harder.
func TestStepsRecordRetriesCompactionAndTimes(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	const callTime = 30 * time.Millisecond
	model := &windowModel{window: 200_000, scriptModel: scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		n := calls.Add(1)
		switch {
		case n == 1:
			return llm.Message{}, &llm.CallError{Err: llm.ErrRateLimited, RetryAfter: 20 * time.Millisecond, Sent: true}
		case n == 3:
			return llm.Message{}, &llm.CallError{Err: llm.ErrContextLength, Sent: true}
		}
		time.Sleep(callTime)
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query": "context cancellation"}`)}}, nil
		case 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query":"WaitGroup"}`)}}, nil
		}
		return llm.Message{Content: "# Report\n\nDone."}, nil
	}}}
	b := setup(t, setupOpts{model: model})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "How is work cancelled?"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, run.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	page, err := jobs.Steps(ctx, b.pool, jobs.StepQuery{Run: run, Asc: true, Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Steps) != 3 || page.More {
		t.Fatalf("%d steps (more %t), want 3", len(page.Steps), page.More)
	}
	for i, s := range page.Steps {
		if s.Step != i+1 || s.Agent != "root" || s.Model != "script" || s.StartedAt == nil || s.StartedAt.After(s.CommittedAt) ||
			s.ModelMS < int(callTime/time.Millisecond) || s.Tokens.Prompt < 100 || s.Tokens.Completion != 10 {
			t.Errorf("step %d: %+v", i+1, s)
		}
	}
	s1, s2, s3 := page.Steps[0], page.Steps[1], page.Steps[2]
	if s1.Retries != 1 || len(s1.RetryOutcomes) != 1 || s1.RetryOutcomes[0] != "rate limited" || s1.Compaction != nil {
		t.Errorf("step 1: retries %d %v, compaction %+v; want one rate-limited call and no compaction", s1.Retries, s1.RetryOutcomes, s1.Compaction)
	}
	if c := s2.Compaction; s2.Retries != 1 || len(s2.RetryOutcomes) != 1 || s2.RetryOutcomes[0] != "context_length_exceeded" ||
		c == nil || c.Level != 1 || c.TokensBefore <= 0 || c.TokensAfter <= 0 || c.TokensAfter > c.TokensBefore {
		t.Errorf("step 2: retries %d %v, compaction %+v; want one refusal and a compaction at level 1", s2.Retries, s2.RetryOutcomes, c)
	}
	if s3.Retries != 0 || len(s3.RetryOutcomes) != 0 || s3.Compaction != nil {
		t.Errorf("step 3: retries %d %v, compaction %+v; want none", s3.Retries, s3.RetryOutcomes, s3.Compaction)
	}
	// What the step added: the topic, the model's call with its arguments
	// and the tool's result.
	m := s1.Messages
	if len(m) != 3 || m[0].Role != llm.RoleUser || m[0].Content != "How is work cancelled?" ||
		len(m[1].ToolCalls) != 1 || m[1].ToolCalls[0].Name != "search" || m[1].ToolCalls[0].Arguments != `{"query":"context cancellation"}` ||
		m[2].Role != llm.RoleTool || m[2].Name != "search" || m[2].Content == "" || m[2].ToolCallID != m[1].ToolCalls[0].ID {
		t.Errorf("step 1 messages: %+v", m)
	}
	if len(s3.Messages) != 1 || s3.Messages[0].Content != "# Report\n\nDone." {
		t.Errorf("step 3, the report: messages %+v", s3.Messages)
	}
}

// A step made through the OpenAI client against openaifake records what a
// provider reports: the model, reasoning tokens, prompt tokens read from
// the cache once the prefix repeats, and the failed call before the answer.
func TestStepsRecordAProvidersUsage(t *testing.T) {
	t.Parallel()
	fake := openaifake.New(openaifake.Config{Brain: func(req *openaifake.Request) openaifake.Answer {
		for _, m := range req.Messages {
			if m.Role == llm.RoleTool {
				return openaifake.Answer{Content: "# Report\n\nFound it."}
			}
		}
		return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{Name: "search", Arguments: `{"query":"WaitGroup"}`}}}
	}})
	defer fake.Close()
	fake.Inject(openaifake.ServerError, 1)
	model, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: openaifake.DefaultAPIKey, Model: "o4-mini"})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, setupOpts{model: model})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "How does sync.WaitGroup work?"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, run.ID, 60*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	page, err := jobs.Steps(ctx, b.pool, jobs.StepQuery{Run: run, Asc: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Steps) != 2 {
		t.Fatalf("%d steps, want 2", len(page.Steps))
	}
	s1, s2 := page.Steps[0], page.Steps[1]
	if s1.Model != "o4-mini" || s1.Retries != 1 || len(s1.RetryOutcomes) != 1 || s1.RetryOutcomes[0] != "failed" ||
		s1.Tokens.Reasoning <= 0 || s1.CostUSD <= 0 {
		t.Errorf("step 1: %+v; want o4-mini with reasoning tokens, a cost and the failed call before it", s1)
	}
	if s2.Retries != 0 || s2.Tokens.Cached <= 0 || s2.Tokens.Cached > s2.Tokens.Prompt || s2.Tokens.Reasoning <= 0 {
		t.Errorf("step 2: %+v; want cached prompt tokens (the repeated prefix) and reasoning tokens, no retry", s2)
	}
}
