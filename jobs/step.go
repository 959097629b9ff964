package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/gbresearch/gb/jobs/llm"
)

// lastStepNote is what an agent is told on its last step, when it gets no tools.
const lastStepNote = "This is your last step and you have no tools left: write your report now from what you have, with its sources."

// budgetNote is what a root is told when its tree's budget ran out.
const budgetNote = "The budget of this research is exhausted and you have no tools left: write your report now from what you have, with its sources."

// step makes one step of a run: one model call, the tools it asked for, and
// one transaction that records it all and hands over to what comes next.
func (a *Agent) step(ctx context.Context, job *river.Job[StepArgs]) (err error) {
	step := job.Args.Step
	if a.observer != nil {
		a.observer.StepStarted(job.Args.RunID, step, time.Now())
	}
	run, err := GetRun(ctx, a.pool, job.Args.RunID)
	if errors.Is(err, ErrNotFound) {
		return nil // deleted while queued
	}
	if err != nil {
		return err
	}
	if run.Ended() || run.Status == StatusWaiting || run.Steps != step-1 {
		a.logger.InfoContext(ctx, "skipping stale step job", "run_id", run.ID, "step", step,
			"status", run.Status, "steps", run.Steps)
		return nil
	}
	if run.Deadline != nil {
		// Past its wall-clock cap the run ends timed_out (stepWorker.Work).
		outer := ctx
		wctx, cancel := context.WithDeadlineCause(ctx, *run.Deadline, errWallClock)
		defer cancel()
		defer func() {
			if err != nil && errors.Is(context.Cause(wctx), errWallClock) && outer.Err() == nil {
				err = fmt.Errorf("run %d step %d: %w", run.ID, step, errWallClock)
			}
		}()
		ctx = wctx
	}
	history, err := conversation(ctx, a.pool, run.ID)
	if err != nil {
		return err
	}
	var prelude []llm.Message
	if step == 1 {
		prelude = append(prelude, llm.Message{Role: llm.RoleUser, Content: run.Topic})
	}
	var inputIDs []int64
	if a.messenger != nil {
		inputs, ids, err := parentInputs(ctx, a.pool, run)
		if err != nil {
			return err
		}
		prelude, inputIDs = append(prelude, inputs...), ids
	}
	if run.WaitCallID != "" {
		msg, ids, err := a.resumeResult(ctx, a.pool, run)
		if err != nil {
			return err
		}
		prelude, inputIDs = append(prelude, msg), append(inputIDs, ids...)
	}

	last := step >= run.MaxSteps
	req, err := a.request(run, append(history, prelude...), last, false)
	if err != nil {
		return err
	}
	res, v, why, err := a.reserve(ctx, job, run, &req, false)
	if err != nil {
		return err
	}
	if v == exhausted && run.IsRoot() {
		// The root writes its report, from the share of the budget kept
		// for it, with no tools left.
		last = true
		if err := a.recordBudgetStop(ctx, run, why); err != nil {
			return err
		}
		if req, err = a.request(run, append(history, prelude...), true, true); err != nil {
			return err
		}
		res, v, why, err = a.reserve(ctx, job, run, &req, true)
		if err != nil {
			return err
		}
		if v == exhausted {
			// Not even the report fits: the run fails, and keeps what its
			// sub-agents found as its report.
			why += "; no budget was left for the report"
			found, err := a.findings(ctx, run)
			if err != nil {
				return err
			}
			return a.endAfter(ctx, job, run, StatusFailed, found, why)
		}
	}
	switch v {
	case mustWait:
		return river.JobSnooze(budgetWait) // calls in flight hold the rest of the budget
	case exhausted:
		return a.endAfter(ctx, job, run, StatusFailed, "", why)
	}
	if err := setState(ctx, a.pool, run.ID, StateThinking, step); err != nil {
		a.release(ctx, job, res)
		return err
	}
	resp, err := a.modelFor(run).Complete(ctx, req)
	if err != nil {
		a.release(ctx, job, res)
		if interrupted(ctx) {
			return err
		}
		if errors.Is(err, llm.ErrPermanent) || job.Attempt >= job.MaxAttempts {
			return a.endAfter(ctx, job, run, StatusFailed, "", "model error: "+err.Error())
		}
		return fmt.Errorf("model call of run %d step %d: %w", run.ID, step, err)
	}
	a.injectFault(FaultAfterModel)
	reply := resp.Message
	reply.Role = llm.RoleAssistant
	if last {
		reply.ToolCalls = nil
	}
	if err := a.waitForMessages(ctx, run, reply.ToolCalls); err != nil {
		a.settleLost(ctx, job, run, resp.Usage)
		return err
	}
	reads, err := a.runReads(ctx, run, step, reply.ToolCalls)
	if err != nil {
		a.settleLost(ctx, job, run, resp.Usage)
		return err
	}
	usage := addUsage(resp.Usage, readUsage(reads))
	if err := a.commitStep(ctx, job, run, prelude, inputIDs, reply, reads, usage); err != nil {
		a.settleLost(ctx, job, run, usage)
		return err
	}
	a.injectFault(FaultAfterCommit)
	if a.observer != nil {
		a.observer.StepCommitted(run.ID, step, time.Now())
	}
	return nil
}

