package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// endRun ends a run in the caller's transaction, which holds the tree's
// root lock: its working descendants end first (failed, cancelled), their
// jobs are cancelled (a running one has its context cancelled, so that its
// model call stops) and their inboxes closed, then the run itself ends the
// same way (a root's webhook delivery inserted with it), and a parent
// parked on it may resume. self is the job of the step that ends its own
// run, which completes itself; 0 when another ends it.
func (a *Service) endRun(ctx context.Context, tx pgx.Tx, run *Run, status, report, errText string, self int64) error {
	return a.endRunWith(ctx, tx, run, status, report, errText, self, nil)
}

// endRunWith is endRun for a step's transaction that read the tree with
// its lock and holds back writes to send with the end (ending.go); end
// may be nil.
func (a *Service) endRunWith(ctx context.Context, tx pgx.Tx, run *Run, status, report, errText string, self int64,
	end *ending) error {
	if err := a.cancelDescendants(ctx, tx, run, CancelledByParent, end); err != nil {
		return err
	}
	report = strings.ReplaceAll(report, "\x00", "") // text columns refuse NUL
	if status == StatusSucceeded && strings.TrimSpace(report) == "" {
		// succeeded always carries a report: an end that has none fails.
		if err := end.flush(ctx, tx); err != nil {
			return err
		}
		why, err := withoutReport(ctx, tx, run)
		if err != nil {
			return err
		}
		status, report, errText = StatusFailed, "", why
	}
	state, kind := StateDone, EventCompleted
	switch status {
	case StatusFailed:
		state, kind = StateFailed, EventFailed
	case StatusTimedOut:
		state, kind = StateTimedOut, EventTimedOut
	}
	// The run's end, its state and its event go in one round trip.
	ev, err := eventArgs(run, kind, map[string]any{"error": errText, "steps": run.Steps})
	if err != nil {
		return err
	}
	b := end.batch()
	b.Queue(`UPDATE gb_agent_research_runs
		SET status = $2, state = $3, report = $4, error = $5, ended_at = clock_timestamp(), updated_at = now(),
		    wait_names = '{}', wait_call_id = '', wait_until = NULL
		WHERE id = $1`, run.ID, status, state, report, errText)
	b.Queue(addStateSQL, stateArgs(run.ID, state, run.Steps))
	b.Queue(addEventSQL, ev...)
	// A root's webhook is inserted with its end, once (webhook_enqueue.go).
	hook := queueEndWebhook(b, run, status, errText)
	running := queueCancelRunJobs(b, []string{StepKind, TimeoutKind, MessageWakeKind}, []int64{run.ID}, self)
	inboxClosed := a.queueCloseInbox(b, run.ID)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("error ending run %d: %w", run.ID, err)
	}
	end.sent()
	if err := a.insertWebhookJob(ctx, tx, hook); err != nil {
		return err
	}
	if err := a.cancelJobIDs(ctx, tx, *running); err != nil {
		return err
	}
	if err := a.endRunSpans(ctx, tx, []*Run{run}, status, errText); err != nil {
		return err
	}
	if !inboxClosed {
		if err := a.closeInbox(ctx, tx, run.ID); err != nil {
			return err
		}
	}
	run.Status = status
	if run.ParentID == nil {
		return nil
	}
	if end != nil && end.tree != nil {
		return a.maybeResumeAfter(ctx, tx, run, end.tree)
	}
	return a.maybeResume(ctx, tx, *run.ParentID)
}

