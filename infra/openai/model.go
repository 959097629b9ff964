package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/gbresearch/gb/infra/httpwait"
	"github.com/gbresearch/gb/jobs/llm"
)

// ErrMalformedResponse marks an answer whose envelope is not a usable chat
// completion: a body that is not JSON, no choices, a tool call with no id,
// no function name or another type than function, a message with neither
// content nor tool calls. Errors that wrap it also wrap llm.ErrPermanent.
//
// A tool call whose arguments are not a JSON object (cut off by the
// completion limit, say) is not malformed: it is passed on as it came, in
// llm.ToolCall.InvalidArguments, for the tool to tell the model.
var ErrMalformedResponse = errors.New("malformed response")

// Model is an llm.Model backed by a chat-completions endpoint. It is safe
// for concurrent use.
type Model struct {
	name        string
	client      *oai.Client
	maxRetries  int
	backoffBase time.Duration
	backoffMax  time.Duration
	log         *slog.Logger
	// sleep takes the wait between two attempts. It is httpwait.Sleep; the
	// package's tests replace it to see the waits chosen.
	sleep func(ctx context.Context, d time.Duration) bool

	price    Price
	priced   bool
	warnOnce sync.Once
}

var _ llm.Model = (*Model)(nil)

// New checks cfg, fills its defaults and returns the model. It fails when
// the API key is missing or the base URL is not an http(s) URL.
func New(cfg Config) (*Model, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cc := oai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cc.HTTPClient = hintingDoer{client: cfg.HTTPClient}
	m := &Model{
		name:        cfg.Model,
		client:      oai.NewClientWithConfig(cc),
		maxRetries:  cfg.MaxRetries,
		backoffBase: cfg.BackoffBase,
		backoffMax:  cfg.BackoffMax,
		log:         cfg.Logger,
		sleep:       httpwait.Sleep,
	}
	m.price, m.priced = PriceOf(cfg.Model)
	return m, nil
}

// Name implements llm.Model: the configured model name.
func (m *Model) Name() string { return m.name }

// Complete implements llm.Model: one chat completion, retried on 429, 5xx
// and network errors. A rejected request or a malformed answer returns an
// error wrapping llm.ErrPermanent; running out of retries or of ctx returns
// one that does not.
func (m *Model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	creq, err := m.request(req)
	if err != nil {
		return llm.Response{}, fmt.Errorf("openai %s: invalid request: %w: %w", m.name, err, llm.ErrPermanent)
	}
	for attempt := 0; ; attempt++ {
		hint := &retryHint{}
		resp, err := m.client.CreateChatCompletion(context.WithValue(ctx, retryHintKey{}, hint), creq)
		if err == nil {
			return m.response(resp)
		}
		if ctx.Err() != nil {
			return llm.Response{}, fmt.Errorf("openai %s: %w", m.name, errors.Join(ctx.Err(), err))
		}
		switch judge(err) {
		case reject:
			return llm.Response{}, fmt.Errorf("openai %s: request rejected: %w: %w", m.name, err, llm.ErrPermanent)
		case malformed:
			return llm.Response{}, m.malformed("body is not a chat completion: %v", err)
		}
		if attempt >= m.maxRetries {
			return llm.Response{}, fmt.Errorf("openai %s: giving up after %d attempts: %w", m.name, attempt+1, err)
		}
		wait := backoff(attempt, m.backoffBase, m.backoffMax)
		if hint.ok && hint.after <= RetryAfterMax {
			wait = hint.after
		}
		m.log.InfoContext(ctx, "openai: retrying model call",
			slog.String("model", m.name), slog.Int("attempt", attempt+1),
			slog.Duration("wait", wait), slog.String("error", err.Error()))
		if !m.sleep(ctx, wait) {
			return llm.Response{}, fmt.Errorf("openai %s: no time left to retry after %d attempts: %w",
				m.name, attempt+1, errors.Join(cmpErr(ctx.Err(), context.DeadlineExceeded), err))
		}
	}
}

// cmpErr returns err, or fallback when err is nil.
func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// malformed builds the error of an unusable answer.
func (m *Model) malformed(format string, args ...any) error {
	return fmt.Errorf("openai %s: %w: %s: %w", m.name, ErrMalformedResponse, fmt.Sprintf(format, args...), llm.ErrPermanent)
}

// request converts an llm.Request to a chat-completion request.
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
	var tools []oai.Tool
	for i, t := range req.Tools {
		if t.Name == "" {
			return oai.ChatCompletionRequest{}, fmt.Errorf("tool %d has no name", i)
		}
		params := json.RawMessage(`{"type":"object","properties":{}}`)
		if len(t.Parameters) > 0 {
			if !json.Valid(t.Parameters) {
				return oai.ChatCompletionRequest{}, fmt.Errorf("tool %s: parameters are not valid JSON", t.Name)
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
	return oai.ChatCompletionRequest{Model: m.name, Messages: msgs, Tools: tools,
		MaxCompletionTokens: req.MaxCompletionTokens}, nil
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

// response converts the first choice of a chat completion and prices it.
func (m *Model) response(r oai.ChatCompletionResponse) (llm.Response, error) {
	if len(r.Choices) == 0 {
		return llm.Response{}, m.malformed("no choices")
	}
	choice := r.Choices[0]
	why := ""
	if f := choice.FinishReason; f != "" && f != oai.FinishReasonStop && f != oai.FinishReasonToolCalls {
		why = fmt.Sprintf(" (finish_reason %q)", f)
	}
	msg := choice.Message
	out := llm.Message{Role: llm.RoleAssistant, Content: msg.Content}
	if out.Content == "" && msg.Refusal != "" {
		// A refusal is the model's answer: pass it on as the content.
		out.Content = msg.Refusal
	}
	for i, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != oai.ToolTypeFunction {
			return llm.Response{}, m.malformed("tool call %d has type %q, not function%s", i, tc.Type, why)
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return llm.Response{}, m.malformed("tool call %d has no id or no function name%s", i, why)
		}
		call := llm.NewToolCall(tc.ID, tc.Function.Name, tc.Function.Arguments)
		if call.InvalidArguments != "" {
			m.log.Warn("openai: tool call arguments are not a JSON object; the tool will tell the model",
				slog.String("model", m.name), slog.String("call_id", tc.ID), slog.String("tool", tc.Function.Name),
				slog.Int("bytes", len(tc.Function.Arguments)), slog.String("finish_reason", string(choice.FinishReason)))
		}
		out.ToolCalls = append(out.ToolCalls, call)
	}
	if out.Content == "" && len(out.ToolCalls) == 0 {
		return llm.Response{}, m.malformed("the message has neither content nor tool calls%s", why)
	}
	return llm.Response{Message: out, Usage: m.usage(r.Usage)}, nil
}

// usage counts the tokens and prices them; an unknown model costs 0 and is
// reported once.
func (m *Model) usage(u oai.Usage) llm.Usage {
	out := llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if m.priced {
		out.CostUSD = m.price.Cost(u.PromptTokens, u.CompletionTokens)
	} else {
		m.warnOnce.Do(func() {
			m.log.Warn("openai: no list price for this model; its calls are recorded with cost_usd 0",
				slog.String("model", m.name))
		})
	}
	return out
}
