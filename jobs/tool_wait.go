package jobs

import (
	"context"
	"encoding/json"

	"github.com/gbresearch/gb/jobs/llm"
)

// The tool wait_subagents parks the run until its sub-agents end (team.go).

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolWaitSubagents,
			Description: "Wait until the named sub-agents (default: all of yours) have ended and get their reports, or their errors.",
			Parameters: schema(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}},` +
				`"additionalProperties":false}`)},
		state: StateWaiting,
		run:   runWait,
	})
}

func runWait(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args struct {
		Names []string `json:"names"`
	}
	if err := decodeArgs(raw, &args, `{"names": ["name", ...]} or {}`); err != nil {
		return "", err
	}
	awaited, err := awaitedChildren(ctx, env.tx, env.run, args.Names)
	if err != nil {
		return "", err
	}
	for _, c := range awaited {
		if c.Ended() {
			continue
		}
		if env.park != nil {
			return "", toolErrorf("this step already waits (%s): only one call of a step may wait", env.park.what())
		}
		env.park = &parkRequest{callID: env.callID, names: args.Names}
		return "", nil
	}
	return untrustedReports(awaited, env.agent.config.MaxReportChars), nil
}
