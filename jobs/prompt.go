package jobs

import (
	"slices"
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// The assembly of a step's model request: the system prompt from the
// parts in jobs/prompts that the run's tools call for (a part that
// explains a tool is given only with the tool, so that no agent reads of
// tools it does not have), the conversation, the tools it may call and
// the closing notes (step.go). The prompt is a function of the run and
// the configuration alone, the same on every step, so that the
// provider's cached prefix holds.

// request builds the model request of a step: the system prompt of the
// run's place in its tree, the conversation and the tools it may call.
func (a *Service) request(run *Run, msgs []llm.Message, last, outOfBudget bool) (llm.Request, error) {
	return a.requestWith(nil, run, msgs, last, outOfBudget)
}

// promptMemo is the system prompt a step job built last for its run, and
// what it was built from: the run's bundle, its tools and its report's
// tokens (the rest of what systemPrompt reads is the run's own and does
// not change). The job's next step reuses it when they are the same:
// rendering the prompt's templates anew was a tenth of a step's CPU.
type promptMemo struct {
	bundle *behaviour
	names  string
	tokens int
	text   string
}

// systemPromptWith is systemPrompt, from m when m holds it (nil: none).
func (a *Service) systemPromptWith(m *promptMemo, run *Run, names []string) (string, error) {
	if m == nil {
		return a.systemPrompt(run, names)
	}
	bundle, joined, tokens := a.pinOf(run), strings.Join(names, ","), a.reportTokens(run)
	if m.bundle == bundle && m.names == joined && m.tokens == tokens {
		return m.text, nil
	}
	text, err := a.systemPrompt(run, names)
	if err != nil {
		return "", err
	}
	*m = promptMemo{bundle: bundle, names: joined, tokens: tokens, text: text}
	return text, nil
}

// requestWith is request with the system prompt memo m of the run's job
// (nil: none).
func (a *Service) requestWith(m *promptMemo, run *Run, msgs []llm.Message, last, outOfBudget bool) (llm.Request, error) {
	names := a.toolNamesFor(run)
	system, err := a.systemPromptWith(m, run, names)
	if err != nil {
		return llm.Request{}, err
	}
	req := llm.Request{System: system, Messages: msgs}
	// The tools stay listed on the last step, only forbidden, so that the
	// prompt keeps the prefix the provider has cached.
	for _, n := range names {
		req.Tools = append(req.Tools, a.toolSpec(run, n))
	}
	switch {
	case (last || outOfBudget) && revising(msgs):
		// The revision note is the step's one last-step note.
		req.ToolChoice = llm.ToolChoiceNone
	case outOfBudget:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: budgetNote})
		req.ToolChoice = llm.ToolChoiceNone
	case last:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: lastStepNote})
		req.ToolChoice = llm.ToolChoiceNone
	}
	return req, nil
}

// systemPrompt joins the parts of a run's system prompt, from its bundle
// (behaviour.go), each one given only with the tools it explains (names).
func (a *Service) systemPrompt(run *Run, names []string) (string, error) {
	set := a.pinOf(run).content.Prompts
	has := func(tools ...string) bool {
		return slices.ContainsFunc(tools, func(t string) bool { return slices.Contains(names, t) })
	}
	kb, web := has(toolSearch, toolRead), has(toolWebSearch, toolFetch)
	sources, err := set.Sources(kb, web)
	if err != nil {
		return "", err
	}
	report, err := set.Report(a.reportTokens(run))
	if err != nil {
		return "", err
	}
	parts := []string{set.Research, sources, set.Compaction}
	add := func(part string, ok bool) {
		if ok {
			parts = append(parts, part)
		}
	}
	add(set.Knowledge, kb)
	add(set.Remember, has(toolRemember))
	add(set.Web, web)
	parts = append(parts, report)
	canSpawn := has(toolSpawnSubagent)
	add(set.Spawn, canSpawn)
	add(set.AskOwner, has(toolAskOwner))
	add(set.ProposePlan, has(toolProposePlan))
	if !run.IsRoot() {
		sub, err := set.Subagent(prompts.SubagentData{Name: run.Name, Reason: run.Reason, CanSpawn: canSpawn})
		if err != nil {
			return "", err
		}
		parts = append(parts, sub)
		if at := a.runType(run); at != nil {
			parts = append(parts, at.Prompt)
		}
		add(set.Messaging, has(toolListSiblings, toolSendMessage, toolReadMessages))
	}
	return prompts.Join(parts...), nil
}

// reportTokens is the report's length budget the prompt states: the
// completion cap of a call that writes the report (buildRequest), before
// any doubling a retried step gets, so that the prompt is the same on
// every step.
func (a *Service) reportTokens(run *Run) int {
	p := a.profileFor(run)
	return completionCap(p, true, 0, a.maxCompletionFor(run), p.ContextWindow, 0)
}
