package messenger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
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
	waiters map[waitKey]map[*waiter]struct{}
	// channels are the channels to LISTEN on; channels[c] is set once the
	// current connection listens on c. interrupt, while set, ends the
	// current wait for a notification so a new channel is listened on.
	channels  map[string]bool
	interrupt context.CancelFunc

	pid atomic.Uint32
}

// waitKey names what a waiter waits for: a notification on channel whose
// payload is id.
type waitKey struct {
	channel string
	id      int64
}

// waiter is one blocked receiver; c holds at most one pending wake-up.
// notified is set when a wake-up came from a notification carrying the
// waiter's id, rather than from a (re)connection or an unreadable payload,
// which only ask it to look again.
type waiter struct {
	key      waitKey
	c        chan struct{}
	notified atomic.Bool
}

func (w *waiter) wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// notify records that a notification named the waiter, then wakes it.
func (w *waiter) notify() {
	w.notified.Store(true)
	w.wake()
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
		waiters:    make(map[waitKey]map[*waiter]struct{}),
		channels:   map[string]bool{notifyChannel: false},
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
	wait := l.reconnectWaits()
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
			wait.Reset() // it was a healthy connection
		}
		attempts, next := 0, wait.NextBackOff()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(next):
			}
			attempts++
			conn, err = l.connect(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			next = wait.NextBackOff()
			l.log.Warn("message listener could not reconnect", "err", err, "attempt", attempts, "retry_in", next)
		}
		l.log.Info("message listener reconnected", "pid", conn.PgConn().PID(),
			"down_for", time.Since(lost).Round(time.Millisecond), "attempts", attempts)
		// Anything sent while we were away was not heard: let every
		// waiter look at its inbox again.
		l.wakeAll()
	}
}

// reconnectWaits are the waits before each attempt to reconnect: they
// double from backoffMin up to backoffMax, each spread over ±20% so that
// many processes losing one server do not all come back at once.
func (l *Listener) reconnectWaits() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{InitialInterval: l.backoffMin, RandomizationFactor: 0.2,
		Multiplier: 2, MaxInterval: l.backoffMax}
	b.Reset()
	return b
}

// listen delivers notifications until the connection fails or ctx ends.
// When nothing came for a keepalive period it pings the connection, so
// that one that died silently is replaced within keepalive+ping timeout.
func (l *Listener) listen(ctx context.Context, conn *pgx.Conn) error {
	for {
		if err := l.listenNew(ctx, conn); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, l.keepalive)
		l.setInterrupt(cancel)
		n, err := conn.WaitForNotification(wctx)
		quiet := errors.Is(wctx.Err(), context.DeadlineExceeded)
		interrupted := errors.Is(wctx.Err(), context.Canceled) && ctx.Err() == nil
		l.setInterrupt(nil)
		cancel()
		if err != nil && interrupted && !conn.IsClosed() {
			continue // a channel to listen on was added
		}
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
			l.wakeChannel(n.Channel)
			continue
		}
		l.wakeID(waitKey{n.Channel, id})
	}
}

// setInterrupt records how to end the current wait for a notification;
// a channel added since listenNew ends it at once.
func (l *Listener) setInterrupt(cancel context.CancelFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.interrupt = cancel
	for _, on := range l.channels {
		if !on && cancel != nil {
			cancel()
			return
		}
	}
}

// listenNew LISTENs on the channels conn does not listen on yet, then
// wakes their waiters, who may have missed a notification before.
func (l *Listener) listenNew(ctx context.Context, conn *pgx.Conn) error {
	l.mu.Lock()
	var todo []string
	for c, on := range l.channels {
		if !on {
			todo = append(todo, c)
		}
	}
	l.mu.Unlock()
	for _, c := range todo {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{c}.Sanitize()); err != nil {
			return fmt.Errorf("starting to listen on %s: %w", c, err)
		}
		l.mu.Lock()
		l.channels[c] = true
		l.mu.Unlock()
		l.wakeChannel(c)
	}
	return nil
}

// dial opens a connection with the settings of pool, outside the pool, so
// that it never takes a pooled slot.
func dial(ctx context.Context, pool *pgxpool.Pool) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	pc := pool.Config()
	cc := pc.ConnConfig
	if pc.BeforeConnect != nil {
		if err := pc.BeforeConnect(ctx, cc); err != nil {
			return nil, fmt.Errorf("preparing a listening connection: %w", err)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("opening a listening connection: %w", err)
	}
	return conn, nil
}

// connect opens the Listener's connection and LISTENs on it.
func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := dial(ctx, l.pool)
	if err != nil {
		return nil, fmt.Errorf("connecting message listener: %w", err)
	}
	l.mu.Lock()
	for c := range l.channels {
		l.channels[c] = false // a new connection listens on nothing yet
	}
	l.mu.Unlock()
	if err := l.listenNew(ctx, conn); err != nil {
		closeConn(conn)
		return nil, err
	}
	l.pid.Store(conn.PgConn().PID())
	return conn, nil
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// Subscribe returns a channel that gets a wake-up whenever a NOTIFY on
// channel carries id as its payload, when the listener (re)connects, and
// when a payload on channel is not a number; call the returned func when done
// waiting. A channel not listened on yet is added to the LISTEN connection.
// A wake-up is a hint to re-read the table that holds the truth, never the
// truth itself: while the listener is stopped or reconnecting, nothing
// arrives, so a waiter must also re-read on a fallback timer.
func (l *Listener) Subscribe(channel string, id int64) (<-chan struct{}, func()) {
	w := l.registerKey(waitKey{channel, id})
	return w.c, func() { l.unregister(w) }
}

// register adds a waiter for inbox id; call unregister when done.
func (l *Listener) register(id int64) *waiter { return l.registerKey(waitKey{notifyChannel, id}) }

func (l *Listener) registerKey(k waitKey) *waiter {
	w := &waiter{key: k, c: make(chan struct{}, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.channels[k.channel]; !ok {
		l.channels[k.channel] = false
		if l.interrupt != nil {
			l.interrupt()
		}
	}
	set := l.waiters[k]
	if set == nil {
		set = make(map[*waiter]struct{})
		l.waiters[k] = set
	}
	set[w] = struct{}{}
	return w
}

func (l *Listener) unregister(w *waiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.waiters[w.key]
	delete(set, w)
	if len(set) == 0 {
		delete(l.waiters, w.key)
	}
}

// wakeID tells the waiters on k that a notification named them.
func (l *Listener) wakeID(k waitKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.waiters[k] {
		w.notify()
	}
}

// wakeChannel wakes every waiter on channel.
func (l *Listener) wakeChannel(channel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, set := range l.waiters {
		if k.channel != channel {
			continue
		}
		for w := range set {
			w.wake()
		}
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
