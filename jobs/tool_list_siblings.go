package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
)

// The tool list_siblings lists the other sub-agents of the run's parent.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolListSiblings,
			Description: "List your siblings (the other sub-agents of your parent): name, whether they still work, and why each was started."},
		args:  noArgs{},
		state: StateMessaging,
		run:   runListSiblings,
	})
}

// noArgs are the arguments of a tool that takes none.
type noArgs struct{}

func runListSiblings(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	if err := decodeArgs(raw, &noArgs{}); err != nil {
		return "", err
	}
	sibs, err := siblings(ctx, env.tx, env.run)
	if err != nil {
		return "", err
	}
	if len(sibs) == 0 {
		return "You have no siblings now (your parent may still start some).", nil
	}
	var b strings.Builder
	for _, s := range sibs {
		fmt.Fprintf(&b, "- %s [%s]: %s\n", s.Name, siblingStatus(s), s.Reason)
	}
	return strings.TrimSpace(b.String()), nil
}
