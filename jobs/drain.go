package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// This file lets a process with no always-on server work step jobs: Drain
// runs the River client for a bounded time (one worker Lambda invocation).
// Maintain (maintain.go) does River's queue maintenance in between.

// Defaults of DrainParams.
const (
	// DrainPollDefault is how often Drain looks at the queue to see whether
	// anything is left for it.
	DrainPollDefault = 50 * time.Millisecond
	// DrainLookaheadDefault counts a job due this soon (a quick retry, a
	// step waiting for its rate-limit capacity) as ready, so the drain waits
	// for it instead of leaving it to a later sweep.
	DrainLookaheadDefault = 5 * time.Second
	// BacklogAfterDefault is how long jobs must wait with every worker slot
	// busy before Drain asks for another worker.
	BacklogAfterDefault = time.Second
	// CancelGraceDefault bounds the wait for cancelled jobs to return.
	CancelGraceDefault = 2 * time.Second
)

// Why a Drain ended (DrainResult.Reason).
const (
	// DrainIdle: no job was ready and none was running in this process.
	DrainIdle = "idle"
	// DrainDeadline: StopFetchingAt came while there was still work, or
	// CancelAt came so near that a step could not start (deadline.go).
	DrainDeadline = "deadline"
	// DrainCancelled: the caller's context ended first.
	DrainCancelled = "cancelled"
)

// DrainParams bound one Drain.
type DrainParams struct {
	// StopFetchingAt is when Drain stops taking jobs; the jobs it is running
	// may still finish until CancelAt. Zero means CancelAt.
	StopFetchingAt time.Time
	// CancelAt is when jobs still running are cancelled and put back in the
	// queue without spending an attempt. Required.
	CancelAt time.Time
	// PollInterval is how often the queue is checked (DrainPollDefault).
	PollInterval time.Duration
	// Lookahead counts jobs due within it (available, or scheduled after
	// a snooze or a failed attempt) as ready (DrainLookaheadDefault).
	Lookahead time.Duration
	// BacklogAfter is how long ready jobs must find every worker slot busy
	// before OnBacklog is called (BacklogAfterDefault).
	BacklogAfter time.Duration
	// CancelGrace bounds the wait for cancelled jobs to return
	// (CancelGraceDefault).
	CancelGrace time.Duration
	// OnBacklog, when set, is called when this process cannot run every
	// ready job (at most once while working) and when the drain stops at its
	// deadline with jobs still ready: it is how a worker wakes another. Its
	// error is logged, never returned.
	OnBacklog func(ctx context.Context) error
}

func (p DrainParams) withDefaults() DrainParams {
	if p.StopFetchingAt.IsZero() || p.StopFetchingAt.After(p.CancelAt) {
		p.StopFetchingAt = p.CancelAt
	}
	p.PollInterval = cmp.Or(p.PollInterval, DrainPollDefault)
	p.Lookahead = cmp.Or(p.Lookahead, DrainLookaheadDefault)
	p.BacklogAfter = cmp.Or(p.BacklogAfter, BacklogAfterDefault)
	p.CancelGrace = cmp.Or(p.CancelGrace, CancelGraceDefault)
	return p
}

// DrainResult tells what a Drain did.
type DrainResult struct {
	// Reason is DrainIdle, DrainDeadline or DrainCancelled.
	Reason string `json:"reason"`
	// Worked counts the jobs this process finished, whatever their outcome,
	// but for the Deferred ones.
	Worked int `json:"worked"`
	// Deferred counts the jobs not started because their step could not
	// finish before CancelAt: each went back to the queue at once, its
	// attempt not spent, and is not counted as Interrupted.
	Deferred int `json:"deferred"`
	// Interrupted counts the jobs cancelled at CancelAt and put back in the
	// queue with the attempt they had before. A deadline (not the caller's
	// context) adds one to each one's count of interruptions in a row
	// (InterruptionsKey), which makes it protected from ProtectAfter on.
	Interrupted int `json:"interrupted"`
	// Restored counts those of Interrupted that River had charged an
	// attempt (or an error) for, which Drain then gave back.
	Restored int `json:"restored"`
	// Ready counts the jobs ready to run when the drain ended.
	Ready int `json:"ready"`
	// OldestReady is how long, in seconds, the step job that has waited
	// longest to run had waited when the drain ended (0: none waited): the
	// queue's delay, which the stack's alarm watches.
	OldestReady float64 `json:"oldest_ready_s"`
	// Kicks counts the calls of OnBacklog.
	Kicks int `json:"kicks"`
}

