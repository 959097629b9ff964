package bedrock

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/gbresearch/gb/jobs/llm"
)

// finishReasons maps Converse's stopReason to llm's finish reasons.
var finishReasons = map[types.StopReason]string{
	types.StopReasonEndTurn:                    llm.FinishStop,
	types.StopReasonStopSequence:               llm.FinishStop,
	types.StopReasonToolUse:                    llm.FinishToolCalls,
	types.StopReasonMaxTokens:                  llm.FinishLength,
	types.StopReasonModelContextWindowExceeded: llm.FinishLength,
	types.StopReasonGuardrailIntervened:        llm.FinishContentFilter,
	types.StopReasonContentFiltered:            llm.FinishContentFilter,
}

// malformedStops are the stop reasons of an answer the model botched: a
// tool call it could not form, or output that is not what it was asked for.
// What text such an answer holds is not the model's answer (least of all a
// report): it is ErrUnusable, billed, and the step asks again.
var malformedStops = []types.StopReason{types.StopReasonMalformedToolUse, types.StopReasonMalformedModelOutput}

// response converts a Converse answer and prices it, by its stop reason
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
// end_turn, stop_sequence and tool_use are answers; max_tokens and
// model_context_window_exceeded are answers cut short (FinishLength); a
// guardrail that intervened or content that was filtered makes a refusal
// (the text is what the guardrail or filter left); malformed_tool_use and
// malformed_model_output, and an answer with nothing to use, are
// ErrUnusable with what they cost. A tool call in the answer to a request
// that forbade them is dropped.
func (m *Model) response(req llm.Request, out *bedrockruntime.ConverseOutput) (llm.Response, error) {
	usage := m.usage(out.Usage)
	if slices.Contains(malformedStops, out.StopReason) {
		err := fmt.Errorf("bedrock %s: %w: the model stopped with %s; its answer is not used", m.name, llm.ErrUnusable,
			out.StopReason)
		return llm.Response{}, &llm.CallError{Err: err, Usage: usage, Sent: true}
	}
	finish, known := finishReasons[out.StopReason]
	if !known {
		finish = string(out.StopReason) // a stop reason newer than this table
	}
	requestID, _ := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	resp := llm.Response{ID: requestID, Message: llm.Message{Role: llm.RoleAssistant}, Usage: usage, FinishReason: finish,
		Refused: finish == llm.FinishContentFilter}
	var text []string
	if msg, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for i, b := range msg.Value.Content {
			switch b := b.(type) {
			case *types.ContentBlockMemberText:
				if t := llm.CleanText(b.Value); t != "" {
					text = append(text, t)
				}
			case *types.ContentBlockMemberToolUse:
				if call, ok := m.toolCall(i, b.Value); ok {
					resp.Message.ToolCalls = append(resp.Message.ToolCalls, call)
				}
			}
		}
	}
	resp.Message.Content = strings.Join(text, "\n\n")
	if !req.MayCallTools() && len(resp.Message.ToolCalls) > 0 {
		m.log.Warn("bedrock: dropping tool calls the request did not allow", slog.String("model", m.name),
			slog.Int("calls", len(resp.Message.ToolCalls)))
		resp.Message.ToolCalls = nil
		if resp.FinishReason == llm.FinishToolCalls {
			resp.FinishReason = llm.FinishStop
		}
	}
	if resp.Message.Content == "" && len(resp.Message.ToolCalls) == 0 {
		err := fmt.Errorf("bedrock %s: %w: the message has neither text nor tool calls (stopReason %q)",
			m.name, llm.ErrUnusable, out.StopReason)
		return llm.Response{}, &llm.CallError{Err: err, Usage: usage, Sent: true}
	}
	return resp, nil
}

// toolCall converts a toolUse block; one with no name is dropped, one with
// no id gets one made from its position.
func (m *Model) toolCall(i int, b types.ToolUseBlock) (llm.ToolCall, bool) {
	name := llm.CleanText(deref(b.Name))
	if name == "" {
		m.log.Warn("bedrock: dropping a toolUse block with no name", slog.String("model", m.name), slog.Int("index", i))
		return llm.ToolCall{}, false
	}
	id := llm.CleanText(deref(b.ToolUseId))
	if id == "" {
		id = fmt.Sprintf("call_gb_%d", i+1)
	}
	args := "{}"
	if b.Input != nil {
		raw, err := b.Input.MarshalSmithyDocument()
		if err != nil {
			m.log.Warn("bedrock: a toolUse input could not be read", slog.String("model", m.name),
				slog.String("call_id", id), slog.String("err", err.Error()))
			raw = nil
		}
		if len(raw) > 0 && json.Valid(raw) {
			args = string(raw)
		}
	}
	return llm.NewToolCall(id, name, llm.CleanText(args)), true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// usage counts the tokens and prices them. Converse's inputTokens are the
// prompt tokens neither read from nor written to the cache: the prompt is
// their sum with cacheReadInputTokens and cacheWriteInputTokens.
func (m *Model) usage(u *types.TokenUsage) llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	read, written := int(deref32(u.CacheReadInputTokens)), int(deref32(u.CacheWriteInputTokens))
	out := llm.Usage{PromptTokens: int(deref32(u.InputTokens)) + read + written, CachedPromptTokens: read,
		CacheWriteTokens: written, CompletionTokens: int(deref32(u.OutputTokens))}
	if m.profile.Priced {
		out.CostUSD = m.profile.Price.Cost(out)
	}
	return out
}

func deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
