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
sub-agents a research proposes, and cancel; each tool has a title and
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

// newMCPServer is the MCP server whose tools call the API through c.
func newMCPServer(c *apiClient) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "gb", Title: "gb research agents", Version: version}, nil)
	get := func(ctx context.Context, path string) (mcpOut, error) {
		var out mcpOut
		err := c.do(ctx, "GET", path, nil, &out)
		return out, err
	}
	addToolWithRequest(s, tool("start_research", "Start a research", changes),
		"Start a research; it runs in the background. Returns the root run (its id, status). With wait_seconds, "+
			"waits for it to end as wait_research does.",
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpStartInput) (mcpOut, error) {
			wait, err := waitTimeout(in.WaitSeconds)
			if err != nil {
				return nil, err
			}
			body := map[string]any{"topic": in.Topic}
			for k, v := range map[string]any{"max_steps": in.MaxSteps, "dataset": in.Dataset,
				"max_cost_usd": in.MaxCostUSD, "max_tokens": in.MaxTokens, "answer_timeout_seconds": in.AnswerTimeoutSeconds,
				"citations": in.Citations} {
				if v != 0 && v != "" && v != 0.0 && v != int64(0) {
					body[k] = v
				}
			}
			if in.Interactive {
				body["interactive"] = true
			}
			if in.ApprovePlan {
				body["approve_plan"] = true
			}
			if len(in.NotesFrom) > 0 {
				body["notes_from"] = in.NotesFrom
			}
			var run mcpOut
			if err := c.do(ctx, "POST", "/v1/gb/research", body, &run); err != nil {
				return nil, err
			}
			id, _ := run["id"].(float64)
			if in.WaitSeconds == 0 {
				run["resource"] = researchURI(int64(id))
				return run, nil
			}
			return waitResearch(ctx, c, req, int64(id), wait)
		})
	addToolWithRequest(s, tool("wait_research", "Wait for a research", readOnly),
		"Wait until a run and all its sub-agents have ended, or timeout_seconds (default 120). When you ask for "+
			"progress, each event of its tree is a progress notification. Answers where it stands (ended, status, "+
			"tree totals, the question it waits on) and its report's resource once it has succeeded.",
		func(ctx context.Context, req *mcp.CallToolRequest, in mcpWaitInput) (mcpOut, error) {
			if err := checkID(in.ID); err != nil {
				return nil, err
			}
			wait, err := waitTimeout(in.TimeoutSeconds)
			if err != nil {
				return nil, err
			}
			return waitResearch(ctx, c, req, in.ID, wait)
		})
	addTool(s, tool("get_research", "Get a research", readOnly), "Get a run: status, state, usage, states, sub-agents, tree totals, the question it waits for you to answer "+
		"(state input_required), the provider outage it waits out (state waiting_provider: provider_wait has the provider's last error and the next try), "+
		"and its report once it has ended.",
		withID(func(ctx context.Context, id int64) (mcpOut, error) {
			return get(ctx, fmt.Sprintf("/v1/gb/research/%d", id))
		}))
	addTool(s, tool("list_research", "List your researches", readOnly),
		"List your runs, newest first, a page at a time (next_cursor when there are more), without their reports.",
		func(ctx context.Context, in mcpListInput) (mcpOut, error) { return mcpListPage(ctx, c, in) })
	addTool(s, tool("get_tree", "Get the tree of a research", readOnly),
		"The run and its sub-agents by depth (name, reason, status, state, steps, tokens with their cached and reasoning "+
			"parts, cost), a page of agents at a time (next_cursor when there are more), with the whole tree's totals.",
		func(ctx context.Context, in mcpTreeInput) (mcpOut, error) { return mcpTreePage(ctx, c, in) })
	addTool(s, tool("get_events", "Get the events of a research", readOnly),
		"The events of the run's tree after a seq, at most limit of them (more: true when others follow next_after), "+
			"texts cut; with wait, waits for the next one.",
		func(ctx context.Context, in mcpEventsInput) (mcpOut, error) { return mcpEventsPage(ctx, c, in) })
	addTool(s, tool("get_messages", "Get the messages between agents", readOnly),
		"The messages the agents of the run's tree sent each other, oldest first, a page at a time, texts cut.",
		func(ctx context.Context, in mcpMessagesInput) (mcpOut, error) { return mcpMessagesPage(ctx, c, in) })
	addTool(s, tool("get_sources", "Get the sources of a research", readOnly),
		"The pages the run fetched and the search results it was shown (tree: of every agent of its tree), a page at a time.",
		func(ctx context.Context, in mcpSourcesInput) (mcpOut, error) { return mcpSourcesPage(ctx, c, in) })
	addTool(s, tool("answer_research", "Answer a research's question", changes), "Answer the question an interactive research asked you (get_research shows it as "+
		"question, with its answer_deadline); the research goes on with your answer at once. A question is answered once: "+
		"answering a research that waits for no answer is an error that says why.",
		func(ctx context.Context, in mcpAnswerInput) (mcpOut, error) {
			if err := checkID(in.ID); err != nil {
				return nil, err
			}
			run, err := answerRun(ctx, c, in.ID, in.Text)
			if err != nil {
				return nil, err
			}
			return mcpOut{"id": run.ID, "status": run.Status, "state": run.State}, nil
		})
	addTool(s, tool("decide_plan", "Decide a research's plan", changes), "Approve or reject the plan of sub-agents a research started with approve_plan proposed "+
		"(get_research shows it as plan, state proposed, with its deadline); approve may give an edited list of sub-agents. "+
		"The research goes on at once: after an approval it spawns exactly the approved sub-agents, after a rejection it may "+
		"propose again. A plan is decided once: deciding for a research that waits for no decision is an error that says why.",
		func(ctx context.Context, in mcpPlanInput) (mcpOut, error) {
			if err := checkID(in.ID); err != nil {
				return nil, err
			}
			body := map[string]any{"decision": in.Decision}
			if in.Subagents != nil {
				body["subagents"] = in.Subagents
			}
			if in.Note != "" {
				body["note"] = in.Note
			}
			run, err := decidePlan(ctx, c, in.ID, body)
			if err != nil {
				return nil, err
			}
			return mcpOut{"id": run.ID, "status": run.Status, "state": run.State, "plan": run.Plan}, nil
		})
	addTool(s, tool("cancel_research", "Cancel a research", cancels), "Cancel a run that has not ended, with its working sub-agents; cancelling an ended run is an error.",
		withID(func(ctx context.Context, id int64) (mcpOut, error) {
			run, err := cancelRun(ctx, c, id)
			if err != nil {
				return nil, err
			}
			return mcpOut{"id": run.ID, "status": run.Status, "error": run.Error}, nil
		}))
	addStepsTool(s, c)
	addCitationsTool(s, c)
	addResources(s, c)
	s.AddReceivingMiddleware(inertResults)
	return s
}

