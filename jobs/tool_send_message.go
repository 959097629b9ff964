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

// The tool send_message puts a message in a sibling's inbox, in the step's transaction.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolSendMessage,
			Description: "Send a short message to a sibling by name. Returns at once; it does not wait for a reply."},
		args:  sendMessageArgs{},
		state: StateMessaging,
		run:   runSendMessage,
	})
}

// sendMessageArgs are the arguments of send_message; text's max is
// MaxMessageLen.
type sendMessageArgs struct {
	To   string `json:"to" desc:"the sibling's name"`
	Text string `json:"text" desc:"the message" trim:"true" min:"1" max:"10000"`
}

func runSendMessage(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args sendMessageArgs
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	if args.To == env.run.Name {
		return "", toolErrorf("you cannot message yourself")
	}
	sibs, err := siblings(ctx, env.tx, env.run)
	if err != nil {
		return "", err
	}
	var to *Run
	var names []string
	for _, s := range sibs {
		names = append(names, s.Name)
		if s.Name == args.To {
			to = s
		}
	}
	if to == nil {
		if len(names) == 0 {
			return "", toolErrorf("%q is not a sibling of yours; you have no siblings now", args.To)
		}
		return "", toolErrorf("%q is not a sibling of yours; your siblings are: %s", args.To, strings.Join(names, ", "))
	}
	if to.Ended() {
		return "", toolErrorf("%s has ended: its inbox is gone and the message was not delivered", to.Name)
	}
	if err := sendTo(ctx, env, to, env.run.Name, args.Text, "message", nil); err != nil {
		return "", err
	}
	return fmt.Sprintf("sent to %s (run %d)", to.Name, to.ID), nil
}

// sendTo sends text to a run of the tree through the messenger in the
// step's transaction, records it on the timeline and resumes the receiver
// if it is parked on read_messages; an ended run or a full inbox is a
// toolError saying the what was not delivered. to is the receiver as read
// in this transaction, under the tree's root lock.
func sendTo(ctx context.Context, env *toolEnv, to *Run, from, text, what string, data map[string]any) error {
	err := messenger.SendMessage(ctx, env.agent.messenger.InTx(env.tx), messenger.Message{
		From: env.run.ID, FromName: from, To: to.ID, Text: text})
	switch {
	case errors.Is(err, messenger.ErrNoInbox):
		return toolErrorf("%s has ended: its inbox is gone and the %s was not delivered", to.Name, what)
	case errors.Is(err, messenger.ErrInboxFull):
		return toolErrorf("%s's inbox is full (%d unread messages); the %s was not delivered", to.Name, messenger.InboxSize, what)
	case err != nil:
		return err
	}
	ev := map[string]any{"to": to.Name, "to_run": to.ID}
	for k, v := range data {
		ev[k] = v
	}
	if err := addEvent(ctx, env.tx, env.run, EventMessage, ev); err != nil {
		return err
	}
	return env.agent.wakeReader(ctx, env.tx, to)
}
