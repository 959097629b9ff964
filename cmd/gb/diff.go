package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// compared is one side of gb research diff: a research as the API gives it.
type compared struct {
	ID        int64              `json:"id"`
	Run       *jobs.Run          `json:"run"`
	Totals    jobs.Totals        `json:"totals"`
	Steps     []stepTools        `json:"root_steps"`
	Tools     map[string]int     `json:"tools"`
	Read      []string           `json:"sources_read"`
	Citations *jobs.RunCitations `json:"citations,omitempty"`
}

// stepTools is a step of a root and the tools it called, in order.
type stepTools struct {
	Step  int      `json:"step"`
	Tools []string `json:"tools"`
	// Replayed says a fork copied the step from its original.
	Replayed bool `json:"replayed,omitempty"`
}

// researchDiff is what gb research diff prints: both researches and what
// differs between them.
type researchDiff struct {
	A, B       *compared
	OnlyA      []string `json:"sources_only_a"`
	OnlyB      []string `json:"sources_only_b"`
	Both       int      `json:"sources_both"`
	StepsDiff  []int    `json:"root_steps_that_differ"`
	ReportDiff string   `json:"report_diff"`
}

func researchDiffCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Two researches side by side: status, steps, tools, sources read, citations, tokens, cost and report, with what differs",
		Long: `Compares the researches A and B (two of yours, by id): their status, model, agents, steps,
tokens and cost, the tools each tree called, the root's steps one beside the other, the sources each
tree read (those only one read, and how many both did), the citation check's counts, and the two
reports as a unified diff. Everything it prints comes from the API, as gb research get, steps,
sources and citations print it.`,
		Example: `  gb research diff 12 15
  gb research diff 12 15 -o json | jq '.sources_only_b'`,
		Args: args(2, 2, "two research ids"),
		// Both arguments are run ids.
		ValidArgsFunction: func(cmd *cobra.Command, a []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(a) < 2 {
				return completeRunIDs(cmd, a, toComplete)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}
	o := addOutput(cmd)
	cmd.RunE = withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
		asJSON, err := o.isJSON()
		if err != nil {
			return err
		}
		var sides [2]*compared
		for i, s := range a {
			id, err := runID(s)
			if err != nil {
				return err
			}
			if sides[i], err = loadCompared(ctx, c, id); err != nil {
				return err
			}
		}
		d := diffResearches(sides[0], sides[1])
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), struct {
				A *compared `json:"a"`
				B *compared `json:"b"`
				*researchDiff
			}{d.A, d.B, d})
		}
		return printDiff(cmd.OutOrStdout(), d)
	})
	return cmd
}

// loadCompared reads what gb research diff compares of the research id.
func loadCompared(ctx context.Context, c *apiClient, id int64) (*compared, error) {
	var tree treeResponse
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/tree", id), nil, &tree); err != nil {
		return nil, err
	}
	s := &compared{ID: id, Totals: tree.Totals, Tools: map[string]int{}}
	for _, r := range tree.Runs {
		if r.ID == id {
			s.Run = r
		}
	}
	if s.Run == nil {
		return nil, fmt.Errorf("the tree of research %d does not hold it", id)
	}
	if err := loadStepTools(ctx, c, s); err != nil {
		return nil, err
	}
	var src sourcesPage
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/sources?tree=true", id), nil, &src); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, x := range src.Sources {
		if x.Kind != jobs.SourceResult && x.URL != "" && !seen[x.URL] {
			seen[x.URL] = true
			s.Read = append(s.Read, x.URL)
		}
	}
	slices.Sort(s.Read)
	var rc jobs.RunCitations
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/citations", id), nil, &rc); err == nil {
		s.Citations = &rc
	}
	return s, nil
}

