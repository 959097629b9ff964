package jobs

import (
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// The assembly of a step's model request: the system prompt from the
// parts in jobs/prompts that the run's place in its tree calls for, the
// conversation, the tools it may call and the closing notes (step.go).

// request builds the model request of a step: the system prompt of the
// run's place in its tree, the conversation and the tools it may call.
func (a *Agent) request(run *Run, msgs []llm.Message, last, outOfBudget bool) (llm.Request, error) {
	parts := []string{prompts.Research, prompts.Knowledge, prompts.Compaction}
	if a.web() {
		parts = append(parts, prompts.Web)
	}
	canSpawn := run.Depth < MaxSubagentDepth && run.MaxSubagents > 0
	if canSpawn {
		parts = append(parts, prompts.Spawn)
	}
	if asksOwner(run) {
		parts = append(parts, prompts.AskOwner)
	}
	if canSpawn && mustPlan(run) {
		parts = append(parts, prompts.ProposePlan)
	}
	if !run.IsRoot() {
		sub, err := prompts.Subagent(prompts.SubagentData{Name: run.Name, Reason: run.Reason, CanSpawn: canSpawn})
		if err != nil {
			return llm.Request{}, err
		}
		parts = append(parts, sub)
		if at := a.runType(run); at != nil {
			parts = append(parts, at.Prompt)
		}
		if a.messenger != nil {
			parts = append(parts, prompts.Messaging)
		}
	}
	req := llm.Request{System: prompts.Join(parts...), Messages: msgs}
	// The tools stay listed on the last step, only forbidden, so that the
	// prompt keeps the prefix the provider has cached.
	for _, n := range a.toolNamesFor(run) {
		req.Tools = append(req.Tools, a.toolSpec(n))
	}
	switch {
	case outOfBudget:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: budgetNote})
		req.ToolChoice = llm.ToolChoiceNone
	case last:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: lastStepNote})
		req.ToolChoice = llm.ToolChoiceNone
	}
	return req, nil
}
