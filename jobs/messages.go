package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// Messenger is what the team needs of the message system: inboxes opened
// and closed in the transactions that start and end agents.
type Messenger interface {
	OpenTx(ctx context.Context, tx pgx.Tx, id int64) error
	CloseTx(ctx context.Context, tx pgx.Tx, id int64) error
}

func (a *Agent) openInbox(ctx context.Context, tx pgx.Tx, id int64) error {
	if a.messenger == nil {
		return nil
	}
	return a.messenger.OpenTx(ctx, tx, id)
}

func (a *Agent) closeInbox(ctx context.Context, tx pgx.Tx, id int64) error {
	if a.messenger == nil {
		return nil
	}
	return a.messenger.CloseTx(ctx, tx, id)
}

// waitForMessages blocks, outside any transaction, for a read_messages call
// that asked to wait; the messages themselves are taken in the step's
// transaction.
func (a *Agent) waitForMessages(ctx context.Context, run *Run, calls []llm.ToolCall) error {
	return nil
}

// ErrNotWorking is returned when a message is sent to a run that has ended.
var ErrNotWorking = errors.New("the agent has ended and reads no more messages")

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
