package messenger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Waiting. A receiver that finds its inbox empty
//
//  1. registers with the Listener (in memory), so no notification from now
//     on can pass it by;
//  2. announces itself: it sets gb_inboxes.waiting_until, its lease, to the
//     end of its wait, under the inbox row lock that senders also take, and
//     then reads the table again with a fresh snapshot;
//  3. sleeps on the wake-up channel, a fallback ticker, the end of the wait
//     and ctx, holding no pooled connection.
//
// A sender that locks the inbox after step 2 sees the lease, notifies, and
// spends the lease in the same statement: it has woken the receiver, so
// later senders have no one to wake and do not notify. A sender that locked
// the inbox before step 2 has committed when step 2 reads the table.
//
// A notification naming the inbox is evidence enough to stop sleeping:
// Postgres delivers it only once the commit that stored a message to the
// inbox (or closed it) is visible, so a read that starts after it sees
// that commit. Receive then takes the messages, in one query. Wait returns
// at once, with no query of its own: its caller reads the inbox next
// (ReceiveTx, in its own transaction), and a read in between would add a
// round trip to every wake-up and tell the caller nothing it does not learn
// from its own read.
//
// Any other wake-up (the fallback ticker, the Listener reconnecting or
// listening anew) is only a reason to look: the receiver puts its lease
// back if a sender spent it and reads the table, in one round trip. So no
// message waits longer than the fallback interval, even when a
// notification is lost.

// Receive takes the unread messages of id, waiting up to wait for the first
// one (see Messenger). It reads in transactions of its own.
func (p *Postgres) Receive(ctx context.Context, id int64, wait time.Duration) ([]Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	msgs, err := p.take(ctx, p.pool, id)
	if err != nil || len(msgs) > 0 || wait <= 0 {
		return msgs, err
	}
	err = p.block(ctx, id, wait, nil, func() (bool, error) {
		var terr error
		msgs, terr = p.take(ctx, p.pool, id)
		return len(msgs) > 0, terr
	})
	return msgs, err
}

// Wait blocks until there is something to read in the inbox of id (true),
// the wait ends (false) or ctx is done (its error). It takes nothing out:
// the caller then calls ReceiveTx, typically inside its own transaction.
// While it sleeps it holds no pooled connection.
//
// It returns true when it reads an unread message in the table, or when a
// notification names the inbox: a commit that stored a message to it, or
// closed it, is then visible to the caller's next read. That read tells
// which (ReceiveTx fails with ErrNoInbox after a close), and finds nothing
// when a concurrent receiver of the same inbox took the message first. Wait
// fails with ErrNoInbox when it reads that the inbox is missing.
func (p *Postgres) Wait(ctx context.Context, id int64, wait time.Duration) (bool, error) {
	return p.wait(ctx, id, wait, nil)
}

// wait is Wait; blocked, when not nil, is called once the receiver has
// announced its wait and goes to sleep.
func (p *Postgres) wait(ctx context.Context, id int64, wait time.Duration, blocked func()) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	found, err := p.unread(ctx, id)
	if err != nil || found || wait <= 0 {
		return found, err
	}
	err = p.block(ctx, id, wait, blocked, func() (bool, error) {
		found = true
		return true, nil
	})
	return found, err
}

// wakeReason is why a blocked receiver stopped sleeping.
type wakeReason int

const (
	wokeCanceled wakeReason = iota // ctx is done
	wokeAtEnd                      // the wait is over
	wokeNotified                   // a notification named the inbox
	wokeToLook                     // the fallback ticker or the Listener asks for a look
)

// block announces a wait on id and sleeps until there is evidence of a
// message: a read of the table that saw one unread, or a notification
// naming id. On each, it calls take, which reports whether the wait is
// over. When the wait ends it reads once more. It returns ctx.Err() as
// soon as ctx is done. blocked, when not nil, is called once, when it
// first goes to sleep.
func (p *Postgres) block(ctx context.Context, id int64, wait time.Duration, blocked func(), take func() (bool, error)) error {
	var w *waiter
	if p.listener != nil {
		w = p.listener.register(id)
		defer p.listener.unregister(w)
	}
	end := time.NewTimer(wait)
	defer end.Stop()
	lease, pending, err := p.announce(ctx, id, wait)
	if err != nil {
		return p.ctxErr(ctx, err)
	}
	if pending {
		if done, err := take(); done || err != nil {
			return p.ctxErr(ctx, err)
		}
	}
	p.asleep(id, blocked)
	tick := time.NewTicker(p.fallback)
	defer tick.Stop()
	for {
		switch reason := sleep(ctx, w, tick.C, end.C); reason {
		case wokeCanceled:
			return ctx.Err()
		case wokeAtEnd:
			return p.ctxErr(ctx, p.lastLook(ctx, id, take))
		default:
			if done, err := p.look(ctx, id, lease, reason == wokeNotified, take); done || err != nil {
				return p.ctxErr(ctx, err)
			}
		}
	}
}

