package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/inert"
	"github.com/gbresearch/gb/jobs"
)

// stepsPage is the answer of GET /v1/gb/research/{id}/steps.
type stepsPage struct {
	Steps      []jobs.Step `json:"steps"`
	NextCursor string      `json:"next_cursor"`
	More       bool        `json:"has_more"`
	// Request is, with --step N --full, the system prompt and tools the
	// step was given, as the API rebuilt them from the run.
	Request *jobs.StepRequest `json:"request,omitempty"`
}

// stepsFlags are the flags of gb research steps.
type stepsFlags struct {
	run, cursor string
	step, limit int
	chars       int
	order       string
	full        bool
}

func researchStepsCmd() *cobra.Command {
	var f stepsFlags
	cmd := &cobra.Command{
		Use:   "steps ID",
		Short: "The steps of a research and its sub-agents: what each was told, answered and called, and what it took",
		Long: `Lists the committed steps of the research ID and its sub-agents, newest first: model, tokens,
cost, model and tool time, retries and compaction. With --step N it prints that step of the run
(or of --run R) with its messages: the model's reply, each tool call with its arguments and each
tool's result, cut at --chars characters unless --full. With --full it also prints what the
model was given besides the conversation: the system prompt and the tools, as rebuilt by the API
from the run's settings and the behaviour bundle the step recorded (a step stores its messages and
its bundle's hash, not the prompt it was sent with them).`,
		Example: `  gb research steps 12
  gb research steps 12 --run 14 --order asc
  gb research steps 12 --step 3
  gb research steps 12 --step 3 --full -o json`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		q, err := f.query()
		if err != nil {
			return err
		}
		var p stepsPage
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/steps?%s", id, q.Encode()), nil, &p); err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), p)
		}
		if f.step != 0 {
			for _, s := range p.Steps {
				printStep(cmd.OutOrStdout(), id, s)
				if p.Request != nil && p.Request.RunID == s.RunID && p.Request.Step == s.Step {
					printRequest(cmd.OutOrStdout(), s, p.Request)
				}
			}
			return nil
		}
		return printSteps(cmd.OutOrStdout(), id, p)
	})
	fl := cmd.Flags()
	fl.StringVar(&f.run, "run", "", "only the steps of this agent (a run id of the tree below ID)")
	fl.IntVar(&f.step, "step", 0, "print step N whole: its messages, tool calls and results")
	fl.IntVar(&f.limit, "limit", 0, fmt.Sprintf("steps per page, 1 to %d (default %d)", jobs.StepLimitMax, jobs.StepLimitDefault))
	fl.StringVar(&f.order, "order", "desc", "desc (newest first) or asc")
	fl.StringVar(&f.cursor, "cursor", "", "the next page: the cursor a listing printed")
	fl.IntVar(&f.chars, "chars", 0, fmt.Sprintf("cut texts at this many characters, %d to %d (default %d)",
		jobs.StepCharsMin, jobs.StepCharsMax, jobs.StepCharsDefault))
	fl.BoolVar(&f.full, "full", false, "with --step: nothing cut")
	return cmd
}

// query is the query of the steps route, or a usage error.
func (f stepsFlags) query() (url.Values, error) {
	q := url.Values{}
	if f.run != "" {
		r, err := runID(f.run)
		if err != nil {
			return nil, usageErrorf("--run: %w", err)
		}
		q.Set("run", strconv.FormatInt(r, 10))
	}
	switch {
	case f.step < 0:
		return nil, usageErrorf("--step must be a step number, 1 or more")
	case f.limit < 0 || f.limit > jobs.StepLimitMax:
		return nil, usageErrorf("--limit must be from 1 to %d", jobs.StepLimitMax)
	case f.chars != 0 && (f.chars < jobs.StepCharsMin || f.chars > jobs.StepCharsMax):
		return nil, usageErrorf("--chars must be from %d to %d", jobs.StepCharsMin, jobs.StepCharsMax)
	case f.order != "asc" && f.order != "desc":
		return nil, usageErrorf("--order must be asc or desc (got %q)", f.order)
	case f.full && f.step == 0:
		return nil, usageErrorf("--full reads one step whole: give it --step N")
	}
	for k, v := range map[string]int{"step": f.step, "limit": f.limit, "chars": f.chars} {
		if v != 0 {
			q.Set(k, strconv.Itoa(v))
		}
	}
	if f.order == "asc" {
		q.Set("order", "asc")
	}
	if f.cursor != "" {
		q.Set("cursor", f.cursor)
	}
	if f.full {
		q.Set("full", "true")
	}
	return q, nil
}

