package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file parks a root on its ask_owner call the way wait_subagents and
// a long read_messages park a run: status waiting, state input_required,
// no job, no worker slot, no connection, the question on the run and a
// wake job scheduled at its deadline. The root resumes exactly once, by
// whichever comes first under its tree's root lock:
//
//   - its owner's answer (Answer), in the answer's own transaction, which
//     cancels the wake job;
//   - its deadline: the wake job (message_wait.go) resumes it if it is
//     still parked on that same call, without an answer;
//   - the maintenance pass, for an asker whose wake job is gone
//     (reconcile.go).
//
// Each resume flips the root from waiting to working under the lock and
// stores what resumed it (the answer, or NULL for the deadline), so
// whatever comes second finds it working: an answer then is refused with
// ErrNotAsking. The resumed step answers the parked call with it
// (answerResult), the same however often that step is retried.

// Bounds of a research's answer timeout, in seconds: how long each of its
// questions waits for its owner.
const (
	DefaultAnswerTimeoutSeconds = 24 * 60 * 60
	MinAnswerTimeoutSeconds     = 5
	MaxAnswerTimeoutSeconds     = 7 * 24 * 60 * 60
)

// NoAnswerNote is the result of an ask_owner call whose deadline came
// before an answer.
const NoAnswerNote = "No answer came: go on with your best judgement."

// How a question ended (the data of its answered event).
const (
	answeredByOwner    = "owner"
	answeredByDeadline = "deadline"
)

// ErrNotAsking is returned for an answer to a run that is not waiting for
// one; errors wrapping it say what the run is doing instead.
var ErrNotAsking = errors.New("this research is not waiting for an answer")

// checkAsk checks a start's interactive fields: a timeout within bounds,
// and only for an interactive research.
func (p *StartParams) checkAsk() error {
	switch s := p.AnswerTimeoutSeconds; {
	case s == 0:
		return nil
	case !p.Interactive && !p.ApprovePlan:
		return &FieldError{"answer_timeout_seconds", "applies only to an interactive research or one with approve_plan: " +
			"set interactive to true (or approve_plan), or leave it out"}
	case s < MinAnswerTimeoutSeconds || s > MaxAnswerTimeoutSeconds:
		return &FieldError{"answer_timeout_seconds", fmt.Sprintf("must be %d to %d seconds (7 days), got %d; "+
			"leave it out for %d (24 hours)", MinAnswerTimeoutSeconds, MaxAnswerTimeoutSeconds, s, DefaultAnswerTimeoutSeconds)}
	}
	return nil
}

// parkForOwner parks a root on its ask_owner or propose_plan call until
// its owner's answer or decision, or p.until, in the step's transaction,
// which holds the root lock: the question or the plan goes on the run,
// its wake job is scheduled, and its owner's webhook
// (research.input_required) is inserted.
func (a *Service) parkForOwner(ctx context.Context, tx pgx.Tx, run *Run, p *parkRequest) error {
	var plan *string // text, not bytes: a pool in exec mode would send bytes as bytea
	if p.plan != nil {
		b, err := json.Marshal(p.plan)
		if err != nil {
			return fmt.Errorf("error encoding the plan of run %d: %w", run.ID, err)
		}
		plan = new(string(b))
	}
	var step int
	err := tx.QueryRow(ctx, `UPDATE gb_agent_research_runs
		SET status = 'waiting', state = 'input_required', wait_names = '{}', wait_call_id = $2,
		    wait_kind = 'owner', wait_until = $3, wait_read_to = 0, question = $4, answer = NULL,
		    plan = coalesce($5::jsonb, plan),
		    plan_state = CASE WHEN $5::jsonb IS NULL THEN plan_state ELSE 'proposed' END,
		    plan_note = CASE WHEN $5::jsonb IS NULL THEN plan_note ELSE '' END,
		    plan_call_id = CASE WHEN $5::jsonb IS NULL THEN plan_call_id ELSE $2 END, updated_at = now()
		WHERE id = $1 RETURNING steps`, run.ID, p.callID, p.until, p.question, plan).Scan(&step)
	if err != nil {
		return fmt.Errorf("error parking run %d for its owner: %w", run.ID, err)
	}
	run.Status, run.State, run.Steps = StatusWaiting, StateInputRequired, step
	run.WaitCallID, run.WaitKind, run.WaitUntil = p.callID, waitOwner, &p.until
	run.Question, run.answer = p.question, nil
	if err := addState(ctx, tx, run.ID, StateInputRequired, step); err != nil {
		return err
	}
	kind, data := EventInputRequired, map[string]any{"question": p.question, "deadline": p.until.UTC(), "step": step}
	if p.plan != nil {
		run.planCallID, run.Question = p.callID, ""
		run.Plan = &Plan{State: PlanProposed, Subagents: p.plan, Deadline: &p.until}
		kind, data = EventPlanProposed, map[string]any{"subagents": planNames(p.plan), "deadline": p.until.UTC(), "step": step}
	} else {
		run.AnswerDeadline = &p.until
	}
	if err := addEvent(ctx, tx, run, kind, data); err != nil {
		return err
	}
	if err := a.enqueueWake(ctx, tx, MessageWakeArgs{RunID: run.ID, Step: step, CallID: p.callID}, p.until); err != nil {
		return err
	}
	return a.notifyInputRequired(ctx, tx, run, step, p.callID)
}

