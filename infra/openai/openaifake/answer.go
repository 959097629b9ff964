package openaifake

// Brain decides the answer to a request the server has accepted. It is
// called from the server's handlers, concurrently when requests are.
type Brain func(req *Request) Answer

// Answer is what a Brain wants the model to say. The server cuts it at the
// request's completion cap, as a model would, and counts its tokens.
type Answer struct {
	Content string
	// ToolCalls are the calls to make; an empty ID is filled in. They are
	// dropped when the request's tool_choice is "none".
	ToolCalls []ToolCall
	// Refusal, when set, is sent as message.refusal with null content.
	Refusal string
	// Reasoning is the tokens a reasoning model spends thinking; 0 leaves
	// it to Config.ReasoningTokens. Models that do not reason ignore it.
	Reasoning int
	// Fault is a misbehaviour of this answer; NoFault for none. A fault
	// queued by Server.Inject takes precedence.
	Fault Fault
}

// DefaultBrain answers "ok" to everything.
func DefaultBrain(*Request) Answer { return Answer{Content: "ok"} }

// noneContent is the text of an answer whose tool calls were dropped for
// tool_choice "none" and that had no text of its own.
const noneContent = "ok"

// completion is an answer as the model writes it: cut at the cap, with
// its finish reason and token counts.
type completion struct {
	content   *string // nil is null
	refusal   *string // nil is null
	toolCalls []ToolCall
	finish    string
	reasoning int
	tokens    int // completion tokens, reasoning included

	emptyChoices bool // send "choices": []
	noCallIDs    bool // leave the tool calls' "id" out
	invalidUTF8  bool // put bytes that are not UTF-8 in the content and first tool name
}

// Finish reasons.
const (
	finishStop      = "stop"
	finishToolCalls = "tool_calls"
	finishLength    = "length"
)

// shape writes ans as a model with spec would for req: thinking first,
// then the content, then the tool calls, stopping at the completion cap.
func (s *Server) shape(req *Request, spec ModelSpec, ans Answer) completion {
	var c completion
	limit := req.CompletionCap
	if spec.Reasoning {
		c.reasoning = ans.Reasoning
		if c.reasoning <= 0 {
			c.reasoning = s.cfg.ReasoningTokens[effort(req)]
		}
		if c.reasoning > limit { // it thinks until the cap and never answers
			empty := ""
			c.reasoning, c.tokens, c.content, c.finish = limit, limit, &empty, finishLength
			return c
		}
	}
	left := limit - c.reasoning
	if ans.Refusal != "" {
		text, cut := fit(ans.Refusal, left)
		c.refusal, c.finish = &text, finishIf(cut, finishStop)
		c.tokens = c.reasoning + CountTokens(text)
		return c
	}
	content, calls := ans.Content, ans.ToolCalls
	if req.ToolChoice == "none" && len(calls) > 0 {
		calls = nil
		if content == "" {
			content = noneContent
		}
	}
	text, cut := fit(content, left)
	c.content, c.finish = &text, finishIf(cut, finishStop)
	left -= CountTokens(text)
	for _, call := range calls {
		if cut {
			break
		}
		if call.ID == "" {
			call.ID = s.nextCallID()
		}
		if cost := callTokens(call); cost > left {
			cut, c.finish = true, finishLength
			if left < CountTokens(call.Name) { // the cap came before its name did
				left = 0
				break
			}
			call.Arguments = cutTokens(call.Arguments, left-CountTokens(call.Name))
		}
		left -= callTokens(call)
		c.toolCalls = append(c.toolCalls, call)
	}
	if len(c.toolCalls) > 0 {
		if !cut {
			c.finish = finishToolCalls
		}
		if text == "" {
			c.content = nil
		}
	}
	c.tokens = limit - left
	return c
}

// fit is s cut to n tokens, and whether it had to be cut.
func fit(s string, n int) (string, bool) {
	if CountTokens(s) <= n {
		return s, false
	}
	return cutTokens(s, n), true
}

func finishIf(cut bool, otherwise string) string {
	if cut {
		return finishLength
	}
	return otherwise
}

// effort is the reasoning effort of req.
func effort(req *Request) string {
	if req.ReasoningEffort == "" {
		return defaultEffort
	}
	return req.ReasoningEffort
}

// recount sets the completion tokens from what the completion holds.
func (c *completion) recount() {
	c.tokens = c.reasoning
	for _, p := range []*string{c.content, c.refusal} {
		if p != nil {
			c.tokens += CountTokens(*p)
		}
	}
	for _, call := range c.toolCalls {
		c.tokens += callTokens(call)
	}
}
