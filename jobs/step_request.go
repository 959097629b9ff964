package jobs

import (
	"fmt"

	"github.com/gbresearch/gb/jobs/llm"
)

// RebuiltFrom says how a StepRequest was had: steps store what they added
// to the conversation, not the system prompt and tools they were sent
// beside it, which are a function of the run and the configuration.
const RebuiltFrom = "rebuilt from the run's settings and this server's configuration"

// StepRequest is what a step's model call was given besides the
// conversation: the system prompt and the tools, rebuilt at read time by
// the same builder as the step's (request), so that showing them writes
// nothing per step.
type StepRequest struct {
	RunID int64 `json:"run_id"`
	Step  int   `json:"step"`
	// Rebuilt says how the request was had (RebuiltFrom): a worker whose
	// configuration differs from the reader's (another model, no web
	// search) gave its own.
	Rebuilt string         `json:"rebuilt"`
	System  string         `json:"system"`
	Tools   []llm.ToolSpec `json:"tools"`
}

// RebuildRequest rebuilds the system prompt and the tools of step of run,
// as its model call was given them. It reads and writes nothing.
func (a *Service) RebuildRequest(run *Run, step int) (*StepRequest, error) {
	names := a.toolNamesFor(run)
	system, err := a.systemPrompt(run, names)
	if err != nil {
		return nil, fmt.Errorf("error rebuilding the system prompt of run %d: %w", run.ID, err)
	}
	r := &StepRequest{RunID: run.ID, Step: step, Rebuilt: RebuiltFrom, System: system, Tools: []llm.ToolSpec{}}
	for _, n := range names {
		r.Tools = append(r.Tools, a.toolSpec(run, n))
	}
	return r, nil
}
