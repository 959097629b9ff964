package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// source is one entry of GET /v1/gb/research/{id}/sources.
type source struct {
	RunID  int64     `json:"run_id"`
	Step   int       `json:"step"`
	Kind   string    `json:"kind"`
	URL    string    `json:"url"`
	Title  string    `json:"title"`
	Status int       `json:"status"`
	Bytes  int64     `json:"bytes"`
	Error  string    `json:"error,omitempty"`
	Cached bool      `json:"cached"`
	At     time.Time `json:"at"`
}

// sourcesPage is the answer of GET /v1/gb/research/{id}/sources.
type sourcesPage struct {
	Sources []source `json:"sources"`
}

func researchSourcesCmd() *cobra.Command {
	var tree bool
	cmd := &cobra.Command{
		Use:   "sources ID",
		Short: "The pages a run fetched, the search results it was shown and the documents it read",
		Example: `  gb research sources 1
  gb research sources 1 --tree -o json`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		var p sourcesPage
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/sources?tree=%t", id, tree), nil, &p); err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), p)
		}
		if len(p.Sources) == 0 {
			var run jobs.Run
			if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d", id), nil, &run); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), noSources(&run, tree))
			return nil
		}
		return printSources(cmd.OutOrStdout(), p)
	})
	cmd.Flags().BoolVar(&tree, "tree", false, "the sources of every agent of the run's tree")
	return cmd
}

// noSources is what to say of a run with no sources: "yet" only while it
// works.
func noSources(run *jobs.Run, tree bool) string {
	who := "this run"
	if tree {
		who = "no agent of this run's tree"
	}
	switch {
	case !run.Ended() && tree:
		return "no sources yet: " + who + " has read a page or document so far"
	case !run.Ended():
		return "no sources yet: " + who + " has read no page or document so far"
	case tree:
		return fmt.Sprintf("no sources: the run ended %s and %s read a page or document", run.Status, who)
	}
	return fmt.Sprintf("no sources: the run ended %s without reading a page or document (see --tree for its sub-agents')", run.Status)
}

func printSources(w io.Writer, p sourcesPage) error {
	t := newTable(w, "RUN", "STEP", "KIND", "STATUS", "BYTES", "TITLE", "URL")
	for _, s := range p.Sources {
		status := "-"
		if s.Status != 0 {
			status = strconv.Itoa(s.Status)
		}
		t.row(strconv.FormatInt(s.RunID, 10), strconv.Itoa(s.Step), s.Kind, status, strconv.FormatInt(s.Bytes, 10),
			fit(s.Title, 40), fit(s.URL, 70))
	}
	return t.flush()
}
