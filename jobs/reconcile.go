package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the reconciler of the maintenance pass. At every moment a
// run is ended, parked with a resume path, or has an unfinished step job;
// every transaction of the project keeps that true, but a job can still end
// outside them (River discards a job whose last attempt could not even end
// its run, an operator deletes one). The reconciler finds the runs that lost
// their way forward and gives it back, logging each repair and recording it
// on the tree's timeline.

// reconcileBatch bounds the runs one pass repairs; resumeMargin is how
// long after its last sub-agent ended a parked parent may go unresumed,
// and repairMargin how long a going run may be seen with no unfinished
// step job before it gets one. Every transaction that finishes a run's
// step job inserts its next one or ends or parks the run, so such a run
// lost its job for good; the margin only keeps a pass from racing a
// commit it cannot see yet. It is not the rescue horizon: that one is for
// jobs still marked running, whose worker may yet finish them.
const (
	reconcileBatch = 100
	resumeMargin   = 5 * time.Second
	repairMargin   = 2 * time.Second
)

// unfinishedJobSQL is true when the run r has a step job not finalized.
var unfinishedJobSQL = `EXISTS (SELECT 1 FROM river_job j
	WHERE ` + runJobSQL("j", "r.id") + ` AND j.kind = '` + StepKind + `' AND j.finalized_at IS NULL)`

// reconcile repairs runs with no way forward: working or queued runs with
// no unfinished job for longer than repairMargin, parked parents whose
// awaited sub-agents have all ended but that were not resumed, and readers
// parked on read_messages or askers parked on ask_owner whose wake job is
// gone.
func (a *Service) reconcile(ctx context.Context, tx pgx.Tx, res *MaintainResult) error {
	// Going runs with no unfinished step job, whose last one finished (with
	// none: which last changed) over repairMargin ago.
	rows, err := tx.Query(ctx, `SELECT r.id FROM gb_agent_research_runs r
		WHERE r.status IN ('queued', 'working') AND NOT `+unfinishedJobSQL+`
		  AND coalesce((SELECT max(j.finalized_at) FROM river_job j
		                WHERE `+runJobSQL("j", "r.id")+` AND j.kind = $1), r.updated_at)
		      < now() - $2 * interval '1 millisecond'
		ORDER BY r.id LIMIT $3`, StepKind, repairMargin.Milliseconds(), reconcileBatch)
	if err != nil {
		return fmt.Errorf("error finding runs with no job: %w", err)
	}
	stranded, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("error finding runs with no job: %w", err)
	}
	for _, id := range stranded {
		if err := a.repairRun(ctx, tx, id, res); err != nil {
			return err
		}
	}
	// Parents parked on sub-agents that have all ended, the last over
	// resumeMargin ago, with no unfinished step job.
	rows, err = tx.Query(ctx, `SELECT r.id FROM gb_agent_research_runs r
		WHERE r.status = 'waiting' AND r.wait_kind = 'subagents' AND NOT `+unfinishedJobSQL+`
		  AND NOT EXISTS (SELECT 1 FROM gb_agent_research_runs c WHERE c.parent_id = r.id
		                  AND c.status NOT IN ('succeeded', 'failed', 'timed_out')
		                  AND (cardinality(r.wait_names) = 0 OR c.name = ANY(r.wait_names)))
		  AND coalesce((SELECT max(c.ended_at) FROM gb_agent_research_runs c WHERE c.parent_id = r.id), r.updated_at)
		      < now() - $1 * interval '1 millisecond'
		ORDER BY r.id LIMIT $2`, resumeMargin.Milliseconds(), reconcileBatch)
	if err != nil {
		return fmt.Errorf("error finding parked runs to resume: %w", err)
	}
	parked, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("error finding parked runs to resume: %w", err)
	}
	for _, id := range parked {
		if err := a.repairResume(ctx, tx, id, res); err != nil {
			return err
		}
	}
	if err := a.reconcileReaders(ctx, tx, res); err != nil {
		return err
	}
	lost, stale, err := settleLostCalls(ctx, tx)
	if err != nil {
		return err
	}
	if lost > 0 || stale > 0 {
		a.logger.WarnContext(ctx, "settled model calls lost with their workers at their estimates",
			"lost", lost, "unused_capacity", stale)
	}
	res.LostCalls += int(lost)
	return nil
}

