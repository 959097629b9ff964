package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file parks a run whose read_messages waits longer than a step may
// block (MaxBlockingWait), with the Postgres messenger: no job runs for it,
// no worker slot and no connection is held while it waits. The parked run
// resumes exactly once, by whichever comes first under the tree's root
// lock:
//
//   - a message: every send to a parked reader (send_message, send_input,
//     SendFromUser) resumes it in the send's own transaction and cancels
//     its wake job;
//   - its deadline: the wake job, scheduled at wait_until in the parking
//     transaction, resumes it if it is still parked on that same call;
//   - the maintenance pass, for a reader whose wake job is gone.
//
// Each resume flips the run from waiting to working under the root lock,
// so whatever comes second finds it working and does nothing. The resumed
// step answers the parked call (resumeResult) with the unread messages up
// to wait_read_to, fixed at the resume, and its commit marks them read.

// MessageWakeKind is the River job kind of a parked call's deadline: a
// message wait's, or a question's to the owner (owner_wait.go).
const MessageWakeKind = "gb_message_wake"

// MessageWakeArgs are the arguments of a wake job: the run and the parked
// call it ends, named by the step that parked and the call's id, so that a
// job left from an earlier wait of the same run never ends a later one.
type MessageWakeArgs struct {
	RunID  int64  `json:"run_id"`
	Step   int    `json:"step"`
	CallID string `json:"call_id"`
}

// Kind implements river.JobArgs.
func (MessageWakeArgs) Kind() string { return MessageWakeKind }

// How a message wait ended (the data of its resumed event).
const (
	resumedByMessage  = "message"
	resumedByDeadline = "deadline"
)

// addWakeWorker registers the worker of wake jobs; New calls it with the
// other workers.
func addWakeWorker(workers *river.Workers, a *Service) {
	river.AddWorker(workers, &wakeWorker{agent: a})
}

// wakeWorker is the River worker of wake jobs.
type wakeWorker struct {
	river.WorkerDefaults[MessageWakeArgs]
	agent *Service
}

// Work resumes the run at its deadline if it is still parked on the call
// the job was scheduled for, and completes the job in the same transaction.
func (w *wakeWorker) Work(ctx context.Context, job *river.Job[MessageWakeArgs]) error {
	return pgx.BeginFunc(ctx, w.agent.pool, func(tx pgx.Tx) error {
		if err := w.agent.wakeAtDeadline(ctx, tx, job.Args); err != nil {
			return err
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("error completing wake job %d: %w", job.ID, err)
		}
		return nil
	})
}

// wakeAtDeadline resumes a run parked on the job's call, a reader or an
// asker; a run that was deleted, ended, resumed by a message or an answer,
// or parked again since is left alone.
func (a *Service) wakeAtDeadline(ctx context.Context, tx pgx.Tx, args MessageWakeArgs) error {
	run, err := a.lockTreeByID(ctx, tx, args.RunID)
	if err != nil || run == nil {
		return err
	}
	if !parkedOn(run, args) {
		a.logger.DebugContext(ctx, "wake job found its wait over", "run_id", run.ID, "step", args.Step,
			"status", run.Status)
		return nil
	}
	return a.resumeAtDeadline(ctx, tx, run)
}

// resumeAtDeadline resumes a run parked on a call whose deadline has
// passed, with its tree locked: a reader with the messages there are, an
// asker without an answer.
func (a *Service) resumeAtDeadline(ctx context.Context, tx pgx.Tx, run *Run) error {
	if run.waitsForOwner() {
		return a.resumeAnswer(ctx, tx, run, nil, false)
	}
	return a.resumeMessageWait(ctx, tx, run, resumedByDeadline, false)
}

// parkedOn reports whether run is parked on the call of args.
func parkedOn(run *Run, args MessageWakeArgs) bool {
	return parkedWithDeadline(run) && run.Steps == args.Step && run.WaitCallID == args.CallID
}

// parkedWithDeadline reports whether run is parked on a call that its
// deadline ends: read_messages or ask_owner.
func parkedWithDeadline(run *Run) bool {
	return run.Status == StatusWaiting && (run.waitsForMessages() || run.waitsForOwner())
}

// parkedForMessages reports whether run is parked on a read_messages wait.
func parkedForMessages(run *Run) bool {
	return run.Status == StatusWaiting && run.waitsForMessages()
}

// enqueueWake schedules the wake job of a parked call at its deadline.
func (a *Service) enqueueWake(ctx context.Context, tx pgx.Tx, args MessageWakeArgs, at time.Time) error {
	if _, err := a.river.InsertTx(ctx, tx, args, &river.InsertOpts{ScheduledAt: at, Queue: a.config.Queue}); err != nil {
		return fmt.Errorf("error scheduling the wake of run %d: %w", args.RunID, err)
	}
	return nil
}

