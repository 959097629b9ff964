package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gbresearch/gb/jobs/llm"
)

// The tool send_input sends a follow-up to one of the run's working
// sub-agents, in the step's transaction. It goes through the messenger
// like a sibling's message, with the same limits; the sub-agent is given
// it at the start of its next step, without read_messages (parentInputsSQL),
// and read_messages leaves it out.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolSendInput,
			Description: "Send a follow-up to one of your working sub-agents; it sees it at the start of its next step."},
		args:  sendInputArgs{},
		state: StateMessaging,
		run:   runSendInput,
	})
}

// sendInputArgs are the arguments of send_input; text's max is
// MaxMessageLen.
type sendInputArgs struct {
	Name string `json:"name" desc:"the sub-agent's name"`
	Text string `json:"text" desc:"the follow-up" trim:"true" min:"1" max:"10000"`
}

func runSendInput(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args sendInputArgs
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	kids, err := awaitedChildren(ctx, env.tx, env.run, []string{args.Name})
	if err != nil {
		return "", err
	}
	kid := kids[0]
	if kid.Ended() {
		return "", toolErrorf("%s has ended (%s): its inbox is gone and the input was not delivered", kid.Name, kid.Status)
	}
	from := env.run.Name
	if from == "" {
		from = "parent"
	}
	if err := sendTo(ctx, env, kid, from, args.Text, "input", map[string]any{"input": true}); err != nil {
		return "", err
	}
	return fmt.Sprintf("sent to %s (run %d); it sees it at the start of its next step", kid.Name, kid.ID), nil
}
