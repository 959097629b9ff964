package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file makes a step's model call: it builds the request from the
// stored conversation (compacted to fit the model's window, with a
// completion cap sized to what the call is for), admits it against the
// tree's budget and the model's shared rate limit, calls the model, and
// decides what a failed call means. A call that cannot get capacity, or
// that the model's open breaker holds back, goes back to the queue without
// spending an attempt; so does a transient failure (the provider down,
// overloaded or unreachable), waited out with backoff up to the outage
// horizon (outage.go); an answer that did not fit the window is asked
// again compacted harder, and in the end as the agent's report; an
// unusable answer spends an attempt and is retried by River after a
// jittered backoff; only a request the provider rejects as such fails the
// run.

// maxCompactLevel is how much harder than usual a step compacts its
// request after the provider said it did not fit, before it asks for the
// report instead.
const maxCompactLevel = 3

// answer is a model call's answer and what the step made of it.
type answer struct {
	resp llm.Response
	call callRef
	last bool // the model was given no tools: its reply is its report
	cap  int  // the completion cap the call was sent with
	// reportCap is the cap of a call that writes the report, for a report
	// cut at a smaller cap (replyNotes).
	reportCap int
	// latency is how long the answered call took.
	latency time.Duration
}

// ask makes the model call of a step. It returns nil and no error when the
// step ended the run itself (its budget, or a rejected request).
func (a *Service) ask(ctx context.Context, t *turn, step int, conv []llm.Message, last bool) (*answer, error) {
	run := t.run
	level := t.refusals[step]
	closing := false
	model := a.modelFor(run).Name()
	// What the commit before readied (next_call.go) serves the first try.
	n := t.readied
	var lim providerLimits
	if n != nil {
		lim = n.lim
	} else {
		var err error
		if lim, err = a.providerLimits(ctx, model); err != nil {
			return nil, err
		}
	}
	for try := 1; ; try++ {
		first := try == 1
		var req llm.Request
		fits := true
		if r := n.request(conv, last, closing, level, lim); first && r != nil {
			req, t.compaction = *r, n.compaction
		} else {
			var err error
			if req, fits, err = a.buildRequest(t, conv, last, closing, level, lim); err != nil {
				return nil, err
			}
		}
		if !fits {
			if !last {
				last = true // too long for another tool call: the report, from what it has
				continue
			}
			why := "the conversation does not fit the model's context window, even compacted"
			return nil, a.endWithFindings(ctx, t, why)
		}
		// A breaker read clean at the commit before needs no gate, and
		// the answer has nothing to close.
		clean := first && n != nil && n.clean && run.ProviderWait == nil
		var probe bool
		if !clean {
			var err error
			if probe, err = a.gateCall(ctx, t); err != nil { // an open breaker holds the call back
				return nil, err
			}
		}
		var ad admission
		var err error
		if call, ok := n.admitted(req, first); ok {
			ad = admission{verdict: admitted, call: call}
		} else {
			ad, err = a.admit(ctx, t, step, &req, closing)
		}
		if probe && (err != nil || ad.verdict != admitted) {
			a.releaseProbe(ctx, t) // no call: another step may probe
		}
		if err != nil {
			return nil, err
		}
		switch ad.verdict {
		case exhausted:
			if !run.IsRoot() || closing {
				if closing {
					return nil, a.endWithFindings(ctx, t, ad.reason+"; no budget was left for the report")
				}
				return nil, a.endAfter(ctx, t.job, run, StatusFailed, "", ad.reason)
			}
			// The root writes its report, from the share of the budget
			// kept for it.
			if err := a.recordBudgetStop(ctx, run, ad.reason); err != nil {
				return nil, err
			}
			closing, last = true, true
			continue
		case mustWait:
			return nil, river.JobSnooze(budgetWait) // calls in flight hold the rest of the budget
		case queued:
			return nil, river.JobSnooze(snoozeFor(ad.at))
		case tooLarge:
			level++
			if level > maxCompactLevel && last {
				return nil, a.endWithFindings(ctx, t, "the request is larger than the model's token rate limit, even compacted")
			}
			last = last || level > maxCompactLevel
			continue
		}
		req.ID = fmt.Sprintf("gb-call-%d", ad.call.id)
		callStart := time.Now()
		resp, err := a.complete(ctx, run, a.modelFor(run), req) // Complete in a chat span (telemetry.go)
		a.observe(ctx, run, resp.Limits, err)
		if err == nil {
			if !clean {
				a.providerAnswered(ctx, t)
			}
			t.lim = lim
			own := llm.EstimatePromptTokens(req)
			a.rate.learn(ad.call.model, own, resp.Usage.PromptTokens)
			if own > 0 && resp.Usage.PromptTokens > 0 {
				t.tokenRatio = float64(resp.Usage.PromptTokens) / float64(own) // as the next load would read it
			}
			return &answer{resp: resp, call: ad.call, last: last, cap: req.MaxCompletionTokens,
				reportCap: a.reportCapOf(t, lim), latency: time.Since(callStart)}, nil
		}
		a.settleFailed(ctx, ad.call, err)
		if transientFailure(ctx, err) {
			// The provider is down or unreachable: wait it out (outage.go).
			return nil, a.providerFailed(ctx, t, err, probe)
		}
		if interrupted(ctx) {
			if probe {
				a.releaseProbe(ctx, t)
			}
			return nil, err
		}
		a.providerAnswered(ctx, t)
		switch {
		case errors.Is(err, llm.ErrContextLength), errors.Is(err, llm.ErrTooLarge):
			// A window smaller than gb knew is kept for every worker and the
			// request rebuilt for it; otherwise the estimate fell short:
			// compact harder, then ask for the report. The ledger remembers
			// the refusal for a retried step.
			learned, lerr := a.refused(ctx, t, err, &lim, ad.call.est)
			if lerr != nil {
				return nil, lerr
			}
			if learned {
				continue
			}
			level++
			if level > maxCompactLevel {
				if last {
					return nil, a.endWithFindings(ctx, t, "model error: "+err.Error())
				}
				last = true
			}
			continue
		case errors.Is(err, llm.ErrRateLimited):
			return nil, river.JobSnooze(rateLimitWait(err))
		case errors.Is(err, llm.ErrPermanent):
			return nil, a.endAfter(ctx, t.job, run, StatusFailed, "", "model error: "+err.Error())
		}
		return nil, fmt.Errorf("model call of run %d step %d: %w", run.ID, step, err)
	}
}