// look acts on a wake-up. After a notification it calls take at once. If
// that finds nothing (another receiver was first, and the sender spent the
// lease), or after any other wake-up, it puts the lease back if need be,
// reads the table, and calls take if a message is there.
func (p *Postgres) look(ctx context.Context, id int64, lease time.Time, notified bool, take func() (bool, error)) (bool, error) {
	if notified {
		if done, err := take(); done || err != nil {
			return done, err
		}
	}
	pending, err := p.renew(ctx, id, lease)
	if err != nil || !pending {
		return false, err
	}
	return take()
}

// asleep reports that a receiver of id goes to sleep.
func (p *Postgres) asleep(id int64, blocked func()) {
	if p.onWaiting != nil {
		p.onWaiting(id)
	}
	if blocked != nil {
		blocked()
	}
}

// sleep waits for the first reason to wake; w may be nil (no Listener).
func sleep(ctx context.Context, w *waiter, tick, end <-chan time.Time) wakeReason {
	var wake <-chan struct{}
	if w != nil {
		wake = w.c
	}
	select {
	case <-ctx.Done():
		return wokeCanceled
	case <-end:
		return wokeAtEnd
	case <-tick:
		return wokeToLook
	case <-wake:
		if w.notified.Swap(false) {
			return wokeNotified
		}
		return wokeToLook
	}
}

// lastLook reads the table when the wait ends and calls take if a message
// is there.
func (p *Postgres) lastLook(ctx context.Context, id int64, take func() (bool, error)) error {
	found, err := p.unread(ctx, id)
	if err != nil || !found {
		return err
	}
	_, err = take()
	return err
}

// ctxErr prefers ctx's error to a query error that it caused.
func (p *Postgres) ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// announceSQL sets the lease; the greatest keeps a longer wait of another
// receiver of the same inbox. The row lock is held until the batch ends.
const announceSQL = `
UPDATE gb_inboxes SET waiting_until = greatest(waiting_until, now() + $2 * interval '1 microsecond')
WHERE run_id = $1
RETURNING waiting_until`

// renewSQL puts back a lease that a sender spent, or that is lower than
// this receiver's; otherwise it writes nothing.
const renewSQL = `
UPDATE gb_inboxes SET waiting_until = $2
WHERE run_id = $1 AND (waiting_until IS NULL OR waiting_until < $2)`

// unreadSQL tells whether the inbox exists and has unread messages.
const unreadSQL = `
SELECT EXISTS (SELECT 1 FROM gb_inboxes WHERE run_id = $1),
       EXISTS (SELECT 1 FROM gb_messages WHERE to_id = $1 AND read_at IS NULL)`

// announce sets the lease and then, with a fresh snapshot, tells whether
// unread messages are there already.
func (p *Postgres) announce(ctx context.Context, id int64, wait time.Duration) (lease time.Time, pending bool, err error) {
	var b pgx.Batch
	b.Queue(announceSQL, id, wait.Microseconds())
	b.Queue(unreadSQL, id)
	br := p.pool.SendBatch(ctx, &b)
	err = br.QueryRow().Scan(&lease)
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrNoInbox
	}
	if err == nil {
		var open bool
		err = br.QueryRow().Scan(&open, &pending)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("waiting for messages of run %d: %w", id, err)
	}
	return lease, pending, nil
}

// renew puts the lease back if need be and then, with a fresh snapshot,
// tells whether unread messages are there, in one round trip.
func (p *Postgres) renew(ctx context.Context, id int64, lease time.Time) (bool, error) {
	var b pgx.Batch
	b.Queue(renewSQL, id, lease)
	b.Queue(unreadSQL, id)
	br := p.pool.SendBatch(ctx, &b)
	var open, has bool
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&open, &has)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && !open {
		err = ErrNoInbox
	}
	if err != nil {
		return false, fmt.Errorf("checking messages of run %d: %w", id, err)
	}
	return has, nil
}

// unread tells whether the inbox of id has unread messages; it fails with
// ErrNoInbox when the inbox is missing. It only reads.
func (p *Postgres) unread(ctx context.Context, id int64) (bool, error) {
	var open, has bool
	if err := p.pool.QueryRow(ctx, unreadSQL, id).Scan(&open, &has); err != nil {
		return false, fmt.Errorf("checking messages of run %d: %w", id, err)
	}
	if !open {
		return false, fmt.Errorf("checking messages of run %d: %w", id, ErrNoInbox)
	}
	return has, nil
}
