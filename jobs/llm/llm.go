// Package llm holds the types a research agent exchanges with a model: the
// conversation messages, tool calls and tool specs, usage, and the one-method
// Model interface the step job calls.
//
// It is a leaf package: it imports nothing of the project.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Roles of a conversation message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation. It is stored as JSON in the
// per-step conversation rows, so its field names are part of the schema.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is a model's request to run one tool with JSON arguments.
//
// A model may send arguments that are not a JSON object: JSON cut off where
// the completion limit stopped the reply, text that is not UTF-8, a bare
// string. Such a call is not a malformed response: the tool it names tells
// the model what was wrong. Its text is kept in InvalidArguments, and
// Arguments is null, so that the call always encodes as valid JSON (it is
// stored in a jsonb column and replayed to the model).
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object of arguments; null when the model sent
	// something else (see InvalidArguments).
	Arguments json.RawMessage `json:"arguments"`
	// InvalidArguments is the text the model sent as arguments when it was
	// not a UTF-8 JSON object; empty otherwise.
	InvalidArguments string `json:"invalid_arguments,omitempty"`
}

// NewToolCall makes the call a model asked for from the text of its
// arguments: a JSON object goes to Arguments (no text at all counts as {},
// as some servers send a call of a tool without parameters); anything else
// goes to InvalidArguments.
func NewToolCall(id, name, args string) ToolCall {
	c := ToolCall{ID: id, Name: name}
	switch trimmed := bytes.TrimSpace([]byte(args)); {
	case len(trimmed) == 0:
		c.Arguments = json.RawMessage("{}")
	case isObject(trimmed):
		c.Arguments = json.RawMessage(trimmed)
	default:
		c.InvalidArguments = args
	}
	return c
}

// ArgumentsText is the arguments as the model sent them, valid or not.
func (c ToolCall) ArgumentsText() string {
	if c.InvalidArguments != "" {
		return c.InvalidArguments
	}
	return string(c.Arguments)
}

// MarshalJSON encodes the call as valid JSON whatever its arguments: no
// arguments are encoded as {}, and ones that are not a UTF-8 JSON object as
// the invalid_arguments string (encoding/json replaces what is not UTF-8
// in it with U+FFFD), with null arguments.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall // the same fields, without this method
	p := plain(c)
	switch {
	case p.InvalidArguments != "":
		p.Arguments = nil
	case len(bytes.TrimSpace(p.Arguments)) == 0:
		p.Arguments = json.RawMessage("{}")
	case !isObject(p.Arguments):
		p.InvalidArguments, p.Arguments = string(p.Arguments), nil
	}
	return json.Marshal(p)
}

// isObject reports whether b is one JSON object in valid UTF-8.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && utf8.Valid(b) && json.Valid(b)
}

// ToolSpec describes a tool to the model: its name, what it does and the
// JSON Schema of its arguments.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model call: the system prompt, the conversation so far and
// the tools the model may call (none on an agent's last step).
type Request struct {
	System   string
	Messages []Message
	Tools    []ToolSpec
	// MaxCompletionTokens caps the tokens of the answer; 0 means no cap.
	MaxCompletionTokens int
}

// Usage counts the tokens of one model call and what it cost.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CostUSD          float64
}

// Response is the model's answer: one assistant message and its usage.
type Response struct {
	Message Message
	Usage   Usage
}

// Model is a chat model that can call tools.
type Model interface {
	// Name is recorded in the run's model field.
	Name() string
	// Complete makes one model call.
	Complete(ctx context.Context, req Request) (Response, error)
}

// ErrPermanent marks a model error that a retry cannot fix (a malformed
// response, a rejected request). The step job fails the run on it instead
// of retrying.
var ErrPermanent = errors.New("permanent model error")

// HasTool reports whether the request offers the named tool.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
