package messenger

import (
	"context"
	"errors"
	"time"
)

// InboxSize is how many unread messages an inbox holds; a send to a full
// inbox fails with ErrInboxFull instead of waiting.
const InboxSize = 64

// ErrNoInbox means the receiver has no inbox: its agent ended, or never had
// one. The message is not delivered.
var ErrNoInbox = errors.New("messenger: no inbox (the agent has ended)")

// ErrInboxFull means the receiver already has InboxSize unread messages.
var ErrInboxFull = errors.New("messenger: inbox full (64 unread messages)")

// Message is one message from one run to another.
type Message struct {
	// ID identifies the message within its messenger; set when it is stored.
	ID int64
	// From is the run ID of the sender (0 when not a run).
	From int64
	// FromName is the sender's name as the receiver should see it.
	FromName string
	// To is the run ID of the receiver.
	To int64
	// Text is the body of the message.
	Text string
	// SentAt is when the message was sent (UTC), set by SendMessage.
	SentAt time.Time
	// ReadAt is when the message was taken out of the inbox, nil before.
	ReadAt *time.Time
}

// Messenger is a message system. Implementations are safe for concurrent use.
type Messenger interface {
	// Open creates the inbox of run id. Opening an open inbox does nothing.
	Open(ctx context.Context, id int64) error
	// Close removes the inbox of run id; later sends to it fail with
	// ErrNoInbox. Closing a missing inbox does nothing.
	Close(ctx context.Context, id int64) error
	// Send puts m in the inbox of m.To without waiting for the receiver. It
	// fails with ErrNoInbox or ErrInboxFull. Callers use SendMessage.
	Send(ctx context.Context, m Message) error
	// Receive takes the unread messages of run id out of its inbox, oldest
	// first; each message is returned by exactly one call. When there are
	// none it waits up to wait for the first one, and returns an empty
	// slice and no error when the wait ends. It returns ctx.Err() as soon as
	// ctx is done, and ErrNoInbox when the inbox is missing.
	Receive(ctx context.Context, id int64, wait time.Duration) ([]Message, error)
}

// SendMessage is the one function senders call: it stamps msg.SentAt with
// the current UTC time and hands msg to m.Send.
func SendMessage(ctx context.Context, m Messenger, msg Message) error {
	msg.SentAt = time.Now().UTC()
	return m.Send(ctx, msg)
}
