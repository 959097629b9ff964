package jobs

import "github.com/gbresearch/gb/jobs/llm"

// compact fits a request in the model's window (0: none) at level.
func (a *Agent) compact(req llm.Request, window, level int) (llm.Request, bool) {
	if window <= 0 {
		return req, true
	}
	return req, llm.EstimatePromptTokens(req)+req.MaxCompletionTokens <= window
}
