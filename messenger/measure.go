package messenger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sampleTimeout bounds one sample of MeasureWake.
const sampleTimeout = 10 * time.Second

// MeasureWake measures, samples times each, how long a receiver blocked in
// Wait on the inbox of run id takes to wake after a send, and a bare
// LISTEN/NOTIFY round trip beside it. The two alternate, sample by sample
// and in turn first, so that noise on the machine hits both alike.
//
// Both are timed the same way: from the sender's COMMIT, the statements of
// its transaction having run (SendTx, or SELECT pg_notify), to the moment
// the blocked goroutine gets control back (Wait returns true, or
// WaitForNotification returns on a connection of its own that LISTENs).
// Both senders use connections of p's pool. Each woken receiver then takes
// its message, untimed, so the inbox is empty again.
//
// p needs a started Listener. The inbox of id is opened if need be; it must
// hold no unread message and nothing else may use it meanwhile. The
// messages sent stay in the table, read, like every message. The LISTEN
// connection is opened outside the pool and closed before MeasureWake
// returns.
func MeasureWake(ctx context.Context, p *Postgres, id int64, samples int) (wake, raw []time.Duration, err error) {
	if p.listener == nil || p.listener.BackendPID() == 0 {
		return nil, nil, errors.New("measuring wake-ups: the messenger has no started Listener")
	}
	if err := p.Open(ctx, id); err != nil {
		return nil, nil, fmt.Errorf("measuring wake-ups: %w", err)
	}
	has, err := p.unread(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("measuring wake-ups: %w", err)
	}
	if has {
		return nil, nil, fmt.Errorf("measuring wake-ups: the inbox of run %d has unread messages", id)
	}
	b, err := startBaseline(ctx, p.pool)
	if err != nil {
		return nil, nil, fmt.Errorf("measuring wake-ups: %w", err)
	}
	defer b.stop()
	wake, raw = make([]time.Duration, 0, samples), make([]time.Duration, 0, samples)
	for i := range samples {
		w, r, err := measurePair(ctx, p, b, id, i)
		if err != nil {
			return wake, raw, fmt.Errorf("measuring wake-ups, sample %d: %w", i, err)
		}
		wake, raw = append(wake, w), append(raw, r)
	}
	return wake, raw, nil
}

// measurePair takes sample i of each kind; which goes first alternates.
func measurePair(ctx context.Context, p *Postgres, b *baseline, id int64, i int) (w, r time.Duration, err error) {
	rawFirst := i%2 == 1
	if rawFirst {
		if r, err = b.sample(ctx, i); err != nil {
			return 0, 0, err
		}
	}
	if w, err = p.wakeSample(ctx, id); err != nil {
		return 0, 0, err
	}
	if !rawFirst {
		r, err = b.sample(ctx, i)
	}
	return w, r, err
}

// waitResult is what a Wait of wakeSample returned, and when.
type waitResult struct {
	ok  bool
	err error
	at  time.Time
}

// wakeSample blocks a receiver in Wait on id, sends it a message, and
// returns the time from the send's COMMIT to the receiver's return.
func (p *Postgres) wakeSample(ctx context.Context, id int64) (time.Duration, error) {
	wctx, cancel := context.WithCancel(ctx)
	blocked := make(chan struct{})
	res := make(chan waitResult, 1)
	go func() {
		ok, err := p.wait(wctx, id, sampleTimeout, func() { close(blocked) })
		res <- waitResult{ok, err, time.Now()}
	}()
	defer cancel()
	select {
	case <-blocked:
	case r := <-res:
		if r.err != nil {
			return 0, fmt.Errorf("the receiver returned before it blocked: %w", r.err)
		}
		return 0, fmt.Errorf("the receiver returned before it blocked (found a message: %v)", r.ok)
	}
	start, err := p.sendAndTime(ctx, id)
	if err != nil {
		cancel()
		<-res
		return 0, err
	}
	r := <-res
	switch {
	case r.err != nil:
		return 0, r.err
	case !r.ok:
		return 0, fmt.Errorf("the receiver was not woken within %s", sampleTimeout)
	}
	msgs, err := p.take(ctx, p.pool, id)
	if err == nil && len(msgs) != 1 {
		err = fmt.Errorf("the woken receiver found %d messages, want 1", len(msgs))
	}
	if err != nil {
		return 0, err
	}
	return r.at.Sub(start), nil
}

// sendAndTime sends a message to id in a transaction and returns when its
// COMMIT was sent.
func (p *Postgres) sendAndTime(ctx context.Context, id int64) (time.Time, error) {
	return commitTimed(ctx, p.pool, func(tx pgx.Tx) error {
		_, err := p.SendTx(ctx, tx, &SendParams{To: id, FromName: "messenger.MeasureWake", Text: "wake"})
		return err
	})
}

// commitTimed runs do in a transaction of pool and commits it; it returns
// when the COMMIT was sent.
func commitTimed(ctx context.Context, pool *pgxpool.Pool, do func(pgx.Tx) error) (time.Time, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("beginning the send: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := do(tx); err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	if err := tx.Commit(ctx); err != nil {
		return time.Time{}, fmt.Errorf("committing the send: %w", err)
	}
	return start, nil
}

// baseline is a bare LISTEN/NOTIFY round trip: a connection of its own
// LISTENs on a channel named for it, and a goroutine blocked on it reports
// each notification with the time it got it.
type baseline struct {
	pool    *pgxpool.Pool
	conn    *pgx.Conn
	channel string
	got     chan heard
	cancel  context.CancelFunc
	done    chan struct{}
}

// heard is one notification of the baseline and when it arrived.
type heard struct {
	payload string
	at      time.Time
}

func startBaseline(ctx context.Context, pool *pgxpool.Pool) (*baseline, error) {
	conn, err := dial(ctx, pool)
	if err != nil {
		return nil, err
	}
	channel := "gb_wake_baseline_" + strconv.FormatUint(uint64(conn.PgConn().PID()), 10)
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("listening on %s: %w", channel, err)
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b := &baseline{pool: pool, conn: conn, channel: channel, got: make(chan heard, 1), cancel: cancel, done: make(chan struct{})}
	go b.listen(lctx)
	return b, nil
}

func (b *baseline) listen(ctx context.Context) {
	defer close(b.done)
	for {
		n, err := b.conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		at := time.Now()
		select {
		case b.got <- heard{n.Payload, at}:
		case <-ctx.Done():
			return
		}
	}
}

// sample notifies with payload i and returns the time from the COMMIT to
// the listening goroutine's return.
func (b *baseline) sample(ctx context.Context, i int) (time.Duration, error) {
	payload := strconv.Itoa(i)
	start, err := commitTimed(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", b.channel, payload); err != nil {
			return fmt.Errorf("notifying: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	timeout := time.NewTimer(sampleTimeout)
	defer timeout.Stop()
	for {
		select {
		case h := <-b.got:
			if h.payload == payload {
				return h.at.Sub(start), nil
			}
		case <-timeout.C:
			return 0, fmt.Errorf("no notification within %s", sampleTimeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// stop ends the listening goroutine and closes its connection.
func (b *baseline) stop() {
	b.cancel()
	<-b.done
	closeConn(b.conn)
}
