package conversefake

import (
	"crypto/sha256"
	"encoding/json"
	"hash"
	"strings"

	"github.com/gbresearch/gb/infra/openai/openaifake"
)

// Framing tokens: three for each message and three that prime the reply.
const perMessage, perReply = 3, 3

// prefix is the prompt up to a cache point: its tokens and its hash.
type prefix struct {
	tokens int
	hash   [sha256.Size]byte
}

// prompt walks a request's prompt in the order the model reads it (tools,
// system, messages), counting tokens and hashing the text; it records the
// prefix at the end of each block and which of them are cache points.
type prompt struct {
	tokens     int
	h          hash.Hash
	boundaries []prefix
	points     []int // indexes of boundaries
}

func measure(w *wireRequest) *prompt {
	p := &prompt{h: sha256.New()}
	if tc := w.ToolConfig; tc != nil {
		for _, t := range tc.Tools {
			if t.CachePoint != nil {
				p.point()
				continue
			}
			b, _ := json.Marshal(map[string]string{"name": t.ToolSpec.Name, "description": t.ToolSpec.Description,
				"schema": compactJSON(t.ToolSpec.InputSchema.JSON)})
			p.text(string(b))
		}
	}
	for _, s := range w.System {
		if s.CachePoint != nil {
			p.point()
			continue
		}
		p.text(*s.Text)
	}
	for _, m := range w.Messages {
		p.frame("<|" + m.Role + "|>")
		for _, b := range m.Content {
			switch {
			case b.CachePoint != nil:
				p.point()
			case b.Text != nil:
				p.text(*b.Text)
			case b.ToolUse != nil:
				p.text(b.ToolUse.ToolUseID + " " + b.ToolUse.Name + " " + compactJSON(b.ToolUse.Input))
			case b.ToolResult != nil:
				p.text(b.ToolResult.ToolUseID + " " + b.ToolResult.text())
			}
		}
	}
	p.tokens += perReply
	return p
}

func (p *prompt) text(s string) {
	p.tokens += openaifake.CountTokens(s)
	p.h.Write([]byte(s))
	p.h.Write([]byte{0})
	p.boundary()
}

func (p *prompt) frame(s string) {
	p.tokens += perMessage
	p.h.Write([]byte(s))
	p.h.Write([]byte{0})
}

// boundary records the prefix so far.
func (p *prompt) boundary() {
	var pr prefix
	pr.tokens = p.tokens
	copy(pr.hash[:], p.h.Sum(nil))
	p.boundaries = append(p.boundaries, pr)
}

// point marks the prefix so far as a cache point.
func (p *prompt) point() {
	if len(p.boundaries) == 0 {
		p.boundary()
	}
	p.points = append(p.points, len(p.boundaries)-1)
}

// view is the request as a chat conversation, for a Brain: the system
// prompt, user text, assistant text and tool calls, and each toolResult as
// a tool message.
func view(model string, w *wireRequest) *openaifake.Request {
	req := &openaifake.Request{Model: model, ClientRequestID: w.RequestMetadata[CallIDKey]}
	var sys []string
	for _, s := range w.System {
		if s.Text != nil {
			sys = append(sys, *s.Text)
		}
	}
	if len(sys) > 0 {
		req.Messages = append(req.Messages, openaifake.Message{Role: "system", Content: strings.Join(sys, "\n")})
	}
	for _, m := range w.Messages {
		var text []string
		out := openaifake.Message{Role: m.Role}
		for _, b := range m.Content {
			switch {
			case b.Text != nil:
				text = append(text, *b.Text)
			case b.ToolUse != nil:
				out.ToolCalls = append(out.ToolCalls, openaifake.ToolCall{ID: b.ToolUse.ToolUseID,
					Name: b.ToolUse.Name, Arguments: compactJSON(b.ToolUse.Input)})
			case b.ToolResult != nil:
				req.Messages = append(req.Messages, openaifake.Message{Role: "tool",
					ToolCallID: b.ToolResult.ToolUseID, Content: b.ToolResult.text()})
			}
		}
		out.Content = strings.Join(text, "\n")
		if out.Content != "" || len(out.ToolCalls) > 0 {
			req.Messages = append(req.Messages, out)
		}
	}
	if tc := w.ToolConfig; tc != nil {
		for _, t := range tc.Tools {
			if t.ToolSpec != nil {
				req.Tools = append(req.Tools, openaifake.Tool{Name: t.ToolSpec.Name,
					Description: t.ToolSpec.Description, Parameters: t.ToolSpec.InputSchema.JSON})
			}
		}
		switch c := tc.ToolChoice; {
		case c == nil, c.Auto != nil:
			req.ToolChoice = "auto"
		case c.Any != nil:
			req.ToolChoice = "required"
		case c.Tool != nil:
			req.ToolChoice, req.ToolChoiceName = "function", c.Tool.Name
		}
	}
	return req
}

// CallIDKey is the requestMetadata key whose value Calls report as CallID
// (infra/bedrock sends llm.Request.ID under it).
const CallIDKey = "gb_call_id"
