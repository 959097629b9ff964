package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// forkBody is the body of POST /v1/gb/research/{id}/fork that gb research
// fork and MCP's fork_research send: what is left zero is the original's.
type forkBody struct {
	Agent       int64   `json:"agent,omitempty"`
	Step        int     `json:"step"`
	Model       string  `json:"model,omitempty"`
	Pin         string  `json:"pin,omitempty"`
	MaxCostUSD  float64 `json:"max_cost_usd,omitempty"`
	MaxTokens   int64   `json:"max_tokens,omitempty"`
	MaxSteps    int     `json:"max_steps,omitempty"`
	Citations   string  `json:"citations,omitempty"`
	Instruction string  `json:"instruction,omitempty"`
}

// researchForkCmd is gb research fork: POST /v1/gb/research/{id}/fork.
func researchForkCmd() *cobra.Command {
	var (
		step, maxSteps                     int
		agent, maxTokens                   int64
		model, pin, citations, instruction string
		maxCost                            float64
		follow                             bool
	)
	cmd := &cobra.Command{
		Use:   "fork ID --step N",
		Short: "Start a research that replays research ID up to step N of its root, at no cost, and goes on live from there",
		Long: `Start a research that replays the steps 1 to N of research ID's root from
the record, with no model call and no cost, and goes on live from step N+1
with what the flags change. Sub-agents whose reports the root had read by
step N come as recorded; the others run again. The fork is a research of
its own: its id is printed, and gb research diff ID FORK compares the two.`,
		Example: `  gb research fork 42 --step 3 --model gpt-4.1-mini --max-cost-usd 0.10
  gb research fork 42 --step 2 --instruction "Cover the error cases too." --follow`,
		Args: args(1, 1, "one research ID"),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("step") {
				return usageErrorf("--step is required: the last step of the root to replay (0 to replay none)")
			}
			if cmd.Flags().Changed("max-steps") && maxSteps == 0 {
				return usageErrorf("--max-steps must be between 1 and %d (got 0); leave it out for the original's", jobs.MaxMaxSteps)
			}
			return nil
		},
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
			id, err := runID(a[0])
			if err != nil {
				return err
			}
			body := forkBody{Agent: agent, Step: step, Model: model, Pin: pin, MaxCostUSD: maxCost, MaxTokens: maxTokens,
				MaxSteps: maxSteps, Citations: citations, Instruction: instruction}
			var run jobs.Run
			if err := c.do(ctx, "POST", fmt.Sprintf("/v1/gb/research/%d/fork", id), body, &run); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%d\n", run.ID)
			if !follow {
				return nil
			}
			fmt.Fprintf(out, "forked from %d at step %d · model: %s\n", id, step, printable(run.Model))
			return followRun(ctx, c, run.ID, out)
		}),
	}
	f := cmd.Flags()
	f.IntVar(&step, "step", 0, "the last step of the root to replay (required; 0 replays none)")
	f.Int64Var(&agent, "agent", 0, "the run whose steps are replayed (default and only: the root)")
	f.StringVar(&model, "model", "", "the model of the live part (default: the original's)")
	f.StringVar(&pin, "pin", "", "run: the original's prompts, types and tools (default); latest: this deploy's")
	f.Float64Var(&maxCost, "max-cost-usd", 0, "budget of the fork's tree in dollars (default: the original's)")
	f.Int64Var(&maxTokens, "max-tokens", 0, "budget of the fork's tree in tokens (default: the original's)")
	f.IntVar(&maxSteps, "max-steps", 0, "steps of the fork's root in all, replayed ones included (default: the original's)")
	f.StringVar(&citations, "citations", "", "what to do with the report's citations: off, flag or revise (default: the original's)")
	f.StringVar(&instruction, "instruction", "", "told to the first live step as your message")
	f.BoolVar(&follow, "follow", false, "print the fork's events as they happen until it ends, then its report")
	return cmd
}

// mcpForkInput is the input of the MCP tool fork_research.
type mcpForkInput struct {
	ID          int64   `json:"id" jsonschema:"the research to fork (its root's steps are replayed)"`
	Step        int     `json:"step" jsonschema:"the last step of the root to replay from the record, at no cost (0: none); the fork goes on live from the next"`
	Model       string  `json:"model,omitempty" jsonschema:"the model of the live part (default: the original's)"`
	Pin         string  `json:"pin,omitempty" jsonschema:"run (default): the original's prompts, agent types and tools; latest: this deploy's"`
	MaxCostUSD  float64 `json:"max_cost_usd,omitempty" jsonschema:"budget of the fork's tree in dollars (default: the original's)"`
	MaxTokens   int64   `json:"max_tokens,omitempty" jsonschema:"budget of the fork's tree in tokens (default: the original's)"`
	MaxSteps    int     `json:"max_steps,omitempty" jsonschema:"steps of the fork's root in all, replayed ones included, 1 to 40 (default: the original's)"`
	Citations   string  `json:"citations,omitempty" jsonschema:"off, flag or revise (default: the original's)"`
	Instruction string  `json:"instruction,omitempty" jsonschema:"told to the first live step as your message, at most 4000 characters"`
}

// forkTool is the MCP tool fork_research: POST /v1/gb/research/{id}/fork.
func forkTool(c *apiClient) mcpTool {
	return mcpTool{name: "fork_research", title: "Fork a research from a step", kind: changes, openWorld: true,
		desc: "Start a research that replays a recorded one's root up to step (read the steps with get_steps) from the record, " +
			"with no model call and no cost, and goes on live from the next step with what you change: model, pin, budget, " +
			"max_steps, citations, or an instruction. Sub-agents whose reports the root had read come as recorded; the others " +
			"run again. Returns the fork's root run (its id, forked_from, fork_step); wait for it with wait_research.",
		add: plain(func(ctx context.Context, in mcpForkInput) (mcpOut, error) {
			if err := checkID(in.ID); err != nil {
				return nil, err
			}
			body := forkBody{Step: in.Step, Model: in.Model, Pin: in.Pin, MaxCostUSD: in.MaxCostUSD, MaxTokens: in.MaxTokens,
				MaxSteps: in.MaxSteps, Citations: in.Citations, Instruction: in.Instruction}
			var run mcpOut
			if err := c.do(ctx, "POST", fmt.Sprintf("/v1/gb/research/%d/fork", in.ID), body, &run); err != nil {
				return nil, err
			}
			id, _ := run["id"].(float64)
			run["resource"] = researchURI(int64(id))
			return run, nil
		})}
}