// recordBudgetStop records on the tree that its budget stopped the root's
// research, with the tree locked like every writer of its events, so that
// a tree's event numbers follow its commits.
func (a *Agent) recordBudgetStop(ctx context.Context, seen *Run, why string) error {
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockTree(ctx, tx, seen)
		if err != nil || run == nil {
			return err
		}
		var recorded bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM gb_agent_research_events WHERE run_id = $1 AND kind = $2)`,
			run.ID, EventBudget).Scan(&recorded); err != nil || recorded {
			return err // once per run, however often its closing step is retried
		}
		return addEvent(ctx, tx, run, EventBudget, map[string]any{"error": why})
	})
}

// findings is what a run's sub-agents reported, for a run that has to end
// without writing its own report; "" when it has none.
func (a *Agent) findings(ctx context.Context, run *Run) (string, error) {
	kids, err := children(ctx, a.pool, run.ID)
	if err != nil || len(kids) == 0 {
		return "", err
	}
	return "The budget ran out before this agent could write its report. Its sub-agents reported:\n\n" +
		formatReports(kids, a.config.MaxReportChars), nil
}

// commitStep runs the step's tools and records the step in one transaction,
// then inserts the next step job, parks the run or ends it.
func (a *Agent) commitStep(ctx context.Context, job *river.Job[StepArgs], seen *Run,
	prelude []llm.Message, inputIDs []int64, reply llm.Message, reads []*readResult, usage llm.Usage) error {
	step := job.Args.Step
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockTree(ctx, tx, seen)
		if err != nil {
			return err
		}
		if run == nil || run.Ended() || run.Status == StatusWaiting || run.Steps != step-1 {
			// Cancelled, deleted or already done meanwhile; the model call
			// was paid for all the same.
			if run != nil {
				if err := settle(ctx, tx, job, run, usage, false); err != nil {
					return err
				}
			}
			return completeJob(ctx, tx, job)
		}
		// The state of the tools, recorded in the step's own transaction.
		if err := setState(ctx, tx, run.ID, toolsState(reply.ToolCalls), step); err != nil {
			return err
		}
		env := &toolEnv{agent: a, tx: tx, run: run, step: step}
		msgs := append(append([]llm.Message{}, prelude...), reply)
		for i, call := range reply.ToolCalls {
			result, err := a.toolResult(ctx, env, call, reads[i])
			if err != nil {
				return err
			}
			if env.park != nil && env.park.callID == call.ID {
				continue // answered when the run resumes
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: result})
		}
		a.injectFault(FaultAfterTools)
		if err := recordStep(ctx, tx, run, step, msgs, usage); err != nil {
			return err
		}
		if err := markInputsRead(ctx, tx, inputIDs); err != nil {
			return err
		}
		if err := settle(ctx, tx, job, run, usage, true); err != nil {
			return err
		}
		if err := addEvent(ctx, tx, run, EventStep, map[string]any{"step": step,
			"tools": toolNames(reply.ToolCalls), "tokens": usage.PromptTokens + usage.CompletionTokens}); err != nil {
			return err
		}
		switch {
		case env.ended:
			// a tool ended the run (it cancelled itself through its tree)
		case len(reply.ToolCalls) == 0 && reply.Content != "":
			if err := a.endRun(ctx, tx, run, StatusSucceeded, reply.Content, "", job.ID); err != nil {
				return err
			}
		case len(reply.ToolCalls) == 0:
			if err := a.endRun(ctx, tx, run, StatusFailed, "", "the agent ended without writing a report", job.ID); err != nil {
				return err
			}
		case env.park != nil:
			if err := a.park(ctx, tx, run, env.park); err != nil {
				return err
			}
		default:
			if err := a.enqueueStep(ctx, tx, run.ID, step+1); err != nil {
				return err
			}
		}
		if err := completeJob(ctx, tx, job); err != nil {
			return err
		}
		a.injectFault(FaultBeforeCommit)
		return nil
	})
}

// toolResult is the result of one tool call of a step: what a read-only
// tool produced before the transaction (recorded now, with its sources),
// or what a tool that runs in the transaction answers.
func (a *Agent) toolResult(ctx context.Context, env *toolEnv, call llm.ToolCall, r *readResult) (string, error) {
	if r == nil {
		return a.runTool(ctx, env, call)
	}
	if err := recordSources(ctx, env.tx, env.run, env.step, r.sources); err != nil {
		return "", err
	}
	if err := addEvent(ctx, env.tx, env.run, EventTool, map[string]any{"step": env.step, "tool": call.Name,
		"error": r.failed}); err != nil {
		return "", err
	}
	return r.text, nil
}

// addUsage is the sum of two usages.
func addUsage(a, b llm.Usage) llm.Usage {
	return llm.Usage{PromptTokens: a.PromptTokens + b.PromptTokens,
		CompletionTokens: a.CompletionTokens + b.CompletionTokens, CostUSD: a.CostUSD + b.CostUSD}
}

// lockTree locks the root of the run's tree, then the run itself, so that
// every writer of a tree takes its locks in the same order (a root's id is
// the smallest of its tree). It returns nil when the run is gone.
func (a *Agent) lockTree(ctx context.Context, tx pgx.Tx, run *Run) (*Run, error) {
	runs, err := queryRuns(ctx, tx, "SELECT "+runColumns+` FROM gb_agent_research_runs
		WHERE id = ANY($1) ORDER BY id FOR UPDATE`, []int64{run.RootID, run.ID})
	if err != nil {
		return nil, fmt.Errorf("error locking tree %d: %w", run.RootID, err)
	}
	for _, r := range runs {
		if r.ID == run.ID {
			return r, nil
		}
	}
	return nil, nil
}

// recordStep appends the step's messages and marks the run working at that
// step; the call's usage is added by settle.
func recordStep(ctx context.Context, tx pgx.Tx, run *Run, step int, msgs []llm.Message, u llm.Usage) error {
	b, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO gb_agent_research_steps
		(run_id, step, messages, prompt_tokens, completion_tokens, cost_usd) VALUES ($1, $2, $3, $4, $5, $6)`,
		run.ID, step, b, u.PromptTokens, u.CompletionTokens, u.CostUSD)
	if err != nil {
		return fmt.Errorf("error recording step %d of run %d: %w", step, run.ID, err)
	}
	_, err = tx.Exec(ctx, `UPDATE gb_agent_research_runs SET
			steps = $2, status = 'working', started_at = coalesce(started_at, now()), updated_at = now(),
			wait_names = '{}', wait_call_id = ''
		WHERE id = $1`, run.ID, step)
	if err != nil {
		return fmt.Errorf("error updating run %d: %w", run.ID, err)
	}
	run.Steps = step
	run.Status = StatusWorking
	return nil
}

