// Package work is one invocation of the worker Lambda: River maintenance,
// then step jobs until none is left or the invocation's deadline is near,
// then a clean stop, so that a frozen execution environment holds no
// running job, no LISTEN and no database connection.
//
// It may import jobs; it knows nothing of HTTP, and of AWS only through the
// Kick function it is given.
package work

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/jobs"
)

// Defaults of Config.
const (
	// CancelMarginDefault is kept between cancelling the jobs still running
	// and the invocation's deadline: time to put them back, stop River and
	// the listener, close connections and answer.
	CancelMarginDefault = 5 * time.Second
	// BudgetDefault is how long an invocation works when its context has
	// no deadline (outside Lambda).
	BudgetDefault = 5 * time.Minute
	// StartMargin is what an invocation needs before its drain begins: the
	// queue maintenance, the listener and River's start.
	StartMargin = 5 * time.Second
)

// ErrTimeoutTooShort is the error of an invocation refused because its
// timeout cannot hold a whole step (Config.CheckTimeout).
var ErrTimeoutTooShort = errors.New("the worker's timeout is too short for its steps")

// Config tunes the worker.
//
// An invocation must be long enough for a whole step between its start and
// the moment it cancels the steps still running: the worker's timeout
// (WorkerTimeout in template.yaml) must be at least StepTimeout
// (GB_STEP_TIMEOUT) + CancelMargin + StartMargin (MinTimeout), 190 seconds
// with the defaults. A drain starts no step that is not expected to finish
// before it cancels (jobs.Drain), and expects StepTimeout of a step whose
// model has no recent durations and of every step of a protected job: with a
// shorter timeout such steps would never start. Handle refuses an
// invocation whose timeout is shorter, with an error that names both
// settings and the smallest safe WorkerTimeout.
type Config struct {
	// StepTimeout is the agent's step timeout (GB_STEP_TIMEOUT): the worker
	// stops taking new jobs this long before it cancels the running ones,
	// so that a step taken late can still finish. Zero means
	// jobs.StepTimeoutDefault.
	StepTimeout time.Duration
	// CancelMargin: see CancelMarginDefault.
	CancelMargin time.Duration
	// Budget: see BudgetDefault.
	Budget time.Duration
	// KeepConnections leaves the pool's idle connections open between
	// invocations; by default they are closed before returning.
	KeepConnections bool
}

// Service is a background part of the worker that must run only while the
// invocation does, such as the messenger's shared LISTEN connection.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Deps are what a Worker is built from.
type Deps struct {
	// Service must have been built with Work.
	Service *jobs.Service
	// Pool is the agent's pool, whose connections are closed at the end of
	// each invocation.
	Pool *pgxpool.Pool
	// Logger gets the worker's logs; nil means slog.Default().
	Logger *slog.Logger
	// Kick wakes another worker when there is more work than this one can
	// take; nil when there is none to wake.
	Kick func(ctx context.Context) error
	// Listener, when set, is started before River and stopped after it at
	// each invocation: the hook for the messenger's LISTEN connection, so
	// that steps blocked on messages are woken by NOTIFY.
	Listener Service
	// Config tunes the worker; zero fields take the defaults above.
	Config Config
}

// Event is the worker's event: {"source": "gb.kick"} from a kick,
// {"source": "gb.sweep"} from the schedule; any other JSON object is read as
// a sweep.
type Event struct {
	// Source says who invoked the worker; it is only logged.
	Source string `json:"source"`
}

// Result is what an invocation reports.
type Result struct {
	// Source is the event's source ("unknown" when it had none).
	Source string `json:"source"`
	// Maintain is what the queue maintenance did.
	Maintain jobs.MaintainResult `json:"maintain"`
	// Drain is what the drain did and why it ended.
	Drain jobs.DrainResult `json:"drain"`
	// ClosedConns counts the database connections closed before returning.
	ClosedConns int `json:"closed_conns"`
	// Millis is how long the invocation took.
	Millis int64 `json:"millis"`
}

// Worker runs worker invocations.
type Worker struct {
	d Deps
}

// New returns a Worker.
func New(d Deps) (*Worker, error) {
	if d.Service == nil || d.Pool == nil {
		return nil, errors.New("work.New needs an agent and its pool")
	}
	d.Logger = cmp.Or(d.Logger, slog.Default()).With("component", "worker")
	d.Config.StepTimeout = cmp.Or(d.Config.StepTimeout, jobs.StepTimeoutDefault)
	d.Config.CancelMargin = cmp.Or(d.Config.CancelMargin, CancelMarginDefault)
	d.Config.Budget = cmp.Or(d.Config.Budget, BudgetDefault)
	return &Worker{d: d}, nil
}

// MinTimeout is the smallest safe invocation timeout: StepTimeout, then
// CancelMargin, after StartMargin.
func (c Config) MinTimeout() time.Duration {
	return c.StepTimeout + c.CancelMargin + StartMargin
}

