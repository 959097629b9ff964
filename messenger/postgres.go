package messenger

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// FallbackIntervalDefault is how often a blocked receiver re-reads its inbox
// when PostgresConfig.FallbackInterval is 0.
const FallbackIntervalDefault = time.Second

// PostgresConfig tunes a Postgres messenger.
type PostgresConfig struct {
	// FallbackInterval is how often a blocked receiver re-reads its inbox
	// even without a notification; it bounds the delay a lost notification
	// can cause. 0 means FallbackIntervalDefault.
	FallbackInterval time.Duration
}

// Postgres is the Messenger on the gb_inboxes and gb_messages tables.
// Messages are rows that stay after they are read (read_at is set), so they
// are the transcript of a tree. A blocked receiver is woken through the
// shared Listener; without a Listener it only polls on the fallback timer.
//
// Transactions given to the ...Tx methods must be READ COMMITTED (the
// default): they lock the inbox row and re-read after the lock.
type Postgres struct {
	pool      *pgxpool.Pool
	listener  *Listener
	fallback  time.Duration
	sends     atomic.Int64
	notifies  atomic.Int64
	onWaiting func(id int64) // test hook: a receiver is blocked on id
}

// Stats counts what a Postgres messenger did since it was created.
type Stats struct {
	// Sends is how many messages were stored.
	Sends int64
	// Notifies is how many statements queued a NOTIFY, that is how many
	// notifying commits there were (counted before the caller's commit
	// for the ...Tx methods).
	Notifies int64
}

// SendParams is a message to store with SendTx.
type SendParams struct {
	// To is the receiver's run ID.
	To int64
	// From is the sender's run ID (0 when not a run).
	From int64
	// FromName is the sender's name as the receiver should see it.
	FromName string
	// Text is the body of the message.
	Text string
	// SentAt is when it was sent; zero means now (UTC).
	SentAt time.Time
}

// querier is what both the pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// NewPostgres returns a messenger on pool that waits through listener (nil
// means polling every FallbackInterval).
func NewPostgres(pool *pgxpool.Pool, listener *Listener, cfg PostgresConfig) *Postgres {
	if cfg.FallbackInterval <= 0 {
		cfg.FallbackInterval = FallbackIntervalDefault
	}
	return &Postgres{pool: pool, listener: listener, fallback: cfg.FallbackInterval}
}

var _ Messenger = (*Postgres)(nil)

// Stats returns the counters of this messenger.
func (p *Postgres) Stats() Stats {
	return Stats{Sends: p.sends.Load(), Notifies: p.notifies.Load()}
}

// ParksWaits reports true: messages are rows of the database a step commits
// in, so a sender's transaction can resume a reader that parked instead of
// blocking (jobs.WaitParker).
func (p *Postgres) ParksWaits() bool { return true }

// Open creates the inbox of id unless it exists. Run IDs are not reused, so
// an inbox is opened once; reopening a closed one would bring back the
// messages it never read.
func (p *Postgres) Open(ctx context.Context, id int64) error { return p.open(ctx, p.pool, id) }

// OpenTx is Open inside the caller's transaction.
func (p *Postgres) OpenTx(ctx context.Context, tx pgx.Tx, id int64) error {
	return p.open(ctx, tx, id)
}

func (p *Postgres) open(ctx context.Context, q querier, id int64) error {
	_, err := q.Exec(ctx, `INSERT INTO gb_inboxes (run_id) VALUES ($1) ON CONFLICT (run_id) DO NOTHING`, id)
	if err != nil {
		return fmt.Errorf("opening inbox of run %d: %w", id, err)
	}
	return nil
}

// Close removes the inbox of id; its messages, read or not, stay as the
// transcript. A receiver blocked on it is woken and gets ErrNoInbox.
func (p *Postgres) Close(ctx context.Context, id int64) error { return p.close(ctx, p.pool, id) }

// CloseTx is Close inside the caller's transaction.
func (p *Postgres) CloseTx(ctx context.Context, tx pgx.Tx, id int64) error {
	return p.close(ctx, tx, id)
}

const closeSQL = `
WITH gone AS (
    DELETE FROM gb_inboxes WHERE run_id = $1
    RETURNING coalesce(waiting_until > now(), false) AS waiting
)
SELECT pg_notify($2, $1::bigint::text) FROM gone WHERE waiting`

// QueueClose queues Close on b, a batch the caller sends in its
// transaction with its own statements: the inbox closes with no round
// trip of its own.
func (p *Postgres) QueueClose(b *pgx.Batch, id int64) {
	b.Queue(closeSQL, id, notifyChannel).Exec(func(tag pgconn.CommandTag) error {
		p.countCloseNotify(tag)
		return nil
	})
}

// countCloseNotify counts the notification a close sent, if it woke a
// waiter (closeSQL's one row).
func (p *Postgres) countCloseNotify(tag pgconn.CommandTag) {
	if tag.RowsAffected() > 0 {
		p.notifies.Add(1)
	}
}

func (p *Postgres) close(ctx context.Context, q querier, id int64) error {
	tag, err := q.Exec(ctx, closeSQL, id, notifyChannel)
	if err != nil {
		return fmt.Errorf("closing inbox of run %d: %w", id, err)
	}
	p.countCloseNotify(tag)
	return nil
}

// Send stores m in the inbox of m.To in a transaction of its own.
func (p *Postgres) Send(ctx context.Context, m Message) error {
	_, err := p.send(ctx, p.pool, &SendParams{
		To: m.To, From: m.From, FromName: m.FromName, Text: m.Text, SentAt: m.SentAt,
	})
	return err
}