// What a tool does to the user's researches, for its annotations.
type toolKind int

const (
	// readOnly tools change nothing.
	readOnly toolKind = iota
	// changes tools add to a research (start one, answer it, decide its
	// plan) and destroy nothing.
	changes
	// cancels tools end a research: destructive, and idempotent (a
	// second call changes nothing more).
	cancels
)

// tool is the tool name with its title and the annotations of its kind.
// Only starting a research reaches the open world (the web it searches
// and reads); the other tools read or change gb's own runs.
func tool(name, title string, kind toolKind) *mcp.Tool {
	no, yes := false, true
	a := &mcp.ToolAnnotations{Title: title, OpenWorldHint: &no}
	switch kind {
	case readOnly:
		a.ReadOnlyHint, a.IdempotentHint = true, true
	case changes:
		a.DestructiveHint = &no
	case cancels:
		a.DestructiveHint, a.IdempotentHint = &yes, true
	}
	if name == "start_research" {
		a.OpenWorldHint = &yes
	}
	return &mcp.Tool{Name: name, Title: title, Annotations: a}
}

// addTool adds a tool whose errors are tool errors the model reads.
func addTool[In any](s *mcp.Server, t *mcp.Tool, desc string, f func(context.Context, In) (mcpOut, error)) {
	addToolWithRequest(s, t, desc, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (mcpOut, error) {
		return f(ctx, in)
	})
}

// addToolWithRequest is addTool for a tool that needs its call's request
// (its progress token, its session).
func addToolWithRequest[In any](s *mcp.Server, t *mcp.Tool, desc string, f func(context.Context, *mcp.CallToolRequest, In) (mcpOut, error)) {
	t.Description = desc
	mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, mcpOut, error) {
		out, err := f(ctx, req, in)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		return nil, out, nil
	})
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
