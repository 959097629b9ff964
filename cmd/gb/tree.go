package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs"
)

type treeResponse struct {
	Runs   []*jobs.Run `json:"runs"`
	Totals jobs.Totals `json:"totals"`
}

func researchTree(ctx context.Context, c *apiClient, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("research tree", flag.ContinueOnError)
	follow := fs.Bool("follow", false, "redraw the tree as it changes until every agent has ended")
	pos, err := parseArgs(fs, args, 1, 1, "ID [--follow]")
	if err != nil {
		return err
	}
	last := ""
	for {
		var t treeResponse
		if err := c.do(ctx, "GET", "/v1/gb/research/"+pos[0]+"/tree", nil, &t); err != nil {
			return err
		}
		drawn := drawTree(t)
		if drawn != last {
			if last != "" {
				fmt.Fprintln(out)
			}
			fmt.Fprint(out, drawn)
			last = drawn
		}
		if !*follow || t.Totals.Working == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
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
		name := r.Name
		if name == "" {
			name = "root"
		}
		fmt.Fprintf(&b, "%s%s#%d %s  %s · %s · %d/%d steps · %d tok · $%.4f\n", prefix, branch, r.ID, name,
			r.Status, r.State, r.Steps, r.MaxSteps, r.Tokens, r.CostUSD)
		if r.Error != "" {
			fmt.Fprintf(&b, "%s%s    error: %s\n", prefix, strings.Repeat(" ", len([]rune(branch))), r.Error)
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
	fmt.Fprintf(&b, "total: %d agents (%d working) · %d steps · %d tokens · $%.4f\n",
		t.Totals.Runs, t.Totals.Working, t.Totals.Steps, t.Totals.Tokens, t.Totals.CostUSD)
	return b.String()
}

func researchEvents(ctx context.Context, c *apiClient, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("research events", flag.ContinueOnError)
	after := fs.Int64("after", 0, "only events after this seq")
	pos, err := parseArgs(fs, args, 1, 1, "ID [--after SEQ]")
	if err != nil {
		return err
	}
	var resp struct {
		Events []jobs.Event `json:"events"`
	}
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%s/events?after=%d", pos[0], *after), nil, &resp); err != nil {
		return err
	}
	for _, e := range resp.Events {
		fmt.Fprintf(out, "%6d %s run %-5d %-10s %s\n", e.Seq, e.At.Format("15:04:05.000"), e.RunID, e.Kind, string(e.Data))
	}
	return nil
}

func researchMessages(ctx context.Context, c *apiClient, args []string, out io.Writer) error {
	pos, err := parseArgs(flag.NewFlagSet("research messages", flag.ContinueOnError), args, 1, 1, "ID")
	if err != nil {
		return err
	}
	var resp struct {
		Messages []jobs.TranscriptMessage `json:"messages"`
	}
	if err := c.do(ctx, "GET", "/v1/gb/research/"+pos[0]+"/messages", nil, &resp); err != nil {
		return err
	}
	if len(resp.Messages) == 0 {
		fmt.Fprintln(out, "no messages in this research")
	}
	for _, m := range resp.Messages {
		read := "unread"
		if m.ReadAt != nil {
			read = "read " + m.ReadAt.Format("15:04:05.000")
		}
		fmt.Fprintf(out, "%s  %s → %s (%s)\n  %s\n", m.SentAt.Format("15:04:05.000"), m.From, m.To, read, m.Text)
	}
	return nil
}
