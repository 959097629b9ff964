package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

func researchCmd() *cobra.Command {
	return group("research", "Start, watch and manage researches (over the REST API)", `  gb research start "How does sync.WaitGroup work?" --follow
  gb research list --status active
  gb research tree 1 --follow
  gb research fork 1 --step 3 --model gpt-4.1-mini`,
		researchStartCmd(), researchListCmd(), researchGetCmd(), researchTreeCmd(), researchEventsCmd(),
		researchMessagesCmd(), researchNotesCmd(), researchSourcesCmd(), researchStepsCmd(), researchCitationsCmd(), researchDiffCmd(), researchForkCmd(), researchWebhooksCmd(), researchSendCmd(), researchAnswerCmd(), researchPlanCmd(),
		researchCancelCmd(), researchDeleteCmd())
}

// withClient runs f with the API client of GB_API_URL and GB_API_KEY.
func withClient(f func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, a []string) error {
		c, err := newAPIClient()
		if err != nil {
			return err
		}
		return f(cmd.Context(), c, cmd, a)
	}
}

// withRun is withClient for a read command of one run: it parses the run
// ID argument and the output format first.
func withRun(o *output, f func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error) func(*cobra.Command, []string) error {
	return withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
		asJSON, err := o.isJSON()
		if err != nil {
			return err
		}
		id, err := runID(a[0])
		if err != nil {
			return err
		}
		return f(ctx, c, cmd, id, asJSON)
	})
}

func researchStartCmd() *cobra.Command {
	var (
		follow    bool
		maxSteps  int
		dataset   string
		maxCost   float64
		maxTokens int64
		webhook   string
		ask       bool
		plan      bool
		askWait   time.Duration
		citations string
		notesFrom []int64
	)
	cmd := &cobra.Command{
		Use:   "start TOPIC",
		Short: "Start a research; print its id, or follow it to its report",
		Example: `  gb research start "How does sync.WaitGroup work?"
  gb research start "What does context carry?" --max-steps 20 --max-cost-usd 0.50 --follow
  gb research start "Which HTTP client should we use?" --interactive --answer-timeout 2h --follow
  gb research start "Compare Go's HTTP routers" --approve-plan --follow
  gb research start "Which router handles path values?" --notes-from 12,15`,
		Args: args(1, 1, "one TOPIC (quote it)"),
		PreRunE: func(cmd *cobra.Command, a []string) error {
			p := jobs.StartParams{Topic: a[0], MaxSteps: maxSteps, Dataset: dataset, MaxCostUSD: maxCost,
				MaxTokens: maxTokens, WebhookURL: webhook, Interactive: ask, ApprovePlan: plan, Citations: citations, NotesFrom: notesFrom}
			if cmd.Flags().Changed("answer-timeout") {
				s, err := answerTimeoutFlag(askWait)
				if err != nil {
					return err
				}
				p.AnswerTimeoutSeconds = s
			}
			return checkStart(cmd, p)
		},
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
			body := map[string]any{"topic": a[0]}
			if cmd.Flags().Changed("max-steps") {
				body["max_steps"] = maxSteps
			}
			if dataset != "" {
				body["dataset"] = dataset
			}
			if maxCost != 0 {
				body["max_cost_usd"] = maxCost
			}
			if maxTokens != 0 {
				body["max_tokens"] = maxTokens
			}
			if webhook != "" {
				body["webhook_url"] = webhook
			}
			if ask {
				body["interactive"] = true
			}
			if plan {
				body["approve_plan"] = true
			}
			if citations != "" {
				body["citations"] = citations
			}
			if len(notesFrom) > 0 {
				body["notes_from"] = notesFrom
			}
			if cmd.Flags().Changed("answer-timeout") {
				s, err := answerTimeoutFlag(askWait)
				if err != nil {
					return err
				}
				body["answer_timeout_seconds"] = s
			}
			var run jobs.Run
			if err := c.do(ctx, "POST", "/v1/gb/research", body, &run); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%d\n", run.ID)
			if !follow {
				return nil
			}
			fmt.Fprintf(out, "model: %s\n", printable(run.Model))
			return followRun(ctx, c, run.ID, out)
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&follow, "follow", false, "print the events as they happen until the research ends, then its report")
	f.IntVar(&maxSteps, "max-steps", 0, "most model calls of the root agent (1-40, default 10)")
	f.StringVar(&dataset, "dataset", "", "knowledge base to research (default godoc)")
	f.Float64Var(&maxCost, "max-cost-usd", 0, "budget of the whole tree in dollars")
	f.Int64Var(&maxTokens, "max-tokens", 0, "budget of the whole tree in tokens")
	f.StringVar(&webhook, "webhook-url", "", "URL to notify when the research ends (default: yours, see gb webhooks)")
	f.BoolVar(&ask, "interactive", false, "let the research ask you a question when the answer changes it (gb research answer)")
	f.BoolVar(&plan, "approve-plan", false, "make the research propose its sub-agents and wait for your decision before it spawns any (gb research plan)")
	f.StringVar(&citations, "citations", "", "what to do with the report's citations: off, flag or revise (default: the service's)")
	f.Int64SliceVar(&notesFrom, "notes-from", nil, "ids of your earlier researches whose notes this one's agents find with their own (comma separated)")
	f.DurationVar(&askWait, "answer-timeout", 0, "with --interactive or --approve-plan: how long each question or plan waits for you, 5s to 168h (default 24h)")
	return cmd
}

