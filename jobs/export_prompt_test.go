package jobs

import "github.com/gbresearch/gb/jobs/llm"

// RequestForTest is the request a step of run would send on an ordinary
// step: its system prompt and tools.
func (a *Service) RequestForTest(run *Run) (llm.Request, error) {
	return a.request(run, nil, false, false)
}
