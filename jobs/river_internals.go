package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// This file holds every use of River that its public API does not serve:
// the riverdriver executor methods River marks "API is not stable. DO NOT
// USE." and the statements that write river_job directly. The rest of the
// package goes through river.Client (JobListTx, JobDeleteManyTx, Insert…).
// Each function says why no public API serves it. All were checked against
// riverCheckedVersion, and river_internals_test.go fails when River's
// behaviour under them changes, or when River is upgraded at all, so that
// they are checked again.

// riverCheckedVersion is the River version this file was checked against.
const riverCheckedVersion = "v0.51.2"

// riverDB is what the statements on river_job need: a pool or a
// transaction.
type riverDB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// rescuedJob is how Maintain settles one running job whose worker is gone.
type rescuedJob struct {
	ID          int64
	Error       []byte     // an encoded rivertype.AttemptError, appended to the job's errors
	FinalizedAt *time.Time // set for cancelled and discarded jobs
	ScheduledAt time.Time
	State       rivertype.JobState
	// Step and Rescues, for a step job, are the step its run was making
	// and how many times that step has lost its worker, with this time.
	Step    int
	Rescues int
}

// rescueRunning settles running jobs whose worker is gone, in tx, with
// River's JobRescueMany: each job takes the given state, scheduled_at and
// finalized_at and its error is appended; only jobs still running that
// started before horizon change. A job put back also gets back the attempt
// its lost run took (its worker's death is not its failure), and its
// metadata keeps the step it was rescued at and how many times
// (gb:rescued_step, gb:rescues), as its next rescue counts them.
//
// No public API serves it: Client.JobRetryTx and JobCancelTx leave running
// jobs running, and River's own rescuer runs only in the elected leader of a
// started client, which a serverless deployment never keeps alive (a drain
// stops its client; Maintain starts none). Tested by
// TestRiverRescueSettlesOnlyStuckRunningJobs.
func rescueRunning(ctx context.Context, rc *river.Client[pgx.Tx], tx pgx.Tx, jobs []rescuedJob, horizon time.Time) error {
	if err := giveBackAttempts(ctx, tx, jobs, horizon); err != nil {
		return err
	}
	params := &riverdriver.JobRescueManyParams{StuckHorizon: horizon}
	for _, j := range jobs {
		params.ID = append(params.ID, j.ID)
		params.Error = append(params.Error, j.Error)
		params.FinalizedAt = append(params.FinalizedAt, j.FinalizedAt)
		params.ScheduledAt = append(params.ScheduledAt, j.ScheduledAt)
		params.State = append(params.State, string(j.State))
	}
	if _, err := rc.Driver().UnwrapExecutor(tx).JobRescueMany(ctx, params); err != nil {
		return fmt.Errorf("error rescuing stuck jobs: %w", err)
	}
	return nil
}

