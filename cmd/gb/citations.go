package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/cite"
)

func researchCitationsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "citations ID",
		Short: "The citation check of a run's report: each claim, its source, verdict and passage",
		Long: `The verdicts of the last check of a run's report against what the agents of its
tree read: each claim with the source it cites, its verdict (supported, weak,
unsupported, contradicted, unread; uncited for a factual claim with no citation),
its score and the passage that best supports it. After a revision, the counts
before it too; when a needed revision could not run, why.`,
		Example: `  gb research citations 1
  gb research citations 1 -o json`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		var rc jobs.RunCitations
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/citations", id), nil, &rc); err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), rc)
		}
		return printCitations(cmd.OutOrStdout(), &rc)
	})
	return cmd
}

// printCitations prints the counts, then one row per claim and source.
func printCitations(w io.Writer, rc *jobs.RunCitations) error {
	if rc.Counts == nil {
		if rc.Mode == jobs.CitationsOff {
			_, err := fmt.Fprintln(w, "no citation check: this research's citations mode is off")
			return err
		}
		_, err := fmt.Fprintln(w, "no citation check yet: the run has not written its report")
		return err
	}
	line := "citations: " + countsLine(*rc.Counts)
	if rc.CountsBefore != nil {
		line += " (before the revision: " + countsLine(*rc.CountsBefore) + ")"
	}
	if rc.RevisionSkipped != "" {
		line += "\nrevision skipped: " + oneLine(rc.RevisionSkipped)
	}
	if _, err := fmt.Fprintln(w, line); err != nil {
		return err
	}
	t := newTable(w, "CLAIM", "SOURCE", "VERDICT", "SCORE", "TEXT", "PASSAGE / REASON")
	for _, c := range rc.Citations {
		src := "-"
		if c.Marker > 0 && c.Page > 0 {
			src = fmt.Sprintf("[%d, p. %d] %s", c.Marker, c.Page, c.Ref)
		} else if c.Marker > 0 {
			src = fmt.Sprintf("[%d] %s", c.Marker, c.Ref)
		}
		detail := c.Passage
		if c.PassagePage != "" && detail != "" {
			detail = "(" + c.PassagePage + ") " + detail
		}
		if c.Verdict != cite.Supported && c.Reason != "" {
			detail = c.Reason
			if c.Passage != "" {
				detail += ": " + c.Passage
			}
		}
		t.row(strconv.Itoa(c.Claim+1), fit(src, 40), string(c.Verdict), strconv.FormatFloat(c.Score, 'f', 2, 64),
			fit(oneLine(c.Text), 60), fit(oneLine(detail), 80))
	}
	return t.flush()
}

// countsLine says a check's counts in words.
func countsLine(c cite.Counts) string {
	s := fmt.Sprintf("%d claims: %d supported, %d weak, %d unsupported, %d unread, %d uncited",
		c.Claims, c.Supported, c.Weak, c.Unsupported, c.Unread, c.Uncited)
	// The verdicts most reports have none of, said only when they have some.
	for _, v := range []struct {
		n    int
		name string
	}{{c.Contradicted, "contradicted"}, {c.NoSources, "with unreadable sources"}, {c.Inference, "inference"},
		{c.Absence, "absence"}} {
		if v.n > 0 {
			s += fmt.Sprintf(", %d %s", v.n, v.name)
		}
	}
	return s
}

// citationsTool is the MCP tool get_citations.
func citationsTool(c *apiClient) mcpTool {
	return mcpTool{name: "get_citations", title: "Get the citation check of a research's report", kind: readOnly,
		desc: "The citation check of the run's report against what its agents read: the counts (claims, supported, " +
			"weak, unsupported, contradicted, unread, uncited; counts_before after a revision; revision_skipped when a needed " +
			"revision could not run) and each claim with the source it cites, " +
			"its verdict, score, reason and the passage of the source that best supports it.",
		add: plain(withID(func(ctx context.Context, id int64) (mcpOut, error) {
			var out mcpOut
			if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/citations", id), nil, &out); err != nil {
				return nil, err
			}
			return out, nil
		}))}
}
