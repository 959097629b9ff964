package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/jobs/llm"
)

// stepCommit is what a step brings to its transaction.
type stepCommit struct {
	turn     *turn
	step     int
	prelude  []llm.Message // the messages given to the model before its reply
	inputIDs []int64       // the messages the prelude delivered
	reply    llm.Message
	reads    []*readResult // what the read-only tools produced, by call
	usage    llm.Usage     // the step's: its model call's and its tools'
	call     callRef       // the model call's ledger row
	callUse  llm.Usage     // the model call's own usage
	// notes are told to the model after the step's tool results: what
	// happened to a reply that was cut off or refused.
	notes []llm.Message
	// goOn keeps the run going after a reply with no tool calls that is
	// not a report (cut off, or a refusal the model may take back).
	goOn bool
	// details are the step's model, timings and compaction (steps_record.go).
	details stepDetails
}

// pendingEvent is an event of a step, inserted with the step's own.
type pendingEvent struct {
	kind string
	data map[string]any
}

// What a step's transaction does with its run once the step is recorded.
type outcome int

const (
	nextStep  outcome = iota // the run goes on: in this job, or in a new one
	succeeded                // the reply is the report
	noReport                 // the agent stopped without a report
	parked                   // the run waits for sub-agents
)

// commitStep records the step and says what comes next. A step whose
// tools all ran before it (read-only ones) and after which the same job
// goes on commits in one round trip (commitFast); any other step runs its
// tools in a transaction (commitTx). It returns true when this job makes
// the next step.
func (a *Service) commitStep(ctx context.Context, c *stepCommit) (bool, error) {
	if c.readOnly() && a.continues(ctx, c.turn) {
		return a.commitFast(ctx, c)
	}
	return a.commitTx(ctx, c)
}

// readOnly reports whether the step asked for tools and every one of them
// ran before the commit.
func (c *stepCommit) readOnly() bool {
	if len(c.reply.ToolCalls) == 0 {
		return false
	}
	for _, r := range c.reads {
		if r == nil {
			return false
		}
	}
	return true
}

// commitFast records a step whose tools all ran before it, and reads the
// parent's inputs for the next step, in one batch: one round trip and one
// implicit transaction, which locks the tree's root first like every
// writer (a sub-agent's with lockRootSQL, a root's with the update of its
// own row that recordStepSQL begins with). A run that moved on meanwhile (cancelled, deleted) records
// nothing and the job ends (dropStep).
func (a *Service) commitFast(ctx context.Context, c *stepCommit) (bool, error) {
	t := c.turn
	run := t.run
	env := &toolEnv{agent: a, run: run, step: c.step}
	msgs := append(append([]llm.Message{}, c.prelude...), c.reply)
	for i, call := range c.reply.ToolCalls {
		msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name,
			Content: env.readResult(call, c.reads[i])})
	}
	msgs = append(msgs, c.notes...)
	rec, err := newRecord(c, run, env, msgs, true)
	if err != nil {
		return false, err
	}
	a.injectFault(FaultAfterTools)
	a.injectFault(FaultBeforeCommit)
	b := &pgx.Batch{}
	if run.RootID != run.ID {
		// A root's own record locks the root first: recordStepSQL's
		// first write is the update of its row.
		b.Queue(lockRootSQL, run.RootID)
	}
	var recorded bool
	b.Queue(recordStep.sql, recordStep.args(rec.args)...).QueryRow(func(row pgx.Row) error {
		var notified int64
		return row.Scan(&recorded, &notified)
	})
	if a.messenger != nil && run.ParentID != nil {
		// The record's arguments hold this step's inputs already.
		b.Queue(parentInputsSQL, run.ID).Query(t.scanInputs)
	}
	// The next step's call, readied in this transaction (next_call.go).
	next, err := a.readyNext(b, c, msgs)
	if err != nil {
		return false, err
	}
	if err := a.pool.SendBatch(ctx, b).Close(); err != nil {
		return false, fmt.Errorf("error recording step %d of run %d: %w", c.step, run.ID, err)
	}
	if !recorded {
		return false, a.dropStep(ctx, c)
	}
	rec.apply(run)
	t.history = append(t.history, msgs...)
	t.inputsRead = true
	t.next = next
	return true, nil
}

// dropStep ends the job of a step that was not recorded because its run
// moved on: the model call was paid for all the same.
func (a *Service) dropStep(ctx context.Context, c *stepCommit) error {
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockTree(ctx, tx, c.turn.run)
		if err != nil {
			return err
		}
		return a.dropLocked(ctx, tx, c, run)
	})
}

