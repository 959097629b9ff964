// Package prompts holds the system prompts of research agents as embedded
// Markdown files, one per part, and joins the parts an agent is given.
//
// It may import nothing of the project.
package prompts

import (
	"embed"
	"fmt"
	"strings"
	"text/template"
)

var (
	// Research is the base every research agent gets.
	//go:embed research.md
	Research string
	// Knowledge explains the knowledge-base tools.
	//go:embed knowledge.md
	Knowledge string
	// Spawn is the spawning policy, for agents that may spawn.
	//go:embed spawn.md
	Spawn string
	// Messaging explains the sibling tools, for sub-agents.
	//go:embed messaging.md
	Messaging string
	// Web explains the web tools and that pages are untrusted, for agents
	// that have them.
	//go:embed web.md
	Web string
	// AskOwner says when to ask the research's owner a question, for a
	// root that may (ask_owner).
	//go:embed ask_owner.md
	AskOwner string
	// ProposePlan says a root must have its sub-agents approved by its
	// owner before it spawns them (propose_plan).
	//go:embed propose_plan.md
	ProposePlan string
	// Judge is the system prompt of the citation judge's call: claims and
	// their passages in, one JSON verdict per claim out.
	//go:embed judge.md
	Judge string
	// WebSearch is the system prompt of the model call a web search makes
	// (the openai search provider's); it is not part of an agent's prompt.
	//go:embed web_search.md
	WebSearch string

	// Types holds the built-in sub-agent types, one Markdown file each with
	// a header (jobs/types.go reads them).
	//go:embed types/*.md
	Types embed.FS

	//go:embed subagent.md
	subagentText string
	subagentTmpl = template.Must(template.New("subagent").Parse(subagentText))

	//go:embed revise.md
	reviseText string
	reviseTmpl = template.Must(template.New("revise").Parse(reviseText))
)

// SourcesExample is the one form of a Sources entry the prompts show, and
// the citation check reads: the number in brackets, the title, a dash and
// the URL or the knowledge-base source.
const SourcesExample = "[1] Title of the page or document — https://example.org/page"

// ReviseData fills the revision note a root is given with its report.
type ReviseData struct {
	// Claims are the claims to revise, one line each, worst first.
	Claims []string
	// More is how many more were found than Claims shows.
	More int
	// SourcesUnparsed says the report's Sources list could not be read.
	SourcesUnparsed bool
	// SourcesExample is the form a Sources entry takes (SourcesExample).
	SourcesExample string
}

// Revise renders the revision note.
func Revise(d ReviseData) (string, error) {
	d.SourcesExample = SourcesExample
	var b strings.Builder
	if err := reviseTmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("error rendering the revision note: %w", err)
	}
	return strings.TrimSpace(b.String()), nil
}

// SubagentData fills the sub-agent template.
type SubagentData struct {
	Name     string
	Reason   string
	CanSpawn bool
}

// Subagent renders the part that tells a sub-agent who it is and why it exists.
func Subagent(d SubagentData) (string, error) {
	var b strings.Builder
	if err := subagentTmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("error rendering sub-agent prompt: %w", err)
	}
	return b.String(), nil
}

// Join joins prompt parts with a blank line, trimming each and skipping empties.
func Join(parts ...string) string {
	kept := make([]string, 0, len(parts))
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n\n")
}
