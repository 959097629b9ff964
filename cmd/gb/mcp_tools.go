package main

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpTool is one tool of the MCP server: its name, title and description,
// what it does to the user's researches (its annotations come from that,
// in spec), and how it is added to a server with its handler.
type mcpTool struct {
	name, title, desc string
	kind              toolKind
	// openWorld says the tool reaches beyond gb's own runs: starting a
	// research sets agents searching and reading the web.
	openWorld bool
	add       func(s *mcp.Server, t *mcp.Tool)
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

// mcpTools is the registry of the MCP server's tools, calling the API
// through c: the server adds these and no other, and the README's list of
// tools is tested against it.
func mcpTools(c *apiClient) []mcpTool {
	get := func(ctx context.Context, path string) (mcpOut, error) {
		var out mcpOut
		err := c.do(ctx, "GET", path, nil, &out)
		return out, err
	}
	return []mcpTool{
		{name: "start_research", title: "Start a research", kind: changes, openWorld: true,
			desc: "Start a research; it runs in the background. Returns the root run (its id, status). With wait_seconds, " +
				"waits for it to end as wait_research does.",
			add: withRequest(func(ctx context.Context, req *mcp.CallToolRequest, in mcpStartInput) (mcpOut, error) {
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
			})},
		{name: "wait_research", title: "Wait for a research", kind: readOnly,
			desc: "Wait until a run and all its sub-agents have ended, or timeout_seconds (default 120). When you ask for " +
				"progress, each event of its tree is a progress notification. Answers where it stands (ended, status, " +
				"tree totals, the question it waits on) and its report's resource once it has succeeded.",
			add: withRequest(func(ctx context.Context, req *mcp.CallToolRequest, in mcpWaitInput) (mcpOut, error) {
				if err := checkID(in.ID); err != nil {
					return nil, err
				}
				wait, err := waitTimeout(in.TimeoutSeconds)
				if err != nil {
					return nil, err
				}
				return waitResearch(ctx, c, req, in.ID, wait)
			})},
		{name: "get_research", title: "Get a research", kind: readOnly,
			desc: "Get a run: status, state, usage, states, sub-agents, tree totals, the question it waits for you to answer " +
				"(state input_required), the provider outage it waits out (state waiting_provider: provider_wait has the provider's last error and the next try), " +
				"and its report once it has ended.",
			add: plain(withID(func(ctx context.Context, id int64) (mcpOut, error) {
				return get(ctx, fmt.Sprintf("/v1/gb/research/%d", id))
			}))},
		{name: "list_research", title: "List your researches", kind: readOnly,
			desc: "List your runs, newest first, a page at a time (next_cursor when there are more), without their reports.",
			add:  plain(func(ctx context.Context, in mcpListInput) (mcpOut, error) { return mcpListPage(ctx, c, in) })},
		{name: "get_tree", title: "Get the tree of a research", kind: readOnly,
			desc: "The run and its sub-agents by depth (name, reason, status, state, steps, tokens with their cached and reasoning " +
				"parts, cost), a page of agents at a time (next_cursor when there are more), with the whole tree's totals.",
			add: plain(func(ctx context.Context, in mcpTreeInput) (mcpOut, error) { return mcpTreePage(ctx, c, in) })},
		{name: "get_events", title: "Get the events of a research", kind: readOnly,
			desc: "The events of the run's tree after a seq, at most limit of them (more: true when others follow next_after), " +
				"texts cut; with wait, waits for the next one.",
			add: plain(func(ctx context.Context, in mcpEventsInput) (mcpOut, error) { return mcpEventsPage(ctx, c, in) })},
		{name: "get_messages", title: "Get the messages between agents", kind: readOnly,
			desc: "The messages the agents of the run's tree sent each other, oldest first, a page at a time, texts cut.",
			add:  plain(func(ctx context.Context, in mcpMessagesInput) (mcpOut, error) { return mcpMessagesPage(ctx, c, in) })},
		{name: "get_sources", title: "Get the sources of a research", kind: readOnly,
			desc: "The pages the run fetched and the search results it was shown (tree: of every agent of its tree), a page at a time.",
			add:  plain(func(ctx context.Context, in mcpSourcesInput) (mcpOut, error) { return mcpSourcesPage(ctx, c, in) })},
		{name: "answer_research", title: "Answer a research's question", kind: changes,
			desc: "Answer the question an interactive research asked you (get_research shows it as " +
				"question, with its answer_deadline); the research goes on with your answer at once. A question is answered once: " +
				"answering a research that waits for no answer is an error that says why.",
			add: plain(func(ctx context.Context, in mcpAnswerInput) (mcpOut, error) {
				if err := checkID(in.ID); err != nil {
					return nil, err
				}
				run, err := answerRun(ctx, c, in.ID, in.Text)
				if err != nil {
					return nil, err
				}
				return mcpOut{"id": run.ID, "status": run.Status, "state": run.State}, nil
			})},
		{name: "decide_plan", title: "Decide a research's plan", kind: changes,
			desc: "Approve or reject the plan of sub-agents a research started with approve_plan proposed " +
				"(get_research shows it as plan, state proposed, with its deadline); approve may give an edited list of sub-agents. " +
				"The research goes on at once: after an approval it spawns exactly the approved sub-agents, after a rejection it may " +
				"propose again. A plan is decided once: deciding for a research that waits for no decision is an error that says why.",
			add: plain(func(ctx context.Context, in mcpPlanInput) (mcpOut, error) {
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
			})},
		{name: "cancel_research", title: "Cancel a research", kind: cancels,
			desc: "Cancel a run that has not ended, with its working sub-agents; cancelling an ended run is an error.",
			add: plain(withID(func(ctx context.Context, id int64) (mcpOut, error) {
				run, err := cancelRun(ctx, c, id)
				if err != nil {
					return nil, err
				}
				return mcpOut{"id": run.ID, "status": run.Status, "error": run.Error}, nil
			}))},
		stepsTool(c),
		citationsTool(c),
		forkTool(c),
	}
}

// spec is the tool's MCP definition: its name, title, description and the
// annotations of its kind, every hint set. Every tool's annotations are
// made here and nowhere else.
func (t mcpTool) spec() *mcp.Tool {
	no, yes := false, true
	a := &mcp.ToolAnnotations{Title: t.title, OpenWorldHint: &no, DestructiveHint: &no}
	switch t.kind {
	case readOnly:
		a.ReadOnlyHint, a.IdempotentHint = true, true
	case changes:
	case cancels:
		a.DestructiveHint, a.IdempotentHint = &yes, true
	}
	if t.openWorld {
		a.OpenWorldHint = &yes
	}
	return &mcp.Tool{Name: t.name, Title: t.title, Description: t.desc, Annotations: a}
}

// register adds the tool to s.
func (t mcpTool) register(s *mcp.Server) { t.add(s, t.spec()) }

// plain is the handler of a tool whose errors are tool errors the model
// reads.
func plain[In any](f func(context.Context, In) (mcpOut, error)) func(*mcp.Server, *mcp.Tool) {
	return withRequest(func(ctx context.Context, _ *mcp.CallToolRequest, in In) (mcpOut, error) {
		return f(ctx, in)
	})
}

// withRequest is plain for a tool that needs its call's request (its
// progress token, its session).
func withRequest[In any](f func(context.Context, *mcp.CallToolRequest, In) (mcpOut, error)) func(*mcp.Server, *mcp.Tool) {
	return func(s *mcp.Server, t *mcp.Tool) {
		mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, mcpOut, error) {
			out, err := f(ctx, req, in)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", t.Name, err)
			}
			return nil, out, nil
		})
	}
}
