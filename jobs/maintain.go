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
	"github.com/riverqueue/river/rivertype"
)

// Defaults of MaintainParams: how long finished jobs are kept before
// Maintain deletes them (River's own defaults).
const (
	CompletedRetentionDefault = 24 * time.Hour
	CancelledRetentionDefault = 24 * time.Hour
	DiscardedRetentionDefault = 7 * 24 * time.Hour
)

// maintainLockKey is the advisory lock that lets one Maintain run at a time.
const maintainLockKey = 7_411_000_003

// maintainBatch bounds each maintenance query, and maintainRounds the
// batches of one Maintain, so that it stays short.
const (
	maintainBatch  = 1000
	maintainRounds = 10
)

// MaintainParams tune Maintain; zero fields take the …Default constants
// above.
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
// deletes finished jobs past their retention. It uses River's client and,
// where River has no public API for a step, River's own queries
// (river_internals.go), in one transaction, under an advisory lock: when
// another process holds it, Maintain does nothing and reports Skipped.
func (a *Service) Maintain(ctx context.Context, p MaintainParams) (MaintainResult, error) {
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
		if err := a.rescueDead(ctx, tx, &res); err != nil {
			return err
		}
		if err := a.rescueStuck(ctx, tx, &res); err != nil {
			return err
		}
		if err := a.scheduleDue(ctx, tx, &res); err != nil {
			return err
		}
		if err := a.reconcile(ctx, tx, &res); err != nil {
			return err
		}
		return a.deleteFinished(ctx, tx, p, &res)
	})
	if err != nil {
		return res, fmt.Errorf("error maintaining the job queue: %w", err)
	}
	a.countRepairs(ctx, res)
	return res, nil
}

