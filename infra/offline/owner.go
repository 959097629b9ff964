package offline

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file is what the policy does with its owner, when the request
// offers it the tools for that: an interactive research (ask_owner) asks
// one question at its first turn, which aspect of the topic to focus on,
// and steers its searches by the answer; a research started with
// approve_plan (propose_plan) proposes the sub-agents the topic's facets
// call for before it spawns any, spawns what its owner approved, and
// researches alone after a rejection or when no decision came. Like the
// rest of the policy it keeps no memory: the question asked, the answer
// and the decision are read back from the conversation.

// Names of the tools the policy calls to reach its owner.
const (
	toolAskOwner    = "ask_owner"
	toolProposePlan = "propose_plan"
)

// noAnswerPrefix starts ask_owner's result when the question's deadline
// came before an answer, and noDecisionPrefix propose_plan's when the
// plan's did.
const (
	noAnswerPrefix   = "No answer came"
	noDecisionPrefix = "No decision came"
)

// approvedRE is a line of an approved plan: "- name (type, N steps): task".
var approvedRE = regexp.MustCompile(`(?m)^- (\S+) \([^)]*\): (.+)$`)

// plannedAgent is one sub-agent of a plan: proposed, or approved.
type plannedAgent struct {
	name, reason, task string
}

// ownerOnly reports whether an assistant turn did nothing but ask its
// owner or propose a plan: such turns come before the research's opening.
func ownerOnly(m llm.Message) bool {
	if len(m.ToolCalls) == 0 {
		return false
	}
	for _, c := range m.ToolCalls {
		if c.Name != toolAskOwner && c.Name != toolProposePlan {
			return false
		}
	}
	return true
}

// readOwnerResult takes in the result of ask_owner (the answer, unless
// the deadline came first) or of propose_plan (the decision).
func (s *state) readOwnerResult(name, content string) {
	switch {
	case strings.HasPrefix(content, "Error:"):
		if name == toolProposePlan {
			s.planDecided = true // refused: research alone
		}
	case name == toolAskOwner:
		if a := strings.TrimSpace(content); !strings.HasPrefix(a, noAnswerPrefix) {
			s.answer = a
		}
	case name == toolProposePlan:
		s.planDecided = true
		if strings.HasPrefix(content, "Your owner approved") {
			for _, m := range approvedRE.FindAllStringSubmatch(content, -1) {
				s.approved = append(s.approved, plannedAgent{name: m[1], task: m[2],
					reason: "approved by the owner in the plan"})
			}
		}
	}
}

// opening reports whether the coming turn is the research's first: no
// turn yet but those that asked the owner or proposed a plan.
func (s *state) opening() bool { return s.turns == s.ownerTurns }

// facets are the parts of the topic worth a sub-agent each: the parts of
// a question of several, each with the one package the question names;
// else, for one question, two sides of it (how it works, and how it is
// used with its limits and alternatives).
func (s *state) facets() []plannedAgent {
	parts := splitQuestion(s.task)
	if len(parts) >= 2 {
		parts = withPackage(parts, questionText(s.task))
		out := make([]plannedAgent, len(parts))
		for i, p := range parts {
			out[i] = plannedAgent{name: partName(p, i),
				reason: oneLine(fmt.Sprintf("the question has %d independent parts and this one needs searches of its own: %s", len(parts), p), 300),
				task:   p + " Bring back the key facts with the titles and sources of the documents they come from."}
		}
		return out
	}
	subject := keywords(firstQuestion(s.task), 4)
	if subject == "" {
		return nil
	}
	sides := []struct{ suffix, question string }{
		{"how", "How does " + subject + " work, and what is it made of?"},
		{"use", "How is " + subject + " used, and what are its limits and alternatives?"},
	}
	out := make([]plannedAgent, len(sides))
	for i, side := range sides {
		out[i] = plannedAgent{name: strings.TrimSuffix(partName(subject, 0), "-1") + "-" + side.suffix,
			reason: oneLine("the topic has two sides worth searches of their own; this one: "+side.question, 300),
			task:   side.question + " Bring back the key facts with the titles and sources of the documents they come from."}
	}
	return out
}

// question is the one question the policy asks its owner: which aspect
// of the topic to focus on, with the topic's facets as examples.
func (s *state) question() string {
	var aspects []string
	for _, f := range s.facets() {
		if a := keywords(firstQuestion(f.task), 5); a != "" {
			aspects = append(aspects, `"`+a+`"`)
		}
	}
	q := fmt.Sprintf("Which aspect of %q should this research focus on", oneLine(firstQuestion(s.task), 200))
	if len(aspects) >= 2 {
		q += " (for example " + joinOr(aspects) + ")"
	}
	return q + ", or should it cover all of it? A few words are enough: they steer its searches."
}

// askCall is the question of an interactive research's first turn.
func (s *state) askCall() llm.ToolCall {
	return call(toolAskOwner, map[string]any{"question": s.question()})
}

// planCall proposes the topic's facets as sub-agents; ok is false when
// the topic has none.
func (s *state) planCall() (c llm.ToolCall, ok bool) {
	facets := s.facets()
	if len(facets) == 0 {
		return c, false
	}
	subs := make([]map[string]any, len(facets))
	for i, f := range facets {
		subs[i] = map[string]any{"name": f.name, "reason": f.reason, "task": f.task}
	}
	return call(toolProposePlan, map[string]any{"subagents": subs}), true
}

// spawnCalls spawns agents.
func spawnCalls(agents []plannedAgent) []llm.ToolCall {
	calls := make([]llm.ToolCall, len(agents))
	for i, p := range agents {
		calls[i] = call("spawn_subagent", map[string]any{"name": p.name, "reason": p.reason, "task": p.task})
	}
	return calls
}

// steered is the task as the policy researches it once its owner
// answered: the answer leads its first question, so that the names and
// words of the answer come first in its searches and in the sentences its
// report picks.
func steered(task, answer string) string {
	if answer == "" {
		return task
	}
	return strings.TrimRight(oneLine(answer, 500), ".?!") + ": " + task
}
