package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// unavailableRetry is how soon a step that could not reach the database
// runs again.
const unavailableRetry = time.Second

// stepWorker is the River worker of step jobs.
type stepWorker struct {
	river.WorkerDefaults[StepArgs]
	agent *Service
}

// NextRetry is when a failed step runs again (nextRetry).
func (w *stepWorker) NextRetry(job *river.Job[StepArgs]) time.Time { return nextRetry(job.Attempt) }

// Timeout is the longest a step job runs: its slice and its last step.
func (w *stepWorker) Timeout(*river.Job[StepArgs]) time.Duration { return w.agent.config.jobTimeout() }

// Work runs the job's steps in the job's span (trace.go).
func (w *stepWorker) Work(ctx context.Context, job *river.Job[StepArgs]) error {
	ctx, end := w.agent.startJob(ctx, job)
	err := w.work(ctx, job)
	end(err)
	return err
}

// work makes the job's steps (Service.work) and decides what a failed one
// means. Whatever happens, the run is left ended, parked, or with a next
// job: a step that panics is an error like any other; a run past its
// wall-clock cap ends timed_out; a step interrupted because the worker is
// stopping, or that found the database unreachable, goes back to the queue
// without spending an attempt, like a wait for capacity or for a provider
// that is down (a snooze, decided in ask.go and outage.go: a provider's
// transient failure never reaches here as an error); a step that fails on
// its last attempt ends its run failed. What River
// discards anyway (an end that could not commit), the maintenance pass
// repairs (reconcile.go).
func (w *stepWorker) work(ctx context.Context, job *river.Job[StepArgs]) error {
	err := w.agent.safeStep(ctx, job)
	if err == nil {
		return nil
	}
	if errors.Is(err, errWallClock) {
		// The run reached its cap mid-step: it ends timed_out.
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return w.agent.endTimedOut(ectx, job.Args.RunID, func(tx pgx.Tx) error { return completeJob(ectx, tx, job) })
	}
	if interrupted(ctx) {
		// A snooze puts the job back at once without counting the attempt,
		// whatever the attempt and whatever stopped the worker.
		w.agent.logger.InfoContext(ctx, "step interrupted: the worker is stopping", "run_id", job.Args.RunID,
			"step", job.Args.Step, "attempt", job.Attempt)
		return river.JobSnooze(0)
	}
	if errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely) {
		return err // the run was ended by whoever cancelled the job
	}
	var snooze *rivertype.JobSnoozeError
	if errors.As(err, &snooze) {
		return err // a wait (for the budget) spends no attempt, even the last
	}
	if ctx.Err() == nil && DatabaseUnavailable(err) {
		// Not the step's fault: try again soon without spending an attempt.
		w.agent.logger.WarnContext(ctx, "step put back: the database is unavailable", "run_id", job.Args.RunID,
			"step", job.Args.Step, "err", err)
		return river.JobSnooze(unavailableRetry)
	}
	if job.Attempt < job.MaxAttempts {
		return err // River retries it from the last committed state
	}
	// The job's own context may have expired (the step timed out): end the
	// run on a short context of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	w.agent.logger.ErrorContext(ctx, "step failed on its last attempt", "run_id", job.Args.RunID,
		"step", job.Args.Step, "attempt", job.Attempt, "err", err)
	run, gerr := GetRun(ctx, w.agent.pool, job.Args.RunID)
	if errors.Is(gerr, ErrNotFound) {
		return nil
	}
	if gerr != nil {
		return errors.Join(err, gerr)
	}
	// The job makes consecutive steps: the one that failed is the run's
	// next, not the job's first.
	msg := fmt.Sprintf("step %d failed after %d attempts: %s", run.Steps+1, job.Attempt, err.Error())
	if ferr := w.agent.endAfter(ctx, job, run, StatusFailed, "", msg); ferr != nil {
		// River discards the job; the maintenance pass ends the run.
		return errors.Join(err, ferr)
	}
	return nil
}

// safeStep runs a step, turning a panic into an error so that the last
// attempt's handling applies to it too.
func (a *Service) safeStep(ctx context.Context, job *river.Job[StepArgs]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			a.logger.ErrorContext(ctx, "step panicked", "run_id", job.Args.RunID, "step", job.Args.Step,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("step panicked: %v", p)
		}
	}()
	return a.work(ctx, job)
}

// interrupted reports whether a job's context ended because its worker is
// stopping (River's stop, a drain's deadline, SIGTERM) rather than because
// the step ran out of time or its job was cancelled.
func interrupted(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	cause := context.Cause(ctx)
	return !errors.Is(cause, context.DeadlineExceeded) && !errors.Is(cause, rivertype.ErrJobCancelledRemotely)
}

// StepArgs are the arguments of a step job: the run and the step number it
// will make (1 for the first), and when the run's tree started.
type StepArgs struct {
	RunID int64 `json:"run_id"`
	Step  int   `json:"step"`
	// Tree is when the run's tree started: the job is queued at that time
	// (treeOrder), so that River takes the steps of older trees first.
	Tree time.Time `json:"tree,omitzero"`
}

// StepKind is the River job kind of a step.
const StepKind = "gb_step"

// Kind implements river.JobArgs.
func (StepArgs) Kind() string { return StepKind }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (StepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: StepMaxAttempts}
}

// enqueueStep inserts the job of a run's next step in tx, queued at its
// tree's start (treeOrder).
func (a *Service) enqueueStep(ctx context.Context, tx pgx.Tx, run *Run, step int) error {
	args := StepArgs{RunID: run.ID, Step: step, Tree: run.TreeStartedAt}
	opts := &river.InsertOpts{Queue: a.config.Queue, Metadata: a.jobMetadata(ctx)}
	if _, err := a.river.InsertTx(ctx, tx, args, opts); err != nil {
		return fmt.Errorf("error inserting step job: %w", err)
	}
	return nil
}

// treeOrder is the insert middleware that queues a step job at its tree's
// start. River takes available jobs by priority, then scheduled_at, so the
// steps of trees under way go ahead of the first steps of newer trees and
// trees finish in the order they began. The job stays available: a time
// in the past does not make it wait.
type treeOrder struct {
	river.MiddlewareDefaults
}

// InsertMany implements rivertype.JobInsertMiddleware.
func (treeOrder) InsertMany(ctx context.Context, many []*rivertype.JobInsertParams,
	doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	now := time.Now()
	for _, p := range many {
		args, ok := p.Args.(StepArgs)
		if !ok || args.Tree.IsZero() || !args.Tree.Before(now) || p.State != rivertype.JobStateAvailable {
			continue
		}
		at := args.Tree
		p.ScheduledAt = &at
	}
	return doInner(ctx)
}

// completeJob marks a step job completed in tx: the job completes if and
// only if what it recorded in tx commits.
func completeJob(ctx context.Context, tx pgx.Tx, job *river.Job[StepArgs]) error {
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return fmt.Errorf("error completing job %d: %w", job.ID, err)
	}
	return nil
}
