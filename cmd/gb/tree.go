package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/mattn/go-runewidth"
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
	cmd.Flags().BoolVar(&follow, "follow", false, "show the tree as it changes until every agent has ended: redrawn in place on a terminal, only the changed lines otherwise")
	return cmd
}

func getTree(ctx context.Context, c *apiClient, id int64) (treeResponse, error) {
	var t treeResponse
	err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/tree", id), nil, &t)
	return t, err
}

// showTree prints the tree of id; with follow, it shows it again each time
// events land (treeView), until every agent has ended.
func showTree(ctx context.Context, c *apiClient, id int64, follow bool, out io.Writer) error {
	v := newTreeView(out)
	draw := func() error {
		t, err := getTree(ctx, c, id)
		if err != nil {
			return err
		}
		v.show(treeLines(t))
		return nil
	}
	if err := draw(); err != nil || !follow {
		return err
	}
	return followTree(ctx, c, id, 0, func([]jobs.Event) error { return draw() })
}

// treeLine is one line of a drawn tree: key names what it shows (a run's
// "#ID", its error "#ID error", or "total"), branch is the drawing of the
// tree before it, and text the rest.
type treeLine struct{ key, branch, text string }

// treeView shows the successive drawings of a tree. On a terminal it
// redraws the tree in place; anywhere else it prints the first drawing
// whole, then only the lines that changed, so that a log or a pipe reads
// as a list of changes.
type treeView struct {
	out io.Writer
	tty bool
	// width is the terminal's width in columns (0: unknown), rows the
	// rows the last drawing took on it.
	width, rows int
	last        []treeLine
}

// newTreeView is the view of out: in place when out is a terminal.
func newTreeView(out io.Writer) *treeView {
	v := &treeView{out: out}
	if f, ok := out.(*os.File); ok {
		v.width, v.tty = terminalWidth(f)
	}
	return v
}

// show shows a drawing, unless it is the last one again.
func (v *treeView) show(lines []treeLine) {
	switch {
	case v.last != nil && slices.Equal(lines, v.last):
		return
	case v.last == nil || v.tty:
		if v.rows > 0 {
			// Up to the first row of the last drawing, then clear below.
			fmt.Fprintf(v.out, "\x1b[%dA\x1b[J", v.rows)
		}
		v.rows = 0
		for _, l := range lines {
			fmt.Fprintln(v.out, l.branch+l.text)
			v.rows += v.rowsOf(l.branch + l.text)
		}
	default:
		was := map[string]string{}
		for _, l := range v.last {
			was[l.key] = l.text
		}
		for _, l := range lines {
			if t, ok := was[l.key]; ok && t == l.text {
				continue
			}
			if run, isErr := strings.CutSuffix(l.key, " error"); isErr {
				fmt.Fprintln(v.out, run+" "+l.text)
			} else {
				fmt.Fprintln(v.out, l.text)
			}
		}
	}
	v.last = lines
}

// rowsOf is how many terminal rows line takes, wrapped at the width.
func (v *treeView) rowsOf(line string) int {
	w := runewidth.StringWidth(line)
	if v.width <= 0 || w <= v.width {
		return 1
	}
	return (w + v.width - 1) / v.width
}

// drawTree renders a tree as text.
func drawTree(t treeResponse) string {
	var b strings.Builder
	for _, l := range treeLines(t) {
		b.WriteString(l.branch + l.text + "\n")
	}
	return b.String()
}

// treeLines renders runs (a run and its descendants, by depth) as the
// lines of a tree, then its totals.
func treeLines(t treeResponse) []treeLine {
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
		return nil
	}
	var lines []treeLine
	var walk func(r *jobs.Run, prefix, branch string)
	walk = func(r *jobs.Run, prefix, branch string) {
		key := fmt.Sprintf("#%d", r.ID)
		lines = append(lines, treeLine{key, prefix + branch, fmt.Sprintf("%s %s  %s · %s · %d/%d steps · %d tok%s · $%.4f",
			key, fit(agentName(r), 24), r.Status, r.State, r.Steps, r.MaxSteps, r.Tokens,
			tokenParts(r.CachedTokens, r.ReasoningTokens), r.CostUSD)})
		if r.Error != "" {
			lines = append(lines, treeLine{key + " error", prefix + strings.Repeat(" ", len([]rune(branch))) + "    ",
				"error: " + fit(r.Error, 100)})
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
	lines = append(lines, treeLine{"total", "", fmt.Sprintf("total: %s (%d working) · %s · %s%s · $%.4f%s",
		count(tt.Runs, "agent"), tt.Working, count(tt.Steps, "step"), count(tt.Tokens, "token"),
		tokenParts(tt.CachedTokens, tt.ReasoningTokens), tt.CostUSD, estimatedNote(tt.EstimatedCalls))})
	return lines
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
