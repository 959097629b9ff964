package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/gbresearch/gb/jobs/llm"
)

// NoToolsNote ends the last user message of a request that lists tools but
// may not call them (llm.ToolChoiceNone). Converse has no tool choice
// "none", and a conversation holding toolUse blocks must keep its
// toolConfig; so the tools stay (the cached prefix with them) and the
// model is told, at the end where it changes no cached prefix. A tool call
// it makes all the same is dropped from the answer.
const NoToolsNote = "[No tool may be called now: answer with text only.]"

// callIDKey is the requestMetadata key that names the call (llm.Request.ID)
// in Bedrock's invocation logs.
const callIDKey = "gb_call_id"

// emptyText stands for an empty tool result: Converse refuses blank text.
const emptyText = "(empty)"

// input converts an llm.Request to a Converse request.
func (m *Model) input(req llm.Request) (*bedrockruntime.ConverseInput, error) {
	if req.MaxCompletionTokens < 0 {
		return nil, fmt.Errorf("max completion tokens %d is negative", req.MaxCompletionTokens)
	}
	switch req.ToolChoice {
	case "", "auto", llm.ToolChoiceNone:
	default:
		return nil, fmt.Errorf("tool choice %q is not none or auto", req.ToolChoice)
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return nil, err
	}
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(m.name)}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
		if m.caching != cacheNone {
			in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: cachePoint()})
		}
	}
	// The cache point ends the conversation sent, which the next step's
	// request starts with; a note for this call alone comes after it.
	if m.caching != cacheNone {
		last := &msgs[len(msgs)-1]
		last.Content = append(last.Content, &types.ContentBlockMemberCachePoint{Value: cachePoint()})
	}
	if len(req.Tools) > 0 {
		if in.ToolConfig, err = m.toolConfig(req.Tools); err != nil {
			return nil, err
		}
		if req.ToolChoice == llm.ToolChoiceNone {
			msgs = withNote(msgs, NoToolsNote)
		}
	}
	in.Messages = msgs
	if req.MaxCompletionTokens > 0 {
		in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(min(req.MaxCompletionTokens, 1<<30)))}
	}
	if req.ID != "" {
		in.RequestMetadata = map[string]string{callIDKey: req.ID}
	}
	return in, nil
}

func cachePoint() types.CachePointBlock {
	return types.CachePointBlock{Type: types.CachePointTypeDefault}
}

// toolConfig converts the tools offered, with a cache point after them for
// the models that cache tools.
func (m *Model) toolConfig(specs []llm.ToolSpec) (*types.ToolConfiguration, error) {
	tc := &types.ToolConfiguration{}
	for i, t := range specs {
		if t.Name == "" {
			return nil, fmt.Errorf("tool %d has no name", i)
		}
		var schema any = map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.Parameters) > 0 {
			var err error
			if schema, err = exactJSON(t.Parameters); err != nil {
				return nil, fmt.Errorf("tool %s: parameters are not valid JSON: %w", t.Name, err)
			}
		}
		spec := types.ToolSpecification{Name: aws.String(t.Name),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)}}
		if t.Description != "" {
			spec.Description = aws.String(t.Description)
		}
		tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
	}
	if m.caching == cacheAll {
		tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: cachePoint()})
	}
	return tc, nil
}

// messages converts the conversation into Converse's alternation of user
// and assistant messages: tool results become toolResult blocks of a user
// message, consecutive turns of one side are merged into one message, and
// a conversation that starts with the assistant gets a user turn first.
// Blank text is left out (Converse refuses it).
func messages(in []llm.Message) ([]types.Message, error) {
	var out []types.Message
	add := func(role types.ConversationRole, blocks ...types.ContentBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, types.Message{Role: role, Content: blocks})
	}
	for i, msg := range in {
		switch msg.Role {
		case llm.RoleUser, llm.RoleSystem:
			add(types.ConversationRoleUser, textBlocks(msg.Content)...)
		case llm.RoleAssistant:
			blocks := textBlocks(msg.Content)
			for j, c := range msg.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return nil, fmt.Errorf("message %d: tool call %d has no id or no name", i, j)
				}
				use, err := toolUse(c)
				if err != nil {
					return nil, fmt.Errorf("message %d: %w", i, err)
				}
				blocks = append(blocks, use)
			}
			if len(out) == 0 && len(blocks) > 0 {
				add(types.ConversationRoleUser, textBlocks("(continued)")...)
			}
			add(types.ConversationRoleAssistant, blocks...)
		case llm.RoleTool:
			if msg.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool message has no tool_call_id", i)
			}
			text := msg.Content
			if strings.TrimSpace(text) == "" {
				text = emptyText
			}
			add(types.ConversationRoleUser, &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
				ToolUseId: aws.String(msg.ToolCallID),
				Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}},
			}})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the conversation has no message with text")
	}
	return out, nil
}

// textBlocks is a text block of s, or none when s is blank.
func textBlocks(s string) []types.ContentBlock {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return []types.ContentBlock{&types.ContentBlockMemberText{Value: s}}
}

// toolUse is a past tool call as a toolUse block. Its input must be a JSON
// object: arguments the model sent invalid are replayed as an object that
// quotes them, {"invalid_arguments": "<text>"}.
func toolUse(tc llm.ToolCall) (types.ContentBlock, error) {
	call := llm.NewToolCall(tc.ID, tc.Name, tc.ArgumentsText())
	var input any = map[string]string{"invalid_arguments": call.InvalidArguments}
	if call.InvalidArguments == "" {
		var err error
		if input, err = exactJSON(call.Arguments); err != nil {
			return nil, fmt.Errorf("tool call %s (%s): %w", tc.ID, tc.Name, err)
		}
	}
	return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
		ToolUseId: aws.String(tc.ID), Name: aws.String(tc.Name), Input: document.NewLazyDocument(input)}}, nil
}

// exactJSON decodes raw for a document, keeping its numbers as they were
// written: a document.Number is sent as its literal, where a float64 would
// change a large integer (12345678901234567890) and refuse one out of its
// range (1e400).
func exactJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("text after the JSON value")
	}
	return literalNumbers(v), nil
}

// literalNumbers replaces the json.Numbers of a decoded value with
// document.Numbers, which the SDK writes as they are (a json.Number, a
// string type, would be written as a string).
func literalNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		return smithydocument.Number(v)
	case map[string]any:
		for k, e := range v {
			v[k] = literalNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = literalNumbers(e)
		}
	}
	return v
}

// withNote ends the conversation with a user text: appended to the last
// message when it is the user's, in a user message of its own otherwise.
func withNote(msgs []types.Message, note string) []types.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == types.ConversationRoleUser {
		msgs[n-1].Content = append(msgs[n-1].Content, &types.ContentBlockMemberText{Value: note})
		return msgs
	}
	return append(msgs, types.Message{Role: types.ConversationRoleUser,
		Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: note}}})
}
