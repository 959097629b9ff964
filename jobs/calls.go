package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file keeps the ledger of model calls (gb_model_calls): every call
// has a row of its own, written before the call with its estimate, in the
// statement that takes its rate-limit capacity (and, in a tree with a
// budget, in the transaction that reserves its budget), and settled after
// it whatever happens to its step: with its usage at the step's commit or
// when the provider billed an answer that could not be used, released
// when the provider did not bill it, and settled with its estimate (marked
// estimated) when the call was cut off after it was sent or its worker
// died (the maintenance pass). The ledger therefore counts every call the
// provider answered exactly once.

// callRef is one model call's row in the ledger.
type callRef struct {
	id    int64
	model string
	est   llm.Usage // the most it may cost: its prompt and its completion cap
}

// admitCallSQL admits a model call of a run's step against its model's
// rate limit and writes its ledger row. A row the step queued earlier
// (capacity taken for a later start), or the row readied for it by the
// commit before it ($17, next_call.go), is used when its time has come,
// and if the call now counts more tokens than it was admitted with, the
// rest is charged to the bucket, pushing later calls back; otherwise
// capacity is taken now (gb_take_capacity), for now or for later. It
// returns when the call may start, the row's id (none when the call alone
// is more than the token limit), its status, and whether the admission
// was tried (admitSQL's guard).
//
// $1 run, $2 step, $3 rate key, $4 tokens counted by the limit, $5 job,
// $6 attempt, $7 the attempt's start, $8 estimated tokens, $9 estimated
// cost, $10 model, $11 root, $12 completion cap, $13 how soon counts as
// now, $14 gb's own count of the prompt, $15 whether it is the root's
// closing call, $16 a breaker key whose breaker open stops the admission
// (empty for none), $17 the readied row (0 for none).
var admitCallSQL = admitSQL("true", false, "")

// admitFirstSQL is admitCallSQL for the first call of a job whose run does
// not show thinking yet: when tried, the same statement marks the run
// thinking, with a row of its state history (a run waiting for its
// provider is left alone: outage.go says when that ends). The job's load
// thus writes nothing, and the run shows thinking from its job's first
// call.
var admitFirstSQL = admitSQL("true", true, "")

// admitSQL is admitCallSQL tried only when guard holds (and the breaker
// $16 is not open); thinking marks the run thinking too (admitFirstSQL),
// and also, when not empty, is a statement of one row whose columns the
// result ends with (admitNextSQL's limits).
func admitSQL(guard string, thinking bool, also string) string {
	from, cols := "v", ""
	if also != "" {
		from, cols = "v, ("+also+") lim", ", lim.*"
	}
	mark := ""
	if thinking {
		mark = `
	th AS (
		UPDATE gb_agent_research_runs SET state = 'thinking', updated_at = now()
		WHERE (SELECT ok FROM g) AND id = $1 AND status IN ('queued', 'working')
			AND state NOT IN ('thinking', 'waiting_provider')
		RETURNING id, steps),
	ths AS (
		INSERT INTO gb_agent_research_states (run_id, state, step) SELECT id, 'thinking', steps + 1 FROM th),`
	}
	return `WITH g AS (
		SELECT (` + guard + `) AND NOT EXISTS (SELECT 1 FROM gb_provider_breakers
			WHERE key = $16::text AND opened_at IS NOT NULL) AS ok),` + mark + `
	q AS (
		SELECT id, not_before, reserved_tokens FROM gb_model_calls
		WHERE (SELECT ok FROM g) AND run_id = $1 AND step = $2
			AND (status = 'queued' OR (status = 'reserved' AND id = $17::bigint))
		ORDER BY id LIMIT 1 FOR UPDATE),
	s AS (
		SELECT CASE WHEN (SELECT ok FROM g) THEN coalesce((SELECT not_before FROM q
				WHERE gb_take_capacity($3, greatest($4::int - q.reserved_tokens, 0)::int, false) IS NOT NULL),
			CASE WHEN $3 = '' THEN clock_timestamp() ELSE gb_take_capacity($3, $4::int, true) END) END AS at),
	v AS (
		SELECT at, CASE WHEN at <= clock_timestamp() + $13::interval THEN 'reserved' ELSE 'queued' END AS status FROM s),
	up AS (
		UPDATE gb_model_calls c SET status = v.status, job_id = $5, attempt = $6, job_attempted_at = $7,
			reserved_tokens = $8, reserved_cost_usd = $9, model = $10, max_completion_tokens = $12,
			est_prompt_tokens = $14, closing = $15
		FROM q, v WHERE c.id = q.id RETURNING c.id),
	ins AS (
		INSERT INTO gb_model_calls (job_id, attempt, step, run_id, root_id, status, job_attempted_at,
			reserved_tokens, reserved_cost_usd, model, max_completion_tokens, not_before, est_prompt_tokens, closing)
		SELECT $5, $6, $2, $1, $11, v.status, $7, $8, $9, $10, $12, v.at, $14, $15
		FROM v WHERE NOT EXISTS (SELECT 1 FROM q) AND v.at < 'infinity'
		RETURNING id)
	SELECT CASE WHEN isfinite(v.at) THEN v.at END, coalesce((SELECT id FROM up), (SELECT id FROM ins), 0), v.status,
		(SELECT ok FROM g)` + cols + `
	FROM ` + from
}

