package openai

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	oai "github.com/sashabaranov/go-openai"

	"github.com/gbresearch/gb/jobs/llm"
)

// response converts the first choice of a chat completion and prices it.
// Odd answers are made usable rather than refused: see toolCalls and
// clean. An answer with nothing to use is ErrUnusable, with what it cost.
func (m *Model) response(r oai.ChatCompletionResponse, limits *llm.RateLimits) (llm.Response, error) {
	usage := m.usage(r.Usage)
	unusable := func(format string, args ...any) error {
		err := fmt.Errorf("openai %s: %w: "+format, append([]any{m.name, llm.ErrUnusable}, args...)...)
		return &llm.CallError{Err: err, Usage: usage, Limits: limits, Sent: true}
	}
	if len(r.Choices) == 0 {
		return llm.Response{}, unusable("no choices")
	}
	choice := r.Choices[0]
	msg := choice.Message
	out := llm.Response{
		ID:           llm.CleanText(r.ID),
		Message:      llm.Message{Role: llm.RoleAssistant, Content: llm.CleanText(msg.Content)},
		Usage:        usage,
		FinishReason: string(choice.FinishReason),
		Limits:       limits,
	}
	if refusal := llm.CleanText(msg.Refusal); refusal != "" {
		out.Refused = true
		out.Message.Content = strings.TrimSpace(out.Message.Content + "\n\n" + refusal)
	}
	out.Message.ToolCalls = m.toolCalls(r.ID, choice)
	if out.Message.Content == "" && len(out.Message.ToolCalls) == 0 {
		return llm.Response{}, unusable("the message has neither content nor tool calls (finish_reason %q)", choice.FinishReason)
	}
	return out, nil
}

// toolCalls converts the calls of a choice. A call of another type than
// function, or with no function name, is dropped with a warning; a call
// with no id gets one made from the response id and the call (see callID).
// Arguments cut off or not a JSON object are kept as the model sent them
// (llm.ToolCall.InvalidArguments), for the tool to tell the model.
func (m *Model) toolCalls(responseID string, choice oai.ChatCompletionChoice) []llm.ToolCall {
	var out []llm.ToolCall
	for i, tc := range choice.Message.ToolCalls {
		name := llm.CleanText(tc.Function.Name)
		if (tc.Type != "" && tc.Type != oai.ToolTypeFunction) || name == "" {
			m.log.Warn("openai: dropping a tool call that is not a named function call",
				slog.String("model", m.name), slog.Int("index", i), slog.String("type", llm.CleanText(string(tc.Type))))
			continue
		}
		args := cleanArguments(tc.Function.Arguments)
		id := llm.CleanText(tc.ID)
		if id == "" {
			id = callID(responseID, i, name, args)
		}
		call := llm.NewToolCall(id, name, args)
		if call.InvalidArguments != "" {
			m.log.Warn("openai: tool call arguments are not a JSON object; the tool will tell the model",
				slog.String("model", m.name), slog.String("call_id", id), slog.String("tool", name),
				slog.Int("bytes", len(args)), slog.String("finish_reason", string(choice.FinishReason)))
		}
		out = append(out, call)
	}
	return out
}

// callID is the id given to a tool call that came without one: "call_gb_"
// and a short hash of the response id, the call's index, name and
// arguments, so that the same answer always gets the same id.
func callID(responseID string, index int, name, args string) string {
	h := sha256.New()
	for _, s := range []string{responseID, strconv.Itoa(index), name, args} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "call_gb_" + hex.EncodeToString(h.Sum(nil)[:8])
}

// cleanArguments is llm.CleanText for the JSON text of arguments, which also drops
// the escape \u0000 (Postgres jsonb refuses it). Escapes are read in pairs
// so that an escaped backslash followed by "u0000" is left alone.
func cleanArguments(s string) string {
	s = llm.CleanText(s)
	if !strings.Contains(s, `\u0000`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '\\':
			b.WriteByte(s[i])
		case strings.HasPrefix(s[i:], `\u0000`):
			i += len(`\u0000`) - 1
		case i+1 < len(s):
			b.WriteString(s[i : i+2])
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// usage counts the tokens, the cached and reasoning ones included, and
// prices them; an unknown model's calls cost 0.
func (m *Model) usage(u oai.Usage) llm.Usage {
	out := llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedPromptTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	if m.profile.Priced {
		out.CostUSD = m.profile.Price.Cost(out)
	}
	return out
}
