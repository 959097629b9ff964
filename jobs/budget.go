package jobs

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file keeps a tree within its budget. Before a model call, the step
// reserves what the call may cost at most (its prompt, estimated, plus the
// completion cap it sends) with the tree's root row locked, so concurrent
// agents cannot all pass one check; the step's commit settles the
// reservation with the call's real usage, and a failed call releases it.
// Every paid call has one row in gb_model_calls keyed by its job and
// attempt, so its usage is counted once whether its step commits or not.

// Defaults of the budget.
const (
	// MaxCompletionTokensDefault is the completion cap a step sends.
	MaxCompletionTokensDefault = 4096
	// minCompletionTokens is the smallest completion cap worth a call.
	minCompletionTokens = 256
	// reportShare is the share of a tree's budget kept for the root's
	// closing report: every other call must leave it untouched.
	reportShare = 0.25
	// budgetWait is how long a step waits for reservations in flight to
	// settle when they leave too little for it.
	budgetWait = 500 * time.Millisecond
)

// UsageEstimator is implemented by models that can tell, before a call,
// the most it will use: its prompt tokens and the request's completion cap,
// and their price. Models without it are estimated at four characters a
// token with no price.
type UsageEstimator interface {
	EstimateUsage(req llm.Request) llm.Usage
}

// estimateUsage is the most a request of the run may use by its model's
// estimate.
func (a *Agent) estimateUsage(run *Run, req llm.Request) llm.Usage {
	if e, ok := a.modelFor(run).(UsageEstimator); ok {
		return e.EstimateUsage(req)
	}
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return llm.Usage{PromptTokens: (n + 3) / 4, CompletionTokens: req.MaxCompletionTokens}
}

// budget is a tree's limits and what it has spent and holds in flight.
type budget struct {
	maxTokens      int64
	maxCost        float64
	spentTokens    int64
	spentCost      float64
	inFlightTokens int64
	inFlightCost   float64
}

// verdict is what a reservation found.
type verdict int

const (
	admitted  verdict = iota // the call may go ahead
	exhausted                // the tree has spent what the call may use
	mustWait                 // calls in flight hold what it needs; try again soon
)

// callKey names one model call in the ledger: the job that made it, the
// job's attempt, and the step it was made for (a job may make several
// consecutive steps of its run).
type callKey struct {
	job     int64
	attempt int
	step    int
}

// keyOf is the ledger key of a job's call for a step.
func keyOf(job *river.Job[StepArgs], step int) callKey {
	return callKey{job: job.ID, attempt: job.Attempt, step: step}
}

// limits are the budget a tree's root was given (nil: none).
type limits struct {
	maxTokens *int64
	maxCost   *float64
}

// none reports whether the tree has no budget.
func (l limits) none() bool { return l.maxTokens == nil && l.maxCost == nil }

// reservation is the budget a step holds for its model call.
type reservation struct {
	held bool // a row was written and must be settled or released
}

// reserve admits a model call against its tree's budget. It sets the
// request's completion cap; when the tree has a budget it shrinks the cap
// to what is left and records the reservation. closing is the root's last
// report, which may use the share of the budget kept for it. reason says
// why a call was not admitted.
func (a *Agent) reserve(ctx context.Context, key callKey, run *Run, lim limits, req *llm.Request,
	closing bool) (res reservation, v verdict, reason string, err error) {
	req.MaxCompletionTokens = a.config.MaxCompletionTokens
	if lim.none() {
		return res, admitted, "", nil
	}
	err = pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		b, err := lockBudget(ctx, tx, run.RootID)
		if err != nil {
			return err
		}
		var est llm.Usage
		v, reason, est = a.admit(run, b, req, closing)
		if v != admitted {
			return nil
		}
		res.held = true
		_, err = tx.Exec(ctx, `WITH gone AS (
				UPDATE gb_model_calls SET status = 'released'
				WHERE job_id = $1 AND attempt < $2 AND status = 'reserved')
			INSERT INTO gb_model_calls (job_id, attempt, step, run_id, root_id, status, reserved_tokens, reserved_cost_usd)
			VALUES ($1, $2, $7, $3, $4, 'reserved', $5, $6)
			ON CONFLICT (job_id, attempt, step) DO UPDATE SET status = 'reserved',
				reserved_tokens = excluded.reserved_tokens, reserved_cost_usd = excluded.reserved_cost_usd`,
			key.job, key.attempt, run.ID, run.RootID, est.PromptTokens+est.CompletionTokens, est.CostUSD, key.step)
		if err != nil {
			return fmt.Errorf("error reserving budget: %w", err)
		}
		return nil
	})
	if err != nil {
		return reservation{}, 0, "", err
	}
	return res, v, reason, nil
}