// cancelDescendants ends every descendant of a run that is still working,
// deepest first so that no parent ends before its sub-agents. It reads the
// run's tree by its root (a tree is small) and walks the parent links
// here: a recursive query over parent_id planned on a young table's stale
// statistics scanned the whole index at every level.
func (a *Service) cancelDescendants(ctx context.Context, tx pgx.Tx, run *Run, errText string, end *ending) error {
	tree, err := end.runs(ctx, tx, run)
	if err != nil {
		return err
	}
	victims := descendants(tree, run.ID)
	if len(victims) == 0 {
		return nil
	}
	// The writes held back (the step that ends the run) come before the
	// ends they cause, in the tree's timeline too.
	if err := end.flush(ctx, tx); err != nil {
		return err
	}
	ids := make([]int64, len(victims))
	for i, v := range victims {
		ids[i] = v.ID
		// End the victim as failed, with errText and no wait left.
		_, err := tx.Exec(ctx, `UPDATE gb_agent_research_runs
			SET status = 'failed', state = 'failed', error = $2, ended_at = clock_timestamp(), updated_at = now(),
			    wait_names = '{}', wait_call_id = '', wait_until = NULL
			WHERE id = $1`, v.ID, errText)
		if err != nil {
			return fmt.Errorf("error cancelling run %d: %w", v.ID, err)
		}
		if err := addState(ctx, tx, v.ID, StateFailed, v.Steps); err != nil {
			return err
		}
		if err := a.closeInbox(ctx, tx, v.ID); err != nil {
			return err
		}
		if err := addEvent(ctx, tx, v, EventCancelled, map[string]any{"error": errText}); err != nil {
			return err
		}
	}
	if err := a.endRunSpans(ctx, tx, victims, StatusFailed, errText); err != nil {
		return err
	}
	return a.cancelJobs(ctx, tx, ids, 0)
}

// cancelJobs cancels the unfinished step, timeout and wake jobs of runs
// but the job self: queued ones never run, and a running one has its
// context cancelled through River (its commit would find the run ended
// anyway).
func (a *Service) cancelJobs(ctx context.Context, tx pgx.Tx, runIDs []int64, self int64) error {
	return a.cancelJobsOf(ctx, tx, []string{StepKind, TimeoutKind, MessageWakeKind}, runIDs, self)
}

// cancelJobsOf cancels the unfinished jobs of the given kinds of runs but
// the job self. It finds them through the index on their run (runJobSQL),
// since it runs under the tree's lock.
func (a *Service) cancelJobsOf(ctx context.Context, tx pgx.Tx, kinds []string, runIDs []int64, self int64) error {
	b := &pgx.Batch{}
	running := queueCancelRunJobs(b, kinds, runIDs, self)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return a.cancelJobIDs(ctx, tx, *running)
}

// cancelJobIDs cancels the jobs ids in tx through River, which tells the
// client running one to stop it (queueCancelRunJobs cancels the others in
// its batch).
func (a *Service) cancelJobIDs(ctx context.Context, tx pgx.Tx, ids []int64) error {
	for _, id := range ids {
		if _, err := a.river.JobCancelTx(ctx, tx, id); err != nil {
			return fmt.Errorf("error cancelling job %d: %w", id, err)
		}
	}
	return nil
}

// descendants are the runs of tree below the run id that have not ended,
// in the order of tree.
func descendants(tree []*Run, id int64) []*Run {
	parent := make(map[int64]int64, len(tree))
	for _, r := range tree {
		if r.ParentID != nil {
			parent[r.ID] = *r.ParentID
		}
	}
	below := func(r *Run) bool {
		for p, ok := parent[r.ID]; ok; p, ok = parent[p] {
			if p == id {
				return true
			}
		}
		return false
	}
	var out []*Run
	for _, r := range tree {
		if !r.Ended() && below(r) {
			out = append(out, r)
		}
	}
	return out
}

// noReportError is the error of a run that ended without a report.
const noReportError = "the agent ended without writing a report"

// withoutReport is the error of a run that ends without a report: that,
// and for a run whose sub-agents did not all succeed, what became of
// each of those, so that its owner sees why there was nothing to write.
func withoutReport(ctx context.Context, db DB, run *Run) (string, error) {
	kids, err := children(ctx, db, run.ID)
	if err != nil {
		return "", err
	}
	var failed []string
	for _, k := range kids {
		if k.Status != StatusSucceeded {
			failed = append(failed, fmt.Sprintf("%s %s: %s", k.Name, k.Status, oneLine(k.Error, 200)))
		}
	}
	if len(failed) == 0 {
		return noReportError, nil
	}
	return fmt.Sprintf("%s; %d of its %d sub-agents did not succeed: %s", noReportError, len(failed), len(kids),
		oneLine(strings.Join(failed, "; "), 1500)), nil
}
