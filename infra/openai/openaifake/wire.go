package openaifake

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Request is a chat-completion request as the server decoded it from the
// wire: what a Brain reads.
type Request struct {
	Model    string
	Messages []Message
	Tools    []Tool
	// ToolChoice is "none", "auto" or "required" as sent, "function" for
	// {"type":"function",...} (ToolChoiceName then names the function), or
	// "" when the request has none.
	ToolChoice     string
	ToolChoiceName string
	// MaxCompletionTokens, MaxTokens and Temperature are nil when not sent.
	MaxCompletionTokens *int
	MaxTokens           *int
	Temperature         *float64
	// ReasoningEffort is "" when not sent.
	ReasoningEffort string

	// PromptTokens and CompletionCap are filled by the server: the prompt
	// as its tokenizer counts it, and the cap the answer is cut at.
	PromptTokens  int
	CompletionCap int
	// ClientRequestID is the request's X-Client-Request-Id header: the
	// caller's own name for the call ("" when not sent).
	ClientRequestID string
}

// Message is one message of a Request.
type Message struct {
	Role       string
	Content    string // text parts are joined; "" for null
	Name       string
	ToolCallID string
	ToolCalls  []ToolCall
}

// Tool is one function tool of a Request.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is a call of a function tool: in an assistant message of a
// Request, or in an Answer (where an empty ID is filled by the server).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// wireRequest is the body of a request, as OpenAI documents it.
type wireRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MaxTokens           *int            `json:"max_tokens"`
	Temperature         *float64        `json:"temperature"`
	ReasoningEffort     *string         `json:"reasoning_effort"`
	Stream              *bool           `json:"stream"`
	N                   *int            `json:"n"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type wirePart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// knownParams are the request parameters OpenAI documents for chat
// completions; any other is refused, as the API does.
var knownParams = []string{
	"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "max_completion_tokens",
	"max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop", "presence_penalty",
	"frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user", "seed", "response_format",
	"reasoning_effort", "store", "metadata", "service_tier", "prediction", "modalities", "audio",
	"verbosity", "web_search_options", "prompt_cache_key", "safety_identifier", "functions", "function_call",
}

// decodeRequest decodes and checks the shape of a request body.
func decodeRequest(body []byte) (*Request, *apiError) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, badRequest("", "", "We could not parse the JSON body of your request. (HINT: This likely means "+
			"you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "+
			"sent was not valid JSON.)")
	}
	for _, k := range sortedKeys(top) {
		if !slices.Contains(knownParams, k) {
			return nil, badRequest("", "", "Unrecognized request argument supplied: %s", k)
		}
	}
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, badRequest(typeErr.Field, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.",
				typeErr.Field, typeErr.Type, typeErr.Value)
		}
		return nil, badRequest("", "", "Invalid request body: %s", err)
	}
	return w.request()
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// request converts the wire form, refusing what the API refuses.
func (w *wireRequest) request() (*Request, *apiError) {
	if w.Model == "" {
		return nil, badRequest("model", "missing_required_parameter", "Missing required parameter: 'model'.")
	}
	if w.Stream != nil && *w.Stream {
		return nil, badRequest("stream", "unsupported_value", "Unsupported value: 'stream' is not supported by this fake server.")
	}
	if w.N != nil && *w.N != 1 {
		return nil, badRequest("n", "unsupported_value", "Unsupported value: 'n' must be 1 on this fake server.")
	}
	req := &Request{Model: w.Model, MaxCompletionTokens: w.MaxCompletionTokens, MaxTokens: w.MaxTokens,
		Temperature: w.Temperature}
	if w.ReasoningEffort != nil {
		req.ReasoningEffort = *w.ReasoningEffort
	}
	for i, t := range w.Tools {
		if t.Type != "function" || t.Function == nil || t.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "invalid_value",
				"Invalid 'tools[%d]': a tool must have type 'function' and a function with a name.", i)
		}
		if !validName(t.Function.Name) {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "invalid_value",
				"Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that "+
					"matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
		}
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description,
			Parameters: t.Function.Parameters})
	}
	if err := req.setToolChoice(w.ToolChoice); err != nil {
		return nil, err
	}
	if len(w.Messages) == 0 {
		return nil, badRequest("messages", "empty_array", "Invalid 'messages': empty array. Expected an array "+
			"with minimum length 1, but got an empty array instead.")
	}
	for i, m := range w.Messages {
		msg, err := m.message(i)
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

// validName reports whether a function name matches ^[a-zA-Z0-9_-]{1,64}$.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// setToolChoice decodes tool_choice: a string or a function object.
func (req *Request) setToolChoice(raw json.RawMessage) *apiError {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if len(req.Tools) == 0 {
		return badRequest("tool_choice", "", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "none" && s != "auto" && s != "required" {
			return badRequest("tool_choice", "invalid_value",
				"Invalid value: '%s'. Supported values are: 'none', 'auto', and 'required'.", s)
		}
		req.ToolChoice = s
		return nil
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
		return badRequest("tool_choice", "invalid_value", "Invalid value for 'tool_choice': expected a string or a function object.")
	}
	req.ToolChoice, req.ToolChoiceName = "function", obj.Function.Name
	return nil
}

// message converts message i.
func (m wireMessage) message(i int) (Message, *apiError) {
	at := func(field string) string { return fmt.Sprintf("messages.[%d].%s", i, field) }
	switch m.Role {
	case "system", "developer", "user", "assistant", "tool":
	default:
		return Message{}, badRequest(at("role"), "invalid_value", "Invalid value: '%s'. Supported values are: "+
			"'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role)
	}
	content, isNull, err := decodeContent(m.Content)
	if err != nil {
		return Message{}, badRequest(at("content"), "invalid_type", "Invalid type for '%s': %s", at("content"), err)
	}
	if isNull && m.Role != "assistant" {
		return Message{}, badRequest(at("content"), "", "Invalid value for 'content': expected a string, got null.")
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return Message{}, badRequest(at("tool_call_id"), "missing_required_parameter",
			"Missing required parameter: '%s'.", at("tool_call_id"))
	}
	if len(m.ToolCalls) > 0 && m.Role != "assistant" {
		return Message{}, badRequest(at("tool_calls"), "", "Invalid parameter: only messages with role 'assistant' can have 'tool_calls'.")
	}
	msg := Message{Role: m.Role, Content: content, Name: m.Name, ToolCallID: m.ToolCallID}
	for j, c := range m.ToolCalls {
		call := fmt.Sprintf("tool_calls.[%d]", j)
		switch {
		case c.ID == "":
			return Message{}, badRequest(at(call+".id"), "missing_required_parameter", "Missing required parameter: '%s'.", at(call+".id"))
		case c.Type != "function":
			return Message{}, badRequest(at(call+".type"), "invalid_value", "Invalid value: '%s'. Supported values are: 'function'.", c.Type)
		case c.Function.Name == "":
			return Message{}, badRequest(at(call+".function.name"), "missing_required_parameter",
				"Missing required parameter: '%s'.", at(call+".function.name"))
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return msg, nil
}

// decodeContent reads a message's content: a string, an array of text
// parts (joined), or null.
func decodeContent(raw json.RawMessage) (text string, isNull bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true, nil
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, false, nil
	}
	var parts []wirePart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false, errors.New("expected a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", false, fmt.Errorf("content part type %q is not supported by this fake server", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), false, nil
}
