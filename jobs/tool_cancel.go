package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gbresearch/gb/jobs/llm"
)

// The tool cancel_subagent ends one of the run's sub-agents.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolCancelSubagent,
			Description: "End one of your sub-agents (and its own sub-agents) now, when its work is no longer needed."},
		args:  cancelArgs{},
		state: StateSpawning,
		run:   runCancelSubagent,
	})
}

// cancelArgs are the arguments of cancel_subagent.
type cancelArgs struct {
	Name string `json:"name" desc:"the sub-agent's name"`
}

func runCancelSubagent(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args cancelArgs
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	kids, err := awaitedChildren(ctx, env.tx, env.run, []string{args.Name})
	if err != nil {
		return "", err
	}
	kid := kids[0]
	if kid.Ended() {
		return fmt.Sprintf("sub-agent %q (run %d) had already ended: %s", kid.Name, kid.ID, kid.Status), nil
	}
	if err := env.agent.endRun(ctx, env.tx, kid, StatusFailed, "", "cancelled by the agent that spawned it", 0); err != nil {
		return "", err
	}
	return fmt.Sprintf("cancelled sub-agent %q (run %d) and its sub-agents", kid.Name, kid.ID), nil
}
