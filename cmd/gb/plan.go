package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// researchPlanCmd is gb research plan ID approve|reject: the owner's
// decision on the plan of sub-agents a research proposed.
func researchPlanCmd() *cobra.Command {
	var (
		file string
		note string
	)
	cmd := &cobra.Command{
		Use:   "plan ID approve|reject",
		Short: "Approve or reject the plan of sub-agents a research proposed to you; it goes on at once",
		Long: `Decides the plan a research started with --approve-plan waits on (gb research get
ID shows it). approve lets it spawn exactly the plan's sub-agents; with --file, the
JSON list of sub-agents in the file ([{"name", "reason", "task", "type", "max_steps"}],
or {"subagents": [...]}) is approved instead. reject lets it propose another plan
(3 at most) or go on without sub-agents. --note is told to the research. A plan is
decided once: a decision on a research that waits for none is an error that says why.`,
		Example: `  gb research plan 7 approve
  gb research plan 7 approve --file edited.json --note "skip the benchmarks"
  gb research plan 7 reject --note "one sub-agent is enough"`,
		Args: args(2, 2, "a run ID and approve or reject"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
			id, err := runID(a[0])
			if err != nil {
				return err
			}
			if a[1] != jobs.DecisionApprove && a[1] != jobs.DecisionReject {
				return usageErrorf("the decision must be approve or reject, got %q", a[1])
			}
			body := map[string]any{"decision": a[1]}
			if note != "" {
				body["note"] = note
			}
			if file != "" {
				if a[1] != jobs.DecisionApprove {
					return usageErrorf("--file applies only to approve")
				}
				subs, err := readPlanFile(file)
				if err != nil {
					return err
				}
				body["subagents"] = subs
			}
			run, err := decidePlan(ctx, c, id, body)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s the plan of run %d: it goes on (%s)\n", past(a[1]), run.ID, run.Status)
			return nil
		}),
	}
	cmd.Flags().StringVar(&file, "file", "", "with approve: a JSON file with the edited list of sub-agents to approve")
	cmd.Flags().StringVar(&note, "note", "", "a note told to the research with the decision")
	return cmd
}

func past(decision string) string { return strings.TrimSuffix(decision, "e") + "ed" }

// readPlanFile reads an edited list of sub-agents: a JSON array, or an
// object with the array as subagents.
func readPlanFile(path string) (json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("--file: %v", err)
	}
	var wrapped struct {
		Subagents json.RawMessage `json:"subagents"`
	}
	if json.Unmarshal(b, &wrapped) == nil && wrapped.Subagents != nil {
		return wrapped.Subagents, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, usageErrorf("--file %s must hold a JSON list of sub-agents or {\"subagents\": [...]}: %v", path, err)
	}
	return json.RawMessage(b), nil
}

// decidePlan posts the owner's decision on the plan of run id and returns
// the run resumed.
func decidePlan(ctx context.Context, c *apiClient, id int64, body map[string]any) (*jobs.Run, error) {
	var run jobs.Run
	if err := c.do(ctx, "POST", fmt.Sprintf("/v1/gb/research/%d/plan", id), body, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// printPlan prints the plan of run id, and how to decide it while it is
// proposed.
func printPlan(w io.Writer, id int64, p *jobs.Plan) {
	fmt.Fprintf(w, "\n[run %d plan: %s]\n", id, p.State)
	for _, s := range p.Subagents {
		fmt.Fprintf(w, "  - %s (%s, %s): %s\n", oneLine(s.Name), oneLine(cmpOrDefault(s.Type, jobs.DefaultType)), count(s.MaxSteps, "step"), fit(s.Task, 100))
	}
	if p.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", printable(p.Note))
	}
	if p.State != jobs.PlanProposed {
		return
	}
	by := ""
	if p.Deadline != nil {
		by = " before " + p.Deadline.Local().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(w, "decide it%s: gb research plan %d approve|reject [--file edited.json] [--note \"…\"]\n", by, id)
}

func cmpOrDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// printPlans prints, for each plan_proposed event among evs, the names it
// proposes and how to decide it.
func printPlans(w io.Writer, evs []jobs.Event) {
	for _, e := range evs {
		if e.Kind != jobs.EventPlanProposed {
			continue
		}
		var d struct {
			Subagents []string   `json:"subagents"`
			Deadline  *time.Time `json:"deadline"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			fmt.Fprintf(w, "\n[run %d proposes sub-agents] %s\n", e.RunID, oneLine(strings.Join(d.Subagents, ", ")))
			fmt.Fprintf(w, "see them: gb research get %d; decide: gb research plan %d approve|reject\n", e.RunID, e.RunID)
		}
	}
}
