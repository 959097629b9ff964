package jobs

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file readies a run's next model call in the commit of the step
// before it, so that a job that goes on to its run's next step calls the
// model with no round trip first. The batch that records step N (and the
// batch that loads a job's run) also reads the model's learned limits and
// its breaker; and when the step goes on in the same job, in a tree with
// no budget, it builds step N+1's request from the conversation as the
// commit leaves it and admits that call (admitCallSQL, on the condition
// that the step was recorded and the breaker is not open): the rate-limit
// capacity is taken and the ledger row written, reserved for this job's
// attempt, in the step's own transaction. Step N+1 then uses what was
// readied, when its request is the one built or no larger. A call that
// grew past its estimate (the parent's new inputs came with the commit)
// charges the rest to the rate limit in a round trip of its own (the row
// is reused); a breaker that was not clean, a call queued for capacity, a
// tree with a budget and a job's first step go through the separate
// admission. A readied call that is not made (the step stopped before its
// call) is released as capacity unused; one whose worker died is settled
// with its estimate by the maintenance pass, like any call in flight.

// nextCall is what a commit (or a job's load) readied for the run's next
// step.
type nextCall struct {
	step int // the step it is for; 0: whichever comes next (a load)
	// lim is the learned window and token rate of model.
	model string
	lim   providerLimits
	// clean says the model's breaker was neither open nor counting
	// failures: the call needs no gate, and its answer closes nothing.
	clean bool
	// call is the ledger row of the call admitted for step, reserved for
	// this job's attempt (id 0: none), and used says the step took it.
	call callRef
	used bool
	// own and cap are gb's count of the admitted request's prompt and its
	// completion cap: a call no larger fits in what was admitted.
	own, cap int
	// req is the request built for step, from conv messages; last and
	// level are what it was built for, and compaction what it did.
	req        *llm.Request
	convLen    int
	last       bool
	level      int
	compaction *Compaction
}

// limitsOfSQL reads, for the model named by the SQL expression name (a
// column of the FROM clause from), its learned window and token rate
// (providerLimitsSQL) and whether its breaker is troubled: open, or
// counting failures (no row: it never failed).
func limitsOfSQL(name, from string) string {
	return `SELECT m.name, coalesce((SELECT window_tokens FROM gb_model_windows WHERE model = m.name), 0),
		coalesce((SELECT tpm FROM gb_rate_limits WHERE key = m.name), 0),
		coalesce((SELECT opened_at IS NOT NULL OR failures > 0 FROM gb_provider_breakers WHERE key = m.name), false)
	FROM (SELECT ` + name + ` AS name ` + from + `) m`
}

// nextLimitsSQL is limitsOfSQL for the model $1.
var nextLimitsSQL = limitsOfSQL("$1::text", "")

// loadLimitsSQL is limitsOfSQL for the model of run $1: its own when it
// is one of the configured ($2), else the default ($3).
var loadLimitsSQL = limitsOfSQL("CASE WHEN r.model = ANY($2::text[]) THEN r.model ELSE $3::text END",
	"FROM gb_agent_research_runs r WHERE r.id = $1")

// scanLimits reads a row of limitsOfSQL into n (no row: none read).
func (n *nextCall) scanLimits(row pgx.Row) error {
	var troubled bool
	err := row.Scan(&n.model, &n.lim.window, &n.lim.tpm, &troubled)
	if errors.Is(err, pgx.ErrNoRows) {
		n.model = ""
		return nil
	}
	n.clean = err == nil && !troubled
	return err
}

// queueLimits queues, on b, the read of the model's learned limits and of
// its breaker into n.
func (a *Service) queueLimits(b *pgx.Batch, run *Run, n *nextCall) {
	b.Queue(nextLimitsSQL, a.modelFor(run).Name()).QueryRow(n.scanLimits)
}

// queueLoadLimits queues, on the batch that loads run id, the read of its
// model's limits and breaker; t.next holds them for the job's first step
// when the run's model turns out to be the one they were read for.
func (a *Service) queueLoadLimits(b *pgx.Batch, t *turn, id int64) {
	n := &nextCall{}
	t.next = n
	b.Queue(loadLimitsSQL, id, a.modelNames(), a.model.Name()).QueryRow(n.scanLimits)
}

// checkLoaded drops what the load read for another model than the run's.
func (a *Service) checkLoaded(t *turn) {
	if t.next != nil && t.next.step == 0 && (t.run == nil || t.next.model != a.modelFor(t.run).Name()) {
		t.next = nil
	}
}

