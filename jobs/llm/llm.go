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
	"fmt"
	"strings"
	"time"
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
// The arguments are kept as the text the model sent, byte for byte
// (whitespace, key order and escapes included), and stored as that text
// (MarshalJSON), so that the call is replayed to the model exactly as it
// was sent and the prompt's cached prefix holds.
//
// A model may send arguments that are not a JSON object: JSON cut off where
// the completion limit stopped the reply, text that is not UTF-8, a bare
// string. Such a call is not a malformed response: the tool it names tells
// the model what was wrong. Its text is kept in InvalidArguments, and
// Arguments is null.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object of arguments, as the model sent it;
	// null when the model sent something else (see InvalidArguments).
	Arguments json.RawMessage `json:"arguments"`
	// InvalidArguments is the text the model sent as arguments when it was
	// not a UTF-8 JSON object; empty otherwise.
	InvalidArguments string `json:"invalid_arguments,omitempty"`
}

// NewToolCall makes the call a model asked for from the text of its
// arguments: a JSON object goes to Arguments as it is, whitespace around
// it included (no text at all, or only whitespace, counts as {}, as some
// servers send a call of a tool without parameters); anything else goes
// to InvalidArguments.
func NewToolCall(id, name, args string) ToolCall {
	c := ToolCall{ID: id, Name: name}
	switch b := []byte(args); {
	case len(bytes.TrimSpace(b)) == 0:
		c.Arguments = json.RawMessage("{}")
	case isObject(b):
		c.Arguments = json.RawMessage(b)
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

// MarshalJSON encodes the call as it is stored: its id, its name and its
// arguments as one JSON string holding the text the model sent, valid or
// not (encoding/json replaces what is not UTF-8 in it with U+FFFD, as it
// does in the request that replays it). A string survives a jsonb column
// unchanged, where an object would come back with its keys reordered, its
// whitespace gone and its escapes decoded.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	return json.Marshal(storedCall{ID: c.ID, Name: c.Name, Arguments: c.storedArguments()})
}

// storedArguments is the text a call's arguments are stored and replayed
// as: what the model sent, or {} for nothing.
func (c ToolCall) storedArguments() string {
	if c.InvalidArguments != "" {
		return c.InvalidArguments
	}
	if len(bytes.TrimSpace(c.Arguments)) == 0 {
		return "{}"
	}
	return string(c.Arguments)
}

// storedCall is a tool call as MarshalJSON stores it.
type storedCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// UnmarshalJSON reads a call as MarshalJSON stores it, or as it was
// stored before (arguments as a JSON object, or null with the text in
// invalid_arguments).
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var v struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Invalid   string          `json:"invalid_arguments"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("error decoding a tool call: %w", err)
	}
	args := v.Invalid
	switch raw := bytes.TrimSpace(v.Arguments); {
	case args != "":
	case len(raw) > 0 && raw[0] == '"':
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("error decoding the arguments of tool call %q: %w", v.ID, err)
		}
	case len(raw) > 0 && !bytes.Equal(raw, []byte("null")):
		args = string(raw)
	}
	*c = NewToolCall(v.ID, v.Name, args)
	return nil
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
	// ToolChoice is ToolChoiceNone to keep the tools in the request (so
	// that the provider's cached prefix still matches) while the model may
	// not call them; "" lets the model choose.
	ToolChoice string
	// MaxCompletionTokens caps the tokens of the answer, a reasoning
	// model's thinking included; 0 means no cap.
	MaxCompletionTokens int
	// ID names the call, for the provider's logs and the caller's ledger
	// ("" for none); a provider that takes one is sent it.
	ID string
}

// ToolChoiceNone forbids tool calls in a request that still lists its tools.
const ToolChoiceNone = "none"

// Usage counts the tokens of one model call and what it cost.
type Usage struct {
	PromptTokens int
	// CachedPromptTokens is the part of PromptTokens the provider read
	// from its prompt cache, billed at its cached rate.
	CachedPromptTokens int
	CompletionTokens   int
	// ReasoningTokens is the part of CompletionTokens a reasoning model
	// spent thinking: billed as output, never shown.
	ReasoningTokens int
	// CacheWriteTokens is the part of PromptTokens the provider wrote to
	// its prompt cache (Bedrock's cacheWriteInputTokens), billed at its
	// cache-write rate; 0 for providers that do not bill writes.
	CacheWriteTokens int
	CostUSD          float64
}

// Add is the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:       u.PromptTokens + v.PromptTokens,
		CachedPromptTokens: u.CachedPromptTokens + v.CachedPromptTokens,
		CompletionTokens:   u.CompletionTokens + v.CompletionTokens,
		ReasoningTokens:    u.ReasoningTokens + v.ReasoningTokens,
		CacheWriteTokens:   u.CacheWriteTokens + v.CacheWriteTokens,
		CostUSD:            u.CostUSD + v.CostUSD,
	}
}

// Zero reports whether the usage counts nothing.
func (u Usage) Zero() bool { return u == Usage{} }

// Why a model stopped its answer (Response.FinishReason).
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length" // cut at the completion cap
	FinishContentFilter = "content_filter"
)

// Response is the model's answer: one assistant message and its usage.
type Response struct {
	// ID is the provider's id of the answer (OpenAI's completion id,
	// Bedrock's request id); "" when it gave none.
	ID      string
	Message Message
	Usage   Usage
	// FinishReason says why the answer ended (the Finish* values; "" when
	// the provider did not say).
	FinishReason string
	// Refused is set when the model declined to answer; Message.Content
	// then holds its refusal.
	Refused bool
	// Limits is what the provider said of its rate limits with the answer;
	// nil when it said nothing.
	Limits *RateLimits
}

// RateLimits is a provider's word on its rate limits (OpenAI's
// x-ratelimit-* headers): the limits per minute, what is left of them, and
// how long until they are whole again. A zero field was not given.
type RateLimits struct {
	LimitRequests     int
	RemainingRequests int
	ResetRequests     time.Duration
	LimitTokens       int
	RemainingTokens   int
	ResetTokens       time.Duration
}

// Profile is what the agent must know of a model beyond its name: its
// context window, the completion caps to send, and its prices.
type Profile struct {
	// ContextWindow is the most tokens a request may hold, its prompt and
	// its completion cap together; 0 means no known limit.
	ContextWindow int
	// StepCap is the completion cap of a call that may call tools.
	StepCap int
	// ReportCap is the completion cap of a call that writes a report.
	ReportCap int
	// MaxCompletion is the largest completion cap the model accepts (its
	// output limit); no cap sent exceeds it. 0 means no known limit.
	MaxCompletion int
	// OutputBurndown is how many tokens of the provider's token rate limit
	// each completion token takes (Bedrock counts five for Claude 3.7
	// Sonnet and the Claude 4 family); 0 means 1.
	OutputBurndown int
	// Reasoning marks a model that thinks before it answers: its caps
	// include room for that, and its thinking is billed as output.
	Reasoning bool
	// Price is what its tokens cost; Priced is false when it is unknown
	// (its calls then cost 0).
	Price  Price
	Priced bool
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	// Input is the price of one million prompt tokens not read from the cache.
	Input float64
	// CachedInput is the price of one million prompt tokens read from the
	// provider's prompt cache.
	CachedInput float64
	// Output is the price of one million completion tokens, reasoning
	// included.
	Output float64
	// CacheWrite is the price of one million prompt tokens written to the
	// provider's prompt cache; 0 bills them at the Input rate (a provider
	// that does not charge for writes).
	CacheWrite float64
}

// Cost is the price of the tokens u counts: the prompt tokens read from
// the cache at CachedInput, those written to it at CacheWrite, the rest at
// Input, and the completion at Output.
func (p Price) Cost(u Usage) float64 {
	cached := min(max(u.CachedPromptTokens, 0), u.PromptTokens)
	written := min(max(u.CacheWriteTokens, 0), u.PromptTokens-cached)
	write := p.CacheWrite
	if write == 0 {
		write = p.Input
	}
	return (float64(u.PromptTokens-cached-written)*p.Input + float64(cached)*p.CachedInput +
		float64(written)*write + float64(u.CompletionTokens)*p.Output) / 1e6
}

// Profiler is implemented by models that know their Profile. A model
// without it has no context window, default caps and no price.
type Profiler interface {
	Profile() Profile
}

// Model is a chat model that can call tools.
type Model interface {
	// Name is recorded in the run's model field.
	Name() string
	// Complete makes one model call.
	Complete(ctx context.Context, req Request) (Response, error)
}

// ErrPermanent marks a model error that a retry cannot fix (a rejected
// request, an answer that is wrong the same way every time). The step job
// fails the run on it instead of retrying.
var ErrPermanent = errors.New("permanent model error")

// Errors a Model returns inside a *CallError, each telling the step what to
// do next.
var (
	// ErrRateLimited: the provider refused the call for want of capacity
	// (HTTP 429 with a rate-limit error). It was not billed; try again
	// after CallError.RetryAfter.
	ErrRateLimited = errors.New("rate limited")
	// ErrTooLarge: the request alone is more than the provider's token rate
	// limit allows ("Request too large"): it can never succeed at this size.
	ErrTooLarge = errors.New("request too large for the rate limit")
	// ErrContextLength: the prompt and the completion cap do not fit the
	// model's context window.
	ErrContextLength = errors.New("context length exceeded")
	// ErrUnusable: the provider answered, and billed, but the answer holds
	// nothing to use (no choices; a message with neither content nor tool
	// calls). CallError.Usage is what it cost.
	ErrUnusable = errors.New("unusable answer")
	// ErrTransient: a failure a later attempt may not meet (a 5xx, a
	// connection dropped, a timeout).
	ErrTransient = errors.New("transient model error")
)

// CallError is the error of a model call that did not give a usable answer.
type CallError struct {
	// Err is one of the Err* values above, possibly joined with its cause.
	Err error
	// RetryAfter is how long the provider asked to wait; 0 when it did not say.
	RetryAfter time.Duration
	// Usage is what the call cost when the provider billed it (ErrUnusable).
	Usage Usage
	// Limits is the provider's word on its rate limits, when it gave one.
	Limits *RateLimits
	// Sent says the request reached the provider, which may have billed it
	// even if no answer came back (the caller's context ended meanwhile).
	Sent bool
}

func (e *CallError) Error() string { return e.Err.Error() }

// Unwrap gives errors.Is and errors.As the error inside.
func (e *CallError) Unwrap() error { return e.Err }

// EstimatePromptTokens is a deterministic, slightly generous estimate of
// the prompt tokens of a request: four bytes a token, plus the overhead of
// each message and tool. A provider's tokenizer may count more for text
// dense in punctuation; callers keep a margin.
func EstimatePromptTokens(req Request) int {
	const perMessage, perTool, bytesPerToken = 4, 8, 4
	n := 3 + perMessage + tokensOf(len(req.System), bytesPerToken)
	for _, m := range req.Messages {
		n += perMessage + tokensOf(len(m.Content)+len(m.Name)+len(m.ToolCallID), bytesPerToken)
		for _, c := range m.ToolCalls {
			n += perMessage + tokensOf(len(c.ID)+len(c.Name)+len(c.ArgumentsText()), bytesPerToken)
		}
	}
	for _, t := range req.Tools {
		n += perTool + tokensOf(len(t.Name)+len(t.Description)+len(t.Parameters), bytesPerToken)
	}
	return n
}

func tokensOf(bytes, per int) int { return (bytes + per - 1) / per }

// MayCallTools reports whether the model may call a tool in its answer:
// the request lists tools and does not forbid them (ToolChoiceNone).
func (r Request) MayCallTools() bool {
	return len(r.Tools) > 0 && r.ToolChoice != ToolChoiceNone
}

// HasTool reports whether the model may call the named tool.
func (r Request) HasTool(name string) bool {
	if r.ToolChoice == ToolChoiceNone {
		return false
	}
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Sanitized is the message with what no store or provider accepts taken
// out: NUL characters removed and invalid UTF-8 replaced with U+FFFD in its
// content, names and tool call names and ids, and an id given to a tool call that has
// none (some compatible servers omit it), so that its result can answer it.
func (m Message) Sanitized() Message {
	m.Content, m.Name, m.ToolCallID = CleanText(m.Content), CleanText(m.Name), CleanText(m.ToolCallID)
	if len(m.ToolCalls) == 0 {
		return m
	}
	calls := make([]ToolCall, len(m.ToolCalls))
	for i, c := range m.ToolCalls {
		id := CleanText(c.ID)
		if id == "" {
			id = fmt.Sprintf("call_gb_%d", i+1)
		}
		c.ID, c.Name = id, CleanText(c.Name)
		calls[i] = c // arguments that are not UTF-8 JSON are the tool's to refuse
	}
	m.ToolCalls = calls
	return m
}

// CleanText makes text storable and sendable: NUL characters removed (Postgres
// refuses them) and what is not UTF-8 replaced with U+FFFD.
func CleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}
