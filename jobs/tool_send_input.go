package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
			Description: "Send a follow-up to one of your working sub-agents; it sees it at the start of its next step.",
			Parameters: schema(`{"type":"object","properties":{"name":{"type":"string"},` +
				`"text":{"type":"string","description":"at most 10000 characters"}},"required":["name","text"],"additionalProperties":false}`)},
		state: StateMessaging,
		run:   runSendInput,
	})
}

// sendInputArgs are the arguments of send_input.
type sendInputArgs struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

const sendInputShape = `{"name": "sub-agent name", "text": "..."}`

// check trims the text and checks its length.
func (a *sendInputArgs) check() error {
	a.Text = strings.TrimSpace(a.Text)
	return checkText("text", a.Text, MaxMessageLen)
}

func runSendInput(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args sendInputArgs
	if err := decodeArgs(raw, &args, sendInputShape); err != nil {
		return "", err
	}
	if err := args.check(); err != nil {
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