// rescueStuck settles the jobs running for longer than a step may.
func (a *Service) rescueStuck(ctx context.Context, tx pgx.Tx, res *MaintainResult) error {
	horizon := time.Now().Add(-a.config.RescueStuckJobsAfter)
	why := fmt.Sprintf("rescued: still running after %s, so its worker is presumed gone", a.config.RescueStuckJobsAfter)
	params := river.NewJobListParams().States(rivertype.JobStateRunning).
		Where("attempted_at < @stuck_horizon", river.NamedArgs{"stuck_horizon": horizon}).First(maintainBatch)
	for range maintainRounds {
		list, err := a.river.JobListTx(ctx, tx, params)
		if err != nil {
			return fmt.Errorf("error listing stuck jobs: %w", err)
		}
		stuck := list.Jobs
		if len(stuck) == 0 {
			return nil
		}
		params = params.After(list.LastCursor)
		if err := a.rescue(ctx, tx, stuck, why, horizon, false, res); err != nil {
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
func (a *Service) rescueDead(ctx context.Context, tx pgx.Tx, res *MaintainResult) error {
	// The workers running step jobs for longer than the liveness grace.
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
	// The running step jobs of the dead workers, a batch at a time, locked.
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
	list, err := a.river.JobListTx(ctx, tx, river.NewJobListParams().IDs(ids...).First(len(ids)))
	if err != nil {
		return fmt.Errorf("error loading the jobs of dead workers: %w", err)
	}
	res.DeadWorkers += len(dead)
	a.logger.WarnContext(ctx, "rescuing the jobs of dead workers", "workers", dead, "jobs", len(list.Jobs))
	return a.rescue(ctx, tx, list.Jobs, "rescued: its worker is gone (it holds no liveness lock)", time.Now(), true, res)
}

// rescue settles jobs whose worker is gone: cancelled when cancellation
// had been asked, else back to the queue, at once when now is set,
// otherwise with River's retry policy. A worker's death is not its step's
// failure, so a job put back spends no attempt; but a step that took its
// worker down MaxStepRescues times (the same step, rescued again and
// again) is discarded and its run ended in this same transaction, so that
// it is not left without a job. Only jobs still running that started
// before horizon change.
func (a *Service) rescue(ctx context.Context, tx pgx.Tx, jobs []*rivertype.JobRow,
	why string, horizon time.Time, now bool, res *MaintainResult) error {
	policy := &river.DefaultClientRetryPolicy{}
	at := time.Now().UTC()
	counts, err := rescueCounts(ctx, tx, jobs)
	if err != nil {
		return err
	}
	settled := make([]rescuedJob, 0, len(jobs))
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
		case counts[job.ID].rescues >= MaxStepRescues:
			state, finalized, next = rivertype.JobStateDiscarded, &at, job.ScheduledAt
			res.Discarded++
			lost = append(lost, job)
		case job.Kind != StepKind && job.Attempt >= job.MaxAttempts:
			// Another kind of job keeps River's rule: its attempts count.
			state, finalized, next = rivertype.JobStateDiscarded, &at, job.ScheduledAt
			res.Discarded++
		default:
			res.Rescued++
		}
		settled = append(settled, rescuedJob{ID: job.ID, Error: errData, FinalizedAt: finalized, ScheduledAt: next,
			State: state, Step: counts[job.ID].step, Rescues: counts[job.ID].rescues})
	}
	if err := rescueRunning(ctx, a.river, tx, settled, horizon); err != nil {
		return err
	}
	for _, job := range lost {
		c := counts[job.ID]
		msg := fmt.Sprintf("step %d took its worker down %d times (%s each time); the run was ended so that it "+
			"does not take more workers down", c.step, c.rescues, strings.TrimPrefix(why, "rescued: "))
		if err := a.endLost(ctx, tx, c.run, msg, res); err != nil {
			return err
		}
	}
	return nil
}

// MaxStepRescues is how many times one step may lose its worker (a worker
// that died or stalled while making it) before its run is ended: a bound
// apart from the attempts of the step's own failures, for a step that
// keeps crashing whatever runs it.
const MaxStepRescues = 10

// rescueCount is, for one step job being rescued, its run, the step its
// run was making and how many times that step has now lost its worker.
type rescueCount struct {
	run     int64
	step    int
	rescues int
}

// rescueCounts reads, for the step jobs among jobs, the step each job's
// run is making (one after its last recorded) and counts this rescue:
// the job's metadata keeps the step it was last rescued at and how many
// times, so the count starts again when the run moves on.
func rescueCounts(ctx context.Context, tx pgx.Tx, jobs []*rivertype.JobRow) (map[int64]rescueCount, error) {
	counts := make(map[int64]rescueCount, len(jobs))
	var ids []int64
	for _, job := range jobs {
		var args StepArgs
		if job.Kind != StepKind || json.Unmarshal(job.EncodedArgs, &args) != nil {
			continue
		}
		counts[job.ID] = rescueCount{run: args.RunID, step: args.Step}
		ids = append(ids, args.RunID)
	}
	if len(ids) == 0 {
		return counts, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, steps FROM gb_agent_research_runs WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("error reading the steps of rescued runs: %w", err)
	}
	steps := map[int64]int{}
	var id int64
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { steps[id] = n; return nil }); err != nil {
		return nil, fmt.Errorf("error reading the steps of rescued runs: %w", err)
	}
	for _, job := range jobs {
		c, ok := counts[job.ID]
		if !ok {
			continue
		}
		if n, ok := steps[c.run]; ok {
			c.step = max(c.step, n+1)
		}
		var meta struct {
			Step    int `json:"gb:rescued_step"`
			Rescues int `json:"gb:rescues"`
		}
		_ = json.Unmarshal(job.Metadata, &meta)
		c.rescues = 1
		if meta.Step == c.step {
			c.rescues = meta.Rescues + 1
		}
		counts[job.ID] = c
	}
	return counts, nil
}

// scheduleDue makes scheduled and retryable jobs whose time has come
// available.
func (a *Service) scheduleDue(ctx context.Context, tx pgx.Tx, res *MaintainResult) error {
	for range maintainRounds {
		n, err := scheduleDueJobs(ctx, a.river, tx, maintainBatch)
		if err != nil {
			return err
		}
		res.Scheduled += n
		if n < maintainBatch {
			return nil
		}
	}
	return nil
}

// deleteFinished deletes completed, cancelled and discarded jobs past
// their retention, with River's JobDeleteManyTx.
func (a *Service) deleteFinished(ctx context.Context, tx pgx.Tx, p MaintainParams, res *MaintainResult) error {
	for range maintainRounds {
		now := time.Now().UTC()
		params := river.NewJobDeleteManyParams().First(maintainBatch).
			States(rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded).
			Where(`(state = 'completed' AND finalized_at < @completed_horizon)
				OR (state = 'cancelled' AND finalized_at < @cancelled_horizon)
				OR (state = 'discarded' AND finalized_at < @discarded_horizon)`, river.NamedArgs{
				"completed_horizon": now.Add(-p.CompletedRetention),
				"cancelled_horizon": now.Add(-p.CancelledRetention),
				"discarded_horizon": now.Add(-p.DiscardedRetention),
			})
		deleted, err := a.river.JobDeleteManyTx(ctx, tx, params)
		if err != nil {
			return fmt.Errorf("error deleting finished jobs: %w", err)
		}
		res.Deleted += len(deleted.Jobs)
		if len(deleted.Jobs) < maintainBatch {
			return nil
		}
	}
	return nil
}
