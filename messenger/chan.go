package messenger

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// ChanMessenger is the in-memory Messenger: each inbox is a buffered channel
// of InboxSize messages in a map guarded by a mutex. Messages live in the
// process only and are lost when it stops.
type ChanMessenger struct {
	mu      sync.Mutex
	inboxes map[int64]chan Message
	// bells wake the waiters of an inbox (Wait) on a send or a close.
	bells  map[int64]chan struct{}
	lastID int64
}

// NewChanMessenger returns an empty in-memory messenger.
func NewChanMessenger() *ChanMessenger {
	return &ChanMessenger{inboxes: make(map[int64]chan Message), bells: make(map[int64]chan struct{})}
}

// ring wakes every waiter of inbox id; the caller holds c.mu.
func (c *ChanMessenger) ring(id int64) {
	if b, ok := c.bells[id]; ok {
		close(b)
		delete(c.bells, id)
	}
}

// Wait blocks until the inbox of id holds a message, without taking it, or
// until wait passes or ctx ends; it reports whether a message is there. A
// closed or missing inbox answers ErrNoInbox.
func (c *ChanMessenger) Wait(ctx context.Context, id int64, wait time.Duration) (bool, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		ch, ok := c.inboxes[id]
		if !ok {
			c.mu.Unlock()
			return false, fmt.Errorf("waiting for run %d: %w", id, ErrNoInbox)
		}
		if len(ch) > 0 {
			c.mu.Unlock()
			return true, nil
		}
		bell, ok := c.bells[id]
		if !ok {
			bell = make(chan struct{})
			c.bells[id] = bell
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-timer.C:
			return false, nil
		case <-bell:
		}
	}
}

var _ Messenger = (*ChanMessenger)(nil)

// Open creates the inbox of id unless it exists.
func (c *ChanMessenger) Open(_ context.Context, id int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.inboxes[id]; !ok {
		c.inboxes[id] = make(chan Message, InboxSize)
	}
	return nil
}

// Close forgets the inbox of id. The channel is not closed, so a sender that
// still holds it cannot panic; its unread messages are dropped.
func (c *ChanMessenger) Close(_ context.Context, id int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inboxes, id)
	c.ring(id)
	return nil
}

// Send puts m in the inbox of m.To with a non-blocking channel send: a full
// inbox refuses with ErrInboxFull, so two agents can never block each other.
func (c *ChanMessenger) Send(_ context.Context, m Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.inboxes[m.To]
	if !ok {
		return fmt.Errorf("sending to run %d: %w", m.To, ErrNoInbox)
	}
	c.lastID++
	m.ID = c.lastID
	m.ReadAt = nil
	select {
	case ch <- m:
		c.ring(m.To)
		return nil
	default:
		return fmt.Errorf("sending to run %d: %w", m.To, ErrInboxFull)
	}
}

// Receive drains the inbox of id; when it is empty it blocks on the channel,
// a timer of wait and ctx, whichever comes first.
func (c *ChanMessenger) Receive(ctx context.Context, id int64, wait time.Duration) ([]Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	ch, ok := c.inboxes[id]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("receiving for run %d: %w", id, ErrNoInbox)
	}
	msgs := drain(ch, nil)
	if len(msgs) > 0 || wait <= 0 {
		return msgs, nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return drain(ch, nil), nil
	case m := <-ch:
		return drain(ch, []Message{markRead(m)}), nil
	}
}

// drain appends to msgs every message that is in ch now, without blocking.
func drain(ch chan Message, msgs []Message) []Message {
	for {
		select {
		case m := <-ch:
			msgs = append(msgs, markRead(m))
		default:
			return msgs
		}
	}
}

func markRead(m Message) Message {
	now := time.Now().UTC()
	m.ReadAt = &now
	return m
}
