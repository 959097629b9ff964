package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/messenger"
)

// The tool read_messages takes the run's unread messages; its wait happens before the transaction (messages.go).

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolReadMessages,
			Description: "Read the messages your siblings sent you since your last read, oldest first; optionally wait up to wait_seconds for the first.",
			Parameters: schema(`{"type":"object","properties":{"wait_seconds":{"type":"integer","minimum":0,"maximum":60}},` +
				`"additionalProperties":false}`)},
		state: StateMessaging,
		run:   runReadMessages,
	})
}

// readMessagesArgs are the arguments of read_messages.
type readMessagesArgs struct {
	WaitSeconds int `json:"wait_seconds"`
}

const readMessagesShape = `{"wait_seconds": 0..60}`

// check checks the wait.
func (a *readMessagesArgs) check() error {
	if a.WaitSeconds < 0 || a.WaitSeconds > MaxWaitSeconds {
		return toolErrorf("wait_seconds must be 0 to %d", MaxWaitSeconds)
	}
	return nil
}

// parseReadMessages decodes and checks read_messages' arguments, for the
// tool and for the wait before its step's transaction alike.
func parseReadMessages(raw json.RawMessage) (readMessagesArgs, error) {
	var args readMessagesArgs
	if err := decodeArgs(raw, &args, readMessagesShape); err != nil {
		return args, err
	}
	return args, args.check()
}

func runReadMessages(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	if _, err := parseReadMessages(raw); err != nil {
		return "", err
	}
	// Any wait happened before this transaction (waitForMessages).
	msgs, err := env.agent.messenger.InTx(env.tx).Receive(ctx, env.run.ID, 0)
	if err != nil && !errors.Is(err, messenger.ErrNoInbox) {
		return "", err
	}
	if len(msgs) == 0 {
		return "No new messages.", nil
	}
	var b strings.Builder
	for _, m := range msgs {
		if m.From == 0 {
			fmt.Fprintf(&b, "From %s (your owner): %s\n\n", m.FromName, m.Text)
		} else {
			fmt.Fprintf(&b, "From %s (run %d): %s\n\n", m.FromName, m.From, m.Text)
		}
	}
	return strings.TrimSpace(b.String()), nil
}
