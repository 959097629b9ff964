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

// Messenger is what the team needs of the message system: a view bound to
// a step's transaction, and a wait that holds no connection.
type Messenger interface {
	InTx(tx pgx.Tx) messenger.Messenger
	Wait(ctx context.Context, id int64, wait time.Duration) (bool, error)
}

// Limits of messages.
const (
	MaxMessageLen  = 10000
	MaxWaitSeconds = 60
)

// ErrNotWorking is returned when a message is sent to a run that has ended.
var ErrNotWorking = errors.New("the agent has ended and reads no more messages")

// ErrNoInbox is returned when a message is sent to an agent that has no
// inbox: a root, which has no message tools.
var ErrNoInbox = errors.New("this agent has no inbox: only sub-agents read messages (read_messages)")

func (a *Agent) openInbox(ctx context.Context, tx pgx.Tx, id int64) error {
	if a.messenger == nil {
		return nil
	}
	return a.messenger.InTx(tx).Open(ctx, id)
}

func (a *Agent) closeInbox(ctx context.Context, tx pgx.Tx, id int64) error {
	if a.messenger == nil {
		return nil
	}
	return a.messenger.InTx(tx).Close(ctx, id)
}

// waitForMessages blocks, outside any transaction, for a read_messages call
// that asked to wait; the messages themselves are taken in the step's
// transaction, so a crash between the two loses none.
func (a *Agent) waitForMessages(ctx context.Context, run *Run, calls []llm.ToolCall) error {
	if a.messenger == nil {
		return nil
	}
	for _, c := range calls {
		if c.Name != toolReadMessages {
			continue
		}
		var args struct {
			WaitSeconds int `json:"wait_seconds"`
		}
		if json.Unmarshal(c.Arguments, &args) != nil || args.WaitSeconds <= 0 || args.WaitSeconds > MaxWaitSeconds {
			return nil // no wait, or a bad argument the tool will report
		}
		wait := time.Duration(args.WaitSeconds) * time.Second
		// The wait must leave the step time to commit before its timeout.
		if deadline, ok := ctx.Deadline(); ok {
			left := time.Until(deadline)
			wait = min(wait, left-min(5*time.Second, left/2))
		}
		if wait <= 0 {
			return nil
		}
		if err := setState(ctx, a.pool, run.ID, StateWaiting, run.Steps+1); err != nil {
			return err
		}
		if _, err := a.messenger.Wait(ctx, run.ID, wait); err != nil && !errors.Is(err, messenger.ErrNoInbox) {
			return fmt.Errorf("error waiting for messages: %w", err)
		}
		return setState(ctx, a.pool, run.ID, StateMessaging, run.Steps+1)
	}
	return nil
}

// TranscriptMessage is one message of a tree as the transcript shows it.
type TranscriptMessage struct {
	ID     int64      `json:"id"`
	FromID int64      `json:"from_id"`
	From   string     `json:"from"`
	ToID   int64      `json:"to_id"`
	To     string     `json:"to"`
	Text   string     `json:"text"`
	SentAt time.Time  `json:"sent_at"`
	ReadAt *time.Time `json:"read_at"`
}

// Transcript lists every message sent to an agent of a tree, oldest first.
func (a *Agent) Transcript(ctx context.Context, rootID int64) ([]TranscriptMessage, error) {
	rows, err := a.pool.Query(ctx, `SELECT m.id, m.from_id, m.from_name, m.to_id, r.name, m.text, m.sent_at, m.read_at
		FROM gb_messages m JOIN gb_agent_research_runs r ON r.id = m.to_id
		WHERE r.root_id = $1 ORDER BY m.id`, rootID)
	if err != nil {
		return nil, fmt.Errorf("error reading transcript: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[TranscriptMessage])
}

// SendFromUser puts a message from the run's owner in its inbox; the agent
// reads it at its next read_messages.
func (a *Agent) SendFromUser(ctx context.Context, run *Run, text string) error {
	text = strings.TrimSpace(text)
	if text == "" || len(text) > MaxMessageLen {
		return &FieldError{"text", fmt.Sprintf("must be 1 to %d characters", MaxMessageLen)}
	}
	if run.IsRoot() || a.messenger == nil {
		return ErrNoInbox
	}
	if strings.ContainsRune(text, 0) {
		return &FieldError{"text", "must not contain NUL characters"}
	}
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		// Root first, then the inbox, like every other writer of the tree.
		if _, err := a.lockTree(ctx, tx, run); err != nil {
			return err
		}
		err := messenger.SendMessage(ctx, a.messenger.InTx(tx), messenger.Message{
			FromName: "user", To: run.ID, Text: text})
		switch {
		case errors.Is(err, messenger.ErrNoInbox):
			return ErrNotWorking
		case errors.Is(err, messenger.ErrInboxFull):
			return &FieldError{"text", fmt.Sprintf("the agent's inbox is full (%d unread messages); wait for it to read them", messenger.InboxSize)}
		case err != nil:
			return err
		}
		return addEvent(ctx, tx, run, EventMessage, map[string]any{"from": "user", "to": run.Name})
	})
}
