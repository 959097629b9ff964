package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// MaintainParams tune Maintain; zero fields take the defaults in drain.go.
type MaintainParams struct {
	// CompletedRetention is how long completed jobs are kept.
	CompletedRetention time.Duration
	// CancelledRetention is how long cancelled jobs are kept.
	CancelledRetention time.Duration
	// DiscardedRetention is how long discarded jobs are kept.
	DiscardedRetention time.Duration
}

// MaintainResult counts what Maintain did.
type MaintainResult struct {
	// Skipped is true when another process was maintaining the queue.
	Skipped bool `json:"skipped,omitempty"`
	// Scheduled counts scheduled or retryable jobs made available.
	Scheduled int `json:"scheduled"`
	// Rescued counts stuck running jobs made retryable.
	Rescued int `json:"rescued"`
	// Discarded counts stuck jobs with no attempt left, discarded.
	Discarded int `json:"discarded"`
	// Cancelled counts stuck jobs that had been asked to cancel.
	Cancelled int `json:"cancelled"`
	// Deleted counts finished jobs deleted after their retention.
	Deleted int `json:"deleted"`
}

// Maintain does River's queue maintenance once, for a deployment where no
// process runs long enough to be River's leader: it makes due scheduled and
// retryable jobs available, rescues jobs left running longer than
// Config.RescueStuckJobsAfter (their worker died, say a Lambda killed at its
// timeout), and deletes finished jobs past their retention. It uses River's
// own queries, in one transaction, under an advisory lock: when another
// process holds it, Maintain does nothing and reports Skipped.
func (a *Agent) Maintain(ctx context.Context, p MaintainParams) (MaintainResult, error) {
	p.CompletedRetention = cmp.Or(p.CompletedRetention, CompletedRetentionDefault)
	p.CancelledRetention = cmp.Or(p.CancelledRetention, CancelledRetentionDefault)
	p.DiscardedRetention = cmp.Or(p.DiscardedRetention, DiscardedRetentionDefault)
	var res MaintainResult
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", maintainLockKey).Scan(&locked); err != nil {
			return fmt.Errorf("error taking maintenance lock: %w", err)
		}
		if !locked {
			res.Skipped = true
			return nil
		}
		exec := a.river.Driver().UnwrapExecutor(tx)
		if err := a.rescueStuck(ctx, exec, &res); err != nil {
			return err
		}
		if err := scheduleDue(ctx, exec, &res); err != nil {
			return err
		}
		return deleteFinished(ctx, exec, p, &res)
	})
	if err != nil {
		return res, fmt.Errorf("error maintaining the job queue: %w", err)
	}
	return res, nil
}

// rescueStuck settles the jobs running for longer than a step may: back to
// retryable with River's retry policy while attempts remain, else
// discarded; cancelled when cancellation had been asked.
func (a *Agent) rescueStuck(ctx context.Context, exec riverdriver.ExecutorTx, res *MaintainResult) error {
	horizon := time.Now().Add(-a.config.RescueStuckJobsAfter)
	policy := &river.DefaultClientRetryPolicy{}
	var afterID int64
	for range maintainRounds {
		stuck, err := exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{AfterID: afterID, Max: maintainBatch, StuckHorizon: horizon})
		if err != nil {
			return fmt.Errorf("error listing stuck jobs: %w", err)
		}
		if len(stuck) == 0 {
			return nil
		}
		now := time.Now().UTC()
		params := &riverdriver.JobRescueManyParams{StuckHorizon: horizon}
		for _, job := range stuck {
			afterID = job.ID
			errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(job.Attempt, 0),
				Error: fmt.Sprintf("rescued: still running after %s, so its worker is presumed gone", a.config.RescueStuckJobsAfter)})
			if err != nil {
				return fmt.Errorf("error encoding rescue error: %w", err)
			}
			var meta struct {
				CancelAttemptedAt time.Time `json:"cancel_attempted_at"`
			}
			_ = json.Unmarshal(job.Metadata, &meta)
			state, finalized, at := rivertype.JobStateRetryable, (*time.Time)(nil), policy.NextRetry(job)
			switch {
			case !meta.CancelAttemptedAt.IsZero():
				state, finalized, at = rivertype.JobStateCancelled, &now, job.ScheduledAt
				res.Cancelled++
			case job.Attempt >= job.MaxAttempts:
				state, finalized, at = rivertype.JobStateDiscarded, &now, job.ScheduledAt
				res.Discarded++
			default:
				res.Rescued++
			}
			params.ID = append(params.ID, job.ID)
			params.Error = append(params.Error, errData)
			params.FinalizedAt = append(params.FinalizedAt, finalized)
			params.ScheduledAt = append(params.ScheduledAt, at)
			params.State = append(params.State, string(state))
		}
		if _, err := exec.JobRescueMany(ctx, params); err != nil {
			return fmt.Errorf("error rescuing stuck jobs: %w", err)
		}
		if len(stuck) < maintainBatch {
			return nil
		}
	}
	return nil
}

// scheduleDue makes scheduled and retryable jobs whose time has come
// available.
func scheduleDue(ctx context.Context, exec riverdriver.ExecutorTx, res *MaintainResult) error {
	for range maintainRounds {
		now := time.Now().UTC()
		done, err := exec.JobSchedule(ctx, &riverdriver.JobScheduleParams{Max: maintainBatch, Now: &now})
		if err != nil {
			return fmt.Errorf("error scheduling due jobs: %w", err)
		}
		res.Scheduled += len(done)
		if len(done) < maintainBatch {
			return nil
		}
	}
	return nil
}

// deleteFinished deletes completed, cancelled and discarded jobs past
// their retention.
func deleteFinished(ctx context.Context, exec riverdriver.ExecutorTx, p MaintainParams, res *MaintainResult) error {
	for range maintainRounds {
		now := time.Now().UTC()
		n, err := exec.JobDeleteBefore(ctx, &riverdriver.JobDeleteBeforeParams{
			CompletedDoDelete: true, CompletedFinalizedAtHorizon: now.Add(-p.CompletedRetention),
			CancelledDoDelete: true, CancelledFinalizedAtHorizon: now.Add(-p.CancelledRetention),
			DiscardedDoDelete: true, DiscardedFinalizedAtHorizon: now.Add(-p.DiscardedRetention),
			Max: maintainBatch,
		})
		if err != nil {
			return fmt.Errorf("error deleting finished jobs: %w", err)
		}
		res.Deleted += n
		if n < maintainBatch {
			return nil
		}
	}
	return nil
}
