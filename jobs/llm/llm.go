// Package llm holds the types a research agent exchanges with a model: the
// conversation messages, tool calls and tool specs, usage, and the one-method
// Model interface the step job calls.
//
// It is a leaf package: it imports nothing of the project.
package llm

import (
	"context"
	"encoding/json"
	"errors"
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
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
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