// encodeMessages encodes a step's messages for the jsonb column, which
// refuses NUL characters: a model or document that produced one loses it
// rather than failing the step on every attempt.
func encodeMessages(msgs []llm.Message) (string, error) {
	b, err := json.Marshal(msgs)
	if err != nil {
		return "", fmt.Errorf("error encoding step messages: %w", err)
	}
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return string(b), nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("error encoding step messages: %w", err)
	}
	b, err = json.Marshal(stripNUL(v))
	if err != nil {
		return "", fmt.Errorf("error encoding step messages: %w", err)
	}
	return string(b), nil
}

func stripNUL(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "\x00", "")
	case []any:
		for i := range x {
			x[i] = stripNUL(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = stripNUL(e)
		}
	}
	return v
}

// conversation loads the messages of every committed step of a run.
func conversation(ctx context.Context, db DB, runID int64) ([]llm.Message, error) {
	rows, err := db.Query(ctx, "SELECT messages FROM gb_agent_research_steps WHERE run_id = $1 ORDER BY step", runID)
	if err != nil {
		return nil, fmt.Errorf("error loading conversation: %w", err)
	}
	defer rows.Close()
	var all []llm.Message
	for rows.Next() {
		var msgs []llm.Message
		if err := rows.Scan(&msgs); err != nil {
			return nil, fmt.Errorf("error reading conversation: %w", err)
		}
		all = append(all, msgs...)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error loading conversation: %w", err)
	}
	return all, nil
}

// endAfter ends a run outside a step's normal flow (a failed model call, a
// sub-agent out of budget) and completes the job in the same transaction.
func (a *Agent) endAfter(ctx context.Context, job *river.Job[StepArgs], seen *Run, status, report, errText string) error {
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockTree(ctx, tx, seen)
		if err != nil {
			return err
		}
		if run != nil && !run.Ended() {
			if err := a.endRun(ctx, tx, run, status, report, errText, job.ID); err != nil {
				return err
			}
		}
		return completeJob(ctx, tx, job)
	})
}

func completeJob(ctx context.Context, tx pgx.Tx, job *river.Job[StepArgs]) error {
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return fmt.Errorf("error completing job %d: %w", job.ID, err)
	}
	return nil
}

func toolNames(calls []llm.ToolCall) []string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
	}
	return names
}