// admitNextSQL admits step $2's call in the commit of the step before it,
// when that step was recorded (the run is at it) and the model's breaker
// ($16) is not open: admitCallSQL's admission, which says whether it was
// tried, followed by the model's limits and breaker (limitsOfSQL for the
// model $10), read in the same statement.
var admitNextSQL = admitSQL(`EXISTS (SELECT 1 FROM gb_agent_research_runs WHERE id = $1 AND steps = $2 - 1
		AND status = 'working')`, false, limitsOfSQL("$10::text", ""))

// readyNext builds the request of the step after c, which the same job
// makes next, from the conversation c's commit leaves (msgs after the
// run's history), and queues on b the admission of its call, when the
// tree has no budget to reserve it against. It returns what the commit
// readies; its call is admitted only once the batch ran.
func (a *Service) readyNext(b *pgx.Batch, c *stepCommit, msgs []llm.Message) (*nextCall, error) {
	t, run := c.turn, c.turn.run
	n := &nextCall{step: c.step + 1}
	if !t.limits.none() || run.ProviderWait != nil {
		a.queueLimits(b, run, n)
		return n, nil
	}
	conv := append(slices.Clip(t.history), msgs...)
	last := n.step >= run.MaxSteps || revising(conv)
	level := t.refusals[n.step]
	saved := t.compaction
	req, fits, err := a.buildRequest(t, conv, last, false, level, t.lim)
	n.compaction, t.compaction = t.compaction, saved
	if err != nil || !fits {
		a.queueLimits(b, run, n)
		return n, err // the step finds out for itself
	}
	n.req, n.convLen, n.last, n.level = &req, len(conv), last, level
	est := a.estimateUsage(run, req)
	model := a.modelFor(run)
	key, tokens := a.rate.cost(model, est)
	n.own, n.cap = llm.EstimatePromptTokens(req), req.MaxCompletionTokens
	n.call = callRef{model: model.Name(), est: est}
	var attempted time.Time
	if t.job.AttemptedAt != nil {
		attempted = *t.job.AttemptedAt
	}
	breaker, _ := a.providerKey(run)
	b.Queue(admitNextSQL, run.ID, n.step, key, tokens, t.job.ID, t.job.Attempt, attempted,
		est.PromptTokens+est.CompletionTokens, est.CostUSD, model.Name(), run.RootID, req.MaxCompletionTokens,
		admitNow, n.own, false, breaker, int64(0)).QueryRow(func(row pgx.Row) error {
		var at *time.Time
		var status string
		var tried, troubled bool
		if err := row.Scan(&at, &n.call.id, &status, &tried, &n.model, &n.lim.window, &n.lim.tpm, &troubled); err != nil {
			return err
		}
		n.clean = !troubled
		if !tried || status != "reserved" {
			// Not tried, too large for the limit, or queued for later:
			// the step's own admission finds the row queued, if any.
			n.call.id = 0
		}
		return nil
	})
	return n, nil
}

// takeNext is what was readied for step, taken from the turn.
func (t *turn) takeNext(step int) *nextCall {
	n := t.next
	t.next = nil
	if n == nil || (n.step != 0 && n.step != step) {
		return nil
	}
	return n
}

// request is the request readied for a step built for conv at last and
// level, or nil when the step's differs.
func (n *nextCall) request(conv []llm.Message, last, closing bool, level int, lim providerLimits) *llm.Request {
	if n == nil || n.req == nil || closing || n.convLen != len(conv) || n.last != last || n.level != level || n.lim != lim {
		return nil
	}
	return n.req
}

// admitted is the call readied for req, on the step's first try, when req
// is no larger than what was admitted; the step takes it.
func (n *nextCall) admitted(req llm.Request, first bool) (callRef, bool) {
	if !first || n == nil || n.call.id == 0 || n.used || llm.EstimatePromptTokens(req) > n.own ||
		req.MaxCompletionTokens > n.cap {
		return callRef{}, false
	}
	n.used = true
	return n.call, true
}

// reserved is the ledger row readied for the step and not taken, which
// the step's own admission reuses (0: none).
func (n *nextCall) reserved() int64 {
	if n == nil || n.used {
		return 0
	}
	return n.call.id
}

// releaseNext gives back, as capacity unused, a call readied for a step that
// did not make it.
func (a *Service) releaseNext(ctx context.Context, n *nextCall) {
	if n == nil || n.used || n.call.id == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := settleCall(sctx, a.pool, n.call, llm.Usage{}, false, false, outcomeUnused); err != nil {
		a.logger.WarnContext(ctx, "could not release a readied model call; the maintenance pass settles it",
			"call_id", n.call.id, "err", err)
	}
}
