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
	// Remember explains the remember tool, for agents that have it.
	//go:embed remember.md
	Remember string
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

	//go:embed report.md
	reportText string
	reportTmpl = template.Must(template.New("report").Parse(reportText))

	//go:embed sources.md
	sourcesText string
	sourcesTmpl = template.Must(template.New("sources").Parse(sourcesText))

	//go:embed revise.md
	reviseText string
	reviseTmpl = template.Must(template.New("revise").Parse(reviseText))
)

// SourcesExample is the one form of a Sources entry the prompts show, and
// the citation check reads: the number in brackets, the title, a dash and
// the URL or the knowledge-base source.
const SourcesExample = "[1] Title of the page or document — https://example.org/page"

// Report renders the part that says what a report is: its length budget
// (its completion cap, in tokens, and about three words for four tokens),
// its citations and its Sources section in the one form SourcesExample.
func Report(tokens int) (string, error) {
	return render(reportTmpl, reportData(tokens))
}

// reportData fills the report template.
func reportData(tokens int) any {
	return struct {
		Tokens, Words int
		Example       string
	}{tokens, max(tokens*3/4/100*100, 100), SourcesExample}
}

// Sources renders the sentence that names a research's sources: the
// knowledge base, the web, or both.
func Sources(knowledgeBase, web bool) (string, error) {
	return render(sourcesTmpl, struct{ KnowledgeBase, Web bool }{knowledgeBase, web})
}

// render executes a prompt template.
func render(t *template.Template, d any) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("error rendering the %s prompt: %w", t.Name(), err)
	}
	return strings.TrimSpace(b.String()), nil
}

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
	return render(reviseTmpl, d)
}

// SubagentData fills the sub-agent template.
type SubagentData struct {
	Name     string
	Reason   string
	CanSpawn bool
}

// Subagent renders the part that tells a sub-agent who it is and why it exists.
func Subagent(d SubagentData) (string, error) {
	return render(subagentTmpl, d)
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
