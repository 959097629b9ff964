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

func runSendMessage(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args struct {
		To   string `json:"to"`
		Text string `json:"text"`
	}
	if err := decodeArgs(raw, &args, `{"to": "sibling name", "text": "..."}`); err != nil {
		return "", err
	}
	args.Text = strings.TrimSpace(args.Text)
	if args.Text == "" || len(args.Text) > MaxMessageLen {
		return "", toolErrorf("text must be 1 to %d characters", MaxMessageLen)
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

func runReadMessages(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args struct {
		WaitSeconds int `json:"wait_seconds"`
	}
	if err := decodeArgs(raw, &args, `{"wait_seconds": 0..60}`); err != nil {
		return "", err
	}
	if args.WaitSeconds < 0 || args.WaitSeconds > MaxWaitSeconds {
		return "", toolErrorf("wait_seconds must be 0 to %d", MaxWaitSeconds)
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