// parkForMessages parks the run on its read_messages call until a message
// comes or the wait ends, in the step's transaction, which holds the root
// lock and has marked read what the step delivered. A message already
// unread then (a parent's input sent after the step read its inputs)
// resumes it at once.
func (a *Service) parkForMessages(ctx context.Context, tx pgx.Tx, run *Run, p *parkRequest) error {
	var step int
	err := tx.QueryRow(ctx, `UPDATE gb_agent_research_runs
		SET status = 'waiting', state = 'waiting', wait_names = '{}', wait_call_id = $2,
		    wait_kind = 'messages', wait_until = $3, wait_read_to = 0, updated_at = now()
		WHERE id = $1 RETURNING steps`, run.ID, p.callID, p.until).Scan(&step)
	if err != nil {
		return fmt.Errorf("error parking run %d: %w", run.ID, err)
	}
	run.Status, run.State, run.Steps = StatusWaiting, StateWaiting, step
	run.WaitCallID, run.WaitKind, run.WaitUntil, run.WaitReadTo = p.callID, waitMessages, &p.until, 0
	if err := addState(ctx, tx, run.ID, StateWaiting, step); err != nil {
		return err
	}
	if err := addEvent(ctx, tx, run, EventWaiting, map[string]any{"for": waitMessages, "until": p.until.UTC()}); err != nil {
		return err
	}
	var unread bool
	// Whether a message came that the step did not deliver.
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM gb_messages WHERE to_id = $1 AND read_at IS NULL)`,
		run.ID).Scan(&unread); err != nil {
		return fmt.Errorf("error checking the inbox of run %d: %w", run.ID, err)
	}
	if unread {
		return a.resumeMessageWait(ctx, tx, run, resumedByMessage, false)
	}
	return a.enqueueWake(ctx, tx, MessageWakeArgs{RunID: run.ID, Step: step, CallID: p.callID}, p.until)
}

// wakeReader resumes the receiver of a message just sent in tx, when it is
// parked on read_messages; to is the receiver as read under the tree's
// root lock, which tx holds.
func (a *Service) wakeReader(ctx context.Context, tx pgx.Tx, to *Run) error {
	if !parkedForMessages(to) {
		return nil
	}
	run, err := lockRun(ctx, tx, to.ID)
	if err != nil {
		return err
	}
	if !parkedForMessages(run) {
		return nil
	}
	return a.resumeMessageWait(ctx, tx, run, resumedByMessage, true)
}

// resumeMessageWait makes a reader parked on read_messages go on, in a
// transaction that holds its tree's root lock: it fixes the messages its
// next step delivers (wait_read_to), marks it working, records the resume
// and inserts its next step job; cancelWake cancels its wake job, which
// a message made useless.
func (a *Service) resumeMessageWait(ctx context.Context, tx pgx.Tx, run *Run, by string, cancelWake bool) error {
	var step int
	err := tx.QueryRow(ctx, `UPDATE gb_agent_research_runs
		SET status = 'working', state = 'thinking', updated_at = now(),
		    wait_read_to = (SELECT coalesce(max(id), 0) FROM gb_messages WHERE to_id = $1 AND read_at IS NULL)
		WHERE id = $1 AND status = 'waiting' AND wait_kind = 'messages' AND wait_call_id <> ''
		RETURNING steps`, run.ID).Scan(&step)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // not parked on messages: nothing to resume
	}
	if err != nil {
		return fmt.Errorf("error resuming run %d: %w", run.ID, err)
	}
	run.Status, run.State = StatusWorking, StateThinking
	if err := addState(ctx, tx, run.ID, StateThinking, step+1); err != nil {
		return err
	}
	if err := addEvent(ctx, tx, run, EventResumed, map[string]any{"by": by}); err != nil {
		return err
	}
	if cancelWake {
		if err := a.cancelJobsOf(ctx, tx, []string{MessageWakeKind}, []int64{run.ID}, 0); err != nil {
			return err
		}
	}
	return a.enqueueStep(ctx, tx, run, step+1)
}

// messageWaitResult is read_messages' answer to a resumed message wait:
// the unread messages up to the bound the resume fixed, oldest first, and
// their ids, which the step's commit marks read. Nothing is marked here,
// so a step that does not commit delivers them again. The parent's inputs
// are left out: the step gives them to the model on their own.
func (a *Service) messageWaitResult(ctx context.Context, db DB, run *Run) (llm.Message, []int64, error) {
	rows, err := db.Query(ctx, `SELECT id, from_id, from_name, text FROM gb_messages
		WHERE to_id = $1 AND read_at IS NULL AND id <= $2 AND from_id <> $3 ORDER BY id`,
		run.ID, run.WaitReadTo, parentOf(run))
	if err != nil {
		return llm.Message{}, nil, fmt.Errorf("error reading the messages of run %d: %w", run.ID, err)
	}
	msgs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[inboxMessage])
	if err != nil {
		return llm.Message{}, nil, fmt.Errorf("error reading the messages of run %d: %w", run.ID, err)
	}
	ids := make([]int64, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return llm.Message{Role: llm.RoleTool, ToolCallID: run.WaitCallID, Name: toolReadMessages,
		Content: a.formatMessages(msgs)}, ids, nil
}

// parentOf is the id of the run's parent, or -1 for a root, as a value no
// sender id matches.
func parentOf(run *Run) int64 {
	if run.ParentID == nil {
		return -1
	}
	return *run.ParentID
}
