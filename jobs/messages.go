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
	// MaxBlockingWait is the longest read_messages wait that blocks inside
	// its step. With the Postgres messenger a longer one parks the run
	// (message_wait.go), holding no job, worker slot or connection.
	MaxBlockingWait = 2 * time.Second
)

// ErrNotWorking is returned when a message is sent to a run that has ended.
var ErrNotWorking = errors.New("the agent has ended and reads no more messages")

// ErrRootHasNoInbox is returned when the owner sends a message to an agent
// that has no inbox: a root, which has no message tools. (messenger.ErrNoInbox
// is another thing: an inbox that is gone because its sub-agent ended.)
var ErrRootHasNoInbox = errors.New("this agent has no inbox: only sub-agents read messages (read_messages)")

func (a *Service) openInbox(ctx context.Context, tx pgx.Tx, id int64) error {
	if a.messenger == nil {
		return nil
	}
	return a.messenger.InTx(tx).Open(ctx, id)
}

func (a *Service) closeInbox(ctx context.Context, tx pgx.Tx, id int64) error {
	if a.messenger == nil {
		return nil
	}
	return a.messenger.InTx(tx).Close(ctx, id)
}

// queueCloseInbox queues the close of run id's inbox on b, when the
// messenger can close it in the caller's batch (messenger.Postgres's
// QueueClose); it reports whether it did.
func (a *Service) queueCloseInbox(b *pgx.Batch, id int64) bool {
	q, ok := a.messenger.(interface{ QueueClose(*pgx.Batch, int64) })
	if ok {
		q.QueueClose(b, id)
	}
	return ok
}

// WaitParker is a capability a Messenger declares: ParksWaits reports true
// when its messages are rows a send's transaction commits, so a reader can
// park its run and be resumed by the send. messenger.Postgres declares it.
type WaitParker interface {
	ParksWaits() bool
}

// parksMessageWaits reports whether a long read_messages wait parks the
// run: only with a messenger that declares WaitParker. Other messengers
// block in the step.
func (a *Service) parksMessageWaits() bool {
	p, ok := a.messenger.(WaitParker)
	return ok && p.ParksWaits()
}

// waitForMessages blocks, outside any transaction, for the longest wait the
// step's read_messages calls asked for; the messages themselves are taken
// in the step's transaction, so a crash between the two loses none. A wait
// that parks the run (longer than MaxBlockingWait, on Postgres) does not
// block here: the call parks in the step's transaction.
func (a *Service) waitForMessages(ctx context.Context, run *Run, calls []llm.ToolCall) error {
	if a.messenger == nil {
		return nil
	}
	wait := messageWait(calls)
	if wait > MaxBlockingWait && a.parksMessageWaits() {
		return nil
	}
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

// messageWait is the longest wait the read_messages calls ask for, their
// arguments decoded as strictly as the tool does: a call whose arguments
// the tool refuses waits for nothing (the tool reports the error).
func messageWait(calls []llm.ToolCall) time.Duration {
	var most int
	for _, c := range calls {
		if c.Name != toolReadMessages {
			continue
		}
		if args, err := parseReadMessages(json.RawMessage(c.ArgumentsText())); err == nil {
			most = max(most, args.WaitSeconds)
		}
	}
	return time.Duration(most) * time.Second
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
func (a *Service) Transcript(ctx context.Context, rootID int64) ([]TranscriptMessage, error) {
	rows, err := a.pool.Query(ctx, `SELECT m.id, m.from_id, m.from_name, m.to_id, r.name, m.text, m.sent_at, m.read_at
		FROM gb_messages m JOIN gb_agent_research_runs r ON r.id = m.to_id
		WHERE r.root_id = $1 ORDER BY m.id`, rootID)
	if err != nil {
		return nil, fmt.Errorf("error reading transcript: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[TranscriptMessage])
}

// SendFromUser puts a message from the run's owner in its inbox; the agent
// reads it at its next read_messages, and one parked on read_messages
// resumes.
func (a *Service) SendFromUser(ctx context.Context, run *Run, text string) error {
	text = strings.TrimSpace(text)
	if p := textProblem(text, MaxMessageLen); p != "" {
		return &FieldError{"text", p}
	}
	if run.IsRoot() || a.messenger == nil {
		return ErrRootHasNoInbox
	}
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		// Root first, then the inbox, like every other writer of the tree.
		locked, err := a.lockTree(ctx, tx, run)
		if err != nil {
			return err
		}
		if locked == nil {
			return ErrNotWorking // deleted meanwhile
		}
		err = messenger.SendMessage(ctx, a.messenger.InTx(tx), messenger.Message{
			FromName: "user", To: run.ID, Text: text})
		switch {
		case errors.Is(err, messenger.ErrNoInbox):
			return ErrNotWorking
		case errors.Is(err, messenger.ErrInboxFull):
			return &FieldError{"text", fmt.Sprintf("the agent's inbox is full (%d unread messages); wait for it to read them", messenger.InboxSize)}
		case err != nil:
			return err
		}
		if err := addEvent(ctx, tx, locked, EventMessage, map[string]any{"from": "user", "to": run.Name}); err != nil {
			return err
		}
		return a.wakeReader(ctx, tx, locked)
	})
}
