package compact

import "github.com/gbresearch/gb/jobs/llm"

// sizes is a request's estimated prompt tokens, message by message.
type sizes struct {
	// base is the tokens of everything but the messages: the system
	// prompt, the tools and the request's own overhead.
	base int
	// tokens is what each message adds.
	tokens []int
	// total is the whole prompt: base and every message.
	total int
}

// measure sizes req with llm.EstimatePromptTokens, whose count is a sum
// over the messages, so that each one is sized once.
func measure(req llm.Request) sizes {
	s := sizes{
		base:   llm.EstimatePromptTokens(llm.Request{System: req.System, Tools: req.Tools}),
		tokens: make([]int, len(req.Messages)),
	}
	s.total = s.base
	for i, m := range req.Messages {
		s.tokens[i] = messageTokens(m)
		s.total += s.tokens[i]
	}
	return s
}

// emptyTokens is the estimate of a request with nothing in it.
var emptyTokens = llm.EstimatePromptTokens(llm.Request{})

// messageTokens is what one message adds to a request's estimate.
func messageTokens(m llm.Message) int {
	return llm.EstimatePromptTokens(llm.Request{Messages: []llm.Message{m}}) - emptyTokens
}