// lockBudget locks the root of a tree and reads its budget, then (in a
// statement of its own, so that it sees what committed while it waited for
// the lock) what the tree spent and what calls in flight hold.
func lockBudget(ctx context.Context, tx pgx.Tx, rootID int64) (budget, error) {
	var b budget
	var maxTokens *int64
	var maxCost *float64
	if err := tx.QueryRow(ctx, `SELECT max_tokens, max_cost_usd::float8 FROM gb_agent_research_runs
		WHERE id = $1 FOR UPDATE`, rootID).Scan(&maxTokens, &maxCost); err != nil {
		return b, fmt.Errorf("error locking budget of tree %d: %w", rootID, err)
	}
	if maxTokens != nil {
		b.maxTokens = *maxTokens
	}
	if maxCost != nil {
		b.maxCost = *maxCost
	}
	err := tx.QueryRow(ctx, `SELECT
			(SELECT coalesce(sum(tokens), 0)::bigint FROM gb_agent_research_runs WHERE root_id = $1),
			(SELECT coalesce(sum(cost_usd), 0)::float8 FROM gb_agent_research_runs WHERE root_id = $1),
			coalesce(sum(c.reserved_tokens), 0)::bigint, coalesce(sum(c.reserved_cost_usd), 0)::float8
		FROM gb_model_calls c JOIN river_job j ON j.id = c.job_id AND j.attempt = c.attempt AND j.state = 'running'
		WHERE c.root_id = $1 AND c.status = 'reserved'`, rootID).
		Scan(&b.spentTokens, &b.spentCost, &b.inFlightTokens, &b.inFlightCost)
	if err != nil {
		return b, fmt.Errorf("error reading spending of tree %d: %w", rootID, err)
	}
	return b, nil
}

// admit decides on a call and shrinks its completion cap to what is left;
// it returns the usage to reserve.
func (a *Agent) admit(run *Run, b budget, req *llm.Request, closing bool) (verdict, string, llm.Usage) {
	share := 1 - reportShare
	if closing {
		share = 1
	}
	if b.maxTokens > 0 {
		limit := int64(math.Floor(float64(b.maxTokens) * share))
		promptEst := int64(a.estimateUsage(run, *req).PromptTokens)
		need := promptEst + minCompletionTokens
		if req.MaxCompletionTokens < minCompletionTokens {
			need = promptEst + int64(req.MaxCompletionTokens)
		}
		switch {
		case b.spentTokens+need > limit:
			return exhausted, fmt.Sprintf("budget exhausted: the research has used %d of its %d tokens", b.spentTokens, b.maxTokens), llm.Usage{}
		case b.spentTokens+b.inFlightTokens+need > limit:
			return mustWait, "", llm.Usage{}
		}
		req.MaxCompletionTokens = int(min(int64(req.MaxCompletionTokens), limit-b.spentTokens-b.inFlightTokens-promptEst))
	}
	est := a.estimateUsage(run, *req)
	if b.maxCost > 0 {
		limit := b.maxCost * share
		switch {
		case b.spentCost+est.CostUSD > limit || b.spentCost >= limit:
			return exhausted, fmt.Sprintf("budget exhausted: the research has spent $%.4f of its $%.4f", b.spentCost, b.maxCost), llm.Usage{}
		case b.spentCost+b.inFlightCost+est.CostUSD > limit:
			return mustWait, "", llm.Usage{}
		}
	}
	return admitted, "", est
}

// release gives back a reservation whose call failed and cost nothing.
func (a *Agent) release(ctx context.Context, key callKey, res reservation) {
	if !res.held {
		return
	}
	_, err := a.pool.Exec(context.WithoutCancel(ctx), `UPDATE gb_model_calls SET status = 'released'
		WHERE job_id = $1 AND attempt = $2 AND step = $3 AND status = 'reserved'`, key.job, key.attempt, key.step)
	if err != nil {
		// In-flight reservations count only while their job's attempt runs.
		a.logger.WarnContext(ctx, "could not release a budget reservation", "job_id", key.job, "err", err)
	}
}

// settleSQL records a call's usage on its run once: it settles the call's
// row (or makes it) and adds the usage to the run only when it did.
const settleSQL = `WITH c AS (
		INSERT INTO gb_model_calls (job_id, attempt, step, run_id, root_id, status, prompt_tokens, completion_tokens, cost_usd, committed)
		VALUES ($1, $2, $9, $3, $4, 'settled', $5, $6, $7, $8)
		ON CONFLICT (job_id, attempt, step) DO UPDATE SET status = 'settled', prompt_tokens = excluded.prompt_tokens,
			completion_tokens = excluded.completion_tokens, cost_usd = excluded.cost_usd, committed = excluded.committed
		WHERE gb_model_calls.status <> 'settled'
		RETURNING run_id)
	UPDATE gb_agent_research_runs SET
		prompt_tokens = prompt_tokens + $5, completion_tokens = completion_tokens + $6,
		tokens = tokens + $5 + $6, cost_usd = cost_usd + $7
	WHERE id IN (SELECT run_id FROM c)`

// settle adds a call's usage to its run, once per job attempt. committed
// says whether the step that paid for it is recorded in the same
// transaction.
func settle(ctx context.Context, db DB, key callKey, run *Run, u llm.Usage, committed bool) error {
	_, err := db.Exec(ctx, settleSQL, settleArgs(key, run, u, committed)...)
	if err != nil {
		return fmt.Errorf("error recording usage of run %d: %w", run.ID, err)
	}
	return nil
}

// settleArgs are the arguments of settleSQL.
func settleArgs(key callKey, run *Run, u llm.Usage, committed bool) []any {
	return []any{key.job, key.attempt, run.ID, run.RootID, u.PromptTokens, u.CompletionTokens, u.CostUSD, committed, key.step}
}

// settleLost records the usage of a paid call whose step did not commit,
// on a context of its own: the step will be retried and pay again, and
// both calls count.
func (a *Agent) settleLost(ctx context.Context, key callKey, run *Run, u llm.Usage) {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 && u.CostUSD == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := settle(ctx, a.pool, key, run, u, false); err != nil {
		a.logger.ErrorContext(ctx, "could not record the usage of a step that did not commit",
			"run_id", run.ID, "job_id", key.job, "attempt", key.attempt, "step", key.step, "err", err)
	}
}
