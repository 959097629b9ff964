package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gbresearch/gb/jobs/llm"
)

// The tool spawn_subagent starts a sub-agent, in the step's transaction (team.go has the limits).

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolSpawnSubagent,
			Description: "Start a sub-agent: a research agent of its own for an independent part of your question. Returns at once with its name and run id."},
		args:  SpawnParams{},
		state: StateSpawning,
		run:   runSpawn,
	})
}

func runSpawn(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var p SpawnParams
	if err := decodeArgs(raw, &p); err != nil {
		return "", err
	}
	p, err := planned(env.run, p)
	if err != nil {
		return "", err
	}
	child, err := env.agent.spawn(ctx, env.tx, env.run, p)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("started sub-agent %q (run %d): %s", child.Name, child.ID, oneLine(child.Topic, 120)), nil
}