// admitNow is how soon a start counts as now: a call that may start within
// it goes ahead rather than going back to the queue.
const admitNow = 50 * time.Millisecond

// capacity is what admitCall found.
type capacity struct {
	call     callRef
	at       time.Time // when the call may start
	queued   bool      // not now: the step must come back at at
	tooLarge bool      // the call alone is more than the token limit
}

// admitCall takes the rate-limit capacity of a call and writes its ledger
// row, on db (the pool, or the transaction of a budget reservation).
func (a *Service) admitCall(ctx context.Context, db DB, t *turn, step int, req llm.Request, est llm.Usage,
	closing bool) (capacity, error) {
	run, job := t.run, t.job
	model := a.modelFor(run)
	key, tokens := a.rate.cost(model, est)
	var c capacity
	var status string
	var at *time.Time
	var attempted time.Time
	if job.AttemptedAt != nil {
		attempted = *job.AttemptedAt
	}
	var tried bool
	sql := admitCallSQL
	if t.thinkingDue {
		sql = admitFirstSQL
	}
	err := db.QueryRow(ctx, sql, run.ID, step, key, tokens, job.ID, job.Attempt, attempted,
		est.PromptTokens+est.CompletionTokens, est.CostUSD, model.Name(), run.RootID, req.MaxCompletionTokens,
		admitNow, llm.EstimatePromptTokens(req), closing, "", t.readied.reserved()).Scan(&at, &c.call.id, &status, &tried)
	if err != nil {
		return c, fmt.Errorf("error admitting the model call of run %d step %d: %w", run.ID, step, err)
	}
	if at != nil {
		c.at = *at
	}
	if t.thinkingDue && tried {
		t.thinkingDue = false
		t.run.State = StateThinking
	}
	if c.call.id != 0 && c.call.id == t.readied.reserved() {
		t.readied.used = true // the readied row is this call's now
	}
	c.call.model, c.call.est = model.Name(), est
	c.tooLarge = c.call.id == 0
	c.queued = status == "queued" && !c.tooLarge
	return c, nil
}

// snoozeFor is how long a step whose call was queued goes back to the
// queue: until its capacity's time, and a little more so that calls queued
// for one instant do not all come back at once.
func snoozeFor(at time.Time) time.Duration {
	d := max(time.Until(at), 0)
	return d + rand.N(d/20+20*time.Millisecond)
}

// settleCallSQL settles a call that did not commit with a step: it records
// what the provider billed ($2..$6, $7 estimated) on the call's row and on
// its run, once; or, when the provider billed nothing ($8 false), releases
// the row. $9 says what happened.
const settleCallSQL = `WITH c AS (
		UPDATE gb_model_calls SET status = CASE WHEN $8 THEN 'settled' ELSE 'released' END,
			prompt_tokens = $2, cached_tokens = $3, completion_tokens = $4, reasoning_tokens = $5, cost_usd = $6,
			estimated = $7, outcome = $9, settled_at = now()
		WHERE id = $1 AND status IN ('queued', 'reserved')
		RETURNING run_id)
	UPDATE gb_agent_research_runs SET
		prompt_tokens = prompt_tokens + $2, cached_tokens = cached_tokens + $3,
		completion_tokens = completion_tokens + $4, reasoning_tokens = reasoning_tokens + $5,
		tokens = tokens + $2 + $4, cost_usd = cost_usd + $6
	WHERE $8 AND id IN (SELECT run_id FROM c)`

// Outcomes of a call, recorded on its row.
const (
	outcomeAnswered   = "answered"
	outcomeDropped    = "answered, step not recorded"
	outcomeUnusable   = "unusable answer"
	outcomeCutOff     = "cut off after it was sent"
	outcomeNotSent    = "not sent"
	outcomeContext    = "context_length_exceeded"
	outcomeTooLarge   = "too large for the rate limit"
	outcomeRateLimit  = "rate limited"
	outcomeFailed     = "failed"
	outcomeWorkerDied = "worker died, settled with its estimate"
	outcomeUnused     = "capacity unused"
)

// settleCall settles a call on db: billed with usage u, or released.
func settleCall(ctx context.Context, db DB, c callRef, u llm.Usage, billed, estimated bool, outcome string) error {
	if c.id == 0 {
		return nil
	}
	if !billed {
		u = llm.Usage{}
	}
	_, err := db.Exec(ctx, settleCallSQL, c.id, u.PromptTokens, u.CachedPromptTokens, u.CompletionTokens,
		u.ReasoningTokens, u.CostUSD, estimated, billed, outcome)
	if err != nil {
		return fmt.Errorf("error settling model call %d: %w", c.id, err)
	}
	return nil
}

