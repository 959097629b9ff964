package jobs

import (
	"context"
	"encoding/json"

	"github.com/gbresearch/gb/jobs/llm"
)

// The tool propose_plan proposes the sub-agents a root started with
// approve_plan means to spawn and parks it until its owner's decision or
// the deadline (plan.go, owner_wait.go). Only such a root gets it.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolProposePlan,
			Description: "Propose the sub-agents you mean to spawn and wait for the decision of the person who started " +
				"this research, which may take hours. You may spawn only what they approve."},
		args:  proposePlanArgs{},
		state: StateInputRequired,
		run:   runProposePlan,
	})
}

// proposePlanArgs are the arguments of propose_plan; the most sub-agents
// is MaxSubagentsPerAgent, or fewer when the research allows fewer
// (checkPlan), and each is checked as spawn_subagent's arguments are.
type proposePlanArgs struct {
	Subagents []SpawnParams `json:"subagents" desc:"the sub-agents you mean to spawn" min:"1" max:"5"`
}

func runProposePlan(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args proposePlanArgs
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	if env.park != nil {
		return "", toolErrorf("this step already waits (%s): only one call of a step may wait", env.park.what())
	}
	switch planState(env.run) {
	case PlanApproved:
		return "", toolErrorf("your plan is approved already: spawn its sub-agents with spawn_subagent")
	case PlanExpired:
		return "", toolErrorf("no decision came on your plan: go on without sub-agents, doing the work yourself")
	}
	proposed, err := countProposals(ctx, env.tx, env.run)
	if err != nil {
		return "", err
	}
	if proposed >= MaxPlanProposals {
		return "", toolErrorf("you have proposed %d plans, the most a research may: go on without sub-agents", proposed)
	}
	if err := env.agent.checkPlan(env.run, args.Subagents); err != nil {
		return "", err
	}
	env.park = &parkRequest{callID: env.callID, plan: args.Subagents, until: answerDeadline(env.run)}
	return "", nil // answered when the root resumes (planResult)
}
