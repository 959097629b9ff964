package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/jobs/llm"
)

// lastStepNote is what an agent is told on its last step, when it gets no tools.
const lastStepNote = "This is your last step and you have no tools left: write your report now from what you have, with its sources."

// budgetNote is what a root is told when its tree's budget ran out.
const budgetNote = "The budget of this research is exhausted and you have no tools left: write your report now from what you have, with its sources."

// turn is what a step job knows of its run between the consecutive steps
// it makes: the job loads the run once, each step commits on its own, and
// the next step starts from what that commit left.
type turn struct {
	job     *river.Job[StepArgs]
	began   time.Time     // when the job started
	run     *Run          // as the load or the last commit left it
	history []llm.Message // the run's committed conversation
	limits  limits        // the tree's budget
	// inputs are the parent's unread inputs for the next step, and
	// inputIDs their message ids; inputsRead says the last commit read
	// them already.
	inputs     []llm.Message
	inputIDs   []int64
	inputsRead bool
	// refusals counts, by step, the calls the provider refused because
	// they did not fit (the model's window or its token rate limit): the
	// step compacts that much harder when it is tried again.
	refusals map[int]int
	// tokenRatio is how many prompt tokens the provider counted for each
	// of gb's own in the run's latest answered call (1 before any): the
	// request's compaction counts with it, so that what it sends fits the
	// window as the provider counts.
	tokenRatio float64
	// compaction is what the compaction of the latest request built did.
	compaction *Compaction
	// lim is the model's limits the latest call was built for.
	lim providerLimits
	// next is what the last commit (or the load) readied for the run's
	// next step, and readied what the step under way took of it
	// (next_call.go).
	next, readied *nextCall
	// thinkingDue says the run does not show thinking yet: the job's
	// first admission marks it (admitFirstSQL).
	thinkingDue bool
	// prompt is the system prompt the job built last (prompt.go).
	prompt promptMemo
}

// work makes the steps of the job's run, each in its own transaction, until
// the run parks or ends, or the job hands its run over to a new job (see
// continues).
func (a *Service) work(ctx context.Context, job *river.Job[StepArgs]) error {
	t := &turn{job: job, began: time.Now()}
	defer func() { a.releaseNext(ctx, t.next) }()
	for {
		more, err := a.step(ctx, t)
		if err != nil || !more {
			return err
		}
	}
}

// load reads, in one round trip, the run the job works on, its tree's
// budget, its
// conversation, its parent's unread inputs, the provider's token ratio of
// its latest call, the refusals of its calls that did not fit, and the
// behaviour bundle it is pinned to when the process does not hold it
// (behaviour.go; the process's own is stored with its first load). It
// returns false when there is nothing to do: the run was deleted, ended,
// is parked, or has not reached the step the job was made for. A retried
// job goes on from the run's last committed step. It writes nothing: the
// job's first admission marks the run thinking (admitFirstSQL).
func (a *Service) load(ctx context.Context, t *turn) (bool, error) {
	id := t.job.Args.RunID
	b := &pgx.Batch{}
	var run *Run
	var runErr error
	b.Queue(runByIDSQL, id).Query(func(rows pgx.Rows) error {
		run, runErr = oneRun(rows, nil)
		return nil
	})
	b.Queue(rootLimitsSQL, id).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&t.limits.maxTokens, &t.limits.maxCost)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	t.history = nil
	b.Queue(conversationSQL, id).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var msgs []llm.Message
			if err := rows.Scan(&msgs); err != nil {
				return err
			}
			t.history = append(t.history, msgs...)
		}
		return rows.Err()
	})
	if a.messenger != nil {
		b.Queue(parentInputsSQL, id).Query(t.scanInputs)
	}
	a.queueLoadLimits(b, t, id)
	t.tokenRatio = 1
	b.Queue(tokenRatioSQL, id).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&t.tokenRatio)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	t.refusals = map[int]int{}
	b.Queue(refusalsSQL, id, outcomeContext, outcomeTooLarge).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var step, n int
			if err := rows.Scan(&step, &n); err != nil {
				return err
			}
			t.refusals[step] = n
		}
		return rows.Err()
	})
	stored := a.queueLoadBundle(b, id)
	if err := a.pool.SendBatch(ctx, b).Close(); err != nil {
		return false, fmt.Errorf("error loading run %d: %w", id, err)
	}
	stored()
	if errors.Is(runErr, ErrNotFound) {
		return false, nil // deleted while queued
	}
	if runErr != nil {
		return false, runErr
	}
	if run.Ended() || run.Status == StatusWaiting || run.Steps+1 < t.job.Args.Step {
		a.logger.InfoContext(ctx, "skipping stale step job", "run_id", run.ID, "step", t.job.Args.Step,
			"status", run.Status, "steps", run.Steps)
		return false, nil
	}
	t.run = run
	t.thinkingDue = run.State != StateThinking && run.State != StateWaitingProvider
	a.checkLoaded(t)
	return true, nil
}