// checkStart checks the research start's arguments with the API's own
// checks (jobs.StartParams.Validate), so that a value the API would refuse
// is a usage error before any request. An explicit --max-steps 0 is
// refused as the API refuses it.
func checkStart(cmd *cobra.Command, p jobs.StartParams) error {
	if cmd.Flags().Changed("max-steps") && p.MaxSteps == 0 {
		return usageErrorf("--max-steps must be between 1 and %d (got 0); leave it out for the default %d",
			jobs.MaxMaxSteps, jobs.DefaultMaxSteps)
	}
	var fe *jobs.FieldError
	if err := p.Validate(); errors.As(err, &fe) {
		return usageErrorf("%s %s", startFlag(fe.Field), fe.Msg)
	} else if err != nil {
		return usageErrorf("%w", err)
	}
	return nil
}

// startFlag is the command line's name of a field of the start request.
func startFlag(field string) string {
	switch field {
	case "topic":
		return "TOPIC"
	case "answer_timeout_seconds":
		return "--answer-timeout"
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// listPage is the answer of GET /v1/gb/research.
type listPage struct {
	Runs       []jobs.Run `json:"runs"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

func researchListCmd() *cobra.Command {
	var status, parent, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List your runs, newest first",
		Example: `  gb research list --status active
  gb research list --parent 1 -o json`,
		Args: args(0, 0, "no arguments"),
		PreRunE: func(*cobra.Command, []string) error {
			return checkList(status, parent, limit)
		},
	}
	o := addOutput(cmd)
	cmd.RunE = withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
		asJSON, err := o.isJSON()
		if err != nil {
			return err
		}
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		for k, v := range map[string]string{"status": status, "parent_id": parent, "cursor": cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		var page listPage
		if err := c.do(ctx, "GET", "/v1/gb/research?"+q.Encode(), nil, &page); err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), page)
		}
		return printRuns(cmd.OutOrStdout(), page)
	})
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only runs with this status: "+strings.Join(jobs.ListStatuses, ", ")+
		" (active: queued, working or waiting)")
	f.StringVar(&parent, "parent", "", "only the sub-agents of this run")
	f.IntVar(&limit, "limit", jobs.ListLimitDefault, fmt.Sprintf("runs per page (1-%d)", jobs.MaxListLimit))
	f.StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
	return cmd
}

// checkList checks the list's flags as the API does.
func checkList(status, parent string, limit int) error {
	if status != "" && !slices.Contains(jobs.ListStatuses, status) {
		return usageErrorf("--status %q is not a status; use one of %s", status, strings.Join(jobs.ListStatuses, ", "))
	}
	if parent != "" {
		if _, err := runID(parent); err != nil {
			return usageErrorf("--parent: %w", err)
		}
	}
	if limit < 1 || limit > jobs.MaxListLimit {
		return usageErrorf("--limit must be between 1 and %d (got %d)", jobs.MaxListLimit, limit)
	}
	return nil
}

// printRuns prints a page of runs as a table.
func printRuns(w io.Writer, page listPage) error {
	t := newTable(w, "ID", "PARENT", "STATUS", "STATE", "STEPS", "TOKENS", "CACHED", "COST", "NAME", "TOPIC")
	for _, r := range page.Runs {
		parent := "-"
		if r.ParentID != nil {
			parent = strconv.FormatInt(*r.ParentID, 10)
		}
		t.row(strconv.FormatInt(r.ID, 10), parent, r.Status, r.State, fmt.Sprintf("%d/%d", r.Steps, r.MaxSteps),
			strconv.FormatInt(r.Tokens, 10), strconv.FormatInt(r.CachedTokens, 10), fmt.Sprintf("$%.4f", r.CostUSD),
			fit(agentName(&r), 24), fit(r.Topic, 60))
	}
	if err := t.flushOrEmpty("no researches"); err != nil {
		return err
	}
	if page.NextCursor != "" {
		fmt.Fprintf(w, "more: gb research list --cursor %s\n", page.NextCursor)
	}
	return nil
}

// agentName is "root" for a root run, else the sub-agent's name.
func agentName(r *jobs.Run) string {
	if r.Name == "" {
		return "root"
	}
	return r.Name
}

func researchGetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show a run: usage, states, sub-agents, tree totals and report",
		Example: `  gb research get 1
  gb research get 1 -o json | jq .report`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		var d jobs.RunDetails
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d", id), nil, &d); err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), d)
		}
		return printDetails(cmd.OutOrStdout(), &d)
	})
	return cmd
}

// printDetails prints a run as a field/value table, its sub-agents, and
// its report or error.
func printDetails(w io.Writer, d *jobs.RunDetails) error {
	t := newTable(w, "FIELD", "VALUE")
	t.row("id", strconv.FormatInt(d.ID, 10))
	t.row("agent", agentName(d.Run))
	t.row("topic", fit(d.Topic, 100))
	t.row("status", d.Status+" · "+d.State)
	if d.ProviderWait != nil {
		t.row("provider", providerWaitLine(d.ProviderWait))
	}
	t.row("steps", fmt.Sprintf("%d/%d", d.Steps, d.MaxSteps))
	t.row("tokens", fmt.Sprintf("%d (prompt %d, completion %d)", d.Tokens, d.PromptTokens, d.CompletionTokens))
	t.row("cached", fmt.Sprintf("%d of the prompt tokens", d.CachedTokens))
	if d.ReasoningTokens != 0 {
		t.row("reasoning", fmt.Sprintf("%d of the completion tokens", d.ReasoningTokens))
	}
	t.row("cost", fmt.Sprintf("$%.4f", d.CostUSD))
	t.row("model", d.Model)
	t.row("version", versionLine(d.Version))
	t.row("tree", fmt.Sprintf("%s (%d working) · %s%s · $%.4f%s", count(d.Tree.Runs, "agent"), d.Tree.Working, count(d.Tree.Tokens, "token"),
		tokenParts(d.Tree.CachedTokens, d.Tree.ReasoningTokens), d.Tree.CostUSD, estimatedNote(d.Tree.EstimatedCalls)))
	t.row("elapsed", d.Elapsed)
	if d.Citations != nil {
		t.row("citations", countsLine(*d.Citations)) // gb research citations ID says which
	}
	if d.Interactive {
		t.row("interactive", fmt.Sprintf("may ask you; each question waits %s", time.Duration(d.AnswerTimeoutSeconds)*time.Second))
	}
	if d.Question != "" {
		t.row("question", fit(d.Question, 100))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if d.Question != "" {
		printQuestion(w, d.ID, d.Question, d.AnswerDeadline)
	}
	if d.Plan != nil {
		printPlan(w, d.ID, d.Plan)
	}
	if len(d.Subagents) > 0 {
		fmt.Fprintln(w)
		t := newTable(w, "SUB-AGENT", "ID", "STATUS", "STATE", "STEPS", "TOKENS", "CACHED", "REASON")
		for _, s := range d.Subagents {
			t.row(fit(s.Name, 24), strconv.FormatInt(s.ID, 10), s.Status, s.State, strconv.Itoa(s.Steps),
				strconv.FormatInt(s.Tokens, 10), strconv.FormatInt(s.CachedTokens, 10), fit(s.Reason, 60))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	switch {
	case d.Error != "":
		fmt.Fprintf(w, "\nerror: %s\n", printable(d.Error))
	case d.Report != "":
		fmt.Fprintf(w, "\n%s\n", printable(d.Report))
	}
	return nil
}

// versionLine is the version a run's steps are made with: the bundle it is
// pinned to and the gb version that stored it, then the gb version that
// made its last step.
func versionLine(v jobs.RunVersion) string {
	if v.Pinned == "" {
		return "not pinned yet (no step made)"
	}
	line := "bundle " + v.Pinned + " (from gb " + v.BundleVersion + ")"
	if v.LastStep != "" {
		line += " · last step made by gb " + v.LastStep
	}
	return line
}

func researchSendCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "send ID TEXT",
		Short:   "Message a working agent as its owner",
		Example: `  gb research send 2 "focus on 2024"`,
		Args:    args(2, 2, "a run ID and the TEXT to send"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
			id, err := runID(a[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "POST", fmt.Sprintf("/v1/gb/research/%d/messages", id), map[string]string{"text": a[1]}, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "message delivered to run %d\n", id)
			return nil
		}),
	}
}

func researchCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "cancel ID",
		Short:   "End a run and its working sub-agents; a run that already ended is an error",
		Example: `  gb research cancel 1`,
		Args:    args(1, 1, "one run ID"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
			id, err := runID(a[0])
			if err != nil {
				return err
			}
			run, err := cancelRun(ctx, c, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cancelled run %d: %s %s\n", run.ID, run.Status, printable(run.Error))
			return nil
		}),
	}
}

// cancelRun cancels a run that has not ended; cancelling one that has is
// an error saying how it ended.
func cancelRun(ctx context.Context, c *apiClient, id int64) (*jobs.Run, error) {
	var before jobs.Run
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d", id), nil, &before); err != nil {
		return nil, err
	}
	if before.Ended() {
		return nil, alreadyEnded(&before)
	}
	var run jobs.Run
	if err := c.do(ctx, "POST", fmt.Sprintf("/v1/gb/research/%d/cancel", id), nil, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

func alreadyEnded(r *jobs.Run) error {
	how := r.Status
	if r.Error != "" {
		how += ": " + r.Error
	}
	return fmt.Errorf("run %d already ended (%s); there is nothing to cancel", r.ID, how)
}

func researchDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "delete ID",
		Short:   "Delete a run with its sub-agents, jobs, events and messages",
		Example: `  gb research delete 1`,
		Args:    args(1, 1, "one run ID"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
			id, err := runID(a[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "DELETE", fmt.Sprintf("/v1/gb/research/%d", id), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted run %d and its sub-agents\n", id)
			return nil
		}),
	}
}