// SendTx stores a message inside the caller's transaction and returns it
// with its ID. It fails with ErrNoInbox or ErrInboxFull. The receiver is
// notified, if it waits, when the transaction commits.
func (p *Postgres) SendTx(ctx context.Context, tx pgx.Tx, params *SendParams) (Message, error) {
	return p.send(ctx, tx, params)
}

// lockInboxSQL serialises the senders of one inbox (and its receivers'
// announcements), so the count that follows, taken with a fresh snapshot,
// sees every message committed before.
const lockInboxSQL = `SELECT 1 FROM gb_inboxes WHERE run_id = $1 FOR UPDATE`

// sendSQL stores the message if the inbox exists and has room, and
// notifies only when a receiver announced that it waits. The notification
// spends the lease: the receivers it wakes stop sleeping, so a later sender
// has no one to wake until one of them announces a wait again.
const sendSQL = `
WITH inbox AS (
    SELECT coalesce(waiting_until > now(), false) AS waiting,
           (SELECT count(*) FROM (SELECT 1 FROM gb_messages
                                  WHERE to_id = $1 AND read_at IS NULL
                                  LIMIT $6) AS u) AS unread
    FROM gb_inboxes WHERE run_id = $1
), sent AS (
    INSERT INTO gb_messages (to_id, from_id, from_name, text, sent_at)
    SELECT $1, $2, $3, $4, $5 FROM inbox WHERE unread < $6
    RETURNING id
), woke AS (
    SELECT pg_notify($7, $1::bigint::text) FROM sent, inbox WHERE inbox.waiting
), spent AS (
    UPDATE gb_inboxes SET waiting_until = NULL
    WHERE run_id = $1 AND EXISTS (SELECT 1 FROM sent) AND (SELECT waiting FROM inbox)
)
SELECT (SELECT unread FROM inbox), (SELECT id FROM sent), (SELECT count(*) FROM woke)`

func (p *Postgres) send(ctx context.Context, q querier, sp *SendParams) (Message, error) {
	m := Message{To: sp.To, From: sp.From, FromName: sp.FromName, Text: sp.Text, SentAt: sp.SentAt}
	if m.SentAt.IsZero() {
		m.SentAt = time.Now().UTC()
	}
	var b pgx.Batch
	b.Queue(lockInboxSQL, m.To)
	b.Queue(sendSQL, m.To, m.From, m.FromName, m.Text, m.SentAt, InboxSize, notifyChannel)
	// Without a transaction of the caller's, the batch runs as one
	// implicit transaction.
	br := q.SendBatch(ctx, &b)
	var (
		unread, id *int64
		woke       int64
	)
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&unread, &id, &woke)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return Message{}, fmt.Errorf("sending to run %d: %w", m.To, err)
	case unread == nil:
		return Message{}, fmt.Errorf("sending to run %d: %w", m.To, ErrNoInbox)
	case id == nil:
		return Message{}, fmt.Errorf("sending to run %d: %w", m.To, ErrInboxFull)
	}
	m.ID = *id
	p.sends.Add(1)
	if woke > 0 {
		p.notifies.Add(1)
	}
	return m, nil
}

// ReceiveTx takes the unread messages of id out of its inbox inside the
// caller's transaction, oldest first, without waiting. Concurrent receivers
// never get the same message. It fails with ErrNoInbox when the inbox is
// missing. To wait first, call Wait outside the transaction.
func (p *Postgres) ReceiveTx(ctx context.Context, tx pgx.Tx, id int64) ([]Message, error) {
	return p.take(ctx, tx, id)
}

// takeSQL marks the unread messages read and returns them; rows locked by
// another receiver are skipped, so each message is taken once.
const takeSQL = `
WITH inbox AS (
    SELECT run_id FROM gb_inboxes WHERE run_id = $1
), taken AS (
    UPDATE gb_messages SET read_at = now()
    WHERE id IN (SELECT id FROM gb_messages
                 WHERE to_id = $1 AND read_at IS NULL AND EXISTS (SELECT 1 FROM inbox)
                 FOR UPDATE SKIP LOCKED)
      AND read_at IS NULL
    RETURNING id, from_id, from_name, to_id, text, sent_at, read_at
)
SELECT EXISTS (SELECT 1 FROM inbox), t.id, t.from_id, t.from_name, t.to_id, t.text, t.sent_at, t.read_at
FROM (VALUES (1)) AS one (x) LEFT JOIN taken AS t ON true
ORDER BY t.id`

func (p *Postgres) take(ctx context.Context, q querier, id int64) ([]Message, error) {
	rows, err := q.Query(ctx, takeSQL, id)
	if err != nil {
		return nil, fmt.Errorf("receiving for run %d: %w", id, err)
	}
	defer rows.Close()
	var (
		msgs []Message
		open bool
	)
	for rows.Next() {
		var (
			mid, from, to *int64
			name, text    *string
			sent, read    *time.Time
		)
		if err := rows.Scan(&open, &mid, &from, &name, &to, &text, &sent, &read); err != nil {
			return nil, fmt.Errorf("receiving for run %d: %w", id, err)
		}
		if mid == nil {
			continue
		}
		msgs = append(msgs, Message{
			ID: *mid, From: *from, FromName: *name, To: *to, Text: *text,
			SentAt: sent.UTC(), ReadAt: utcPtr(read),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("receiving for run %d: %w", id, err)
	}
	if !open {
		return nil, fmt.Errorf("receiving for run %d: %w", id, ErrNoInbox)
	}
	return msgs, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