// loadInputs reads the parent's unread inputs of a sub-agent before a step
// that follows another in the same job.
func (a *Service) loadInputs(ctx context.Context, t *turn) error {
	if t.inputsRead {
		t.inputsRead = false
		return nil
	}
	t.inputs, t.inputIDs = nil, nil
	if a.messenger == nil || t.run.ParentID == nil {
		return nil
	}
	rows, err := a.pool.Query(ctx, parentInputsSQL, t.run.ID)
	if err != nil {
		return fmt.Errorf("error reading the inputs of run %d: %w", t.run.ID, err)
	}
	defer rows.Close()
	if err := t.scanInputs(rows); err != nil {
		return fmt.Errorf("error reading the inputs of run %d: %w", t.run.ID, err)
	}
	return nil
}

// scanInputs reads the rows of parentInputsSQL into the turn.
func (t *turn) scanInputs(rows pgx.Rows) error {
	t.inputs, t.inputIDs = nil, nil
	for rows.Next() {
		var id int64
		var text string
		if err := rows.Scan(&id, &text); err != nil {
			return err
		}
		t.inputIDs = append(t.inputIDs, id)
		t.inputs = append(t.inputs, llm.Message{Role: llm.RoleUser, Content: "Message from your parent: " + text})
	}
	return rows.Err()
}

// step makes one step of a run: one model call, the tools it asked for, and
// one transaction that records it all and says what comes next. It returns
// true when the same job goes on with the run's next step. Its phases:
// prepare the run, bound the step (stepContext), build the prelude, call
// the model, turn its answer into the step's record (newStepCommit), run
// what goes before the commit (beforeCommit), and commit (record).
func (a *Service) step(jobCtx context.Context, t *turn) (more bool, err error) {
	started := time.Now()
	if ok, err := a.prepare(jobCtx, t); err != nil || !ok {
		return false, err
	}
	step := t.run.Steps + 1
	t.readied = t.takeNext(step)
	defer func() {
		a.releaseNext(jobCtx, t.readied) // a readied call the step did not make
		t.readied = nil
	}()
	if a.observer != nil {
		a.observer.StepStarted(t.run.ID, step, started)
	}
	jobCtx, endSpan := a.startStep(jobCtx, t.run, step)
	defer func() { endSpan(err) }()
	ctx, finish := a.stepContext(jobCtx, t.run, step)
	defer func() { err = finish(err) }()
	prelude, inputIDs, err := a.prelude(ctx, t, step)
	if err != nil {
		return false, err
	}
	ans, err := a.callModel(ctx, t, step, prelude)
	if err != nil || ans == nil {
		return false, err
	}
	a.injectFault(FaultAfterModel)
	c := newStepCommit(t, step, prelude, inputIDs, ans, started)
	c.details.version, c.details.behaviour = a.version, a.pinOf(t.run).hash
	if stop, err := a.beforeCommit(ctx, c, ans); err != nil || stop {
		return false, err
	}
	return a.record(ctx, c)
}

// prepare readies the turn for its next step: the job's first step loads
// the run (load), a later one reads the parent's new inputs. It returns
// false when there is nothing to do, and an error when a drain's deadline
// is too near for the step (deadline.go).
func (a *Service) prepare(ctx context.Context, t *turn) (bool, error) {
	if t.run == nil {
		if ok, err := a.load(ctx, t); err != nil || !ok {
			return false, err
		}
	} else if err := a.loadInputs(ctx, t); err != nil {
		return false, err
	}
	if err := a.mayStart(ctx, t); err != nil {
		return false, err
	}
	return true, nil
}

// stepContext bounds a step by StepTimeout and by its run's wall-clock
// cap, past which the run ends timed_out (stepWorker.work). finish
// releases the context and wraps errWallClock around an error the cap
// caused.
func (a *Service) stepContext(jobCtx context.Context, run *Run, step int) (ctx context.Context, finish func(error) error) {
	// bounded is the step's context before the cap (a variable of its own:
	// the result ctx becomes wctx on return, and finish must ask this one).
	bounded, cancel := context.WithTimeout(jobCtx, a.config.StepTimeout)
	if run.Deadline == nil {
		return bounded, func(err error) error { cancel(); return err }
	}
	wctx, wcancel := context.WithDeadlineCause(bounded, *run.Deadline, errWallClock)
	return wctx, func(err error) error {
		if err != nil && errors.Is(context.Cause(wctx), errWallClock) && bounded.Err() == nil {
			err = fmt.Errorf("run %d step %d: %w", run.ID, step, errWallClock)
		}
		wcancel()
		cancel()
		return err
	}
}