// observe passes what the provider said of its rate limits, with an answer
// or a refusal, to the shared limiter.
func (a *Service) observe(ctx context.Context, run *Run, lim *llm.RateLimits, callErr error) {
	var wait time.Duration
	var ce *llm.CallError
	if errors.As(callErr, &ce) {
		lim = ce.Limits
		if errors.Is(callErr, llm.ErrRateLimited) {
			wait = rateLimitWait(callErr)
		}
	}
	if err := a.rate.observe(context.WithoutCancel(ctx), a.pool, a.logger, a.modelFor(run).Name(), lim, wait); err != nil {
		a.logger.WarnContext(ctx, "could not record a provider's rate limits", "err", err)
	}
}

// rateLimitWait is how long a refused call waits before it is tried again:
// what the provider asked, or a second, with jitter so that refused calls
// do not all come back together.
func rateLimitWait(err error) time.Duration {
	d := time.Second
	var ce *llm.CallError
	if errors.As(err, &ce) && ce.RetryAfter > 0 {
		d = ce.RetryAfter
	}
	return d + rand.N(d/4+50*time.Millisecond)
}

// endWithFindings ends a run that cannot write its report (its budget or
// its window will not allow one) as failed, with what its sub-agents
// found as its report.
func (a *Service) endWithFindings(ctx context.Context, t *turn, why string) error {
	found, err := a.findings(ctx, t.run, why)
	if err != nil {
		return err
	}
	return a.endAfter(ctx, t.job, t.run, StatusFailed, found, why)
}