// giveBackAttempts is rescueRunning's first statement: for each step job
// put back (not cancelled or discarded) still running since before horizon,
// the attempt River counted when it fetched the job is given back, as
// River's own snooze does, and the rescue is recorded in its metadata.
func giveBackAttempts(ctx context.Context, tx pgx.Tx, jobs []rescuedJob, horizon time.Time) error {
	var ids []int64
	var steps, rescues []int
	for _, j := range jobs {
		if j.Step > 0 && (j.State == rivertype.JobStateAvailable || j.State == rivertype.JobStateRetryable) {
			ids, steps, rescues = append(ids, j.ID), append(steps, j.Step), append(rescues, j.Rescues)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE river_job j
		SET attempt = greatest(j.attempt - 1, 0),
		    metadata = j.metadata || jsonb_build_object('gb:rescued_step', r.step, 'gb:rescues', r.rescues)
		FROM (SELECT unnest($1::bigint[]) AS id, unnest($2::int[]) AS step, unnest($3::int[]) AS rescues) r
		WHERE j.id = r.id AND j.state = 'running' AND j.attempted_at < $4`, ids, steps, rescues, horizon)
	if err != nil {
		return fmt.Errorf("error giving rescued jobs back their attempts: %w", err)
	}
	return nil
}

// scheduleDueJobs makes at most limit scheduled and retryable jobs whose
// time has come available, in tx, with River's JobSchedule (which also
// discards a unique job that would conflict with another), and returns how
// many it moved.
//
// No public API serves it: River's scheduler runs only in the elected
// leader of a started client, and Client.JobRetryTx would ignore a job's
// scheduled_at, raise the max_attempts of an exhausted job and skip the
// unique-key checks. Tested by TestRiverScheduleMakesOnlyDueJobsAvailable.
func scheduleDueJobs(ctx context.Context, rc *river.Client[pgx.Tx], tx pgx.Tx, limit int) (int, error) {
	now := time.Now().UTC()
	done, err := rc.Driver().UnwrapExecutor(tx).JobSchedule(ctx, &riverdriver.JobScheduleParams{Max: limit, Now: &now})
	if err != nil {
		return 0, fmt.Errorf("error scheduling due jobs: %w", err)
	}
	return len(done), nil
}

// heldJob is a job a drain's client was running when it started
// cancelling, with what it had spent then.
type heldJob struct {
	ID      int64
	Attempt int
	Errors  int
}

// putBackCancelled makes the held jobs available again as they were
// before the client ran them: a job still marked running by clientID, or
// one River settled as failed (retryable, available with a new error, or
// discarded) at the attempt it had, gets that attempt and that error taken
// back. A job River already put back, or that another worker has taken
// since, is left alone. It returns how many jobs it changed.
//
// No public API serves it: nothing in River takes back an attempt or an
// error, and JobRetryTx leaves running jobs alone. River (since v0.44)
// does it itself for a job whose work returns the stopping client's
// cancellation (TestRiverRestoresAJobItsStoppingClientCancels), and gb's
// step and webhook workers snooze when interrupted; but a job whose work
// answers the cancellation with another error, or panics, is charged an
// attempt and an error (TestRiverChargesAJobThatAnswersAStopWithAnotherError),
// and that is what this gives back.
func putBackCancelled(ctx context.Context, db riverDB, clientID string, held []heldJob) (int, error) {
	ids, attempts, nerrs := make([]int64, len(held)), make([]int32, len(held)), make([]int32, len(held))
	for i, h := range held {
		ids[i], attempts[i], nerrs[i] = h.ID, int32(h.Attempt), int32(h.Errors)
	}
	tag, err := db.Exec(ctx, `WITH held AS (
			SELECT * FROM unnest($1::bigint[], $2::int[], $3::int[]) AS h(id, attempt, nerr))
		UPDATE river_job j SET
			state = 'available',
			attempt = greatest(j.attempt - 1, 0),
			errors = CASE WHEN coalesce(array_length(j.errors, 1), 0) > h.nerr THEN j.errors[1:h.nerr] ELSE j.errors END,
			finalized_at = NULL,
			scheduled_at = now()
		FROM held h
		WHERE j.id = h.id AND j.attempt = h.attempt AND (
			(j.state = 'running' AND j.attempted_by[cardinality(j.attempted_by)] = $4)
			OR (j.state IN ('retryable', 'available', 'discarded') AND coalesce(array_length(j.errors, 1), 0) > h.nerr))`,
		ids, attempts, nerrs, clientID)
	if err != nil {
		return 0, fmt.Errorf("error putting cancelled jobs back: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// queueFirstSQL queues protected jobs ahead of every step job, whose time
// is their tree's start (treeOrder): River takes the earliest first.
const queueFirstSQL = `UPDATE river_job SET scheduled_at = 'epoch'
	WHERE id = ANY($1) AND state = 'available' AND coalesce((metadata->>'` + InterruptionsKey + `')::int, 0) >= $2`

// countInterruptionsSQL adds a deadline interruption to the count of each
// job put back in the queue ($1), queues a job that becomes protected
// ($2) ahead of the others, and returns how many jobs it counted.
const countInterruptionsSQL = `WITH counted AS (
		UPDATE river_job SET
			metadata = jsonb_set(metadata, '{` + InterruptionsKey + `}',
				to_jsonb(coalesce((metadata->>'` + InterruptionsKey + `')::int, 0) + 1)),
			scheduled_at = CASE WHEN state = 'available'
				AND coalesce((metadata->>'` + InterruptionsKey + `')::int, 0) + 1 >= $2
				THEN 'epoch' ELSE scheduled_at END
		WHERE id = ANY($1) AND state IN ('available', 'retryable', 'scheduled')
		RETURNING 1)
	SELECT count(*) FROM counted`

// queueFirst queues the protected jobs among ids (deadline.go) ahead of
// the others.
//
// No public API serves it: none sets a queued job's scheduled_at or
// priority (JobRetryTx sets scheduled_at to now only when it is in the
// future). It relies on River fetching available jobs by priority, then
// scheduled_at, then id (TestRiverFetchesTheEarliestScheduledFirst).
func queueFirst(ctx context.Context, db riverDB, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, queueFirstSQL, ids, ProtectAfter); err != nil {
		return fmt.Errorf("error queueing protected jobs first: %w", err)
	}
	return nil
}

// countWaiting returns how many of the jobs ids wait in the queue; with
// count set, it adds a deadline interruption to each one's count in its
// metadata (InterruptionsKey) and queues first those that become protected.
//
// No public API serves it: river.MetadataSet works only inside a running
// job's work and Client.JobUpdateTx sets only a job's output. It relies on
// River keeping the metadata keys it does not own, as it does when it
// fetches, snoozes and retries a job (TestDrainProtectsAJobInterruptedThreeTimes),
// and on the fetch order queueFirst relies on.
func countWaiting(ctx context.Context, db riverDB, ids []int64, count bool) (int, error) {
	var waiting int
	var err error
	if count {
		err = db.QueryRow(ctx, countInterruptionsSQL, ids, ProtectAfter).Scan(&waiting)
	} else {
		err = db.QueryRow(ctx, `SELECT count(*) FROM river_job
			WHERE id = ANY($1) AND state IN ('available', 'retryable', 'scheduled')`, ids).Scan(&waiting)
	}
	if err != nil {
		return 0, fmt.Errorf("error counting cancelled jobs: %w", err)
	}
	return waiting, nil
}

// wakeProviderWaitsSQL makes the step jobs of the runs waiting for model
// $1 (state waiting_provider) due now, each at its tree's start, so that
// River takes the oldest tree's first (treeOrder).
const wakeProviderWaitsSQL = `UPDATE river_job j SET
		scheduled_at = least(coalesce((j.args->>'tree')::timestamptz, now()), now())
	FROM gb_agent_research_runs r
	WHERE j.state = 'scheduled' AND j.kind = '` + StepKind + `' AND r.id = (j.args->>'run_id')::bigint
		AND r.ended_at IS NULL AND r.state = '` + StateWaitingProvider + `' AND r.provider_wait->>'model' = $1`

// wakeProviderWaits makes the snoozed step jobs of the runs waiting for a
// model's provider due at once, when its breaker closes, and returns how
// many; the maintenance pass makes them available (scheduleDueJobs) and
// the rate limiter lets them through at its pace.
//
// No public API serves it: none sets a scheduled job's scheduled_at
// (JobRetryTx would make it available at now, losing its tree's order).
// It relies on the fetch order queueFirst relies on.
func wakeProviderWaits(ctx context.Context, db riverDB, model string) (int, error) {
	tag, err := db.Exec(ctx, wakeProviderWaitsSQL, model)
	if err != nil {
		return 0, fmt.Errorf("error waking the steps waiting for %s: %w", model, err)
	}
	return int(tag.RowsAffected()), nil
}

// queueCancelRunJobs queues on b the cancellation of the unfinished jobs
// of the given kinds of runs but the job self, found through the index on
// their run (runJobSQL), in the one statement cancelRunJobsSQL. A job that
// is not running is cancelled there as River's JobCancelTx cancels it:
// state cancelled, finalized_at now, metadata cancel_attempted_at. The
// ids of the running ones are there once b is sent, for cancelJobIDs:
// River's JobCancelTx has their client cancel their work.
//
// No public API serves it: Client.JobCancelTx cancels one job a round trip
// (each under the tree's lock here) and sends River's clients a
// notification for each, which only the client of a running job acts on.
// Tested by TestRiverCancelInABatchAsRiverCancels.
func queueCancelRunJobs(b *pgx.Batch, kinds []string, runIDs []int64, self int64) *[]int64 {
	running := new([]int64)
	b.Queue(cancelRunJobsSQL, kinds, runIDs, self).Query(func(rows pgx.Rows) error {
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("error cancelling the jobs of runs %v: %w", runIDs, err)
		}
		*running = ids
		return nil
	})
	return running
}

// cancelRunJobsSQL is queueCancelRunJobs's statement: the jobs of kinds
// $1 of runs $2 but job $3, locked; those not running cancelled; the ids
// of those running returned.
var cancelRunJobsSQL = `WITH found AS (
		SELECT j.id, j.state FROM unnest($2::bigint[]) AS r(id)
		CROSS JOIN LATERAL (SELECT j.id, j.state FROM river_job j
			WHERE ` + runJobSQL("j", "r.id") + ` AND j.kind = ANY($1) AND j.finalized_at IS NULL AND j.id <> $3
			FOR UPDATE) j),
	cancelled AS (
		UPDATE river_job SET state = 'cancelled', finalized_at = now(),
			metadata = jsonb_set(metadata, '{cancel_attempted_at}', to_jsonb(now()), true)
		FROM found WHERE river_job.id = found.id AND found.state <> 'running')
	SELECT id FROM found WHERE state = 'running'`
