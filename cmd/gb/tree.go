package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

type treeResponse struct {
	Runs   []*jobs.Run `json:"runs"`
	Totals jobs.Totals `json:"totals"`
}

func researchTreeCmd() *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "tree ID",
		Short: "The run and all its sub-agents: name, status, state, steps/max, tokens (cached), cost",
		Example: `  gb research tree 1
  gb research tree 1 --follow
  gb research tree 1 -o json | jq '.totals'`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		out := cmd.OutOrStdout()
		if asJSON {
			if follow {
				return usageErrorf("--follow redraws a table; it does not go with -o json (use gb research events ID --follow -o json)")
			}
			t, err := getTree(ctx, c, id)
			if err != nil {
				return err
			}
			return writeJSON(out, t)
		}
		return showTree(ctx, c, id, follow, out)
	})
	cmd.Flags().BoolVar(&follow, "follow", false, "redraw the tree as it changes until every agent has ended")
	return cmd
}

func getTree(ctx context.Context, c *apiClient, id int64) (treeResponse, error) {
	var t treeResponse
	err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/tree", id), nil, &t)
	return t, err
}

// showTree prints the tree of id; with follow, it redraws it each time
// events land, until every agent has ended.
func showTree(ctx context.Context, c *apiClient, id int64, follow bool, out io.Writer) error {
	last := ""
	draw := func() error {
		t, err := getTree(ctx, c, id)
		if err != nil {
			return err
		}
		if drawn := drawTree(t); drawn != last {
			if last != "" {
				fmt.Fprintln(out)
			}
			fmt.Fprint(out, drawn)
			last = drawn
		}
		return nil
	}
	if err := draw(); err != nil || !follow {
		return err
	}
	return watchTree(ctx, c, id, 0, func([]jobs.Event) error { return draw() })
}

// drawTree renders runs (a run and its descendants, by depth) as a tree.
func drawTree(t treeResponse) string {
	kids := map[int64][]*jobs.Run{}
	var top *jobs.Run
	for _, r := range t.Runs {
		if top == nil {
			top = r
			continue
		}
		kids[*r.ParentID] = append(kids[*r.ParentID], r)
	}
	if top == nil {
		return ""
	}
	var b strings.Builder
	var walk func(r *jobs.Run, prefix, branch string)
	walk = func(r *jobs.Run, prefix, branch string) {
		fmt.Fprintf(&b, "%s%s#%d %s  %s · %s · %d/%d steps · %d tok%s · $%.4f\n", prefix, branch, r.ID, fit(agentName(r), 24),
			r.Status, r.State, r.Steps, r.MaxSteps, r.Tokens, tokenParts(r.CachedTokens, r.ReasoningTokens), r.CostUSD)
		if r.Error != "" {
			fmt.Fprintf(&b, "%s%s    error: %s\n", prefix, strings.Repeat(" ", len([]rune(branch))), fit(r.Error, 100))
		}
		next := prefix
		switch branch {
		case "├── ":
			next += "│   "
		case "└── ":
			next += "    "
		}
		for i, k := range kids[r.ID] {
			br := "├── "
			if i == len(kids[r.ID])-1 {
				br = "└── "
			}
			walk(k, next, br)
		}
	}
	walk(top, "", "")
	tt := t.Totals
	fmt.Fprintf(&b, "total: %d agents (%d working) · %d steps · %d tokens%s · $%.4f%s\n", tt.Runs, tt.Working, tt.Steps,
		tt.Tokens, tokenParts(tt.CachedTokens, tt.ReasoningTokens), tt.CostUSD, estimatedNote(tt.EstimatedCalls))
	return b.String()
}

// messagesPage is the answer of GET /v1/gb/research/{id}/messages.
type messagesPage struct {
	Messages []jobs.TranscriptMessage `json:"messages"`
}

func researchMessagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "messages ID",
		Short: "The transcript of the messages between the agents of a run's tree",
		Example: `  gb research messages 1
  gb research messages 1 -o json`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		return showMessages(ctx, c, id, asJSON, cmd.OutOrStdout())
	})
	return cmd
}

func showMessages(ctx context.Context, c *apiClient, id int64, asJSON bool, out io.Writer) error {
	var p messagesPage
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/messages", id), nil, &p); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(out, p)
	}
	if len(p.Messages) == 0 {
		fmt.Fprintln(out, "no messages in this research")
		return nil
	}
	t := newTable(out, "SENT", "FROM", "TO", "READ", "TEXT")
	for _, m := range p.Messages {
		read := "unread"
		if m.ReadAt != nil {
			read = m.ReadAt.Local().Format("15:04:05.000")
		}
		t.row(m.SentAt.Local().Format("15:04:05.000"), fit(m.From, 24), fit(m.To, 24), read, fit(m.Text, 100))
	}
	return t.flush()
}
