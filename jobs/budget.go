package jobs

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file keeps a tree within its budget. Before a model call, the step
// reserves what the call may cost at most (its prompt, estimated and priced
// at the dearest rate it may be billed, estimateCost, plus the completion
// cap it sends) with the tree's root row locked, so concurrent agents
// cannot all pass one check; the reservation is the call's ledger row (calls.go), which the step's commit
// settles with the call's real usage. A share of the budget is kept apart
// for the root's closing report: every other call, the sub-agents' and the
// root's own, must fit in the rest, and what they overspend is taken from
// that rest, never from the report's share.

// Defaults of the budget.
const (
	// MaxCompletionTokensDefault is the most any call may ask for; the cap
	// a call sends is sized to what it is for (Profile's StepCap and
	// ReportCap) and lowered to it.
	MaxCompletionTokensDefault = 16384
	// StepCapDefault and ReportCapDefault are the completion caps of a
	// model that does not say its own (llm.Profiler): a call that may
	// call tools, and a call that writes a report.
	StepCapDefault   = 1024
	ReportCapDefault = 4096
	// minCompletionTokens is the smallest completion cap worth a call.
	minCompletionTokens = 256
	// reportShare is the share of a tree's budget kept for the root's
	// closing report.
	reportShare = 0.25
	// budgetWait is how long a step waits for reservations in flight to
	// settle when they leave too little for it.
	budgetWait = 500 * time.Millisecond
)

// UsageEstimator is implemented by models that can tell, before a call,
// the most it will use: its prompt tokens and the request's completion cap,
// and their price. Other models are estimated with llm.EstimatePromptTokens
// and priced from their Profile.
type UsageEstimator interface {
	EstimateUsage(req llm.Request) llm.Usage
}

// estimateUsage is the most a request of the run may use: its prompt, as
// the provider is likely to count it (llm.EstimatePromptTokens, scaled by
// what the provider counted before), at its dearest rate (estimateCost),
// and its completion cap. A model with no profile that estimates its own usage
// (UsageEstimator) is taken at its word.
func (a *Service) estimateUsage(run *Run, req llm.Request) llm.Usage {
	m := a.modelFor(run)
	_, profiled := m.(llm.Profiler)
	if e, ok := m.(UsageEstimator); ok && !profiled {
		u := e.EstimateUsage(req)
		u.CachedPromptTokens = 0
		return u
	}
	u := llm.Usage{PromptTokens: a.rate.scale(m.Name(), llm.EstimatePromptTokens(req)),
		CompletionTokens: req.MaxCompletionTokens}
	if p := profileOf(m); p.Priced {
		u.CostUSD = estimateCost(p.Price, u)
	}
	return u
}

// estimateCost prices an estimate at the dearest rate each of its prompt
// tokens may be billed: the uncached rate, or the cache-write rate when the
// provider charges more to write its cache (Claude on Bedrock: 1.25 times
// the input rate), since a call may write its whole prompt to the cache.
func estimateCost(p llm.Price, u llm.Usage) float64 {
	if p.CacheWrite > p.Input {
		u.CacheWriteTokens = u.PromptTokens
	}
	return p.Cost(u)
}

// profileOf is a model's profile, or the defaults of a model that has none.
func profileOf(m llm.Model) llm.Profile {
	p := llm.Profile{}
	if pm, ok := m.(llm.Profiler); ok {
		p = pm.Profile()
	}
	p.StepCap = cmp.Or(p.StepCap, StepCapDefault)
	p.ReportCap = cmp.Or(p.ReportCap, ReportCapDefault)
	return p
}

// budget is a tree's limits and what it has spent and holds in flight.
type budget struct {
	maxTokens      int64
	maxCost        float64
	spentTokens    int64
	spentCost      float64
	inFlightTokens int64
	inFlightCost   float64
	// closingTokens and closingCost are what the root's closing calls
	// spent or hold: a closing call retried after its worker died may use
	// only what is left of the report's share.
	closingTokens int64
	closingCost   float64
}

// verdict is what an admission found.
type verdict int

const (
	admitted  verdict = iota // the call may go ahead
	exhausted                // the tree has spent what the call may use
	mustWait                 // calls in flight hold what it needs; try again soon
	queued                   // its rate-limit capacity comes later: come back then
	tooLarge                 // the call alone is more than the token rate limit
)

// limits are the budget a tree's root was given (nil: none).
type limits struct {
	maxTokens *int64
	maxCost   *float64
}

// none reports whether the tree has no budget.
func (l limits) none() bool { return l.maxTokens == nil && l.maxCost == nil }

// admission is what a step may do with its model call.
type admission struct {
	verdict verdict
	call    callRef   // the call's ledger row, when admitted
	at      time.Time // when a queued call may start
	reason  string    // why the budget did not admit it
}

// admit admits a model call: against its tree's budget (shrinking the
// request's completion cap to what is left), then against its model's
// rate limit, writing its ledger row. closing is the root's last report,
// which may use the share of the budget kept for it.
func (a *Service) admit(ctx context.Context, t *turn, step int, req *llm.Request, closing bool) (admission, error) {
	if t.limits.none() {
		c, err := a.admitCall(ctx, a.pool, t, step, *req, a.estimateUsage(t.run, *req), closing)
		return admissionOf(c), err
	}
	var ad admission
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		b, err := lockBudget(ctx, tx, t.run.RootID)
		if err != nil {
			return err
		}
		v, reason := a.fit(t.run, b, req, closing)
		if v != admitted {
			ad = admission{verdict: v, reason: reason}
			return nil
		}
		c, err := a.admitCall(ctx, tx, t, step, *req, a.estimateUsage(t.run, *req), closing)
		ad = admissionOf(c)
		return err
	})
	return ad, err
}