// Drain works step jobs until none is left for this process or until its
// deadline, then stops the River client so that nothing runs and nothing
// listens afterwards: it is one worker Lambda invocation. It starts the
// client (which must have been built with Work). It starts no step that is
// not expected to finish before CancelAt, and stops fetching when a job's
// step could not start, or none could (deadline.go). At the end:
//
//   - when idle, it stops at once;
//   - at StopFetchingAt, it stops taking jobs and lets running ones finish
//     until CancelAt, then cancels them. River puts a job whose work returns
//     the cancellation back to available without counting the attempt; a job
//     that returned another error, or that River has not settled, is put back
//     by Drain itself with its attempt count and error list as they were
//     before it was cancelled.
//
// Drain returns an error only when the client could not start or stop; in
// that case jobs may still run until their timeout and are rescued later by
// Maintain.
func (a *Service) Drain(ctx context.Context, p DrainParams) (DrainResult, error) {
	if p.CancelAt.IsZero() {
		return DrainResult{}, errors.New("DrainParams.CancelAt is required")
	}
	p = p.withDefaults()
	log := a.logger.With("component", "drain")

	// Job contexts must not end with ctx: a Lambda deadline would cancel them
	// without River knowing the client is stopping, and each would spend an
	// attempt. Drain cancels them itself, through StopAndCancel.
	if err := a.begin(ctx); err != nil {
		return DrainResult{}, err
	}
	defer a.end()
	a.mu.Lock()
	a.working.handoverAt = p.StopFetchingAt // no step starts after it in a running job
	a.mu.Unlock()
	dl := a.deadlines
	full := dl.beginDrain(p.CancelAt)
	defer dl.endDrain()
	if err := a.river.Start(context.WithoutCancel(ctx)); err != nil {
		return DrainResult{}, fmt.Errorf("error starting river client: %w", err)
	}
	events, unsubscribe := a.river.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed,
		river.EventKindJobCancelled, river.EventKindJobSnoozed)
	defer unsubscribe()

	var res DrainResult
	countEvents := func() {
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				dl.settled(ev)
				res.Worked++
			default:
				return
			}
		}
	}
	kick := func(why string) {
		if p.OnBacklog == nil {
			return
		}
		res.Kicks++
		// Detached from ctx, which may have ended, but not past its deadline.
		end := time.Now().Add(5 * time.Second)
		if d, ok := ctx.Deadline(); ok && d.Before(end) {
			end = d
		}
		kctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), end)
		defer cancel()
		if err := p.OnBacklog(kctx); err != nil {
			log.WarnContext(ctx, "could not wake another worker", "why", why, "err", err)
		}
	}

	res.Reason = a.watch(ctx, p, dl, full, log, kick, countEvents)
	if res.Reason == DrainCancelled {
		p.CancelAt = time.Now() // the caller wants out now
	}

	// Stop. Queries from here on must work even when ctx has ended.
	bg := context.WithoutCancel(ctx)
	var stopErr error
	if res.Reason == DrainIdle {
		sctx, cancel := context.WithDeadline(bg, p.CancelAt.Add(p.CancelGrace))
		stopErr = a.river.Stop(sctx)
		cancel()
	} else {
		stopErr = a.stopAtDeadline(bg, p, res.Reason == DrainDeadline, &res, log)
	}
	countEvents()
	deferred, front := dl.endDrain()
	res.Deferred, res.Worked = deferred, max(res.Worked-deferred, 0)
	if stopErr != nil {
		return res, fmt.Errorf("error stopping river client: %w", stopErr)
	}

	qctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	if err := queueFirst(qctx, a.pool, front); err != nil {
		log.WarnContext(ctx, "could not queue protected jobs first", "err", err)
	}
	ready, _, err := a.queueCounts(qctx, "", p.Lookahead)
	if err != nil {
		log.WarnContext(ctx, "could not count the jobs left", "err", err)
	}
	res.Ready = ready
	if res.OldestReady, err = a.oldestReady(qctx); err != nil {
		log.WarnContext(ctx, "could not measure the queue's delay", "err", err)
	}
	if res.Reason != DrainIdle && ready > 0 {
		kick("work left at the deadline")
	}
	return res, nil
}

// watch waits until the process is idle, StopFetchingAt comes, a job
// could not start (full), no step could, or ctx ends; and asks for help
// when jobs wait for a free worker slot.
func (a *Service) watch(ctx context.Context, p DrainParams, dl *deadlines, full <-chan struct{}, log *slog.Logger,
	kick func(string), countEvents func()) string {
	clientID := a.river.ID()
	stopFetching := time.NewTimer(time.Until(p.StopFetchingAt))
	defer stopFetching.Stop()
	tick := time.NewTicker(p.PollInterval)
	defer tick.Stop()
	var backlogSince time.Time
	kicked := false
	for {
		select {
		case <-ctx.Done():
			return DrainCancelled
		case <-stopFetching.C:
			return DrainDeadline
		case <-full:
			return DrainDeadline
		case <-tick.C:
		}
		countEvents()
		ready, mine, err := a.queueCounts(ctx, clientID, p.Lookahead)
		if err != nil {
			if ctx.Err() != nil {
				return DrainCancelled
			}
			log.WarnContext(ctx, "could not look at the queue", "err", err)
			continue
		}
		if ready == 0 && mine == 0 {
			return DrainIdle
		}
		if dl.noStepFits(a.models, a.config.StepTimeout) {
			return DrainDeadline
		}
		if ready == 0 || mine < a.config.MaxWorkers {
			backlogSince = time.Time{}
			continue
		}
		if backlogSince.IsZero() {
			backlogSince = time.Now()
		}
		if !kicked && time.Since(backlogSince) >= p.BacklogAfter {
			kicked = true
			kick("every worker slot busy")
		}
	}
}