// loadStepTools reads every step of the tree, oldest first, for the tools
// each called; the root's steps are kept in order.
func loadStepTools(ctx context.Context, c *apiClient, s *compared) error {
	cursor := ""
	for {
		q := url.Values{"order": {"asc"}, "limit": {"20"}, "chars": {"100"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var p stepsPage
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/steps?%s", s.ID, q.Encode()), nil, &p); err != nil {
			return err
		}
		for _, st := range p.Steps {
			var tools []string
			for _, m := range st.Messages {
				if m.Role != "assistant" {
					continue
				}
				for _, call := range m.ToolCalls {
					tools = append(tools, call.Name)
				}
			}
			for _, t := range tools {
				s.Tools[t]++
			}
			if st.RunID == s.ID {
				s.Steps = append(s.Steps, stepTools{Step: st.Step, Tools: tools, Replayed: st.Replayed})
			}
		}
		if !p.More || p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	slices.SortFunc(s.Steps, func(x, y stepTools) int { return x.Step - y.Step })
	return nil
}

// diffResearches finds what differs between a and b.
func diffResearches(a, b *compared) *researchDiff {
	d := &researchDiff{A: a, B: b}
	inB := map[string]bool{}
	for _, u := range b.Read {
		inB[u] = true
	}
	inA := map[string]bool{}
	for _, u := range a.Read {
		inA[u] = true
		if inB[u] {
			d.Both++
		} else {
			d.OnlyA = append(d.OnlyA, u)
		}
	}
	for _, u := range b.Read {
		if !inA[u] {
			d.OnlyB = append(d.OnlyB, u)
		}
	}
	for i := range max(len(a.Steps), len(b.Steps)) {
		if i >= len(a.Steps) || i >= len(b.Steps) || !slices.Equal(a.Steps[i].Tools, b.Steps[i].Tools) {
			d.StepsDiff = append(d.StepsDiff, i+1)
		}
	}
	d.ReportDiff = udiff.Unified(fmt.Sprintf("research %d", a.ID), fmt.Sprintf("research %d", b.ID),
		a.Run.Report, b.Run.Report)
	return d
}

// printDiff prints d as tables; what the agents wrote (reports, URLs) is
// printed inert.
func printDiff(w io.Writer, d *researchDiff) error {
	a, b := d.A, d.B
	t := newTable(w, "", "#"+strconv.FormatInt(a.ID, 10), "#"+strconv.FormatInt(b.ID, 10), "")
	row := func(name, x, y string) {
		mark := ""
		if x != y {
			mark = "≠"
		}
		t.row(name, x, y, mark)
	}
	row("status", a.Run.Status, b.Run.Status)
	row("model", oneLine(a.Run.Model), oneLine(b.Run.Model))
	if a.Run.ForkedFrom != nil || b.Run.ForkedFrom != nil {
		row("forked from", forkLine(a.Run), forkLine(b.Run))
	}
	row("agents", strconv.Itoa(a.Totals.Runs), strconv.Itoa(b.Totals.Runs))
	row("steps", strconv.Itoa(a.Totals.Steps), strconv.Itoa(b.Totals.Steps))
	row("tokens", strconv.FormatInt(a.Totals.Tokens, 10), strconv.FormatInt(b.Totals.Tokens, 10))
	row("cached tokens", strconv.FormatInt(a.Totals.CachedTokens, 10), strconv.FormatInt(b.Totals.CachedTokens, 10))
	row("cost", fmt.Sprintf("$%.4f", a.Totals.CostUSD), fmt.Sprintf("$%.4f", b.Totals.CostUSD))
	row("sources read", strconv.Itoa(len(a.Read)), strconv.Itoa(len(b.Read)))
	row("citations", citationsLine(a.Citations), citationsLine(b.Citations))
	row("report", fmt.Sprintf("%d chars", len([]rune(a.Run.Report))), fmt.Sprintf("%d chars", len([]rune(b.Run.Report))))
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntools the tree called")
	t = newTable(w, "tool", "#"+strconv.FormatInt(a.ID, 10), "#"+strconv.FormatInt(b.ID, 10), "")
	var names []string
	for n := range a.Tools {
		names = append(names, n)
	}
	for n := range b.Tools {
		if _, ok := a.Tools[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		x, y := a.Tools[n], b.Tools[n]
		mark := ""
		if x != y {
			mark = fmt.Sprintf("%+d", y-x)
		}
		t.row(oneLine(n), strconv.Itoa(x), strconv.Itoa(y), mark)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nthe root's steps")
	t = newTable(w, "step", "#"+strconv.FormatInt(a.ID, 10), "#"+strconv.FormatInt(b.ID, 10), "")
	for i := range max(len(a.Steps), len(b.Steps)) {
		x, y := stepToolsAt(a.Steps, i), stepToolsAt(b.Steps, i)
		mark := ""
		if slices.Contains(d.StepsDiff, i+1) {
			mark = "≠"
		}
		t.row(strconv.Itoa(i+1), fit(x, 60), fit(y, 60), mark)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nsources read by both: %d\n", d.Both)
	printURLs(w, fmt.Sprintf("only by #%d", a.ID), d.OnlyA)
	printURLs(w, fmt.Sprintf("only by #%d", b.ID), d.OnlyB)
	if d.ReportDiff == "" {
		fmt.Fprintln(w, "\nthe reports are the same")
		return nil
	}
	fmt.Fprintln(w, "\nthe reports (unified diff)")
	_, err := fmt.Fprint(w, printable(d.ReportDiff))
	return err
}

// stepToolsAt is the i-th step's tools as one cell, "-" past the last step.
func stepToolsAt(steps []stepTools, i int) string {
	if i >= len(steps) {
		return "-"
	}
	cell := "(answer)"
	if len(steps[i].Tools) > 0 {
		cell = oneLine(strings.Join(steps[i].Tools, ", "))
	}
	if steps[i].Replayed {
		cell += " (replayed)"
	}
	return cell
}

// forkLine says which research and step a fork was forked from, "-" for a
// research that is not a fork.
func forkLine(r *jobs.Run) string {
	if r.ForkedFrom == nil || r.ForkStep == nil {
		return "-"
	}
	return fmt.Sprintf("#%d at step %d", *r.ForkedFrom, *r.ForkStep)
}

// citationsLine is a citation check's counts in a few words.
func citationsLine(rc *jobs.RunCitations) string {
	if rc == nil || rc.Counts == nil {
		return "-"
	}
	c := rc.Counts
	return fmt.Sprintf("%d/%d supported, %d unsupported", c.Supported, c.Claims, c.Unsupported+c.Contradicted)
}

// printURLs prints a titled list of URLs, or nothing when it is empty.
func printURLs(w io.Writer, title string, urls []string) {
	if len(urls) == 0 {
		return
	}
	fmt.Fprintf(w, "%s: %d\n", title, len(urls))
	for _, u := range urls {
		fmt.Fprintf(w, "  %s\n", oneLine(u))
	}
}
