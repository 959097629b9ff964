package conversefake

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gbresearch/gb/infra/openai/openaifake"
)

// defaultMaxTokens is the cap of a request that sets none, for a model
// with no MaxOutput.
const defaultMaxTokens = 4096

// converse answers a checked request: the window, the quotas, the Brain,
// the bill, then the answer.
func (s *Server) converse(w http.ResponseWriter, r *http.Request, model string, spec ModelSpec, req *wireRequest, now time.Time) {
	p := measure(req)
	maxTokens := spec.MaxOutput
	if maxTokens == 0 {
		maxTokens = defaultMaxTokens
	}
	if ic := req.InferenceConfig; ic != nil && ic.MaxTokens != nil {
		maxTokens = *ic.MaxTokens
	}
	if spec.ContextWindow > 0 && p.tokens+maxTokens > spec.ContextWindow {
		s.rec.count(func(st *Stats) *int { return &st.OverWindow })
		invalid("Input is too long for requested model.").write(w)
		return
	}
	cost := p.tokens + maxTokens*max(spec.OutputBurndown, 1)
	if e, rpm := s.quotas.admit(cost, now); e != nil {
		s.rec.count(func(st *Stats) *int {
			switch {
			case e.status != http.StatusTooManyRequests:
				return &st.OverWindow
			case rpm:
				return &st.ThrottledRPM
			}
			return &st.ThrottledTPM
		})
		e.write(w)
		return
	}
	s.rec.Accept(cost, now)
	v := view(model, req)
	v.PromptTokens, v.CompletionCap = p.tokens, maxTokens
	ans := s.cfg.Brain(v)
	switch ans.Fault {
	case openaifake.ServerError:
		s.rec.count(func(st *Stats) *int { return &st.ServerErrors })
		errorf(http.StatusInternalServerError, TypeInternal, "The server encountered an internal error.").write(w)
		return
	case openaifake.Overloaded:
		s.rec.count(func(st *Stats) *int { return &st.ServerErrors })
		errorf(http.StatusServiceUnavailable, TypeUnavailable, "Bedrock is unable to process your request.").write(w)
		return
	}
	c := shape(ans, maxTokens, s.nextCallID)
	read, written := 0, 0
	if spec.MinCacheTokens > 0 {
		read, written = s.cache.use(model, p, spec.MinCacheTokens, now)
	}
	call := Call{Time: now, Model: model, PromptTokens: p.tokens, CacheReadTokens: read, CacheWriteTokens: written,
		CompletionTokens: c.tokens, MaxTokens: maxTokens, StopReason: c.stop, CallID: v.ClientRequestID}
	call.CostUSD = s.cfg.Prices[model].Cost(call.Usage())
	s.rec.Bill(call)
	body := encode(c, call)
	if !s.srv.Sleep(r.Context(), s.cfg.Latency) {
		panic(http.ErrAbortHandler) // billed all the same; no answer
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", "conversefake")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// completion is an answer as the model writes it, cut at maxTokens.
type completion struct {
	text   string
	calls  []openaifake.ToolCall
	stop   string
	tokens int
}

// shape writes ans within maxTokens: a refusal as a guardrail's
// intervention, else the text then the tool calls, stopping at the cap,
// or at a tool call whose arguments are not a JSON object (as
// malformed_tool_use, with the text before it).
func shape(ans openaifake.Answer, maxTokens int, nextID func() string) completion {
	if ans.Refusal != "" {
		text := cut(ans.Refusal, maxTokens)
		return completion{text: text, stop: "guardrail_intervened", tokens: openaifake.CountTokens(text)}
	}
	c := completion{text: cut(ans.Content, maxTokens), stop: "end_turn"}
	c.tokens = openaifake.CountTokens(c.text)
	if c.text != ans.Content {
		c.stop = "max_tokens"
		return c
	}
	for _, call := range ans.ToolCalls {
		n := openaifake.CountTokens(call.Name) + openaifake.CountTokens(call.Arguments)
		if c.tokens+n > maxTokens {
			c.stop = "max_tokens"
			return c
		}
		if !isObject(json.RawMessage(call.Arguments)) {
			// Bedrock does not return a tool use it could not form: it
			// stops the answer with malformed_tool_use, keeping its text.
			c.calls, c.tokens, c.stop = nil, c.tokens+n, "malformed_tool_use"
			return c
		}
		if call.ID == "" {
			call.ID = nextID()
		}
		c.calls, c.tokens, c.stop = append(c.calls, call), c.tokens+n, "tool_use"
	}
	return c
}

// cut is the start of s that holds at most n tokens.
func cut(s string, n int) string {
	if openaifake.CountTokens(s) <= n {
		return s
	}
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if openaifake.CountTokens(s[:mid]) <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return s[:lo]
}

// wireResponse is a Converse response, as AWS documents it.
type wireResponse struct {
	Output struct {
		Message wireOutMessage `json:"message"`
	} `json:"output"`
	StopReason string    `json:"stopReason"`
	Usage      wireUsage `json:"usage"`
	Metrics    struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metrics"`
}

type wireOutMessage struct {
	Role    string         `json:"role"`
	Content []wireOutBlock `json:"content"`
}

type wireOutBlock struct {
	Text    *string      `json:"text,omitempty"`
	ToolUse *wireToolUse `json:"toolUse,omitempty"`
}

type wireUsage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	TotalTokens           int `json:"totalTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
}

// encode is the body of the answer c billed as call.
func encode(c completion, call Call) []byte {
	var resp wireResponse
	resp.Output.Message.Role = "assistant"
	resp.Output.Message.Content = []wireOutBlock{}
	if c.text != "" {
		text := c.text
		resp.Output.Message.Content = append(resp.Output.Message.Content, wireOutBlock{Text: &text})
	}
	for _, call := range c.calls {
		input := json.RawMessage(call.Arguments) // an object: shape keeps no other
		resp.Output.Message.Content = append(resp.Output.Message.Content,
			wireOutBlock{ToolUse: &wireToolUse{ToolUseID: call.ID, Name: call.Name, Input: input}})
	}
	resp.StopReason = c.stop
	u := &resp.Usage
	u.CacheReadInputTokens, u.CacheWriteInputTokens = call.CacheReadTokens, call.CacheWriteTokens
	u.InputTokens = call.PromptTokens - call.CacheReadTokens - call.CacheWriteTokens
	u.OutputTokens = call.CompletionTokens
	u.TotalTokens = call.PromptTokens + call.CompletionTokens
	b, err := json.Marshal(resp)
	if err != nil {
		panic(err) // cannot happen: plain values and valid JSON inputs
	}
	return b
}