// stopAtDeadline stops taking jobs, lets running ones finish until
// CancelAt, then cancels the rest and puts them back; count adds the
// interruption to each one's count.
func (a *Service) stopAtDeadline(ctx context.Context, p DrainParams, count bool, res *DrainResult, log *slog.Logger) error {
	sctx, cancel := context.WithDeadline(ctx, p.CancelAt)
	err := a.river.Stop(sctx)
	cancel()
	if err == nil {
		return nil
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	// Still running at CancelAt: note what each job had spent, cancel them,
	// then give back what River charged them for being cancelled.
	qctx, qcancel := context.WithTimeout(ctx, time.Second)
	held, herr := a.heldJobs(qctx)
	qcancel()
	if herr != nil {
		log.WarnContext(ctx, "could not list the running jobs before cancelling them", "err", herr)
	}
	cctx, ccancel := context.WithTimeout(ctx, p.CancelGrace)
	err = a.river.StopAndCancel(cctx)
	ccancel()
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return nil
	}
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	defer rcancel()
	restored, waiting, rerr := a.putBack(rctx, held, count)
	if rerr != nil {
		return rerr
	}
	res.Restored, res.Interrupted = restored, waiting
	log.InfoContext(ctx, "cancelled jobs at the deadline", "interrupted", waiting, "restored", restored)
	return nil
}

// oldestReady is how long, in seconds, the step job of the agent's queue
// that has waited longest to run has waited: since it was queued, or since
// it came due after a snooze or a failed attempt (a new step job is queued
// with its tree's start as scheduled_at, so the later of the two counts).
func (a *Service) oldestReady(ctx context.Context) (float64, error) {
	var s float64
	err := a.pool.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM now() - min(greatest(created_at, scheduled_at))), 0)::float8
		FROM river_job WHERE queue = $1 AND kind = $2 AND state = 'available'`, a.config.Queue, StepKind).Scan(&s)
	if err != nil {
		return 0, fmt.Errorf("error measuring the queue's delay: %w", err)
	}
	return max(s, 0), nil
}

// queueCounts returns how many jobs of the agent's queue (Config.Queue)
// are ready (or due within lookahead) and how many this client is running;
// with an empty clientID the second count is 0.
func (a *Service) queueCounts(ctx context.Context, clientID string, lookahead time.Duration) (ready, mine int, err error) {
	err = a.pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE state IN ('available', 'scheduled', 'retryable')
				AND scheduled_at <= now() + $2 * interval '1 millisecond'),
			count(*) FILTER (WHERE state = 'running' AND $1 <> '' AND attempted_by[cardinality(attempted_by)] = $1)
		FROM river_job WHERE queue = $3 AND state IN ('available', 'scheduled', 'retryable', 'running')`,
		clientID, lookahead.Milliseconds(), a.config.Queue).Scan(&ready, &mine)
	if err != nil {
		return 0, 0, fmt.Errorf("error counting queued jobs: %w", err)
	}
	return ready, mine, nil
}

// heldJobs lists the jobs this client is running.
func (a *Service) heldJobs(ctx context.Context) ([]heldJob, error) {
	rows, err := a.pool.Query(ctx, `SELECT id, attempt, coalesce(array_length(errors, 1), 0)
		FROM river_job WHERE state = 'running' AND attempted_by[cardinality(attempted_by)] = $1`, a.river.ID())
	if err != nil {
		return nil, fmt.Errorf("error listing running jobs: %w", err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowToStructByPos[heldJob])
	if err != nil {
		return nil, fmt.Errorf("error listing running jobs: %w", err)
	}
	return held, nil
}

// putBack puts the cancelled jobs back in the queue as they were before
// this process ran them (putBackCancelled) and returns how many it changed
// and how many of them now wait in the queue; count adds an interruption to
// the count of each of those (countWaiting).
func (a *Service) putBack(ctx context.Context, held []heldJob, count bool) (restored, waiting int, err error) {
	restored, err = putBackCancelled(ctx, a.pool, a.river.ID(), held)
	if err != nil {
		return 0, 0, err
	}
	ids := make([]int64, len(held))
	for i, h := range held {
		ids[i] = h.ID
	}
	waiting, err = countWaiting(ctx, a.pool, ids, count)
	if err != nil {
		return 0, 0, err
	}
	return restored, waiting, nil
}
