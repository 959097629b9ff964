package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file is plan approval: a root started with approve_plan proposes
// the sub-agents it means to spawn (propose_plan) before it may spawn any,
// and parks for its owner's decision exactly as ask_owner parks for an
// answer (owner_wait.go): the same wait kind, wake job, deadline, repair
// and resume. The owner approves the plan, edited or not, or rejects it
// (DecidePlan); after an approval spawn_subagent takes exactly the
// approved names, after a rejection the root may propose again (at most
// MaxPlanProposals times), and after the deadline it goes on without
// sub-agents.

// Where a plan stands (Plan.State).
const (
	PlanProposed = "proposed"
	PlanApproved = "approved"
	PlanRejected = "rejected"
	PlanExpired  = "expired"
)

// Decisions an owner makes on a plan (PlanDecision.Decision).
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
)

// Limits of plans.
const (
	// MaxPlanProposals bounds the plans one research may propose.
	MaxPlanProposals = 3
	// MaxPlanNoteLen bounds the owner's note on a decision, in characters.
	MaxPlanNoteLen = 2000
)

// NoPlanDecisionNote is the result of a propose_plan call whose deadline
// came before its owner's decision.
const NoPlanDecisionNote = "No decision came on your plan: go on without sub-agents, doing the work yourself."

// ErrNotProposing is returned for a decision on a run that waits for
// none; errors wrapping it say what the run is doing instead.
var ErrNotProposing = errors.New("this research is not waiting for a decision on a plan")

// Plan is the plan of sub-agents a root proposed, or the list its owner
// approved, and where it stands.
type Plan struct {
	// State is PlanProposed, PlanApproved, PlanRejected or PlanExpired.
	State     string        `json:"state"`
	Subagents []SpawnParams `json:"subagents"`
	// Note is the owner's note with the decision.
	Note string `json:"note,omitempty"`
	// Deadline is when a proposed plan goes on without a decision; set
	// only while the root waits on it.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// PlanDecision is an owner's decision on the plan a root proposed.
type PlanDecision struct {
	// Decision is DecisionApprove or DecisionReject.
	Decision string
	// Subagents, for an approval, replaces the proposed list (nil keeps
	// it); it is checked as propose_plan's list is.
	Subagents []SpawnParams
	// Note is told to the agent with the decision (optional).
	Note string
}

// readPlan is a scanned run's plan: nil before its first proposal.
func readPlan(r *Run, raw []byte, state, note string) (*Plan, error) {
	if state == "" {
		return nil, nil
	}
	p := &Plan{State: state, Note: note, Subagents: []SpawnParams{}}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &p.Subagents); err != nil {
			return nil, fmt.Errorf("error reading the plan of run %d: %w", r.ID, err)
		}
	}
	if r.WaitsForPlan() {
		p.Deadline = r.WaitUntil
	}
	return p, nil
}

// planState is where the run's plan stands ("" before a proposal).
func planState(run *Run) string {
	if run.Plan == nil {
		return ""
	}
	return run.Plan.State
}

// mustPlan reports whether the run must have a plan approved to spawn.
func mustPlan(run *Run) bool { return run.IsRoot() && run.ApprovePlan }