// printSteps prints a page of steps as a table, and how to read on.
func printSteps(w io.Writer, id int64, p stepsPage) error {
	if len(p.Steps) == 0 {
		fmt.Fprintln(w, "no steps yet")
		return nil
	}
	t := newTable(w, "AGENT", "RUN", "STEP", "MODEL", "TOKENS", "COST", "MODEL S", "TOOLS S", "RETRIES", "COMPACTED",
		"VERSION", "CALLED")
	for _, s := range p.Steps {
		compacted := "-"
		if c := s.Compaction; c != nil {
			compacted = fmt.Sprintf("%d stubbed", c.Stubbed)
		}
		t.row(fit(s.Agent, 20), strconv.FormatInt(s.RunID, 10), strconv.Itoa(s.Step), fit(s.Model, 24),
			strconv.Itoa(s.Tokens.Prompt+s.Tokens.Completion), fmt.Sprintf("$%.4f", s.CostUSD), seconds(s.ModelMS),
			seconds(s.ToolMS), strconv.Itoa(s.Retries), compacted, fit(stepVersion(s), 32), fit(calledOrAnswer(s), 40))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if p.More {
		fmt.Fprintf(w, "more: gb research steps %d --cursor %s (with the same flags)\n", id, p.NextCursor)
	}
	return nil
}

// calledOrAnswer names the tools a step called, or says it answered.
func calledOrAnswer(s jobs.Step) string {
	var names []string
	for _, m := range s.Messages {
		for _, c := range m.ToolCalls {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "(answer)"
	}
	return strings.Join(names, ", ")
}

// stepVersion is the gb version that made a step and the bundle it was
// made with, "v1.2 abc123 @ 0f3e9a1b2c4d"; "-" for a step recorded before
// they were.
func stepVersion(s jobs.Step) string {
	if s.Version == "" && s.Behaviour == "" {
		return "-"
	}
	return s.Version + " @ " + s.Behaviour
}

// seconds is a duration in milliseconds as seconds, "1.2".
func seconds(ms int) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) }

// printStep prints one step whole: what it took, then its messages, each
// text cleaned of terminal control characters.
func printStep(w io.Writer, id int64, s jobs.Step) {
	fmt.Fprintf(w, "step %d of %s (run %d) · %s\n", s.Step, printable(s.Agent), s.RunID, printable(s.Model))
	started := "-"
	if s.StartedAt != nil {
		started = s.StartedAt.Local().Format(time.DateTime)
	}
	fmt.Fprintf(w, "started %s · model %ss · tools %ss · %s%s · $%.6f\n", started, seconds(s.ModelMS), seconds(s.ToolMS),
		count(s.Tokens.Prompt+s.Tokens.Completion, "token"),
		tokenParts(int64(s.Tokens.Cached), int64(s.Tokens.Reasoning)), s.CostUSD)
	fmt.Fprintf(w, "version: %s (gb version @ behaviour bundle)\n", printable(stepVersion(s)))
	if s.Retries > 0 {
		fmt.Fprintf(w, "retries: %d (%s)\n", s.Retries, printable(strings.Join(s.RetryOutcomes, ", ")))
	}
	if c := s.Compaction; c != nil {
		fmt.Fprintf(w, "compaction: level %d, %d results stubbed, %d trimmed, %d → %d prompt tokens\n",
			c.Level, c.Stubbed, c.Trimmed, c.TokensBefore, c.TokensAfter)
	}
	for _, m := range s.Messages {
		head := m.Role
		if m.Name != "" {
			head += " " + m.Name
		}
		if m.ToolCallID != "" {
			head += " (" + m.ToolCallID + ")"
		}
		fmt.Fprintf(w, "\n[%s]\n", printable(head))
		if m.Content != "" {
			fmt.Fprintln(w, printable(m.Content))
		}
		if m.Truncated {
			fmt.Fprintf(w, "… cut at %d of %d characters: gb research steps %d --run %d --step %d --full\n",
				len([]rune(m.Content)), m.ContentChars, id, s.RunID, s.Step)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "→ %s %s (%s)\n", printable(c.Name), printable(c.Arguments), printable(c.ID))
			if c.Truncated {
				fmt.Fprintf(w, "  … arguments cut at %d of %d characters\n", len([]rune(c.Arguments)), c.ArgumentsChars)
			}
		}
	}
}

