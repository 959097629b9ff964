package openaifake

import (
	"context"
	"testing"
	"time"

	oai "github.com/sashabaranov/go-openai"
)

// cachedTokens sends a system prompt and a question with go-openai and
// returns the cached tokens reported.
func cachedTokens(t *testing.T, c *oai.Client, model, system, question string, tools []oai.Tool) int {
	t.Helper()
	resp, err := c.CreateChatCompletion(context.Background(), oai.ChatCompletionRequest{Model: model, Tools: tools,
		Messages: []oai.ChatCompletionMessage{{Role: oai.ChatMessageRoleSystem, Content: system},
			{Role: oai.ChatMessageRoleUser, Content: question}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.PromptTokensDetails == nil {
		t.Fatalf("usage %+v has no prompt_tokens_details", resp.Usage)
	}
	return resp.Usage.PromptTokensDetails.CachedTokens
}

func TestPromptCache(t *testing.T) {
	srv, clk := start(t, Config{})
	c := client(srv, testKey)
	system := words(2000, "abcd")
	if got := cachedTokens(t, c, "gpt-4o-mini", system, "first?", nil); got != 0 {
		t.Errorf("first call: cached %d, want 0", got)
	}
	// The same system prompt: 2004 tokens match (the framing of the user
	// message included), 15 whole blocks of 128.
	if got := cachedTokens(t, c, "gpt-4o-mini", system, "second?", nil); got != 1920 {
		t.Errorf("same prefix: cached %d, want 1920", got)
	}
	if got := cachedTokens(t, c, "gpt-4.1-mini", system, "second?", nil); got != 0 {
		t.Errorf("another model: cached %d, want 0", got)
	}
	if got := cachedTokens(t, c, "gpt-4o-mini", words(2000, "wxyz"), "second?", nil); got != 0 {
		t.Errorf("first word changed: cached %d, want 0", got)
	}
	spaced := " " + system
	if got := cachedTokens(t, c, "gpt-4o-mini", spaced, "second?", nil); got != 0 {
		t.Errorf("a space added at the start: cached %d, want 0", got)
	}
	tool := []oai.Tool{{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: "find"}}}
	if got := cachedTokens(t, c, "gpt-4o-mini", system, "second?", tool); got != 0 {
		t.Errorf("a tool added before the messages: cached %d, want 0", got)
	}
	clk.Advance(9 * time.Minute)
	if got := cachedTokens(t, c, "gpt-4o-mini", system, "third?", nil); got != 1920 {
		t.Errorf("9 minutes later: cached %d, want 1920", got)
	}
	clk.Advance(10 * time.Minute)
	if got := cachedTokens(t, c, "gpt-4o-mini", system, "fourth?", nil); got != 0 {
		t.Errorf("10 minutes after its last use: cached %d, want 0", got)
	}
	if got := srv.Stats().CachedTokens; got != 2*1920 {
		t.Errorf("Stats.CachedTokens = %d, want %d", got, 2*1920)
	}
}

func TestPromptCacheShortPrompts(t *testing.T) {
	srv, _ := start(t, Config{})
	c := client(srv, testKey)
	// 1000 words, the question and the framing: 1010 tokens, under 1024,
	// never cached.
	short := words(1000, "abcd")
	cachedTokens(t, c, "gpt-4o-mini", short, "q", nil)
	if got := cachedTokens(t, c, "gpt-4o-mini", short, "q", nil); got != 0 {
		t.Errorf("a 1010-token prompt: cached %d, want 0", got)
	}
	// A long prompt whose shared prefix is under 1024 tokens caches nothing.
	cachedTokens(t, c, "gpt-4o-mini", words(1100, "abcd"), "q", nil)
	if got := cachedTokens(t, c, "gpt-4o-mini", words(1000, "abcd")+" wxyz "+words(100, "abcd"), "q", nil); got != 0 {
		t.Errorf("1001 tokens shared: cached %d, want 0", got)
	}
}
