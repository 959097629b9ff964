package main

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

func mcpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol over stdio: tools that start and read researches",
		Long: `Serves MCP over stdin/stdout with tools to start a research, wait for one
(with progress notifications when the client asks for progress), get one,
list runs, show a tree, read events, messages and sources a page at a time,
answer the question an interactive research asks, decide the plan of
sub-agents a research proposes, cancel, and read the steps and the citation
check of a run (the README lists them all); each tool has a title and
annotations (read-only, destructive, idempotent, open world). Researches and
their reports are resources too (gb://research/{id} and
gb://research/{id}/report; the list is your recent runs). The tools call the
REST API at GB_API_URL (default http://127.0.0.1:8080) with GB_API_KEY, so an
MCP client sees only the runs of that key's user.

Add it to an MCP client's configuration, for example:

  {"mcpServers": {"gb": {"command": "gb", "args": ["mcp"],
    "env": {"GB_API_URL": "http://127.0.0.1:8080", "GB_API_KEY": "..."}}}}`,
		Example: `  GB_API_KEY=$(gb keys create --user alice) gb mcp`,
		Args:    args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newAPIClient()
			if err != nil {
				return err
			}
			if err := newMCPServer(c).Run(cmd.Context(), &mcp.StdioTransport{}); err != nil && cmd.Context().Err() == nil {
				return fmt.Errorf("MCP server: %w", err)
			}
			return nil
		},
	}
}

// Inputs of the MCP tools. Fields without omitempty are required.
type (
	mcpStartInput struct {
		Topic      string  `json:"topic" jsonschema:"the question to research, 1 to 2000 characters"`
		MaxSteps   int     `json:"max_steps,omitempty" jsonschema:"most model calls of the root agent, 1 to 40 (default 10)"`
		Dataset    string  `json:"dataset,omitempty" jsonschema:"knowledge base to research (default godoc)"`
		MaxCostUSD float64 `json:"max_cost_usd,omitempty" jsonschema:"budget of the whole tree in dollars"`
		MaxTokens  int64   `json:"max_tokens,omitempty" jsonschema:"budget of the whole tree in tokens"`
		// Interactive and AnswerTimeoutSeconds let the research ask its
		// owner (answer_research answers).
		Interactive          bool `json:"interactive,omitempty" jsonschema:"true lets the research ask you a question when the answer changes it; answer it with answer_research"`
		AnswerTimeoutSeconds int  `json:"answer_timeout_seconds,omitempty" jsonschema:"with interactive or approve_plan: seconds each question or plan waits for you, 5 to 604800 (default 86400)"`
		// ApprovePlan makes the research propose its sub-agents for
		// decide_plan before it spawns any.
		ApprovePlan bool `json:"approve_plan,omitempty" jsonschema:"true makes the research propose the sub-agents it means to spawn and wait for your decision (decide_plan) before it spawns any"`
		// Citations is what to do with the report's citations (get_citations shows the check).
		Citations string `json:"citations,omitempty" jsonschema:"what to do with the report's citations: off, flag (mark claims without support) or revise (one more step to fix them); default: the service's"`
		// NotesFrom names earlier researches whose notes this one reads.
		NotesFrom []int64 `json:"notes_from,omitempty" jsonschema:"ids of your earlier researches (root runs) whose notes this research's agents find with their own; default: none, a research sees only its own notes"`
		// WaitSeconds makes the call wait for the research as
		// wait_research does.
		WaitSeconds int `json:"wait_seconds,omitempty" jsonschema:"seconds to wait for the research to end before answering, 1 to 600, with progress notifications when you ask for progress (default 0: answer at once)"`
	}
	mcpPlanInput struct {
		ID        int64              `json:"id" jsonschema:"the run id of the research that proposed a plan"`
		Decision  string             `json:"decision" jsonschema:"approve or reject"`
		Subagents []jobs.SpawnParams `json:"subagents,omitempty" jsonschema:"with approve: the edited list of sub-agents to approve instead of the proposed one"`
		Note      string             `json:"note,omitempty" jsonschema:"a note told to the research with the decision"`
	}
	mcpAnswerInput struct {
		ID   int64  `json:"id" jsonschema:"the run id of the research that asks"`
		Text string `json:"text" jsonschema:"your answer to its question, 1 to 10000 characters"`
	}
	mcpIDInput struct {
		ID int64 `json:"id" jsonschema:"the run id"`
	}
	mcpListInput struct {
		Status   string `json:"status,omitempty" jsonschema:"only runs with this status: active (queued, working or waiting), queued, working, waiting, succeeded, failed or timed_out"`
		ParentID int64  `json:"parent_id,omitempty" jsonschema:"only the sub-agents of this run"`
		Limit    int    `json:"limit,omitempty" jsonschema:"runs per page, 1 to 100 (default 20)"`
		Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
	}
	mcpEventsInput struct {
		ID    int64 `json:"id" jsonschema:"the run id"`
		After int64 `json:"after,omitempty" jsonschema:"only events after this seq (next_after of the previous call)"`
		Wait  int   `json:"wait,omitempty" jsonschema:"seconds to wait for an event when there is none yet, 0 to 25"`
		Limit int   `json:"limit,omitempty" jsonschema:"events per page, 1 to 200 (default 30); more says there are others after next_after"`
	}
	mcpSourcesInput struct {
		ID     int64  `json:"id" jsonschema:"the run id"`
		Tree   bool   `json:"tree,omitempty" jsonschema:"true for the sources of every agent of the run's tree"`
		Limit  int    `json:"limit,omitempty" jsonschema:"sources per page, 1 to 100 (default 20)"`
		Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
	}
)

// mcpOut is a tool's structured result: the API's JSON answer.
type mcpOut = map[string]any

// newMCPServer is the MCP server whose tools call the API through c: every
// tool of the registry (mcpTools), the resources, and inert results.
func newMCPServer(c *apiClient) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "gb", Title: "gb research agents", Version: version}, nil)
	for _, t := range mcpTools(c) {
		t.register(s)
	}
	addResources(s, c)
	s.AddReceivingMiddleware(inertResults)
	return s
}

// withID adapts a tool of one run id, checking it.
func withID(f func(context.Context, int64) (mcpOut, error)) func(context.Context, mcpIDInput) (mcpOut, error) {
	return func(ctx context.Context, in mcpIDInput) (mcpOut, error) {
		if err := checkID(in.ID); err != nil {
			return nil, err
		}
		return f(ctx, in.ID)
	}
}

func checkID(id int64) error {
	if id <= 0 {
		return fmt.Errorf("id must be a run id (a positive integer), got %d", id)
	}
	return nil
}
