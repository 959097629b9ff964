package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// This file ends sub-agents past their type's wall-clock cap with status
// timed_out. A step running at the cap has its context end then (step.go);
// a sub-agent that is queued or parked at the cap is ended by its timeout
// job, scheduled at the cap when it was spawned. Either way its working
// descendants are cancelled and its parent may resume, as for any end.

// TimeoutKind is the River job kind of a sub-agent's wall-clock cap.
const TimeoutKind = "gb_timeout"

// errWallClock is the cause of a step context that reached its run's cap.
var errWallClock = errors.New("the sub-agent's wall-clock cap passed")

// TimeoutArgs are the arguments of a timeout job.
type TimeoutArgs struct {
	RunID int64 `json:"run_id"`
}

// Kind implements river.JobArgs.
func (TimeoutArgs) Kind() string { return TimeoutKind }

// enqueueTimeout schedules the timeout job of a run at its deadline.
func (a *Service) enqueueTimeout(ctx context.Context, tx pgx.Tx, runID int64, at time.Time) error {
	if _, err := a.river.InsertTx(ctx, tx, TimeoutArgs{RunID: runID}, &river.InsertOpts{ScheduledAt: at, Queue: a.config.Queue}); err != nil {
		return fmt.Errorf("error scheduling the timeout of run %d: %w", runID, err)
	}
	return nil
}

// timedOutError is the error of a run that ran past its cap.
func timedOutError(run *Run) string {
	if run.Deadline == nil {
		return "timed out"
	}
	return fmt.Sprintf("timed out: its wall-clock cap of %s passed", run.Deadline.Sub(run.CreatedAt).Round(time.Second))
}

// endTimedOut ends a run timed_out, in a transaction of its own, and
// completes job when it is set.
func (a *Service) endTimedOut(ctx context.Context, runID int64, complete func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockTreeByID(ctx, tx, runID)
		if err != nil {
			return err
		}
		if run != nil && !run.Ended() && run.Deadline != nil && !time.Now().Before(*run.Deadline) {
			if err := a.endRun(ctx, tx, run, StatusTimedOut, "", timedOutError(run), 0); err != nil {
				return err
			}
		}
		return complete(tx)
	})
}

// timeoutWorker is the River worker of timeout jobs.
type timeoutWorker struct {
	river.WorkerDefaults[TimeoutArgs]
	agent *Service
}

// Work ends the run if it is still working past its cap; a running step
// of it has its context cancelled through River.
func (w *timeoutWorker) Work(ctx context.Context, job *river.Job[TimeoutArgs]) error {
	return w.agent.endTimedOut(ctx, job.Args.RunID, func(tx pgx.Tx) error {
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("error completing timeout job %d: %w", job.ID, err)
		}
		return nil
	})
}
