package openaifake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// wireResponse is a chat completion as OpenAI documents it.
type wireResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             wireUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type wireChoice struct {
	Index        int            `json:"index"`
	Message      wireOutMessage `json:"message"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type wireOutMessage struct {
	Role        string        `json:"role"`
	Content     *string       `json:"content"`
	Refusal     *string       `json:"refusal"`
	ToolCalls   []wireOutCall `json:"tool_calls,omitempty"`
	Annotations []struct{}    `json:"annotations"`
}

type wireOutCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

// systemFingerprint is the fingerprint of every answer.
const systemFingerprint = "fp_openaifake"

// encode is the body of the answer c to req.
func (s *Server) encode(req *Request, c completion, cached int, now time.Time) []byte {
	resp := wireResponse{
		ID:                fmt.Sprintf("chatcmpl-fake%08d", s.seq.Add(1)),
		Object:            "chat.completion",
		Created:           now.Unix(),
		Model:             req.Model,
		Choices:           []wireChoice{},
		ServiceTier:       "default",
		SystemFingerprint: systemFingerprint,
	}
	u := &resp.Usage
	u.PromptTokens, u.CompletionTokens = req.PromptTokens, c.tokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = cached
	u.CompletionTokensDetails.ReasoningTokens = c.reasoning
	if !c.emptyChoices {
		resp.Choices = append(resp.Choices, wireChoice{Index: 0, Message: c.message(), FinishReason: c.finish})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		panic(fmt.Errorf("openaifake: encoding an answer: %w", err)) // cannot happen: plain values only
	}
	body := buf.Bytes()
	if c.invalidUTF8 {
		body = bytes.ReplaceAll(body, []byte(invalidUTF8Mark), []byte(invalidUTF8))
	}
	return body
}

// message is the assistant message of c as it goes on the wire.
func (c completion) message() wireOutMessage {
	m := wireOutMessage{Role: "assistant", Content: c.content, Refusal: c.refusal, Annotations: []struct{}{}}
	if c.invalidUTF8 && c.content != nil {
		text := strings.ReplaceAll(*c.content, invalidUTF8, invalidUTF8Mark)
		m.Content = &text
	}
	for _, call := range c.toolCalls {
		out := wireOutCall{ID: call.ID, Type: "function", Function: wireFunction{Name: call.Name, Arguments: call.Arguments}}
		if c.noCallIDs {
			out.ID = ""
		}
		if c.invalidUTF8 {
			out.Function.Name = strings.ReplaceAll(out.Function.Name, invalidUTF8, invalidUTF8Mark)
		}
		m.ToolCalls = append(m.ToolCalls, out)
	}
	return m
}
