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
			Description: "Start a sub-agent: a research agent of its own for an independent part of your question. Returns at once with its name and run id.",
			Parameters: schema(`{"type":"object","properties":{` +
				`"name":{"type":"string","description":"1 to 40 letters, digits, - or _; unique among your sub-agents"},` +
				`"reason":{"type":"string","description":"why this sub-agent has to exist, in one sentence (at most 300 characters)"},` +
				`"task":{"type":"string","description":"a self-contained task that says what to bring back (at most 2000 characters)"},` +
				`"max_steps":{"type":"integer","minimum":1,"maximum":40}},` +
				`"required":["name","reason","task"],"additionalProperties":false}`)},
		state: StateSpawning,
		run:   runSpawn,
	})
}

const spawnShape = `{"name": "...", "reason": "...", "task": "...", "max_steps": 1..40, "type": "researcher", "model": "..."}`

func runSpawn(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var p SpawnParams
	if err := decodeArgs(raw, &p, spawnShape); err != nil {
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