// dropLocked settles the call of a step that will not be recorded, with
// its tree locked (run is nil when it was deleted), and completes the job.
func (a *Service) dropLocked(ctx context.Context, tx pgx.Tx, c *stepCommit, run *Run) error {
	if run != nil {
		if err := settleCall(ctx, tx, c.call, c.callUse, true, false, outcomeDropped); err != nil {
			return err
		}
	}
	return completeJob(ctx, tx, c.turn.job)
}

// commitTx runs the step's tools and records the step in one transaction,
// then ends the run, parks it, or lets it go on: in the same job when it
// may (continues), else in a new step job.
func (a *Service) commitTx(ctx context.Context, c *stepCommit) (more bool, err error) {
	t, step := c.turn, c.step
	var next *nextCall
	var locked func() (*Run, *ending)
	lock := func(b *pgx.Batch) { locked = queueLockStep(b, c) }
	err = beginBatch(ctx, a.pool, lock, func(tx pgx.Tx) error {
		more, next = false, nil
		run, end := locked()
		if run == nil || run.Ended() || run.Status == StatusWaiting || run.Steps != step-1 {
			return a.dropLocked(ctx, tx, c, run) // cancelled, deleted or already done meanwhile
		}
		env := &toolEnv{agent: a, tx: tx, run: run, step: step}
		msgs := append(append([]llm.Message{}, c.prelude...), c.reply)
		toolsStart := time.Now()
		for i, call := range c.reply.ToolCalls {
			result, err := a.toolResult(ctx, env, call, c.reads[i])
			if err != nil {
				return err
			}
			if env.park != nil && env.park.callID == call.ID {
				continue // answered when the run resumes
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: result})
		}
		c.details.toolTime += time.Since(toolsStart) // and those that ran in the transaction
		msgs = append(msgs, c.notes...)
		a.injectFault(FaultAfterTools)
		then := outcomeOf(env, c.reply)
		if then == succeeded && c.goOn {
			then = nextStep
		}
		more = then == nextStep && !spawns(c.reply.ToolCalls) && a.continues(ctx, t)
		rec, err := newRecord(c, run, env, msgs, more)
		if err != nil {
			return err
		}
		var recorded bool
		if then != succeeded {
			end = nil // what comes next reads the record
		}
		notRecorded := fmt.Errorf("step %d of run %d was not recorded: the run is at step %d, %s", step, run.ID, run.Steps, run.Status)
		if err := a.queueRecord(ctx, tx, end, rec, &recorded); err != nil {
			return err
		}
		if end == nil && !recorded {
			return notRecorded
		}
		rec.apply(run)
		if err := a.follow(ctx, tx, t.job, env, then, c.reply.Content, more, end); err != nil {
			return err
		}
		if !recorded {
			// The lock makes this impossible: the transaction rolls back.
			return notRecorded
		}
		if more {
			// The next step's call, readied in this transaction (next_call.go).
			b := &pgx.Batch{}
			saved := t.run
			t.run = run
			next, err = a.readyNext(b, c, msgs)
			t.run = saved
			if err != nil {
				return err
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return fmt.Errorf("error readying the call after step %d of run %d: %w", step, run.ID, err)
			}
		}
		a.injectFault(FaultBeforeCommit)
		if more {
			t.run = run
			t.history = append(t.history, msgs...)
		}
		return nil
	})
	if err == nil && more {
		t.next = next
	}
	return more, err
}

// queueLockStep queues on b the lock of the tree of a step's run and of
// the run (queueLockTree); for a reply with no tool calls, which may end
// the run, also what the end reads (queueLockEnding). Once b ran, locked
// gives the run (nil when it is gone) and the ending's reads.
func queueLockStep(b *pgx.Batch, c *stepCommit) (locked func() (*Run, *ending)) {
	run := queueLockTree(b, c.turn.run)
	var end *ending
	if len(c.reply.ToolCalls) == 0 && !c.goOn {
		end = queueLockEnding(b, c.turn.run, c.reply.Content)
	}
	return func() (*Run, *ending) { return *run, end }
}