// printRequest prints the system prompt and the tools a step was given,
// saying that they are rebuilt, and names the tools the step called that
// the rebuilt list lacks (a worker configured otherwise than the API).
func printRequest(w io.Writer, s jobs.Step, r *jobs.StepRequest) {
	fmt.Fprintf(w, "\n[system prompt, %s (bundle %s)]\n%s\n", printable(r.Rebuilt), printable(r.Behaviour), printable(r.System))
	fmt.Fprintf(w, "\n[tools, %s: %d]\n", printable(r.Rebuilt), len(r.Tools))
	given := map[string]bool{}
	for _, t := range r.Tools {
		given[t.Name] = true
		fmt.Fprintf(w, "%s: %s\n", printable(t.Name), oneLine(t.Description))
	}
	for _, m := range s.Messages {
		for _, c := range m.ToolCalls {
			if !given[c.Name] {
				fmt.Fprintf(w, "note: the step called %s, which the rebuilt list lacks: the worker's configuration differs from the API's\n",
					printable(c.Name))
				given[c.Name] = true
			}
		}
	}
}

// printable is untrusted text made inert to print, its newlines and tabs
// kept: every printer of the CLI prints what a model, a page, a message,
// an owner or an agent's name may have written through it (or through
// oneLine, fit and table rows, which fold it to one line).
func printable(s string) string { return inert.Text(s) }

// Bounds of the MCP tool get_steps, smaller than the API's so that a page
// stays a few kilobytes in a model's context.
const (
	mcpStepLimitDefault = 5
	mcpStepLimitMax     = 20
	mcpStepCharsDefault = 500
)

// mcpStepsInput is the input of the MCP tool get_steps.
type mcpStepsInput struct {
	ID     int64  `json:"id" jsonschema:"the run id: its steps and those of its sub-agents"`
	Run    int64  `json:"run,omitempty" jsonschema:"only the steps of this agent (a run id of the tree below id)"`
	Step   int    `json:"step,omitempty" jsonschema:"only the step of this number (of run, or of id itself)"`
	Order  string `json:"order,omitempty" jsonschema:"desc (newest first, the default) or asc"`
	Limit  int    `json:"limit,omitempty" jsonschema:"steps per page, 1 to 20 (default 5)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page (same order and filters)"`
	Chars  int    `json:"chars,omitempty" jsonschema:"cut message texts and arguments at this many characters, 100 to 20000 (default 500)"`
	Full   bool   `json:"full,omitempty" jsonschema:"with step: that step whole, nothing cut"`
}

// stepsTool is the MCP tool get_steps, which reads the steps route
// through c.
func stepsTool(c *apiClient) mcpTool {
	return mcpTool{name: "get_steps", title: "Get the steps of a research", kind: readOnly,
		desc: "The steps of a run and its sub-agents, newest first, a page at a time (has_more, next_cursor): " +
			"for each its model, tokens, cost, model and tool time, retries, compaction, and the messages it added " +
			"(the model's reply, each tool call with its arguments, each tool's result), texts cut at chars " +
			"(truncated: true; read one step whole with step and full, which also answers request: the system prompt " +
			"and tools the step was given, rebuilt from the run's settings).",
		add: plain(func(ctx context.Context, in mcpStepsInput) (mcpOut, error) {
			q, err := in.query()
			if err != nil {
				return nil, err
			}
			var out mcpOut
			if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/steps?%s", in.ID, q.Encode()), nil, &out); err != nil {
				return nil, err
			}
			return out, nil
		})}
}

// query is the query of the steps route for get_steps, with its bounds.
func (in mcpStepsInput) query() (url.Values, error) {
	if in.ID <= 0 {
		return nil, fmt.Errorf("id must be a run id (a positive integer), got %d", in.ID)
	}
	if in.Limit < 0 || in.Limit > mcpStepLimitMax {
		return nil, fmt.Errorf("limit must be from 1 to %d, got %d", mcpStepLimitMax, in.Limit)
	}
	f := stepsFlags{step: in.Step, limit: cmp.Or(in.Limit, mcpStepLimitDefault), chars: cmp.Or(in.Chars, mcpStepCharsDefault),
		order: cmp.Or(in.Order, "desc"), cursor: in.Cursor, full: in.Full}
	if in.Run != 0 {
		f.run = strconv.FormatInt(in.Run, 10)
	}
	return f.query()
}
