package messenger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// notifyChannel is the one LISTEN/NOTIFY channel of the message system. The
// payload is the receiver's run ID, a hint saying whom to wake.
const notifyChannel = "gb_messages"

// Reconnect delays of a Listener that lost its connection: the first retry
// waits reconnectMin, each failure doubles the delay up to reconnectMax.
const (
	reconnectMin = 100 * time.Millisecond
	reconnectMax = 2 * time.Second
	// connectTimeout bounds one connection attempt.
	connectTimeout = 10 * time.Second
	// keepaliveDefault is how long the listener waits for a notification
	// before it pings its connection: a connection cut without a word (a
	// failover, a NAT or proxy dropping it) delivers nothing and reports no
	// error, and would leave every waiter on its fallback timer for good.
	keepaliveDefault = 30 * time.Second
	// pingTimeoutDefault bounds that ping.
	pingTimeoutDefault = 5 * time.Second
)

// Listener holds the one LISTEN connection of a process and fans each
// notification out, in memory, to the receivers blocked on that inbox.
//
// It runs between Start and Stop: a worker starts it when an invocation
// begins and stops it before returning, so a frozen process holds no LISTEN
// connection. The connection is its own, outside the pool. When it drops,
// the Listener reconnects with backoff and then wakes every waiter, so that
// each re-checks its inbox: a notification lost meanwhile costs latency, not
// a message. Waiters may register while it is stopped; they then rely on
// their fallback timer.
type Listener struct {
	pool       *pgxpool.Pool
	log        *slog.Logger
	backoffMin time.Duration
	backoffMax time.Duration
	keepalive  time.Duration
	pingTO     time.Duration

	life sync.Mutex // serialises Start and Stop
	stop context.CancelFunc
	done chan struct{}

	mu      sync.Mutex
	waiters map[int64]map[*waiter]struct{}

	pid atomic.Uint32
}

// waiter is one blocked receiver; c holds at most one pending wake-up.
type waiter struct {
	id int64
	c  chan struct{}
}

func (w *waiter) wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// NewListener returns a stopped Listener whose connections are opened with
// the settings of pool. A nil logger means slog.Default().
func NewListener(pool *pgxpool.Pool, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.Default()
	}
	return &Listener{
		pool:       pool,
		log:        logger,
		backoffMin: reconnectMin,
		backoffMax: reconnectMax,
		keepalive:  keepaliveDefault,
		pingTO:     pingTimeoutDefault,
		waiters:    make(map[int64]map[*waiter]struct{}),
	}
}

// Start connects and LISTENs, then keeps listening in the background until
// Stop. ctx bounds the first connection only. Starting a started Listener
// does nothing.
func (l *Listener) Start(ctx context.Context) error {
	l.life.Lock()
	defer l.life.Unlock()
	if l.stop != nil {
		return nil
	}
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.stop, l.done = cancel, make(chan struct{})
	go l.run(loopCtx, conn, l.done)
	// Waiters registered before Start heard nothing so far.
	l.wakeAll()
	return nil
}

// Stop ends the background loop and closes the LISTEN connection, waiting
// for both unless ctx ends first. Stopping a stopped Listener does nothing.
func (l *Listener) Stop(ctx context.Context) error {
	l.life.Lock()
	defer l.life.Unlock()
	if l.stop == nil {
		return nil
	}
	l.stop()
	done := l.done
	l.stop, l.done = nil, nil
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping message listener: %w", ctx.Err())
	}
}

// BackendPID is the server process ID of the listening connection, or 0
// while there is none.
func (l *Listener) BackendPID() uint32 { return l.pid.Load() }

// run listens on conn until it fails, then reconnects, until ctx ends.
// While it is away, waiters rely on their fallback timers; once it is back
// it wakes them all.
func (l *Listener) run(ctx context.Context, conn *pgx.Conn, done chan struct{}) {
	defer close(done)
	backoff := l.backoffMin
	for {
		since := time.Now()
		err := l.listen(ctx, conn)
		l.pid.Store(0)
		closeConn(conn)
		if ctx.Err() != nil {
			return
		}
		lost := time.Now()
		l.log.Warn("message listener lost its connection; reconnecting", "err", err)
		if lost.Sub(since) > l.backoffMax {
			backoff = l.backoffMin // it was a healthy connection
		}
		attempts := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(jitter(backoff)):
			}
			backoff = min(backoff*2, l.backoffMax)
			attempts++
			conn, err = l.connect(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			l.log.Warn("message listener could not reconnect", "err", err, "attempt", attempts, "retry_in", backoff)
		}
		l.log.Info("message listener reconnected", "pid", conn.PgConn().PID(),
			"down_for", time.Since(lost).Round(time.Millisecond), "attempts", attempts)
		// Anything sent while we were away was not heard: let every
		// waiter look at its inbox again.
		l.wakeAll()
	}
}

// jitter spreads reconnections of many processes over ±20% of d.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}

// listen delivers notifications until the connection fails or ctx ends.
// When nothing came for a keepalive period it pings the connection, so
// that one that died silently is replaced within keepalive+ping timeout.
func (l *Listener) listen(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, l.keepalive)
		n, err := conn.WaitForNotification(wctx)
		quiet := errors.Is(wctx.Err(), context.DeadlineExceeded)
		cancel()
		if err != nil {
			if ctx.Err() != nil || !quiet || conn.IsClosed() {
				return fmt.Errorf("waiting for notifications: %w", err)
			}
			pctx, cancel := context.WithTimeout(ctx, l.pingTO)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("pinging the listening connection after %s without notifications: %w", l.keepalive, err)
			}
			continue
		}
		id, err := strconv.ParseInt(n.Payload, 10, 64)
		if err != nil {
			l.wakeAll()
			continue
		}
		l.wakeID(id)
	}
}

// connect opens a connection with the pool's settings (outside the pool,
// so it never takes a pooled slot) and LISTENs on it.
func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	pc := l.pool.Config()
	cc := pc.ConnConfig
	if pc.BeforeConnect != nil {
		if err := pc.BeforeConnect(ctx, cc); err != nil {
			return nil, fmt.Errorf("preparing message listener connection: %w", err)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("connecting message listener: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("starting to listen on %s: %w", notifyChannel, err)
	}
	l.pid.Store(conn.PgConn().PID())
	return conn, nil
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// register adds a waiter for inbox id; call unregister when done.
func (l *Listener) register(id int64) *waiter {
	w := &waiter{id: id, c: make(chan struct{}, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.waiters[id]
	if set == nil {
		set = make(map[*waiter]struct{})
		l.waiters[id] = set
	}
	set[w] = struct{}{}
	return w
}

func (l *Listener) unregister(w *waiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.waiters[w.id]
	delete(set, w)
	if len(set) == 0 {
		delete(l.waiters, w.id)
	}
}

func (l *Listener) wakeID(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.waiters[id] {
		w.wake()
	}
}

func (l *Listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, set := range l.waiters {
		for w := range set {
			w.wake()
		}
	}
}
