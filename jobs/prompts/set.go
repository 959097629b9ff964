package prompts

import (
	"fmt"
	"sync"
	"text/template"
)

// Set is one version of every part of an agent's system prompt, as text:
// the embedded one (Embedded), or one a research was pinned to and read
// back from where it was stored. Its templates are parsed on first use.
type Set struct {
	Research    string `json:"research"`
	Compaction  string `json:"compaction"`
	Knowledge   string `json:"knowledge"`
	Remember    string `json:"remember"`
	Web         string `json:"web"`
	Spawn       string `json:"spawn"`
	AskOwner    string `json:"ask_owner"`
	ProposePlan string `json:"propose_plan"`
	Messaging   string `json:"messaging"`
	// SubagentTemplate, ReportTemplate, SourcesTemplate and
	// ReviseTemplate are text/template sources (Subagent, Report, Sources
	// and Revise render them).
	SubagentTemplate string `json:"subagent_template"`
	ReportTemplate   string `json:"report_template"`
	SourcesTemplate  string `json:"sources_template"`
	ReviseTemplate   string `json:"revise_template"`

	once   sync.Once
	parsed map[string]*template.Template
	err    error
}

// Embedded is the set built into this binary.
func Embedded() *Set {
	return &Set{Research: Research, Compaction: Compaction, Knowledge: Knowledge, Remember: Remember, Web: Web,
		Spawn: Spawn, AskOwner: AskOwner, ProposePlan: ProposePlan, Messaging: Messaging,
		SubagentTemplate: subagentText, ReportTemplate: reportText, SourcesTemplate: sourcesText,
		ReviseTemplate: reviseText}
}

// template is the parsed template of that name.
func (s *Set) template(name string) (*template.Template, error) {
	s.once.Do(func() {
		s.parsed = map[string]*template.Template{}
		for n, text := range map[string]string{"subagent": s.SubagentTemplate, "report": s.ReportTemplate,
			"sources": s.SourcesTemplate, "revise": s.ReviseTemplate} {
			t, err := template.New(n).Parse(text)
			if err != nil {
				s.err = fmt.Errorf("error parsing the %s prompt: %w", n, err)
				return
			}
			s.parsed[n] = t
		}
	})
	if s.err != nil {
		return nil, s.err
	}
	return s.parsed[name], nil
}

// renderNamed renders the named template of the set.
func (s *Set) renderNamed(name string, d any) (string, error) {
	t, err := s.template(name)
	if err != nil {
		return "", err
	}
	return render(t, d)
}

// Report is the package's Report with the set's template.
func (s *Set) Report(tokens int) (string, error) {
	return s.renderNamed("report", reportData(tokens))
}

// Sources is the package's Sources with the set's template.
func (s *Set) Sources(knowledgeBase, web bool) (string, error) {
	return s.renderNamed("sources", struct{ KnowledgeBase, Web bool }{knowledgeBase, web})
}

// Subagent is the package's Subagent with the set's template.
func (s *Set) Subagent(d SubagentData) (string, error) {
	return s.renderNamed("subagent", d)
}

// Revise is the package's Revise with the set's template.
func (s *Set) Revise(d ReviseData) (string, error) {
	d.SourcesExample = SourcesExample
	return s.renderNamed("revise", d)
}