// notifyInputRequired inserts, with the parking, the delivery of the
// research.input_required webhook of the question the root asked at step
// (once per question) when the root has a webhook URL.
func (a *Service) notifyInputRequired(ctx context.Context, tx pgx.Tx, run *Run, step int, callID string) error {
	return a.enqueueWebhook(ctx, tx, run.ID, WebhookInputRequired, fmt.Sprintf("input_required:%d:%s", step, callID))
}

// ownerReply is what resumes a root parked for its owner: the answer to
// its question or the decision on its plan; neither for the deadline.
type ownerReply struct {
	answer *string
	plan   *PlanDecision
}

// resumeAnswer makes a root parked on ask_owner or propose_plan go on
// with answer (nil for the deadline), as resumeOwner says.
func (a *Service) resumeAnswer(ctx context.Context, tx pgx.Tx, run *Run, answer *string, cancelWake bool) error {
	return a.resumeOwner(ctx, tx, run, ownerReply{answer: answer}, cancelWake)
}

// resumeOwner makes a root parked on ask_owner or propose_plan go on, in a
// transaction that holds its tree's root lock: it stores what resumed it
// (the answer, nil for the deadline; or where its plan now stands, with
// the approved list and the owner's note), clears the question, records
// the answer or decision and inserts its next step job; cancelWake cancels
// its wake job, which an answer made useless. A run not parked for its
// owner is left alone.
func (a *Service) resumeOwner(ctx context.Context, tx pgx.Tx, run *Run, reply ownerReply, cancelWake bool) error {
	onPlan := run.WaitsForPlan()
	state, note, plan, err := planOutcome(run, reply)
	if err != nil {
		return err
	}
	var step int
	err = tx.QueryRow(ctx, `UPDATE gb_agent_research_runs
		SET status = 'working', state = 'thinking', question = '', answer = $2,
		    plan_state = CASE WHEN $3 = '' THEN plan_state ELSE $3 END,
		    plan_note = CASE WHEN $3 = '' THEN plan_note ELSE $4 END,
		    plan = coalesce($5::jsonb, plan), updated_at = now()
		WHERE id = $1 AND status = 'waiting' AND wait_kind = 'owner' AND wait_call_id <> ''
		RETURNING steps`, run.ID, reply.answer, state, note, planText(plan)).Scan(&step)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // not parked on a question: nothing to resume
	}
	if err != nil {
		return fmt.Errorf("error resuming run %d: %w", run.ID, err)
	}
	run.Status, run.State, run.Question, run.AnswerDeadline, run.answer = StatusWorking, StateThinking, "", nil, reply.answer
	if err := addState(ctx, tx, run.ID, StateThinking, step+1); err != nil {
		return err
	}
	kind, data := EventAnswered, map[string]any{"by": answeredByDeadline}
	switch {
	case onPlan:
		kind, data = EventPlanDecided, map[string]any{"by": answeredByDeadline, "decision": state}
		if reply.plan != nil {
			data["by"] = answeredByOwner
		}
		if err := applyPlanOutcome(run, state, note, plan); err != nil {
			return err
		}
	case reply.answer != nil:
		data = map[string]any{"by": answeredByOwner, "answer": oneLine(*reply.answer, 300)}
	}
	if err := addEvent(ctx, tx, run, kind, data); err != nil {
		return err
	}
	if cancelWake {
		if err := a.cancelJobsOf(ctx, tx, []string{MessageWakeKind}, []int64{run.ID}, 0); err != nil {
			return err
		}
	}
	return a.enqueueStep(ctx, tx, run, step+1)
}