// prelude is what the model is given after the run's conversation: the
// topic on the first step, the answer to the call a parked run waited on
// (a tool result must follow the assistant message that made the call),
// a fork's instruction on its first live step, then the parent's new
// inputs; inputIDs are the messages it delivers.
func (a *Service) prelude(ctx context.Context, t *turn, step int) (prelude []llm.Message, inputIDs []int64, err error) {
	if step == 1 {
		prelude = append(prelude, llm.Message{Role: llm.RoleUser, Content: t.run.Topic})
	}
	if t.run.WaitCallID != "" {
		msg, ids, err := a.resumeResult(ctx, a.pool, t.run)
		if err != nil {
			return nil, nil, err
		}
		prelude, inputIDs = append(prelude, msg), ids
	}
	if note, ok := forkNote(t.run, step); ok {
		prelude = append(prelude, note)
	}
	return append(prelude, t.inputs...), append(inputIDs, t.inputIDs...), nil
}

// callModel asks the model for its reply to the conversation and the
// prelude (ask.go). The run's last step, or a revision of its report
// (citations.go), gets no tools. A nil answer with no error means the
// call ended the run.
func (a *Service) callModel(ctx context.Context, t *turn, step int, prelude []llm.Message) (*answer, error) {
	last := step >= t.run.MaxSteps || revising(t.history)
	conv := append(slices.Clip(t.history), prelude...)
	return a.ask(ctx, t, step, conv, last)
}

// newStepCommit starts the step's record from the model's answer: its
// reply, sanitized and stripped of tool calls on a last step, and the
// notes a cut-off or refused reply leaves the model (replyNotes).
func newStepCommit(t *turn, step int, prelude []llm.Message, inputIDs []int64, ans *answer, started time.Time) *stepCommit {
	c := &stepCommit{turn: t, step: step, prelude: prelude, inputIDs: inputIDs, call: ans.call, callUse: ans.resp.Usage}
	c.details = stepDetails{model: ans.call.model, started: started, modelTime: ans.latency, toolsFrom: time.Now(),
		compaction: t.compaction}
	c.reply = ans.resp.Message.Sanitized()
	c.reply.Role = llm.RoleAssistant
	if ans.last {
		c.reply.ToolCalls = nil
	}
	c.notes, c.goOn = replyNotes(ans, t.history)
	return c
}

// beforeCommit does what the step does before its transaction: it ends the
// run on a second refusal in a row, waits for the messages a read_messages
// call may wait for, runs the read-only tools, and has the citation judge
// look at a report (citations_judge.go). It returns true when the step
// stops there; a step that stops or fails records its paid call first
// (settleThen).
func (a *Service) beforeCommit(ctx context.Context, c *stepCommit, ans *answer) (stop bool, err error) {
	run := c.turn.run
	if ans.resp.Refused && c.reply.Content != "" && !c.goOn && !ans.last {
		return true, a.settleThen(ctx, c, func() error {
			return a.endAfter(ctx, c.turn.job, run, StatusFailed, "", "the model declined the task: "+c.reply.Content)
		})
	}
	if err := a.waitForMessages(ctx, run, c.reply.ToolCalls); err != nil {
		return true, a.settleThen(ctx, c, func() error { return err })
	}
	if c.reads, err = a.runReads(ctx, run, c.step, c.reply.ToolCalls); err != nil {
		return true, a.settleThen(ctx, c, func() error { return err })
	}
	c.details.toolTime = time.Since(c.details.toolsFrom) // the tools that ran before the commit
	c.usage = ans.resp.Usage.Add(readUsage(c.reads))
	if len(c.reply.ToolCalls) == 0 && !c.goOn {
		if err := a.judgeReport(ctx, c.turn, c.step, c.reply.Content); err != nil {
			return true, a.settleThen(ctx, c, func() error { return err })
		}
	}
	return false, nil
}

// record commits the step (commitStep) and tells who listens; a step that
// does not commit records its paid call on its own (settleUncommitted).
func (a *Service) record(ctx context.Context, c *stepCommit) (more bool, err error) {
	if more, err = a.commitStep(ctx, c); err != nil {
		a.settleUncommitted(ctx, c)
		return false, err
	}
	a.injectFault(FaultAfterCommit)
	a.stepCommitted(ctx, c.turn.run, c.usage)
	if a.observer != nil {
		a.observer.StepCommitted(c.turn.run.ID, c.step, time.Now())
	}
	return more, nil
}

// settleThen settles the paid call of a step that will not commit, then
// returns what end returns.
func (a *Service) settleThen(ctx context.Context, c *stepCommit, end func() error) error {
	a.settleUncommitted(ctx, c)
	return end()
}

