package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
	// DeadWorkers counts the workers found dead by their liveness lock.
	DeadWorkers int `json:"dead_workers"`
	// Repaired counts runs left with no job that got a new step job.
	Repaired int `json:"repaired"`
	// Lost counts runs ended failed because their step job was lost with
	// no attempt left.
	Lost int `json:"lost"`
	// Resumed counts parked parents resumed that had lost their resume.
	Resumed int `json:"resumed"`
	// LostCalls counts model calls in flight when their worker died,
	// settled at their estimates.
	LostCalls int `json:"lost_calls"`
}

// Maintain does the queue's maintenance once: it rescues at once the
// running jobs of workers that hold no liveness lock (their process died),
// rescues jobs left running longer than Config.RescueStuckJobsAfter (a
// worker that lost its database), makes due scheduled and retryable jobs
// available, repairs runs left with no way forward (reconcile.go), and
// deletes finished jobs past their retention. It uses River's
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
		if err := a.rescueDead(ctx, tx, exec, &res); err != nil {
			return err
		}
		if err := a.rescueStuck(ctx, tx, exec, &res); err != nil {
			return err
		}
		if err := scheduleDue(ctx, exec, &res); err != nil {
			return err
		}
		if err := a.reconcile(ctx, tx, &res); err != nil {
			return err
		}
		return deleteFinished(ctx, exec, p, &res)
	})
	if err != nil {
		return res, fmt.Errorf("error maintaining the job queue: %w", err)
	}
	a.countRepairs(ctx, res)
	return res, nil
}

// rescueStuck settles the jobs running for longer than a step may.
func (a *Agent) rescueStuck(ctx context.Context, tx pgx.Tx, exec riverdriver.ExecutorTx, res *MaintainResult) error {
	horizon := time.Now().Add(-a.config.RescueStuckJobsAfter)
	why := fmt.Sprintf("rescued: still running after %s, so its worker is presumed gone", a.config.RescueStuckJobsAfter)
	var afterID int64
	for range maintainRounds {
		stuck, err := exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{AfterID: afterID, Max: maintainBatch, StuckHorizon: horizon})
		if err != nil {
			return fmt.Errorf("error listing stuck jobs: %w", err)
		}
		if len(stuck) == 0 {
			return nil
		}
		afterID = stuck[len(stuck)-1].ID
		if err := a.rescue(ctx, tx, exec, stuck, why, horizon, false, res); err != nil {
			return err
		}
		if len(stuck) < maintainBatch {
			return nil
		}
	}
	return nil
}

// rescueDead settles at once the running step jobs of workers that hold no
// liveness lock (liveness.go): their process is gone.
func (a *Agent) rescueDead(ctx context.Context, tx pgx.Tx, exec riverdriver.ExecutorTx, res *MaintainResult) error {
	rows, err := tx.Query(ctx, `SELECT DISTINCT attempted_by[cardinality(attempted_by)] FROM river_job
		WHERE state = 'running' AND kind = $1 AND attempted_at < now() - $2 * interval '1 millisecond'`,
		StepKind, livenessGrace.Milliseconds())
	if err != nil {
		return fmt.Errorf("error listing running workers: %w", err)
	}
	workers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("error listing running workers: %w", err)
	}
	dead, err := a.deadWorkers(ctx, tx, workers)
	if err != nil || len(dead) == 0 {
		return err
	}
	rows, err = tx.Query(ctx, `SELECT id FROM river_job
		WHERE state = 'running' AND kind = $1 AND attempted_by[cardinality(attempted_by)] = ANY($2)
		ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`, StepKind, dead, maintainBatch)
	if err != nil {
		return fmt.Errorf("error listing the jobs of dead workers: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return err
	}
	jobs, err := exec.JobGetByIDMany(ctx, &riverdriver.JobGetByIDManyParams{ID: ids})
	if err != nil {
		return fmt.Errorf("error loading the jobs of dead workers: %w", err)
	}
	res.DeadWorkers += len(dead)
	a.logger.WarnContext(ctx, "rescuing the jobs of dead workers", "workers", dead, "jobs", len(jobs))
	return a.rescue(ctx, tx, exec, jobs, "rescued: its worker is gone (it holds no liveness lock)", time.Now(), true, res)
}

// rescue settles jobs whose worker is gone: cancelled when cancellation
// had been asked, discarded with no attempt left (and its run ended in
// this same transaction, so that it is not left without a job), else
// back to the queue, at once when now is set, otherwise with River's
// retry policy. Only jobs still running that started before horizon
// change.
func (a *Agent) rescue(ctx context.Context, tx pgx.Tx, exec riverdriver.ExecutorTx, jobs []*rivertype.JobRow,
	why string, horizon time.Time, now bool, res *MaintainResult) error {
	policy := &river.DefaultClientRetryPolicy{}
	at := time.Now().UTC()
	params := &riverdriver.JobRescueManyParams{StuckHorizon: horizon}
	var lost []*rivertype.JobRow
	for _, job := range jobs {
		errData, err := json.Marshal(rivertype.AttemptError{At: at, Attempt: max(job.Attempt, 0), Error: why})
		if err != nil {
			return fmt.Errorf("error encoding rescue error: %w", err)
		}
		var meta struct {
			CancelAttemptedAt time.Time `json:"cancel_attempted_at"`
		}
		_ = json.Unmarshal(job.Metadata, &meta)
		state, finalized, next := rivertype.JobStateRetryable, (*time.Time)(nil), policy.NextRetry(job)
		if now {
			state, next = rivertype.JobStateAvailable, at
		}
		switch {
		case !meta.CancelAttemptedAt.IsZero():
			state, finalized, next = rivertype.JobStateCancelled, &at, job.ScheduledAt
			res.Cancelled++
		case job.Attempt >= job.MaxAttempts:
			state, finalized, next = rivertype.JobStateDiscarded, &at, job.ScheduledAt
			res.Discarded++
			lost = append(lost, job)
		default:
			res.Rescued++
		}
		params.ID = append(params.ID, job.ID)
		params.Error = append(params.Error, errData)
		params.FinalizedAt = append(params.FinalizedAt, finalized)
		params.ScheduledAt = append(params.ScheduledAt, next)
		params.State = append(params.State, string(state))
	}
	if _, err := exec.JobRescueMany(ctx, params); err != nil {
		return fmt.Errorf("error rescuing stuck jobs: %w", err)
	}
	for _, job := range lost {
		var args StepArgs
		if job.Kind != StepKind || json.Unmarshal(job.EncodedArgs, &args) != nil {
			continue
		}
		msg := fmt.Sprintf("step %d's job was lost: %s, on its last attempt (%d of %d)",
			args.Step, strings.TrimPrefix(why, "rescued: "), job.Attempt, job.MaxAttempts)
		if err := a.endLost(ctx, tx, args.RunID, msg, res); err != nil {
			return err
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