// lockForRepair locks the tree of run id and says whether the run still
// needs a repair of the kind asked: status one of statuses and no
// unfinished job.
func (a *Service) lockForRepair(ctx context.Context, tx pgx.Tx, id int64, statuses ...string) (*Run, error) {
	run, err := a.lockTreeByID(ctx, tx, id)
	if err != nil || run == nil { // gone meanwhile: nothing to repair
		return nil, err
	}
	ok := false
	for _, s := range statuses {
		ok = ok || run.Status == s
	}
	var busy bool
	// Whether the run has a step job again, now that its tree is locked.
	if err := tx.QueryRow(ctx, `SELECT `+unfinishedJobSQL+` FROM gb_agent_research_runs r WHERE r.id = $1`, id).Scan(&busy); err != nil {
		return nil, fmt.Errorf("error checking the jobs of run %d: %w", id, err)
	}
	if !ok || busy {
		return nil, nil
	}
	return run, nil
}

// repairRun gives a working run with no job a new step job, or ends it
// when its last job was discarded with no attempt left.
func (a *Service) repairRun(ctx context.Context, tx pgx.Tx, id int64, res *MaintainResult) error {
	run, err := a.lockForRepair(ctx, tx, id, StatusQueued, StatusWorking)
	if err != nil || run == nil {
		return err
	}
	var state, lastErr string
	var attempt, maxAttempts int
	// The run's last step job: what became of it, and its last error.
	err = tx.QueryRow(ctx, `SELECT state::text, attempt, max_attempts, coalesce(errors[cardinality(errors)]->>'error', '')
		FROM river_job j WHERE `+runJobSQL("j", "$1::bigint")+` AND j.kind = $2 ORDER BY j.id DESC LIMIT 1`,
		id, StepKind).Scan(&state, &attempt, &maxAttempts, &lastErr)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("error reading the last job of run %d: %w", id, err)
	}
	if state == "discarded" && attempt >= maxAttempts {
		msg := fmt.Sprintf("step %d's job was lost: it was discarded after %d attempts", run.Steps+1, attempt)
		if lastErr != "" {
			msg += " (last error: " + oneLine(lastErr, 300) + ")"
		}
		return a.endLost(ctx, tx, id, msg, res)
	}
	why := "its step job was " + state
	if state == "" {
		why = "it had no step job"
	}
	a.logger.WarnContext(ctx, "repairing a run with no step job", "run_id", id, "step", run.Steps+1, "why", why)
	if err := a.enqueueStep(ctx, tx, run, run.Steps+1); err != nil {
		return err
	}
	res.Repaired++
	return addEvent(ctx, tx, run, EventRepaired, map[string]any{"action": "new step job", "step": run.Steps + 1, "why": why})
}

// repairResume resumes a parked parent whose awaited sub-agents all ended.
func (a *Service) repairResume(ctx context.Context, tx pgx.Tx, id int64, res *MaintainResult) error {
	run, err := a.lockForRepair(ctx, tx, id, StatusWaiting)
	if err != nil || run == nil || run.WaitKind != waitSubagents {
		return err
	}
	a.logger.WarnContext(ctx, "resuming a parked run that lost its resume", "run_id", id)
	if err := a.maybeResume(ctx, tx, id); err != nil {
		return err
	}
	res.Resumed++
	return addEvent(ctx, tx, run, EventRepaired, map[string]any{"action": "resumed",
		"why": "its awaited sub-agents had all ended but it had no resume job"})
}