// settleUncommitted records the usage of a paid call whose step did not
// commit, on a context of its own: the step will be retried and pay again,
// and both calls count.
func (a *Service) settleUncommitted(ctx context.Context, c *stepCommit) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := settleCall(sctx, a.pool, c.call, c.callUse, true, false, outcomeDropped); err != nil {
		a.logger.ErrorContext(ctx, "could not record the usage of a step that did not commit",
			"run_id", c.turn.run.ID, "call_id", c.call.id, "err", err)
	}
}

// replyNotes is what the model is told after a reply that did not end as
// it should: cut off at its completion cap, or a refusal. goOn keeps the
// run going after such a reply that has no tool calls, rather than taking
// it for the report; a refusal right after a refusal is not given another
// turn.
func replyNotes(ans *answer, history []llm.Message) (notes []llm.Message, goOn bool) {
	msg := ans.resp.Message
	switch {
	case ans.resp.FinishReason == llm.FinishLength && len(msg.ToolCalls) > 0:
		return []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf(cutCallsNote, ans.cap)}}, false
	case ans.resp.FinishReason == llm.FinishLength && !ans.last && ans.cap < ans.reportCap && !reportCut(history):
		// A report cut at the cap of a step that may call tools: written
		// again, whole, with the report's cap (buildRequest).
		return []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf(cutToReportNote, ans.cap, ans.reportCap)}}, true
	case ans.resp.FinishReason == llm.FinishLength && !ans.last:
		return []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf(cutReportNote, ans.cap)}}, true
	case ans.resp.Refused && len(msg.ToolCalls) == 0 && !ans.last:
		if n := len(history); n > 0 && history[n-1].Role == llm.RoleUser && history[n-1].Content == refusalNote {
			return nil, false
		}
		return []llm.Message{{Role: llm.RoleUser, Content: refusalNote}}, true
	}
	return nil, false
}

// What the model is told about a reply that went wrong.
const (
	cutCallsNote = "Your last reply was cut off at its limit of %d tokens, so the arguments of its last tool call " +
		"are incomplete. Make fewer or smaller tool calls at a time."
	cutReportNote = "Your last reply was cut off at its limit of %d tokens before it was finished. " +
		"Write it again, shorter, or go on researching with your tools."
	// cutToReportNote starts with cutToReportPrefix.
	cutToReportNote = cutToReportPrefix + " at %d tokens, the limit of a step that may call tools. " +
		"Write it again, whole: this reply may have up to %d tokens."
	refusalNote = "You declined to go on. If the task truly cannot be researched, write a short report that " +
		"says why; otherwise go on with your tools."
)

// cutToReportPrefix starts the note after a report cut at a step's cap.
const cutToReportPrefix = "Your report was cut off"

// reportCut reports whether a conversation ends with the note after a
// report cut at a step's cap: its next call gets the report's cap.
func reportCut(conv []llm.Message) bool {
	n := len(conv)
	return n > 0 && conv[n-1].Role == llm.RoleUser && strings.HasPrefix(conv[n-1].Content, cutToReportPrefix)
}

// recordBudgetStop records on the tree that its budget stopped the root's
// research, with the tree locked like every writer of its events, so that
// a tree's event numbers follow its commits.
func (a *Service) recordBudgetStop(ctx context.Context, seen *Run, why string) error {
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

// findings is the report of a run that has to end without writing its
// own: why, then each of its sub-agents with its final status and its
// report or error; "" when it has no sub-agents.
func (a *Service) findings(ctx context.Context, run *Run, why string) (string, error) {
	kids, err := children(ctx, a.pool, run.ID)
	if err != nil || len(kids) == 0 {
		return "", err
	}
	return "This agent ended before it could write its report (" + why + "). Its sub-agents:\n\n" +
		formatReports(kids, a.limitsFor(run).MaxReportChars), nil
}

// endAfter ends a run outside a step's commit (a rejected model call, a
// sub-agent out of budget, a second refusal, a last attempt that failed)
// and completes the job in the same transaction. A run revising its report
// ends with its draft instead (citations.go).
func (a *Service) endAfter(ctx context.Context, job *river.Job[StepArgs], seen *Run, status, report, errText string) error {
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockTree(ctx, tx, seen)
		if err != nil {
			return err
		}
		if run != nil && !run.Ended() {
			if status != StatusSucceeded {
				// A revision that could not be made keeps its draft (citations.go).
				if draft, ok, err := a.keepDraft(ctx, tx, run, errText); err != nil {
					return err
				} else if ok {
					status, report, errText = StatusSucceeded, draft, ""
				}
			}
			if err := a.endRun(ctx, tx, run, status, report, errText, job.ID); err != nil {
				return err
			}
		}
		return completeJob(ctx, tx, job)
	})
}

func toolNames(calls []llm.ToolCall) []string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
	}
	return names
}
