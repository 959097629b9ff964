package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/messenger"
)

// The tool read_messages takes the run's unread messages. A short wait
// happens before the step's transaction (messages.go); with the Postgres
// messenger a longer one parks the run (message_wait.go).

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolReadMessages,
			Description: "Read the messages your siblings sent you since your last read, oldest first; optionally wait up to wait_seconds for the first."},
		args:  readMessagesArgs{},
		state: StateMessaging,
		run:   runReadMessages,
	})
}

// readMessagesArgs are the arguments of read_messages; wait_seconds' max
// is MaxWaitSeconds.
type readMessagesArgs struct {
	WaitSeconds int `json:"wait_seconds" desc:"how long to wait for a first message when none is unread" optional:"true" min:"0" max:"60" default:"0"`
}

// parseReadMessages decodes and checks read_messages' arguments, for the
// tool and for the wait before its step's transaction alike.
func parseReadMessages(raw json.RawMessage) (readMessagesArgs, error) {
	var args readMessagesArgs
	return args, decodeArgs(raw, &args)
}

func runReadMessages(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	args, err := parseReadMessages(raw)
	if err != nil {
		return "", err
	}
	if !env.agent.parksMessageWaits() {
		return receiveMessages(ctx, env)
	}
	msgs, err := takeMessages(ctx, env.tx, env.run)
	if err != nil {
		return "", err
	}
	wait := time.Duration(args.WaitSeconds) * time.Second
	if len(msgs) > 0 || wait <= MaxBlockingWait {
		return env.agent.formatMessages(msgs), nil // any short wait happened before this transaction
	}
	if env.park != nil {
		return "", toolErrorf("no new messages, and this step already waits (%s): only one call of a step may wait",
			env.park.what())
	}
	env.park = &parkRequest{callID: env.callID, messages: true, until: time.Now().Add(wait)}
	return "", nil // answered when the run resumes (resumeResult)
}

// receiveMessages takes the messages through a messenger that keeps them
// outside Postgres; its wait happened before this transaction
// (waitForMessages).
func receiveMessages(ctx context.Context, env *toolEnv) (string, error) {
	got, err := env.agent.messenger.InTx(env.tx).Receive(ctx, env.run.ID, 0)
	if err != nil && !errors.Is(err, messenger.ErrNoInbox) {
		return "", err
	}
	msgs := make([]inboxMessage, len(got))
	for i, m := range got {
		msgs[i] = inboxMessage{ID: m.ID, From: m.From, FromName: m.FromName, Text: m.Text}
	}
	return env.agent.formatMessages(msgs), nil
}

// inboxMessage is a message as read_messages shows it.
type inboxMessage struct {
	ID       int64
	From     int64
	FromName string
	Text     string
}

// takeMessagesSQL marks read and returns, oldest first, the unread
// messages of run $1 that read_messages delivers: not the parent's ($2),
// which each step is given on their own, and none up to $3, which a
// resumed message wait delivers in this same step.
const takeMessagesSQL = `WITH taken AS (
		UPDATE gb_messages SET read_at = now()
		WHERE id IN (SELECT id FROM gb_messages
		             WHERE to_id = $1 AND read_at IS NULL AND from_id <> $2 AND id > $3 FOR UPDATE)
		  AND read_at IS NULL
		RETURNING id, from_id, from_name, text)
	SELECT id, from_id, from_name, text FROM taken ORDER BY id`

// takeMessages takes the run's new messages out of its Postgres inbox in
// the step's transaction: a step that does not commit leaves them unread.
func takeMessages(ctx context.Context, tx pgx.Tx, run *Run) ([]inboxMessage, error) {
	var after int64
	if run.waitsForMessages() {
		after = run.WaitReadTo // this step answers the parked call with those
	}
	rows, err := tx.Query(ctx, takeMessagesSQL, run.ID, parentOf(run), after)
	if err != nil {
		return nil, fmt.Errorf("error reading the messages of run %d: %w", run.ID, err)
	}
	msgs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[inboxMessage])
	if err != nil {
		return nil, fmt.Errorf("error reading the messages of run %d: %w", run.ID, err)
	}
	return msgs, nil
}

// formatMessages renders read_messages' result: one entry per message,
// oldest first, or "No new messages.". A sibling's text comes inside its
// untrusted block (it may quote pages); the owner's does not.
func (a *Service) formatMessages(msgs []inboxMessage) string {
	if len(msgs) == 0 {
		return "No new messages."
	}
	var b strings.Builder
	for _, m := range msgs {
		if m.From == 0 {
			fmt.Fprintf(&b, "From %s (your owner): %s\n\n", m.FromName, m.Text)
		} else {
			fmt.Fprintf(&b, "From %s (run %d):\n%s\n\n", m.FromName, m.From, a.untrustedMessage(m.FromName, m.From, m.Text))
		}
	}
	return strings.TrimSpace(b.String())
}
