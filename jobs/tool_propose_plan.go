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
				"this research, which may take hours. You may spawn only what they approve.",
			Parameters: schema(`{"type":"object","properties":{"subagents":{"type":"array","minItems":1,"maxItems":5,` +
				`"items":{"type":"object","properties":{` +
				`"name":{"type":"string","description":"1 to 40 letters, digits, - or _"},` +
				`"reason":{"type":"string","description":"why this sub-agent has to exist, in one sentence"},` +
				`"task":{"type":"string","description":"a self-contained task that says what to bring back"},` +
				`"type":{"type":"string"},"max_steps":{"type":"integer","minimum":1,"maximum":40}},` +
				`"required":["name","reason","task"],"additionalProperties":false}}},` +
				`"required":["subagents"],"additionalProperties":false}`)},
		state: StateInputRequired,
		run:   runProposePlan,
	})
}

// proposePlanArgs are the arguments of propose_plan.
type proposePlanArgs struct {
	Subagents []SpawnParams `json:"subagents"`
}

const proposePlanShape = `{"subagents": [{"name": "...", "reason": "...", "task": "...", "type": "researcher", "max_steps": 1..40}]}`

func runProposePlan(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args proposePlanArgs
	if err := decodeArgs(raw, &args, proposePlanShape); err != nil {
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
