package offline

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// reportLabel marks every offline report as what it is.
const reportLabel = "_Written by the offline research policy: an extractive summary of the documents read, not a language model._"

// citations numbers sources in the order they are first cited.
type citations struct {
	byURL map[string]int
	list  []source
}

func (c *citations) cite(s source) int {
	if c.byURL == nil {
		c.byURL = map[string]int{}
	}
	if n, ok := c.byURL[s.url]; ok {
		return n
	}
	c.list = append(c.list, s)
	c.byURL[s.url] = len(c.list)
	return len(c.list)
}

var (
	sectionRE   = regexp.MustCompile(`(?m)^## (\S+) \(run (\d+)\): (\S+)$`)
	sourceRE    = regexp.MustCompile(`(?m)^\[(\d+)\] (.+) — (\S+)$`)
	citeRE      = regexp.MustCompile(`\[(\d+)\]`)
	findingLine = regexp.MustCompile(`(?m)^- (.+)$`)
)

// report writes the extractive report of everything the agent gathered:
// its best sentences, or, when even the best evidence is weak (coverage),
// that the documents do not cover the question; then its sub-agents'
// findings.
func (s *state) report() string {
	c := citations{}
	if s.focus == nil {
		s.focus = newFocus(s.task)
	}
	var b strings.Builder
	seen := map[string]bool{}
	fmt.Fprintf(&b, "# Report: %s\n\n%s\n", oneLine(s.task, 300), reportLabel)
	if s.answer != "" {
		fmt.Fprintf(&b, "\nIts owner was asked which aspect to focus on and answered: %s. The searches and the findings put that first.\n",
			strings.TrimRight(oneLine(s.answer, 300), ".?!"))
	}
	pool := append(s.sources(), s.pages...)
	pool = append(pool, s.messages...)
	best := bestSentences(s.focus, pool, 6)
	share, missing := coverage(s.focus, pool, best)
	switch weak := len(best) == 0 || share < weakCoverage; {
	case weak && s.reports != "":
		// The sub-agents researched the parts; what this agent read
		// itself adds nothing worth quoting.
	case weak:
		fmt.Fprintf(&b, "\n## Findings\n- %s\n", notCovered(share, missing))
	default:
		b.WriteString("\n## Findings\n")
		for _, sent := range best {
			seen[sent.text] = true
			fmt.Fprintf(&b, "- %s [%d]\n", sent.text, c.cite(sent.src))
		}
	}
	if s.reports != "" {
		b.WriteString("\n## From the sub-agents\n")
		s.mergeReports(&b, &c, seen)
	}
	if len(c.list) > 0 {
		b.WriteString("\n## Sources\n")
		for i, src := range c.list {
			fmt.Fprintf(&b, "[%d] %s — %s\n", i+1, src.title, src.url)
		}
	}
	return strings.TrimSpace(b.String())
}

// mergeReports copies each sub-agent's findings into this report, with its
// citations renumbered into this report's sources, skipping findings the
// report already has.
func (s *state) mergeReports(b *strings.Builder, c *citations, seen map[string]bool) {
	idx := sectionRE.FindAllStringSubmatchIndex(s.reports, -1)
	for i, m := range idx {
		end := len(s.reports)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		name, run, status := s.reports[m[2]:m[3]], s.reports[m[4]:m[5]], s.reports[m[6]:m[7]]
		body := s.reports[m[1]:end]
		fmt.Fprintf(b, "### %s (run %s): %s\n", name, run, status)
		if status != "succeeded" {
			fmt.Fprintf(b, "- %s\n", strings.TrimSpace(body))
			continue
		}
		theirs := map[string]source{}
		for _, sm := range sourceRE.FindAllStringSubmatch(body, -1) {
			theirs[sm[1]] = source{title: sm[2], url: sm[3]}
		}
		findings := body
		if k := strings.Index(body, "## Sources"); k >= 0 {
			findings = body[:k]
		}
		for _, fm := range findingLine.FindAllStringSubmatch(findings, -1) {
			if text := citeRE.ReplaceAllString(fm[1], ""); seen[strings.TrimSpace(text)] {
				continue
			} else {
				seen[strings.TrimSpace(text)] = true
			}
			line := citeRE.ReplaceAllStringFunc(fm[1], func(ref string) string {
				src, ok := theirs[strings.Trim(ref, "[]")]
				if !ok {
					return ref
				}
				return "[" + strconv.Itoa(c.cite(src)) + "]"
			})
			fmt.Fprintf(b, "- %s\n", line)
		}
	}
}