// endLost ends a run whose step job was lost with no attempt left, in the
// caller's transaction, with an error that says so.
func (a *Service) endLost(ctx context.Context, tx pgx.Tx, id int64, msg string, res *MaintainResult) error {
	run, err := a.lockTreeByID(ctx, tx, id)
	if err != nil || run == nil || run.Ended() { // deleted or ended: nothing to end
		return err
	}
	a.logger.WarnContext(ctx, "ending a run whose step job was lost", "run_id", id, "error", msg)
	if err := a.endRun(ctx, tx, run, StatusFailed, "", msg, 0); err != nil {
		return err
	}
	res.Lost++
	return addEvent(ctx, tx, run, EventRepaired, map[string]any{"action": "ended", "why": msg})
}

// unfinishedWakeSQL is true when the run r has a wake job not finalized
// for the call it is parked on (a job left from an earlier wait does not
// count: it would find that wait over).
var unfinishedWakeSQL = `EXISTS (SELECT 1 FROM river_job j
	WHERE ` + runJobSQL("j", "r.id") + ` AND (j.args->>'step')::int = r.steps AND j.args->>'call_id' = r.wait_call_id
	  AND j.kind = '` + MessageWakeKind + `' AND j.finalized_at IS NULL)`

// reconcileReaders repairs the runs parked on a call with a deadline
// (readers on read_messages, askers on ask_owner) that have no unfinished
// wake job (River discarded it, an operator deleted it): one past its
// deadline resumes now, any other gets its wake job back. The parking
// transaction inserts the wake job, so a parked run without one has lost
// it.
func (a *Service) reconcileReaders(ctx context.Context, tx pgx.Tx, res *MaintainResult) error {
	rows, err := tx.Query(ctx, `SELECT r.id FROM gb_agent_research_runs r
		WHERE r.status = 'waiting' AND r.wait_kind IN ('messages', 'owner') AND r.wait_call_id <> ''
		  AND NOT `+unfinishedWakeSQL+`
		ORDER BY r.id LIMIT $1`, reconcileBatch)
	if err != nil {
		return fmt.Errorf("error finding parked runs with no wake job: %w", err)
	}
	readers, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("error finding parked runs with no wake job: %w", err)
	}
	for _, id := range readers {
		if err := a.repairReader(ctx, tx, id, res); err != nil {
			return err
		}
	}
	return nil
}

// repairReader gives a parked reader or asker with no wake job its way
// forward back, with its tree locked: a resume when its deadline has
// passed, else a new wake job at the deadline.
func (a *Service) repairReader(ctx context.Context, tx pgx.Tx, id int64, res *MaintainResult) error {
	run, err := a.lockTreeByID(ctx, tx, id)
	if err != nil || run == nil || !parkedWithDeadline(run) {
		return err
	}
	var lost bool
	if err := tx.QueryRow(ctx, `SELECT NOT `+unfinishedWakeSQL+` FROM gb_agent_research_runs r WHERE r.id = $1`,
		id).Scan(&lost); err != nil {
		return fmt.Errorf("error checking the wake job of run %d: %w", id, err)
	}
	if !lost {
		return nil
	}
	what := "messages"
	if run.waitsForOwner() {
		what = "its owner's answer"
	}
	if run.WaitUntil != nil && time.Now().Before(*run.WaitUntil) {
		a.logger.WarnContext(ctx, "scheduling again the lost wake job of a parked run", "run_id", id,
			"wait_kind", run.WaitKind, "until", *run.WaitUntil)
		args := MessageWakeArgs{RunID: id, Step: run.Steps, CallID: run.WaitCallID}
		if err := a.enqueueWake(ctx, tx, args, *run.WaitUntil); err != nil {
			return err
		}
		res.Repaired++
		return addEvent(ctx, tx, run, EventRepaired, map[string]any{"action": "new wake job",
			"why": "it waited for " + what + " with no job to end its wait"})
	}
	a.logger.WarnContext(ctx, "resuming a parked run past its deadline", "run_id", id, "wait_kind", run.WaitKind)
	if err := a.resumeAtDeadline(ctx, tx, run); err != nil {
		return err
	}
	res.Resumed++
	return addEvent(ctx, tx, run, EventRepaired, map[string]any{"action": "resumed",
		"why": "its wait for " + what + " had ended but it had no job to resume it"})
}
