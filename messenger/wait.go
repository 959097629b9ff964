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
//  2. announces itself: it sets gb_inboxes.waiting_until to the end of its
//     wait, under the inbox row lock that senders also take, and then reads
//     the table again with a fresh snapshot;
//  3. sleeps on the wake-up channel, a fallback ticker, the end of the wait
//     and ctx, holding no pooled connection, and reads the table on each
//     wake-up.
//
// A sender that locks the inbox after step 2 sees waiting_until and
// notifies; one that locked it before has committed when step 2 reads the
// table. So no message waits longer than the fallback interval, even when a
// notification is lost.

// Receive takes the unread messages of id, waiting up to wait for the first
// one (see Messenger). It reads in transactions of its own.
func (p *Postgres) Receive(ctx context.Context, id int64, wait time.Duration) ([]Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	msgs, err := p.take(ctx, p.pool, id, nil)
	if err != nil || len(msgs) > 0 || wait <= 0 {
		return msgs, err
	}
	err = p.block(ctx, id, wait, func(lease *time.Time) (bool, error) {
		var terr error
		msgs, terr = p.take(ctx, p.pool, id, lease)
		return len(msgs) > 0, terr
	})
	return msgs, err
}

// Wait blocks until the inbox of id has an unread message (true), the wait
// ends (false) or ctx is done (its error). It takes nothing out: the caller
// then calls ReceiveTx, typically inside its own transaction. While it sleeps
// it holds no pooled connection. It fails with ErrNoInbox when the inbox is
// missing or is closed meanwhile.
func (p *Postgres) Wait(ctx context.Context, id int64, wait time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	found, err := p.check(ctx, id, nil)
	if err != nil || found || wait <= 0 {
		return found, err
	}
	err = p.block(ctx, id, wait, func(lease *time.Time) (bool, error) {
		var cerr error
		found, cerr = p.check(ctx, id, lease)
		return found, cerr
	})
	return found, err
}

// block announces a wait on id and calls try after each wake-up, and once
// more when the wait ends, until try reports done or fails. It returns
// ctx.Err() as soon as ctx is done.
func (p *Postgres) block(ctx context.Context, id int64, wait time.Duration, try func(lease *time.Time) (bool, error)) error {
	var wake <-chan struct{}
	if p.listener != nil {
		w := p.listener.register(id)
		defer p.listener.unregister(w)
		wake = w.c
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	lease, pending, err := p.announce(ctx, id, wait)
	if err != nil {
		return p.ctxErr(ctx, err)
	}
	if pending {
		if done, err := try(&lease); done || err != nil {
			return p.ctxErr(ctx, err)
		}
	}
	if p.onWaiting != nil {
		p.onWaiting(id)
	}
	tick := time.NewTicker(p.fallback)
	defer tick.Stop()
	for {
		last := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-tick.C:
		case <-timer.C:
			last = true
		}
		done, err := try(&lease)
		if done || last || err != nil {
			return p.ctxErr(ctx, err)
		}
	}
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

const unreadSQL = `SELECT EXISTS (SELECT 1 FROM gb_messages WHERE to_id = $1 AND read_at IS NULL)`

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
		err = br.QueryRow().Scan(&pending)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("waiting for messages of run %d: %w", id, err)
	}
	return lease, pending, nil
}

// checkSQL tells whether the inbox exists and has unread messages; when it
// has and $2 is this receiver's lease, the lease is dropped.
const checkSQL = `
WITH unread AS (
    SELECT EXISTS (SELECT 1 FROM gb_messages WHERE to_id = $1 AND read_at IS NULL) AS has
), cleared AS (
    UPDATE gb_inboxes SET waiting_until = NULL
    WHERE run_id = $1 AND waiting_until = $2 AND (SELECT has FROM unread)
)
SELECT EXISTS (SELECT 1 FROM gb_inboxes WHERE run_id = $1), (SELECT has FROM unread)`

func (p *Postgres) check(ctx context.Context, id int64, lease *time.Time) (bool, error) {
	var open, has bool
	if err := p.pool.QueryRow(ctx, checkSQL, id, lease).Scan(&open, &has); err != nil {
		return false, fmt.Errorf("checking messages of run %d: %w", id, err)
	}
	if !open {
		return false, fmt.Errorf("checking messages of run %d: %w", id, ErrNoInbox)
	}
	return has, nil
}