// CheckTimeout returns an error wrapping ErrTimeoutTooShort when an
// invocation timeout is shorter than MinTimeout. c must have its defaults
// (as New leaves them).
func (c Config) CheckTimeout(timeout time.Duration) error {
	least := c.MinTimeout()
	if timeout >= least {
		return nil
	}
	return fmt.Errorf("%w: WorkerTimeout (%s) must be at least GB_STEP_TIMEOUT (%s) + %s to cancel + %s to start; "+
		"set WorkerTimeout to %d seconds or more, or lower GB_STEP_TIMEOUT",
		ErrTimeoutTooShort, timeout, c.StepTimeout, c.CancelMargin, StartMargin, int(math.Ceil(least.Seconds())))
}

// invocationTimeout is the timeout of a Lambda invocation that began at
// most a moment before began: Lambda timeouts are whole seconds.
func invocationTimeout(began, deadline time.Time) time.Duration {
	left := deadline.Sub(began)
	timeout := left.Truncate(time.Second)
	if timeout < left {
		timeout += time.Second
	}
	return timeout
}

// Deadlines returns when an invocation that starts at now and must end by
// deadline stops taking jobs and when it cancels the running ones. It
// cancels CancelMargin before the deadline (or halfway when the invocation
// is shorter than two margins) and stops taking jobs StepTimeout before
// that, but never before half the time up to cancelling: a short
// invocation still works.
func (c Config) Deadlines(now, deadline time.Time) (stopFetching, cancel time.Time) {
	left := deadline.Sub(now)
	margin := c.CancelMargin
	if left < 2*margin {
		margin = left / 2
	}
	cancel = deadline.Add(-margin)
	stopFetching = cancel.Add(-c.StepTimeout)
	if half := now.Add(cancel.Sub(now) / 2); stopFetching.Before(half) {
		stopFetching = half
	}
	return stopFetching, cancel
}

// Handle is one invocation: maintenance, the listener, a drain, then
// everything stopped and the connections closed. An invocation whose
// timeout is too short for a step (Config.CheckTimeout) is refused before
// anything starts; otherwise only a River client that will not start or
// stop fails it.
func (w *Worker) Handle(ctx context.Context, ev Event) (Result, error) {
	began := time.Now()
	res := Result{Source: cmp.Or(ev.Source, "unknown")}
	log := w.d.Logger
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = began.Add(w.d.Config.Budget)
	}
	if err := w.d.Config.CheckTimeout(invocationTimeout(began, deadline)); err != nil {
		log.ErrorContext(ctx, "worker invocation refused", "source", res.Source, "err", err)
		if !w.d.Config.KeepConnections {
			res.ClosedConns = closeIdle(context.WithoutCancel(ctx), w.d.Pool, log)
		}
		return res, fmt.Errorf("worker invocation: %w", err)
	}
	stopFetching, cancelAt := w.d.Config.Deadlines(began, deadline)

	mctx, cancel := context.WithDeadline(ctx, stopFetching)
	m, err := w.d.Service.Maintain(mctx, jobs.MaintainParams{})
	cancel()
	if err != nil {
		log.WarnContext(ctx, "queue maintenance failed; the next invocation will try again", "err", err)
	}
	res.Maintain = m

	listening := false
	if w.d.Listener != nil {
		if err := w.d.Listener.Start(ctx); err != nil {
			log.WarnContext(ctx, "listener did not start; waits fall back to polling", "err", err)
		} else {
			listening = true
		}
	}

	res.Drain, err = w.d.Service.Drain(ctx, jobs.DrainParams{
		StopFetchingAt: stopFetching,
		CancelAt:       cancelAt,
		OnBacklog:      w.d.Kick,
	})

	// From here on ctx may be done; stopping must still happen.
	bg := context.WithoutCancel(ctx)
	if listening {
		sctx, scancel := context.WithTimeout(bg, time.Second)
		if serr := w.d.Listener.Stop(sctx); serr != nil {
			log.ErrorContext(ctx, "listener did not stop", "err", serr)
		}
		scancel()
	}
	if !w.d.Config.KeepConnections {
		res.ClosedConns = closeIdle(bg, w.d.Pool, log)
	}
	res.Millis = time.Since(began).Milliseconds()
	log.InfoContext(ctx, "worker invocation done", "source", res.Source, "reason", res.Drain.Reason,
		"worked", res.Drain.Worked, "deferred", res.Drain.Deferred, "interrupted", res.Drain.Interrupted, "ready", res.Drain.Ready,
		"oldest_ready_s", res.Drain.OldestReady,
		"kicks", res.Drain.Kicks, "rescued", m.Rescued, "scheduled", m.Scheduled, "ms", res.Millis)
	if err != nil {
		return res, fmt.Errorf("worker invocation: %w", err)
	}
	return res, nil
}

// closeIdle closes every connection of the pool before the process is
// frozen, so that the database does not keep sessions for a process that
// may never thaw; the pool opens new ones at the next invocation. It
// returns how many it closed.
func closeIdle(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) int {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if n := pool.Stat().AcquiredConns(); n > 0 {
		// Nothing should be running now; close these when they come back.
		log.WarnContext(ctx, "connections still in use at the end of the invocation; resetting the pool", "acquired", n)
		pool.Reset()
	}
	conns := pool.AcquireAllIdle(ctx)
	for _, c := range conns {
		// Close says goodbye to the server now; Release then drops the
		// closed connection from the pool.
		_ = c.Conn().Close(ctx)
		c.Release()
	}
	return len(conns)
}