// settleFailed settles the call of a failed model call, on a context of
// its own so that an interrupted step still records it: a call the
// provider billed counts its usage; one cut off after it was sent counts
// its estimate, marked estimated; any other is released.
func (a *Service) settleFailed(ctx context.Context, c callRef, callErr error) {
	u, billed, estimated, outcome := failedCallUsage(c, callErr)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := settleCall(sctx, a.pool, c, u, billed, estimated, outcome); err != nil {
		a.logger.ErrorContext(ctx, "could not settle a failed model call", "call_id", c.id, "err", err)
	}
}

// failedCallUsage is what a failed call is recorded with.
func failedCallUsage(c callRef, err error) (u llm.Usage, billed, estimated bool, outcome string) {
	var ce *llm.CallError
	isCall := errors.As(err, &ce)
	switch {
	case isCall && errors.Is(err, llm.ErrUnusable):
		return ce.Usage, true, false, outcomeUnusable
	case isCall && !ce.Usage.Zero():
		return ce.Usage, true, false, outcomeFailed
	case errors.Is(err, llm.ErrContextLength):
		return u, false, false, outcomeContext
	case errors.Is(err, llm.ErrTooLarge):
		return u, false, false, outcomeTooLarge
	case errors.Is(err, llm.ErrRateLimited):
		return u, false, false, outcomeRateLimit
	case isCall && ce.Sent && errors.Is(err, llm.ErrTransient) && isCutOff(err):
		return c.est, true, true, outcomeCutOff
	case !isCall && errors.Is(err, context.Canceled), !isCall && errors.Is(err, context.DeadlineExceeded):
		// A model that does not say whether the call left: count it.
		return c.est, true, true, outcomeCutOff
	case isCall && !ce.Sent:
		return u, false, false, outcomeNotSent
	default:
		return u, false, false, outcomeFailed
	}
}

// isCutOff reports whether a call failed because the caller's context
// ended while it waited for the answer, rather than because the provider
// answered with an error.
func isCutOff(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lostCallSQL is the condition that the ledger row c is a call in flight
// of a job attempt that is no longer running: its worker died or its job
// was put back without settling it.
const lostCallSQL = `c.status = 'reserved' AND c.created_at < now() - $1::interval AND NOT EXISTS (
		SELECT 1 FROM river_job j WHERE j.id = c.job_id AND j.state = 'running'
			AND j.attempted_at IS NOT DISTINCT FROM c.job_attempted_at)`

// lockLostCallsSQL locks, in id order (a tree's root first, as every
// writer of a tree does), the runs whose lost calls are about to be
// settled, and their roots.
const lockLostCallsSQL = `SELECT id FROM gb_agent_research_runs WHERE id IN (
		SELECT c.run_id FROM gb_model_calls c WHERE ` + lostCallSQL + `
		UNION SELECT c.root_id FROM gb_model_calls c WHERE ` + lostCallSQL + `)
	ORDER BY id FOR UPDATE`

// settleLostCallsSQL settles, with their estimates, the lost calls: each
// was sent, as far as the ledger can tell, and may have been billed. Calls
// queued for capacity by a run that has since ended or moved past their
// step are released.
const settleLostCallsSQL = `WITH lost AS (
		UPDATE gb_model_calls c SET status = 'settled', estimated = true, outcome = $2, settled_at = now(),
			prompt_tokens = c.reserved_tokens - c.max_completion_tokens, completion_tokens = c.max_completion_tokens,
			cost_usd = c.reserved_cost_usd
		WHERE ` + lostCallSQL + `
		RETURNING c.run_id, c.prompt_tokens, c.completion_tokens, c.cost_usd),
	per_run AS (
		SELECT run_id, sum(prompt_tokens) AS p, sum(completion_tokens) AS o, sum(cost_usd) AS d
		FROM lost GROUP BY run_id),
	runs AS (
		UPDATE gb_agent_research_runs r SET prompt_tokens = r.prompt_tokens + per_run.p,
			completion_tokens = r.completion_tokens + per_run.o, tokens = r.tokens + per_run.p + per_run.o,
			cost_usd = r.cost_usd + per_run.d
		FROM per_run WHERE r.id = per_run.run_id),
	stale AS (
		UPDATE gb_model_calls c SET status = 'released', outcome = 'capacity unused', settled_at = now()
		FROM gb_agent_research_runs r
		WHERE c.status = 'queued' AND r.id = c.run_id AND (r.ended_at IS NOT NULL OR r.steps >= c.step)
		RETURNING 1)
	SELECT (SELECT count(*) FROM lost), (SELECT count(*) FROM stale)`

// lostCallGrace keeps the maintenance pass away from a row written a
// moment ago, whose job River may not show running yet.
const lostCallGrace = 5 * time.Second

// settleLostCalls is the maintenance pass's part of the ledger.
func settleLostCalls(ctx context.Context, tx pgx.Tx) (lost, stale int64, err error) {
	if _, err := tx.Exec(ctx, lockLostCallsSQL, lostCallGrace); err != nil {
		return 0, 0, fmt.Errorf("error locking the runs of lost model calls: %w", err)
	}
	err = tx.QueryRow(ctx, settleLostCallsSQL, lostCallGrace, outcomeWorkerDied).Scan(&lost, &stale)
	if err != nil {
		return 0, 0, fmt.Errorf("error settling lost model calls: %w", err)
	}
	return lost, stale, nil
}
