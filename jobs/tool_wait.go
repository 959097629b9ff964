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
			Description: "Wait until the named sub-agents (default: all of yours) have ended and get their reports, or their errors."},
		args:  waitArgs{},
		state: StateWaiting,
		run:   runWait,
	})
}

// waitArgs are the arguments of wait_subagents.
type waitArgs struct {
	Names []string `json:"names" desc:"the sub-agents to wait for (default: all of yours)" optional:"true"`
}

func runWait(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args waitArgs
	if err := decodeArgs(raw, &args); err != nil {
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
	return env.agent.untrustedReports(awaited, env.agent.limitsFor(env.run).MaxReportChars), nil
}
