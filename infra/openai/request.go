package openai

import (
	"encoding/json"
	"errors"
	"fmt"

	oai "github.com/sashabaranov/go-openai"

	"github.com/gbresearch/gb/jobs/llm"
)

// request converts an llm.Request to a chat-completion request. The cap is
// always sent as max_completion_tokens (reasoning models refuse max_tokens)
// and no sampling parameter is sent (they refuse temperature); a reasoning
// model also gets the configured reasoning_effort.
func (m *Model) request(req llm.Request) (oai.ChatCompletionRequest, error) {
	msgs := make([]oai.ChatCompletionMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, oai.ChatCompletionMessage{Role: oai.ChatMessageRoleSystem, Content: req.System})
	}
	for i, msg := range req.Messages {
		out, err := message(msg)
		if err != nil {
			return oai.ChatCompletionRequest{}, fmt.Errorf("message %d: %w", i, err)
		}
		msgs = append(msgs, out)
	}
	if req.MaxCompletionTokens < 0 {
		return oai.ChatCompletionRequest{}, fmt.Errorf("max completion tokens %d is negative", req.MaxCompletionTokens)
	}
	tools, err := toolSpecs(req.Tools)
	if err != nil {
		return oai.ChatCompletionRequest{}, err
	}
	out := oai.ChatCompletionRequest{Model: m.name, Messages: msgs, Tools: tools,
		MaxCompletionTokens: req.MaxCompletionTokens}
	switch req.ToolChoice {
	case "":
	case llm.ToolChoiceNone, "auto", "required":
		if len(tools) > 0 { // tool_choice without tools is refused
			out.ToolChoice = req.ToolChoice
		}
	default:
		return oai.ChatCompletionRequest{}, fmt.Errorf("tool choice %q is not none, auto or required", req.ToolChoice)
	}
	if m.profile.Reasoning {
		out.ReasoningEffort = m.effort
	}
	return out, nil
}

// toolSpecs converts the tools offered.
func toolSpecs(specs []llm.ToolSpec) ([]oai.Tool, error) {
	var tools []oai.Tool
	for i, t := range specs {
		if t.Name == "" {
			return nil, fmt.Errorf("tool %d has no name", i)
		}
		params := json.RawMessage(`{"type":"object","properties":{}}`)
		if len(t.Parameters) > 0 {
			if !json.Valid(t.Parameters) {
				return nil, fmt.Errorf("tool %s: parameters are not valid JSON", t.Name)
			}
			params = t.Parameters
		}
		tools = append(tools, oai.Tool{
			Type: oai.ToolTypeFunction,
			Function: &oai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	return tools, nil
}

// message converts one conversation turn.
func message(msg llm.Message) (oai.ChatCompletionMessage, error) {
	switch msg.Role {
	case llm.RoleSystem, llm.RoleUser:
		return oai.ChatCompletionMessage{Role: msg.Role, Content: msg.Content, Name: msg.Name}, nil
	case llm.RoleAssistant:
		out := oai.ChatCompletionMessage{Role: msg.Role, Content: msg.Content, Name: msg.Name}
		for j, tc := range msg.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return oai.ChatCompletionMessage{}, fmt.Errorf("tool call %d has no id or no name", j)
			}
			args, err := replayArguments(tc)
			if err != nil {
				return oai.ChatCompletionMessage{}, fmt.Errorf("tool call %s (%s): %w", tc.ID, tc.Name, err)
			}
			out.ToolCalls = append(out.ToolCalls, oai.ToolCall{
				ID:       tc.ID,
				Type:     oai.ToolTypeFunction,
				Function: oai.FunctionCall{Name: tc.Name, Arguments: args},
			})
		}
		return out, nil
	case llm.RoleTool:
		if msg.ToolCallID == "" {
			return oai.ChatCompletionMessage{}, errors.New("tool message has no tool_call_id")
		}
		return oai.ChatCompletionMessage{Role: msg.Role, Content: msg.Content, ToolCallID: msg.ToolCallID}, nil
	default:
		return oai.ChatCompletionMessage{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// replayArguments is the arguments string of a past tool call as it is sent
// back to the model. Many compatible servers parse it and answer 400 to
// anything but a JSON object, so arguments the model sent invalid are
// replayed as an object that quotes them: {"invalid_arguments": "<text>"}.
func replayArguments(tc llm.ToolCall) (string, error) {
	call := llm.NewToolCall(tc.ID, tc.Name, tc.ArgumentsText())
	if call.InvalidArguments == "" {
		return string(call.Arguments), nil
	}
	b, err := json.Marshal(map[string]string{"invalid_arguments": call.InvalidArguments})
	if err != nil {
		return "", fmt.Errorf("error quoting invalid arguments: %w", err)
	}
	return string(b), nil
}