// buildRequest is the request of a step: the system prompt, tools and
// conversation of the run (tools listed but not callable on its last step,
// so that the prompt's cached prefix holds), a completion cap sized to
// what the call is for and held within the model's output limit, compacted
// at level to fit the model's window as the provider counts (t.tokenRatio)
// and its token rate limit (lim: what the provider showed, which wins over
// the profile when smaller). A report that does not fit with its cap is
// given a cap smaller by a quarter at a time, down to the smallest worth a
// call. It is a function of the stored conversation and calls, and of the
// configuration and the limits learned, so a retried step builds the same
// request.
func (a *Service) buildRequest(t *turn, conv []llm.Message, last, closing bool, level int, lim providerLimits) (llm.Request, bool, error) {
	req, err := a.requestWith(&t.prompt, t.run, conv, last, closing)
	if err != nil {
		return req, false, err
	}
	p := a.profileFor(t.run)
	window := lim.effectiveWindow(p.ContextWindow)
	// The report, or a report cut at the step's cap written again
	// (replyNotes), gets the report's cap.
	report := last || reportCut(conv)
	req.MaxCompletionTokens = completionCap(p, report, unusableAttempts(t.job), a.maxCompletionFor(t.run), window, lim.tpm)
	for {
		out, fits, compacted := a.compact(t.run, req, window, quotaRoom(lim.tpm, p, req.MaxCompletionTokens), level, t.tokenRatio)
		t.compaction = compacted
		if fits || !report || req.MaxCompletionTokens <= minCompletionTokens {
			return out, fits, nil
		}
		req.MaxCompletionTokens = max(req.MaxCompletionTokens*3/4, minCompletionTokens)
	}
}

// reportCapOf is the completion cap a call that writes the turn's report
// is sent with (buildRequest), for a reply cut at a step's smaller cap.
func (a *Service) reportCapOf(t *turn, lim providerLimits) int {
	p := a.profileFor(t.run)
	return completionCap(p, true, unusableAttempts(t.job), a.maxCompletionFor(t.run),
		lim.effectiveWindow(p.ContextWindow), lim.tpm)
}

// completionCap is the cap of a call: the profile's step or report cap,
// doubled for each unusable answer in a row before it, and held within
// the configured most, the model's output limit, and half of the window
// and of the token rate limit at the model's output burndown (so that the
// prompt keeps room).
func completionCap(p llm.Profile, last bool, unusable, most, window, tpm int) int {
	c := p.StepCap
	if last {
		c = p.ReportCap
	}
	c = min(c<<unusable, most)
	for _, limit := range []int{p.MaxCompletion, window / 2, tpm / (2 * max(p.OutputBurndown, 1))} {
		if limit > 0 {
			c = min(c, limit)
		}
	}
	return c
}

// quotaRoom is the token rate limit as a request's prompt and cap count
// against it: a model whose output burns the quota faster (OutputBurndown)
// leaves its prompt that much less room (0: no limit).
func quotaRoom(tpm int, p llm.Profile, maxCompletion int) int {
	if tpm <= 0 || p.OutputBurndown <= 1 {
		return tpm
	}
	return max(tpm-(p.OutputBurndown-1)*maxCompletion, 1)
}

// unusableAttempts counts the job's latest attempts in a row that failed
// on an unusable answer (a reasoning model that spent its cap thinking):
// each doubles the next attempt's completion cap, up to the model's
// output limit (completionCap).
func unusableAttempts(job *river.Job[StepArgs]) int {
	n := 0
	for i := len(job.Errors) - 1; i >= 0 && n < 3; i-- {
		if !strings.Contains(job.Errors[i].Error, llm.ErrUnusable.Error()) {
			break
		}
		n++
	}
	return n
}

// nextRetry is when River runs a step again after a failed attempt: soon,
// doubling from a second up to half a minute, with jitter, so that a
// provider's brief trouble costs seconds rather than River's minutes. It
// is a formula of the job's attempt rather than a backoff object because
// the attempt lives in Postgres (River's job row) and the next try may run
// in another process: nothing of an in-process loop survives between them.
func nextRetry(attempt int) time.Time {
	d := time.Second << min(max(attempt-1, 0), 5)
	d = min(d, 30*time.Second)
	return time.Now().Add(d/2 + rand.N(d/2+1))
}