// ownerResult is the result of the parked call in the step its owner (or
// its deadline) resumed: propose_plan's or ask_owner's.
func ownerResult(ctx context.Context, db DB, run *Run) (llm.Message, error) {
	if run.WaitCallID != run.planCallID {
		return answerResult(run), nil
	}
	proposed, err := countProposals(ctx, db, run)
	if err != nil {
		return llm.Message{}, err
	}
	return planResult(run, proposed), nil
}

// answerResult is ask_owner's result in the step a question resumed: the
// owner's answer, or NoAnswerNote when the deadline came first.
func answerResult(run *Run) llm.Message {
	content := NoAnswerNote
	if run.answer != nil {
		content = *run.answer
	}
	return llm.Message{Role: llm.RoleTool, ToolCallID: run.WaitCallID, Name: toolAskOwner, Content: content}
}

// Answer gives the owner's answer to the question a root of theirs waits
// on, and resumes the root with it in the same transaction: its next step
// gets the answer as ask_owner's result. The root resumes once: another
// user's run is ErrNotFound, and a run that is not waiting for an answer
// (answered already, resumed by its deadline, ended, never asked) is an
// error wrapping ErrNotAsking that says why. The answer is 1 to
// MaxAnswerLen characters (a FieldError for text otherwise).
func (a *Service) Answer(ctx context.Context, userID, id int64, text string) (*Run, error) {
	text = strings.TrimSpace(text)
	if p := textProblem(text, MaxAnswerLen); p != "" {
		return nil, &FieldError{"text", p}
	}
	var out *Run
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockOwned(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if !run.WaitsForAnswer() {
			return notAsking(ctx, tx, run)
		}
		if err := a.resumeAnswer(ctx, tx, run, &text, true); err != nil {
			return err
		}
		out, err = GetRun(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// notAsking is the refusal of an answer to run, which waits for none: it
// says what the run does instead, and how its last question ended.
func notAsking(ctx context.Context, db DB, run *Run) error {
	var by string
	err := db.QueryRow(ctx, `SELECT data->>'by' FROM gb_agent_research_events
		WHERE root_id = $1 AND run_id = $2 AND kind = $3 ORDER BY seq DESC LIMIT 1`,
		run.RootID, run.ID, EventAnswered).Scan(&by)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("error reading the questions of run %d: %w", run.ID, err)
	}
	var why string
	switch {
	case !run.IsRoot():
		why = "it is a sub-agent, and only a root research asks its owner"
	case by == answeredByOwner:
		why = "its last question was answered already"
	case by == answeredByDeadline:
		why = "its last question's deadline passed and it went on without an answer"
	case !run.Interactive:
		why = "it was not started interactive, so it asks nothing"
	default:
		why = "it has asked no question"
	}
	return fmt.Errorf("%w: %s; it is %s", ErrNotAsking, why, run.Status)
}

// answerDeadline is when a question asked now by run goes on without an
// answer.
func answerDeadline(run *Run) time.Time {
	return time.Now().Add(time.Duration(cmp.Or(run.AnswerTimeoutSeconds, DefaultAnswerTimeoutSeconds)) * time.Second)
}
