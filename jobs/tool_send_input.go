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
// it at the start of its next step, without read_messages (parentInputs).

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

// parentInputs are the unread messages a sub-agent's parent sent it, which
// its next step is given as messages from its parent; the step's commit
// marks them read (markInputsRead), so a retried step sees them again.
func parentInputs(ctx context.Context, db DB, run *Run) ([]llm.Message, []int64, error) {
	if run.ParentID == nil {
		return nil, nil, nil
	}
	rows, err := db.Query(ctx, `SELECT id, text FROM gb_messages
		WHERE to_id = $1 AND from_id = $2 AND read_at IS NULL ORDER BY id`, run.ID, *run.ParentID)
	if err != nil {
		return nil, nil, fmt.Errorf("error reading the inputs of run %d: %w", run.ID, err)
	}
	defer rows.Close()
	var msgs []llm.Message
	var ids []int64
	for rows.Next() {
		var id int64
		var text string
		if err := rows.Scan(&id, &text); err != nil {
			return nil, nil, fmt.Errorf("error reading the inputs of run %d: %w", run.ID, err)
		}
		ids = append(ids, id)
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "Message from your parent: " + text})
	}
	return msgs, ids, rows.Err()
}

// markInputsRead marks the messages a step delivered as read, in the
// step's transaction: the parent's inputs it was given and the messages
// that answered a resumed read_messages wait. A message already read is
// left alone.
func markInputsRead(ctx context.Context, db DB, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, `UPDATE gb_messages SET read_at = now() WHERE id = ANY($1) AND read_at IS NULL`, ids); err != nil {
		return fmt.Errorf("error marking inputs read: %w", err)
	}
	return nil
}