// admissionOf is the admission of a call its budget admitted.
func admissionOf(c capacity) admission {
	switch {
	case c.tooLarge:
		return admission{verdict: tooLarge}
	case c.queued:
		return admission{verdict: queued, call: c.call, at: c.at}
	default:
		return admission{verdict: admitted, call: c.call}
	}
}

// lockBudget locks the root of a tree and reads its budget, then (in a
// statement of its own, so that it sees what committed while it waited for
// the lock) what the tree spent and what calls in flight hold: every call
// not yet settled, its worker alive or not, since the maintenance pass
// settles a dead worker's call at its estimate (calls.go).
func lockBudget(ctx context.Context, tx pgx.Tx, rootID int64) (budget, error) {
	var b budget
	var maxTokens *int64
	var maxCost *float64
	// Lock the tree's root and read its limits (NULL: none).
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
			coalesce(sum(c.reserved_tokens) FILTER (WHERE c.status = 'reserved'), 0)::bigint,
			coalesce(sum(c.reserved_cost_usd) FILTER (WHERE c.status = 'reserved'), 0)::float8,
			coalesce(sum(CASE WHEN c.status = 'reserved' THEN c.reserved_tokens
				ELSE c.prompt_tokens + c.completion_tokens END) FILTER (WHERE c.closing), 0)::bigint,
			coalesce(sum(CASE WHEN c.status = 'reserved' THEN c.reserved_cost_usd ELSE c.cost_usd END)
				FILTER (WHERE c.closing), 0)::float8
		FROM gb_model_calls c WHERE c.root_id = $1 AND c.status IN ('reserved', 'settled')`, rootID).
		Scan(&b.spentTokens, &b.spentCost, &b.inFlightTokens, &b.inFlightCost, &b.closingTokens, &b.closingCost)
	if err != nil {
		return b, fmt.Errorf("error reading spending of tree %d: %w", rootID, err)
	}
	return b, nil
}

// fit decides on a call against the tree's budget and shrinks its
// completion cap to what is left. Every call but the root's closing one
// must fit, with the calls in flight, in the budget less the report's
// share. The closing call may use what the others left of the whole
// budget, and never less than the report's share (less what closing calls
// before it spent or hold: one retried after its worker died), so that
// what other calls overspent is not taken from it.
func (a *Service) fit(run *Run, b budget, req *llm.Request, closing bool) (verdict, string) {
	if b.maxTokens > 0 {
		promptEst := int64(a.estimateUsage(run, *req).PromptTokens)
		need := promptEst + int64(min(req.MaxCompletionTokens, minCompletionTokens))
		avail := int64(math.Floor(float64(b.maxTokens)*(1-reportShare))) - b.spentTokens - b.inFlightTokens
		if closing {
			share := int64(math.Floor(float64(b.maxTokens)*reportShare)) - b.closingTokens
			avail = max(b.maxTokens-b.spentTokens-b.inFlightTokens, share)
		}
		switch {
		case need > avail && (closing || need > avail+b.inFlightTokens):
			return exhausted, fmt.Sprintf("budget exhausted: the research has used %d of its %d tokens", b.spentTokens, b.maxTokens)
		case need > avail:
			return mustWait, ""
		}
		req.MaxCompletionTokens = int(min(int64(req.MaxCompletionTokens), avail-promptEst))
	}
	if b.maxCost > 0 {
		left := b.maxCost*(1-reportShare) - b.spentCost - b.inFlightCost
		if closing {
			left = max(b.maxCost-b.spentCost-b.inFlightCost, b.maxCost*reportShare-b.closingCost)
		}
		if !a.shrinkToCost(run, req, left) {
			if closing || a.smallestCost(run, *req) > left+b.inFlightCost {
				return exhausted, fmt.Sprintf("budget exhausted: the research has spent $%.4f of its $%.4f", b.spentCost, b.maxCost)
			}
			return mustWait, ""
		}
	}
	return admitted, ""
}

// shrinkToCost lowers the request's completion cap so that its estimate
// costs at most left dollars, keeping at least minCompletionTokens (or the
// cap, when smaller); false when even that does not fit.
func (a *Service) shrinkToCost(run *Run, req *llm.Request, left float64) bool {
	est := a.estimateUsage(run, *req)
	if est.CostUSD <= left {
		return true
	}
	floor := min(req.MaxCompletionTokens, minCompletionTokens)
	perToken := 0.0
	if req.MaxCompletionTokens > 0 {
		perToken = (est.CostUSD - a.smallestCost(run, withCap(*req, 0))) / float64(req.MaxCompletionTokens)
	}
	if perToken <= 0 {
		return false
	}
	fixed := est.CostUSD - perToken*float64(req.MaxCompletionTokens)
	capFits := int(math.Floor((left - fixed) / perToken))
	if capFits < floor {
		return false
	}
	req.MaxCompletionTokens = min(req.MaxCompletionTokens, capFits)
	return true
}

// smallestCost is the estimate of the request with the smallest cap worth
// a call.
func (a *Service) smallestCost(run *Run, req llm.Request) float64 {
	return a.estimateUsage(run, withCap(req, min(req.MaxCompletionTokens, minCompletionTokens))).CostUSD
}

// withCap is the request with another completion cap.
func withCap(req llm.Request, n int) llm.Request {
	req.MaxCompletionTokens = n
	return req
}
