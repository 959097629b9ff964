package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// endRun ends a run in the caller's transaction, which holds the tree's
// root lock: its working descendants end first (failed, cancelled), their
// queued jobs are cancelled and their inboxes closed, then the run itself
// ends, and a parent parked on it may resume.
func (a *Agent) endRun(ctx context.Context, tx pgx.Tx, run *Run, status, report, errText string) error {
	if err := a.cancelDescendants(ctx, tx, run.ID, CancelledByParent); err != nil {
		return err
	}
	report = strings.ReplaceAll(report, "\x00", "") // text columns refuse NUL
	state := StateDone
	if status == StatusFailed {
		state = StateFailed
	}
	_, err := tx.Exec(ctx, `UPDATE gb_agent_research_runs
		SET status = $2, state = $3, report = $4, error = $5, ended_at = clock_timestamp(), updated_at = now(),
		    wait_names = '{}', wait_call_id = ''
		WHERE id = $1`, run.ID, status, state, report, errText)
	if err != nil {
		return fmt.Errorf("error ending run %d: %w", run.ID, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO gb_agent_research_states (run_id, state, step) VALUES ($1, $2, $3)`,
		run.ID, state, run.Steps); err != nil {
		return fmt.Errorf("error recording state: %w", err)
	}
	if err := a.closeInbox(ctx, tx, run.ID); err != nil {
		return err
	}
	if err := a.cancelJobs(ctx, tx, []int64{run.ID}, false); err != nil {
		return err
	}
	kind := EventCompleted
	if status == StatusFailed {
		kind = EventFailed
	}
	if err := addEvent(ctx, tx, run, kind, map[string]any{"error": errText, "steps": run.Steps}); err != nil {
		return err
	}
	run.Status = status
	if run.ParentID != nil {
		return a.maybeResume(ctx, tx, *run.ParentID)
	}
	return nil
}

// cancelDescendants ends every descendant of a run that is still working,
// deepest first so that no parent ends before its sub-agents.
func (a *Agent) cancelDescendants(ctx context.Context, tx pgx.Tx, runID int64, errText string) error {
	victims, err := queryRuns(ctx, tx, `WITH RECURSIVE tree AS (
			SELECT id, 1 AS level FROM gb_agent_research_runs WHERE parent_id = $1
			UNION ALL
			SELECT r.id, t.level + 1 FROM gb_agent_research_runs r JOIN tree t ON r.parent_id = t.id)
		SELECT `+runColumns+` FROM gb_agent_research_runs
		WHERE id IN (SELECT id FROM tree) AND status NOT IN ('succeeded', 'failed')
		ORDER BY depth DESC, id`, runID)
	if err != nil {
		return err
	}
	if len(victims) == 0 {
		return nil
	}
	ids := make([]int64, len(victims))
	for i, v := range victims {
		ids[i] = v.ID
		_, err := tx.Exec(ctx, `UPDATE gb_agent_research_runs
			SET status = 'failed', state = 'failed', error = $2, ended_at = clock_timestamp(), updated_at = now(),
			    wait_names = '{}', wait_call_id = ''
			WHERE id = $1`, v.ID, errText)
		if err != nil {
			return fmt.Errorf("error cancelling run %d: %w", v.ID, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO gb_agent_research_states (run_id, state, step) VALUES ($1, 'failed', $2)`,
			v.ID, v.Steps); err != nil {
			return fmt.Errorf("error recording state: %w", err)
		}
		if err := a.closeInbox(ctx, tx, v.ID); err != nil {
			return err
		}
		if err := addEvent(ctx, tx, v, EventCancelled, map[string]any{"error": errText}); err != nil {
			return err
		}
	}
	return a.cancelJobs(ctx, tx, ids, true)
}

// cancelJobs cancels the unfinished step jobs of runs: queued ones never
// run, and with running set a running one has its context cancelled (its
// commit would find the run ended anyway). A step ending its own run leaves
// running unset: it completes its job itself.
func (a *Agent) cancelJobs(ctx context.Context, tx pgx.Tx, runIDs []int64, running bool) error {
	rows, err := tx.Query(ctx, `SELECT id FROM river_job
		WHERE kind = $1 AND finalized_at IS NULL AND ($3 OR state <> 'running')
		  AND (args->>'run_id')::bigint = ANY($2)`, StepKind, runIDs, running)
	if err != nil {
		return fmt.Errorf("error finding jobs to cancel: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("error finding jobs to cancel: %w", err)
	}
	for _, id := range ids {
		if _, err := a.river.JobCancelTx(ctx, tx, id); err != nil {
			return fmt.Errorf("error cancelling job %d: %w", id, err)
		}
	}
	return nil
}

// budgetExhausted says why the run's tree may not make another model call,
// or "" when it may.
func budgetExhausted(ctx context.Context, db DB, run *Run) (string, error) {
	var maxCost *float64
	var maxTokens *int64
	var cost float64
	var tokens int64
	err := db.QueryRow(ctx, `SELECT r.max_cost_usd::float8, r.max_tokens,
			(SELECT coalesce(sum(cost_usd), 0)::float8 FROM gb_agent_research_runs WHERE root_id = r.id),
			(SELECT coalesce(sum(tokens), 0)::bigint FROM gb_agent_research_runs WHERE root_id = r.id)
		FROM gb_agent_research_runs r WHERE r.id = $1`, run.RootID).Scan(&maxCost, &maxTokens, &cost, &tokens)
	if err != nil {
		return "", fmt.Errorf("error reading budget of tree %d: %w", run.RootID, err)
	}
	if maxCost != nil && *maxCost > 0 && cost >= *maxCost {
		return fmt.Sprintf("budget exhausted: the research has spent $%.4f of its $%.4f", cost, *maxCost), nil
	}
	if maxTokens != nil && *maxTokens > 0 && tokens >= *maxTokens {
		return fmt.Sprintf("budget exhausted: the research has used %d of its %d tokens", tokens, *maxTokens), nil
	}
	return "", nil
}
