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

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolListSiblings,
			Description: "List your siblings (the other sub-agents of your parent): name, whether they still work, and why each was started.",
			Parameters:  schema(`{"type":"object","properties":{},"additionalProperties":false}`)},
		state: StateMessaging,
		run:   runListSiblings,
	})
	register(&tool{
		spec: llm.ToolSpec{Name: toolSendMessage,
			Description: "Send a short message to a sibling by name. Returns at once; it does not wait for a reply.",
			Parameters: schema(`{"type":"object","properties":{"to":{"type":"string"},` +
				`"text":{"type":"string","description":"at most 10000 characters"}},"required":["to","text"],"additionalProperties":false}`)},
		state: StateMessaging,
		run:   runSendMessage,
	})
	register(&tool{
		spec: llm.ToolSpec{Name: toolReadMessages,
			Description: "Read the messages your siblings sent you since your last read, oldest first; optionally wait up to wait_seconds for the first.",
			Parameters: schema(`{"type":"object","properties":{"wait_seconds":{"type":"integer","minimum":0,"maximum":60}},` +
				`"additionalProperties":false}`)},
		state: StateMessaging,
		run:   runReadMessages,
	})
}

// siblings lists the other sub-agents of the run's parent, oldest first.
func siblings(ctx context.Context, db DB, run *Run) ([]*Run, error) {
	if run.ParentID == nil {
		return nil, nil
	}
	all, err := children(ctx, db, *run.ParentID)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, s := range all {
		if s.ID != run.ID {
			out = append(out, s)
		}
	}
	return out, nil
}

func siblingStatus(r *Run) string {
	switch r.Status {
	case StatusSucceeded:
		return "ended"
	case StatusFailed:
		return "ended, failed"
	default:
		return "working"
	}
}

func runListSiblings(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	if err := decodeArgs(raw, &struct{}{}, "{}"); err != nil {
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

// sendMessageArgs are the arguments of send_message.
type sendMessageArgs struct {
	To   string `json:"to"`
	Text string `json:"text"`
}

const sendMessageShape = `{"to": "sibling name", "text": "..."}`

// check trims the text and checks its length.
func (a *sendMessageArgs) check() error {
	a.Text = strings.TrimSpace(a.Text)
	return checkText("text", a.Text, MaxMessageLen)
}

func runSendMessage(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args sendMessageArgs
	if err := decodeArgs(raw, &args, sendMessageShape); err != nil {
		return "", err
	}
	if err := args.check(); err != nil {
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
	err = messenger.SendMessage(ctx, env.agent.messenger.InTx(env.tx), messenger.Message{
		From: env.run.ID, FromName: env.run.Name, To: to.ID, Text: args.Text})
	switch {
	case errors.Is(err, messenger.ErrNoInbox):
		return "", toolErrorf("%s has ended: its inbox is gone and the message was not delivered", to.Name)
	case errors.Is(err, messenger.ErrInboxFull):
		return "", toolErrorf("%s's inbox is full (%d unread messages); the message was not delivered", to.Name, messenger.InboxSize)
	case err != nil:
		return "", err
	}
	if err := addEvent(ctx, env.tx, env.run, EventMessage, map[string]any{"to": to.Name, "to_run": to.ID}); err != nil {
		return "", err
	}
	return fmt.Sprintf("sent to %s (run %d)", to.Name, to.ID), nil
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