// queueRecord records a step (recordStepSQL) in tx: now, or with the
// run's end when end holds writes back (recorded is set once they are
// sent).
func (a *Service) queueRecord(ctx context.Context, tx pgx.Tx, end *ending, rec *record, recorded *bool) error {
	b := end.batch()
	b.Queue(recordStep.sql, recordStep.args(rec.args)...).QueryRow(func(row pgx.Row) error {
		var notified int64
		if err := row.Scan(recorded, &notified); err != nil {
			return fmt.Errorf("error recording step %d of run %v: %w", rec.step, rec.args["run"], err)
		}
		return nil
	})
	if end != nil {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// outcomeOf is what comes after a step, from what its tools did and what
// the model replied.
func outcomeOf(env *toolEnv, reply llm.Message) outcome {
	switch {
	case len(reply.ToolCalls) == 0 && strings.TrimSpace(reply.Content) != "":
		return succeeded
	case len(reply.ToolCalls) == 0:
		return noReport
	case env.park != nil:
		return parked
	default:
		return nextStep
	}
}

// follow does, in the step's transaction, what comes after the step:
// it ends or parks the run, or inserts its next step job, and completes
// this job unless it makes the next step itself.
func (a *Service) follow(ctx context.Context, tx pgx.Tx, job *river.Job[StepArgs], env *toolEnv, next outcome,
	report string, more bool, end *ending) error {
	run := env.run
	switch next {
	case succeeded:
		// The citation check may send the report back to the root once (citations.go).
		checked, err := a.citeReport(ctx, tx, run, run.Steps, report, end)
		if err != nil {
			return err
		}
		if checked.revise {
			if err := end.flush(ctx, tx); err != nil {
				return err
			}
			if err := a.enqueueStep(ctx, tx, run, run.Steps+1); err != nil {
				return err
			}
			break
		}
		if err := a.endRunWith(ctx, tx, run, StatusSucceeded, checked.report, "", job.ID, end); err != nil {
			return err
		}
	case noReport:
		if draft, ok, err := a.keepDraft(ctx, tx, run, "the revision ended without a report"); err != nil || ok {
			if err != nil {
				return err
			}
			if err := a.endRun(ctx, tx, run, StatusSucceeded, draft, "", job.ID); err != nil {
				return err
			}
			break
		}
		why, err := withoutReport(ctx, tx, run)
		if err != nil {
			return err
		}
		if err := a.endRun(ctx, tx, run, StatusFailed, "", why, job.ID); err != nil {
			return err
		}
	case parked:
		if err := a.park(ctx, tx, run, env.park); err != nil {
			return err
		}
	case nextStep:
		if more {
			return nil
		}
		if err := a.enqueueStep(ctx, tx, run, run.Steps+1); err != nil {
			return err
		}
	}
	return completeJob(ctx, tx, job)
}

// spawns reports whether a step asked for sub-agents. Its job then hands
// the run over rather than making the next step at once: the sub-agents'
// jobs were queued first, and when workers are scarce they go ahead of
// their parent's next step.
func spawns(calls []llm.ToolCall) bool {
	for _, c := range calls {
		if c.Name == toolSpawnSubagent {
			return true
		}
	}
	return false
}

// continues reports whether the job that just made a step of its run makes
// the next one too, rather than handing the run over to a new step job:
// it does until its time slice (Config.Slice) is used, the process stops
// taking jobs, a drain's deadline to stop fetching has come, or the next
// step is not expected to finish before the drain's CancelAt
// (nextStepFits), so that waiting trees get their turn and a Lambda's
// deadline holds.
func (a *Service) continues(ctx context.Context, t *turn) bool {
	if ctx.Err() != nil || a.config.Slice < 0 || a.stopping.Load() {
		return false
	}
	now := time.Now()
	if now.Sub(t.began) >= a.config.Slice {
		return false
	}
	a.mu.Lock()
	w := a.working
	a.mu.Unlock()
	return (w == nil || w.handoverAt.IsZero() || now.Before(w.handoverAt)) && a.nextStepFits(t)
}

// record is a step as recordStepSQL records it.
type record struct {
	args  pgx.NamedArgs // recordStepSQL's
	step  int
	state string // the state the run is left in
	usage llm.Usage
	// pinned is the bundle the step was made with, which the run is left
	// pinned to (behaviour.go).
	pinned string
}

// newRecord prepares the record of a step: its messages, the states it
// goes through (ending in thinking when the same job goes on), its
// events (its tools', then its own) and its sources.
func newRecord(c *stepCommit, run *Run, env *toolEnv, msgs []llm.Message, more bool) (*record, error) {
	b, err := encodeMessages(msgs)
	if err != nil {
		return nil, err
	}
	states, at := stepStates(run.State, c.step, c.reply.ToolCalls, more)
	state := run.State
	if len(states) > 0 {
		state = states[len(states)-1]
	}
	// The step's own event names its tools and those that failed: one
	// row for every call of the step.
	stepData := map[string]any{"step": c.step, "tools": toolNames(c.reply.ToolCalls),
		"tokens": c.usage.PromptTokens + c.usage.CompletionTokens}
	if len(env.failed) > 0 {
		stepData["failed"] = env.failed
	}
	events := append(env.events, pendingEvent{kind: EventStep, data: stepData})
	pinned := c.details.behaviour
	if run.Pinned != "" && run.Pinned != pinned {
		events = append(events, versionEvent(c.step, run.Pinned, pinned))
	}
	kinds, datas, err := encodeEvents(events)
	if err != nil {
		return nil, err
	}
	sources, err := encodeSources(env.sources)
	if err != nil {
		return nil, err
	}
	inputIDs := c.inputIDs
	if inputIDs == nil {
		inputIDs = []int64{}
	}
	details, err := c.details.encode()
	if err != nil {
		return nil, err
	}
	u, cu := c.usage, c.callUse
	return &record{step: c.step, state: state, usage: u, pinned: pinned, args: pgx.NamedArgs{"run": run.ID, "step": c.step,
		"state": state, "messages": b, "states": states, "state_steps": at,
		"prompt_tokens": u.PromptTokens, "cached_tokens": u.CachedPromptTokens,
		"completion_tokens": u.CompletionTokens, "reasoning_tokens": u.ReasoningTokens, "cost_usd": u.CostUSD,
		"call": c.call.id, "call_prompt_tokens": cu.PromptTokens, "call_completion_tokens": cu.CompletionTokens,
		"call_cost_usd": cu.CostUSD, "event_kinds": kinds, "event_data": datas, "inputs": inputIDs,
		"sources": sources, "channel": EventsChannel, "details": details, "pinned": pinned}}, nil
}

// apply brings run up to date with what the record wrote.
func (r *record) apply(run *Run) {
	run.PromptTokens += int64(r.usage.PromptTokens)
	run.CachedTokens += int64(r.usage.CachedPromptTokens)
	run.ReasoningTokens += int64(r.usage.ReasoningTokens)
	run.CompletionTokens += int64(r.usage.CompletionTokens)
	run.Tokens += int64(r.usage.PromptTokens + r.usage.CompletionTokens)
	run.CostUSD += r.usage.CostUSD
	run.Steps, run.Status, run.State = r.step, StatusWorking, r.state
	run.WaitNames, run.WaitCallID = nil, ""
	run.Pinned = r.pinned
}

// stepStates are the states a run goes through after the model call of
// a step, from state, and the step each is recorded at: the state of its
// tools, then thinking at the next step when the same job makes it at
// once. A state equal to the one before is left out.
func stepStates(state string, step int, calls []llm.ToolCall, more bool) ([]string, []int) {
	var states []string
	var at []int
	if s := toolsState(calls); s != state {
		states, at, state = append(states, s), append(at, step), s
	}
	if more && state != StateThinking {
		states, at = append(states, StateThinking), append(at, step+1)
	}
	return states, at
}

// encodeEvents encodes events as the parallel arrays of kinds and JSON data
// that recordStepSQL inserts as the tree's events.
func encodeEvents(events []pendingEvent) ([]string, []string, error) {
	kinds, datas := make([]string, len(events)), make([]string, len(events))
	for i, e := range events {
		if e.data == nil {
			e.data = map[string]any{}
		}
		b, err := json.Marshal(e.data)
		if err != nil {
			return nil, nil, fmt.Errorf("error encoding event %s: %w", e.kind, err)
		}
		kinds[i], datas[i] = e.kind, string(b)
	}
	return kinds, datas, nil
}

// toolResult is the result of one tool call of a step: what a read-only
// tool produced before the transaction (env.readResult), or what a tool
// that runs in the transaction answers.
func (a *Service) toolResult(ctx context.Context, env *toolEnv, call llm.ToolCall, r *readResult) (string, error) {
	if r == nil {
		return a.runTool(ctx, env, call)
	}
	return env.readResult(call, r), nil
}

// readResult is the result of a call that ran before the commit; its
// sources and its event go with the step's record.
func (env *toolEnv) readResult(call llm.ToolCall, r *readResult) string {
	env.sources = append(env.sources, r.sources...)
	if r.failed {
		env.failed = append(env.failed, call.Name)
	}
	return r.text
}