// checkPlan checks a list of sub-agents as spawn_subagent checks its
// arguments (names, reasons, tasks, step budgets, types, models), plus
// distinct names and the number the run may spawn. A refusal is a
// toolError naming the entry.
func (a *Service) checkPlan(run *Run, subs []SpawnParams) error {
	most := min(MaxSubagentsPerAgent, run.MaxSubagents)
	if len(subs) == 0 || len(subs) > most {
		return toolErrorf("subagents must list 1 to %d sub-agents (got %d); to spawn none, do the work yourself", most, len(subs))
	}
	seen := map[string]bool{}
	for i := range subs {
		p := &subs[i]
		if err := p.check(); err != nil {
			return toolErrorf("subagents[%d]: %s", i, err.Error())
		}
		if _, err := a.spawnType(run, p.Type); err != nil {
			return toolErrorf("subagents[%d]: %s", i, err.Error())
		}
		if p.Model != "" && a.modelNamed(p.Model) == nil {
			return toolErrorf("subagents[%d]: model %q is not allowed; the models are: %s", i, p.Model,
				strings.Join(a.modelNames(), ", "))
		}
		if seen[p.Name] {
			return toolErrorf("subagents[%d]: the name %q is listed twice; names must differ", i, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// planned is the spawn a root that must have its plan approved may make
// of p: the approved entry of that name, whatever task the call gave. A
// spawn before an approval, or of a name the plan does not list, is a
// toolError saying what to do instead.
func planned(run *Run, p SpawnParams) (SpawnParams, error) {
	if !mustPlan(run) {
		return p, nil
	}
	switch planState(run) {
	case "":
		return p, toolErrorf("you must propose your plan first: call propose_plan with every sub-agent you mean to spawn, " +
			"and wait for your owner's decision")
	case PlanRejected:
		return p, toolErrorf("your owner rejected your plan: propose a different one with propose_plan, " +
			"or go on without sub-agents")
	case PlanExpired:
		return p, toolErrorf("no decision came on your plan: go on without sub-agents, doing the work yourself")
	}
	names := make([]string, 0, len(run.Plan.Subagents))
	for _, s := range run.Plan.Subagents {
		if s.Name == strings.TrimSpace(p.Name) {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return p, toolErrorf("%q is not in your approved plan; you may spawn only: %s", p.Name, strings.Join(names, ", "))
}

// planResult is propose_plan's result in the step the decision (or the
// deadline) resumed; proposed is how many plans the run has proposed.
func planResult(run *Run, proposed int) llm.Message {
	msg := llm.Message{Role: llm.RoleTool, ToolCallID: run.WaitCallID, Name: toolProposePlan, Content: NoPlanDecisionNote}
	if run.Plan == nil {
		return msg
	}
	var b strings.Builder
	switch run.Plan.State {
	case PlanApproved:
		b.WriteString("Your owner approved this plan (as they may have edited it). Spawn exactly these sub-agents " +
			"with spawn_subagent, by name; each runs the task below:\n")
		for _, s := range run.Plan.Subagents {
			fmt.Fprintf(&b, "- %s (%s, %d steps): %s\n", s.Name, cmp.Or(s.Type, DefaultType), s.MaxSteps, oneLine(s.Task, 300))
		}
	case PlanRejected:
		b.WriteString("Your owner rejected your plan.")
		if left := MaxPlanProposals - proposed; left > 0 {
			fmt.Fprintf(&b, " You may propose a different plan with propose_plan (%d proposals left), "+
				"or go on without sub-agents.", left)
		} else {
			b.WriteString(" You have no proposals left: go on without sub-agents, doing the work yourself.")
		}
	default:
		return msg
	}
	if run.Plan.Note != "" {
		fmt.Fprintf(&b, "\nYour owner's note: %s", run.Plan.Note)
	}
	msg.Content = strings.TrimSpace(b.String())
	return msg
}

// countProposals counts the plans run has proposed.
func countProposals(ctx context.Context, db DB, run *Run) (int, error) {
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events WHERE root_id = $1 AND run_id = $2
		AND kind = $3`, run.RootID, run.ID, EventPlanProposed).Scan(&n); err != nil {
		return 0, fmt.Errorf("error counting the plans of run %d: %w", run.ID, err)
	}
	return n, nil
}

// check trims the note and checks the decision's fields.
func (d *PlanDecision) check() error {
	d.Note = strings.TrimSpace(d.Note)
	switch {
	case d.Decision != DecisionApprove && d.Decision != DecisionReject:
		return &FieldError{"decision", fmt.Sprintf("must be %q or %q (got %q)", DecisionApprove, DecisionReject, d.Decision)}
	case d.Decision == DecisionReject && d.Subagents != nil:
		return &FieldError{"subagents", "applies only to an approval: leave it out to reject"}
	}
	if d.Note != "" {
		if p := textProblem(d.Note, MaxPlanNoteLen); p != "" {
			return &FieldError{"note", p}
		}
	}
	return nil
}

// DecidePlan gives the owner's decision on the plan a root of theirs
// proposed, and resumes the root with it in the same transaction: its
// next step gets the decision as propose_plan's result. An approval may
// edit the list (d.Subagents, checked as a proposal is). The root resumes
// once: another user's run is ErrNotFound, and a run that is not waiting
// for a decision is an error wrapping ErrNotProposing that says why.
func (a *Service) DecidePlan(ctx context.Context, userID, id int64, d PlanDecision) (*Run, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	var out *Run
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockOwned(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if !run.WaitsForPlan() {
			return notProposing(run)
		}
		if d.Subagents != nil {
			if err := a.checkPlan(run, d.Subagents); err != nil {
				return &FieldError{"subagents", err.Error()}
			}
		}
		if err := a.resumeOwner(ctx, tx, run, ownerReply{plan: &d}, true); err != nil {
			return err
		}
		out, err = GetRun(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// notProposing is the refusal of a decision on run, which waits for none.
func notProposing(run *Run) error {
	var why string
	switch st := planState(run); {
	case !run.IsRoot():
		why = "it is a sub-agent, and only a root research proposes a plan"
	case !run.ApprovePlan:
		why = "it was not started with approve_plan, so it proposes no plan"
	case st == "":
		why = "it has proposed no plan yet"
	default:
		why = "its last plan was " + st + " already"
	}
	return fmt.Errorf("%w: %s; it is %s", ErrNotProposing, why, run.Status)
}

// planOutcome is what resuming run with reply makes of its plan: where it
// stands, the owner's note and the approved list when edited (nil keeps
// the stored one). A run not parked on a plan has no outcome ("").
func planOutcome(run *Run, reply ownerReply) (state, note string, plan []byte, err error) {
	switch d := reply.plan; {
	case !run.WaitsForPlan():
		return "", "", nil, nil
	case d == nil:
		return PlanExpired, "", nil, nil
	case d.Decision == DecisionReject:
		return PlanRejected, d.Note, nil, nil
	case d.Subagents != nil:
		if plan, err = json.Marshal(d.Subagents); err != nil {
			return "", "", nil, fmt.Errorf("error encoding the plan of run %d: %w", run.ID, err)
		}
	}
	return PlanApproved, reply.plan.Note, plan, nil
}

// applyPlanOutcome sets on the resumed run what planOutcome stored.
func applyPlanOutcome(run *Run, state, note string, plan []byte) error {
	if run.Plan == nil {
		run.Plan = &Plan{Subagents: []SpawnParams{}}
	}
	run.Plan.State, run.Plan.Note, run.Plan.Deadline = state, note, nil
	if plan != nil {
		var subs []SpawnParams
		if err := json.Unmarshal(plan, &subs); err != nil {
			return fmt.Errorf("error reading the plan of run %d: %w", run.ID, err)
		}
		run.Plan.Subagents = subs
	}
	return nil
}

// planText is plan as text for a jsonb parameter (nil for none): a pool
// in exec mode would send bytes as bytea.
func planText(plan []byte) *string {
	if plan == nil {
		return nil
	}
	return new(string(plan))
}

// planNames are the names of a plan's sub-agents.
func planNames(subs []SpawnParams) []string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.Name
	}
	return names
}
